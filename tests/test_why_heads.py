"""Notebook 02's package code: the retrieval task, the noise model (simulation against exact
integration), the checks' statistical margins, and the widget driven without a browser."""

from __future__ import annotations

import math

import numpy as np
import pytest

from heads_and_masks import retrieval, score_noise
from heads_and_masks.checks import why_heads as checks
from heads_and_masks.widgets.why_heads import D_VALUES, N_KEYS, TRIALS, ScoreNoiseWidget


# ---------------------------------------------------------------- the retrieval task
@pytest.mark.parametrize("n,c", [(1, 1), (2, 1), (6, 3), (32, 2)])
def test_reference_heads_do_the_task(n, c):
    contents = np.random.default_rng(n).uniform(-1, 1, size=(n, c))
    x = retrieval.token_vectors(contents)
    w_q, w_k, w_v = retrieval.retrieval_heads(n, c)
    weights = retrieval.head_weights(x, w_q, w_k)
    assert np.allclose(weights.sum(-1), 1) and np.allclose(np.triu(weights, 1), 0)  # rows sum to 1, causal
    if n > 1:
        output = retrieval.heads_output(x, w_q, w_k, w_v)
        assert np.abs(output[1:] - retrieval.wanted_output(contents)).max() < 1e-6


def test_retrieval_heads_refuses_bad_sizes():
    for n, c in [(0, 3), (3, 0), (2.5, 1)]:
        with pytest.raises(ValueError):
            retrieval.retrieval_heads(n, c)


def test_one_head_recovers_half_whatever_its_weights():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 20_000, 3))
    wanted = np.concatenate([a, b], axis=1)
    for weight in (0.0, 0.3, 0.5, 0.9):
        recovered = retrieval.linear_recovery(retrieval.one_head_mix(a, b, weight), wanted)
        theory_previous = weight**2 / (weight**2 + (1 - weight) ** 2)  # E[a | blend] for independent normals
        assert abs(recovered[:3].mean() - theory_previous) < 0.02
        assert abs(recovered.mean() - 0.5) < 0.01


def test_convex_hull_contains_every_head_output():
    rng = np.random.default_rng(1)
    values = rng.normal(size=(7, 2))
    hull = retrieval.convex_hull(values)
    assert retrieval.inside_hull(retrieval.reachable_outputs(values, 2000, seed=2), hull).all()
    assert retrieval.inside_hull(values, hull).all()
    assert not retrieval.inside_hull(hull * 1.01 + 1e-6 * np.sign(hull), hull).any()  # pushed outwards


# ---------------------------------------------------------------- the noise model
def test_normal_cdf_matches_math_erf():
    x = np.linspace(-9, 9, 4001)
    exact = np.array([0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x])
    assert np.abs(score_noise.normal_cdf(x) - exact).max() < 1e-7


@pytest.mark.parametrize("d,noise,n_keys", [(1, 0.0, 16), (8, 1.0, 16), (32, 1.5, 16), (4, 2.0, 2), (64, 3.0, 8)])
def test_simulation_agrees_with_integration(d, noise, n_keys):
    trials = 40_000
    simulated = score_noise.winning_rate(d, noise, n_keys, trials, seed=d)
    exact = score_noise.exact_winning_rate(d, noise, n_keys)
    assert abs(simulated - exact) < 4.5 * math.sqrt(max(exact * (1 - exact), 1e-4) / trials)


def test_integration_is_converged_and_known_cases_hold():
    for d, noise in [(1, 0.0), (8, 1.0), (512, 2.0)]:
        coarse = score_noise.win_probability(d, noise, noise, 15)
        fine = score_noise.win_probability(d, noise, noise, 15, grid=3201, nodes=160)
        assert abs(coarse - fine) < 1e-4
    # one rival and no noise at d = 1: P(q·k_match > q·k_other) = P(q² > q·z) = P(|q| > z·sign q) = Φ-average
    rng = np.random.default_rng(3)
    q, z = rng.normal(size=(2, 400_000))
    assert abs(score_noise.win_probability(1, 0.0, 0.0, 1) - np.mean(q * q > q * z)) < 0.003
    assert score_noise.exact_winning_rate(768, 1.0) > 0.999


def test_spread_formula_and_its_one_over_sqrt_d():
    for d in (1, 8, 64):
        match, unrelated = score_noise.similarity_estimates(d, 1.0, pairs=40_000, seed=d)
        expected_match, expected_unrelated = score_noise.estimate_spread(d, 1.0)
        assert abs(match.std() / expected_match - 1) < 0.03
        assert abs(unrelated.std() / expected_unrelated - 1) < 0.03
        assert abs(match.mean() - 1) < 0.05 and abs(unrelated.mean()) < 0.05
    assert math.isclose(score_noise.estimate_spread(64, 0.5)[1] * 2, score_noise.estimate_spread(16, 0.5)[1])


def test_winning_rate_refuses_bad_arguments():
    for args in [(0, 1.0), (8, -1.0), (8, 1.0, 1), (8, 1.0, 16, 0), (8, float("nan"))]:
        with pytest.raises(ValueError):
            score_noise.winning_rate(*args)


def test_score_bank_is_the_same_model():
    bank = score_noise.ScoreBank((1, 8, 32), n_keys=16, trials=3000, seed=5)
    for d, noise in [(8, 1.0), (32, 1.5), (1, 0.0)]:
        exact = score_noise.exact_winning_rate(d, noise, 16)
        assert abs(bank.winning_rate(d, noise) - exact) < checks.margin(exact, 3000)
    with pytest.raises(ValueError):
        score_noise.ScoreBank((8, 4))


def test_check_margin_is_never_missed_by_a_correct_simulation():
    """Thirty seeds of a correct simulation: the largest miss stays far inside the six-error margin."""
    exact = score_noise.exact_winning_rate(8, 1.0, 16)
    misses = [abs(score_noise.winning_rate(8, 1.0, 16, checks.TRIALS, seed) - exact) for seed in range(30)]
    assert max(misses) < 0.7 * checks.margin(exact, checks.TRIALS)


def test_checkpoints_separate_each_mistake_from_the_truth():
    """At some visible checkpoint every mistake the checks name lies at least 3 margins from the truth."""
    points = [(8, 1.0, 16), (32, 1.5, 16), (32, 3.0, 16), (2, 0.0, 4)]
    names = ["pairwise", "clean query", "clean match", "noise as variance", "sqrt(noise) as std"]
    worst = {name: 0.0 for name in names}
    for d, noise, n_keys in points:
        exact = score_noise.exact_winning_rate(d, noise, n_keys)
        wrong = list(checks._wrong_rates(d, noise, n_keys))
        labels = names[:3] + (names[3:] if noise not in (0.0, 1.0) else [])
        for name, (rate, _, _) in zip(labels, wrong):
            worst[name] = max(worst[name], abs(rate - exact) / checks.margin(exact, checks.TRIALS))
    assert min(worst.values()) >= 3.0, worst


# ---------------------------------------------------------------- the widget
def test_widget_follows_its_controls(artifacts):
    widget = ScoreNoiseWidget()
    first = widget.png()
    times = []
    for d, noise in [(1, 0.0), (8, 1.0), (64, 1.0), (768, 3.0), (32, 1.5)]:
        widget.controls["d"].value = d
        widget.controls["noise"].value = noise
        times.append(widget.last_update_seconds)
        exact = score_noise.exact_winning_rate(d, noise, N_KEYS)
        assert abs(widget.readouts["match wins (exact)"] - exact) < 2e-3
        assert abs(widget.readouts["match wins (simulated)"] - exact) < checks.margin(exact, TRIALS)
        spread_match, spread_unrelated = score_noise.estimate_spread(d, noise)
        assert abs(widget.readouts["spread of the match"] / spread_match - 1) < 0.15
        assert abs(widget.readouts["spread of unrelated"] / spread_unrelated - 1) < 0.08
        assert math.isclose(widget.readouts["gap / spread"], 1 / widget.readouts["spread of unrelated"])
        (artifacts / f"widget_02_d{d}_noise{noise}.png").write_bytes(widget.png())
    assert widget.png() != first
    (artifacts / "widget_02_update_seconds.txt").write_text(
        "ScoreNoiseWidget updates (s): " + ", ".join(f"{t:.3f}" for t in times) + "\n"
    )


def test_widget_rate_rises_and_spread_halves_with_d():
    widget = ScoreNoiseWidget(noise=1.0)
    rates, spreads = [], []
    for d in D_VALUES:
        widget.controls["d"].value = d
        rates.append(widget.readouts["match wins (exact)"])
        spreads.append(widget.readouts["spread of unrelated"])
    assert all(b >= a - 1e-9 for a, b in zip(rates, rates[1:]))
    i, j = D_VALUES.index(16), D_VALUES.index(64)
    assert abs(spreads[j] / spreads[i] - 0.5) < 0.05


def test_widget_legend_never_covers_the_curve():
    """The legend of the winning-rate panel sits above every curve, whatever the noise (it used to sit
    where the curve goes at high noise)."""
    widget = ScoreNoiseWidget()
    renderer = widget.canvas.get_renderer()
    for noise in (0.0, 1.0, 2.0, 3.0):
        widget.controls["noise"].value = noise
        legend = widget.ax_rate.get_legend().get_window_extent(renderer)
        for line in (widget.exact_line, widget.sim_dots):
            points = line.get_transform().transform(np.column_stack(line.get_data()))
            inside = [(x, y) for x, y in points if legend.contains(x, y)]
            assert not inside, f"noise {noise}: the legend covers the curve at {inside}"


def test_the_models_outside_the_practical_range_are_the_ones_notebook_02_names():
    """02 says: most models use heads of 32 to 128, and in the course's data the Gemmas (d = 256) do not."""
    from heads_and_masks import model_configs

    outside = {m.model: m.head_dim for m in model_configs.load_models().values() if not 32 <= m.head_dim <= 128}
    assert outside == {"Gemma-2B": 256, "Gemma-7B": 256}
    gemma7 = model_configs.model("Gemma-7B")
    assert gemma7.query_heads * gemma7.head_dim == 4096 > gemma7.hidden == 3072
