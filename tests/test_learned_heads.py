"""Notebook 08's package code: the attention backward pass, the model's gradients, training, and the checks.

Gradients are tested against finite differences and against a slow row-by-row version with the softmax
Jacobian built explicitly; the claims of the notebook (heads specialise, ablation, the (d h) bug) against
the trained model itself. No timing is asserted here: tools/bench.py measures the training time.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import heads_and_masks as hm
from heads_and_masks import training
from heads_and_masks.checks import learned_heads as checks
from heads_and_masks.checks.core import CheckFailed
from heads_and_masks.grading import GRADING_ENV


def _inputs(seed, n_q=5, n_k=5, d=3, d_v=2):
    r = np.random.default_rng(seed)
    return r.normal(size=(n_q, d)), r.normal(size=(n_k, d)), r.normal(size=(n_k, d_v)), r.normal(size=(n_q, d_v))


def _numeric(q, k, v, mask, dout):
    return training.numerical_gradients(lambda q, k, v: float(np.sum(hm.attention(q, k, v, mask) * dout)), [q, k, v])


MASKS = {
    "none": lambda r, n_q, n_k: None,
    "causal": lambda r, n_q, n_k: np.tril(np.ones((n_q, n_k), bool)),
    "random with an empty row and column": lambda r, n_q, n_k: _holes(r.random((n_q, n_k)) < 0.6),
    "rectangular": lambda r, n_q, n_k: np.tril(np.ones((n_q, n_k), bool), k=n_k - n_q),
}


def _holes(mask):
    mask[1] = False
    mask[:, 2] = False
    return mask


@pytest.mark.parametrize("kind", MASKS)
@pytest.mark.parametrize("seed", [0, 1])
def test_attention_backward_matches_finite_differences_and_the_slow_version(kind, seed):
    n_q, n_k = (3, 6) if kind == "rectangular" else (5, 5)
    q, k, v, dout = _inputs(seed, n_q, n_k)
    mask = MASKS[kind](np.random.default_rng(seed + 10), n_q, n_k)
    with np.errstate(all="raise"):  # no warning, no NaN, even with a row that allows nothing
        fast = training.attention_backward(q, k, v, mask, dout)
    slow = training.attention_backward_slow(q, k, v, mask, dout)
    numeric = _numeric(q, k, v, mask, dout)
    for name, f, s, num, x in zip(("dq", "dk", "dv"), fast, slow, numeric, (q, k, v)):
        assert f.shape == x.shape, name
        np.testing.assert_allclose(f, s, atol=1e-12, err_msg=name)
        np.testing.assert_allclose(f, num, atol=1e-7, err_msg=name)
    if kind.startswith("random"):
        assert not fast[0][1].any(), "a query with no allowed key gets no gradient"
        assert not fast[1][2].any() and not fast[2][2].any(), "a key no query may see gets no gradient"


def test_attention_backward_over_leading_axes_is_one_head_at_a_time():
    r = np.random.default_rng(4)
    q, k, v, dout = (r.normal(size=(2, 3, 4, 5)) for _ in range(4))
    mask = np.tril(np.ones((4, 4), bool))
    batched = training.attention_backward(q, k, v, mask, dout)
    for b in range(2):
        for h in range(3):
            single = training.attention_backward_slow(q[b, h], k[b, h], v[b, h], mask, dout[b, h])
            for got, want in zip(batched, single):
                np.testing.assert_allclose(got[b, h], want, atol=1e-12)


def test_attention_backward_refuses_bad_arguments_and_keeps_its_inputs():
    q, k, v, dout = _inputs(0)
    with pytest.raises(ValueError, match="boolean"):
        training.attention_backward(q, k, v, np.ones((5, 5)), dout)
    with pytest.raises(ValueError, match="dout"):
        training.attention_backward(q, k, v, None, dout[:, :1].repeat(3, axis=1))
    kept = [a.copy() for a in (q, k, v, dout)]
    training.attention_backward(q, k, v, None, dout)
    assert all(np.array_equal(a, b) for a, b in zip(kept, (q, k, v, dout)))


@pytest.mark.parametrize("split", ["(h d)", "(d h)"])
def test_the_models_gradients_match_finite_differences(split):
    config = training.Config(vocab=5, n=5, width=8, heads=2, split=split)
    params = training.init_params(config, np.random.default_rng(1))
    ids, targets = training.make_batch(np.random.default_rng(2), 3, config.n, config.vocab)
    keep = np.array([1.0, 0.0]) if split == "(d h)" else None  # and through an ablated head
    logits, cache = training.forward(params, ids, config, keep)
    _, dlogits, _ = training.loss_and_dlogits(logits, targets)
    grads = training.backward(params, cache, dlogits, config)
    names = list(params)
    numeric = training.numerical_gradients(
        lambda *arrays: training.loss_of(dict(zip(names, arrays)), ids, targets, config, keep)[0],
        [params[n] for n in names],
    )
    for name, approx in zip(names, numeric):
        np.testing.assert_allclose(grads[name], approx, atol=1e-7, err_msg=name)


def test_the_loss_is_the_cross_entropy_written_out():
    config = training.Config(vocab=4, n=4, width=4, heads=2)
    params = training.init_params(config, np.random.default_rng(0))
    ids, targets = training.make_batch(np.random.default_rng(1), 2, 4, 4)
    logits, _ = training.forward(params, ids, config)
    loss, _, per_rule = training.loss_and_dlogits(logits, targets)
    slow = np.zeros(2)
    for b in range(2):
        for t in range(1, 4):
            for rule in range(2):
                row = logits[b, t, rule]
                slow[rule] -= row[targets[b, t, rule]] - math.log(np.exp(row).sum())
    np.testing.assert_allclose(per_rule, slow / 6)
    assert loss == pytest.approx(slow.mean() / 6)
    assert (targets[:, 1:, 0] == ids[:, :-1]).all() and (targets[..., 1] == ids[:, :1]).all()


@pytest.fixture(scope="module")
def run():
    return training.train(seed=0)


def test_training_is_deterministic_and_the_seed_matters(run):
    again = training.train(seed=0)
    assert np.array_equal(run.losses, again.losses)
    other = training.train(seed=1, steps=5)
    assert not np.array_equal(run.losses[:5], other.losses)


def test_two_heads_learn_the_two_rules_and_are_not_interchangeable(run):
    loss, per_rule = run.evaluate()
    assert loss < 0.01 * training.chance_loss(run.config)
    before = training.rule_weights(run.maps(0))
    after = training.rule_weights(run.maps())  # (h, 2)
    assert before.max() < 0.5, "before training no head has a rule"
    assert sorted(np.argmax(after, axis=0).tolist()) == [0, 1], "each rule has its own head"
    assert after.max(axis=0).min() > 0.9
    table = training.ablation_table(run)  # (h + 1, 3)
    for head in range(2):
        rule = int(np.argmax(after[head]))
        assert table[head + 1, 1 + rule] > training.chance_loss(run.config), "without its head, a rule is lost"
        assert table[head + 1, 2 - rule] < 0.01, "the other rule does not need it"


def test_rule_weights_against_a_loop():
    r = np.random.default_rng(0)
    weights = hm.masked_softmax(r.normal(size=(3, 2, 6, 6)), np.tril(np.ones((6, 6), bool)))
    slow = np.zeros((2, 2))
    for head in range(2):
        picks = [(weights[b, head, t, t - 1], weights[b, head, t, 0]) for b in range(3) for t in range(2, 6)]
        slow[head] = np.mean(picks, axis=0)
    np.testing.assert_allclose(training.rule_weights(weights), slow)
    with pytest.raises(ValueError):
        training.rule_weights(weights[..., :2, :2])


def test_the_d_h_bug_trains_from_scratch_but_breaks_loaded_weights(run):
    wrong = dataclasses.replace(run.config, split="(d h)")
    runs = training.runs_over_seeds(wrong)  # the notebook's five seeds: one seed alone can be an outlier
    losses = training.final_losses(runs)
    assert len(losses) == 5 and (losses < 0.01 * training.chance_loss(run.config)).all(), (
        "every seed learns the task with the (d h) split",
        losses,
    )
    scratch = runs[0]
    loaded, _ = run.evaluate(config=wrong)
    assert loaded > training.chance_loss(run.config), loaded
    d, h = run.config.head_size, run.config.heads
    order = np.arange(run.config.width).reshape(d, h).T.ravel()
    permuted = {n: (p[:, order] if n in ("w_q", "w_k", "w_v") else p) for n, p in scratch.params.items()}
    assert scratch.evaluate(params=permuted, config=run.config)[0] == pytest.approx(scratch.evaluate()[0], rel=1e-9)


def test_one_head_is_worse_than_two_at_the_same_cost():
    results = training.compare_head_counts((1, 2), seeds=(0, 1), steps=150)
    assert results[1].min() > 10 * results[2].max(), results


def test_grading_mode_trains_nothing(monkeypatch):
    monkeypatch.setenv(GRADING_ENV, "1")
    idle = training.train(seed=0)
    assert idle.snapshot_steps == [0] and idle.losses.size == 0
    assert training.ablation_table(idle).shape == (3, 3)
    from heads_and_masks.pictures import learned_heads as pictures
    from heads_and_masks.grading import Idle

    assert isinstance(pictures.head_maps_figure(idle), Idle)
    assert isinstance(pictures.loss_curves_figure(idle), Idle)
    assert isinstance(pictures.head_count_figure({1: np.ones(2)}, 16), Idle)


# ---------------------------------------------------------------------------- the checks, in-process
def _own(q, k, v, mask, dout):
    """A correct answer in its own style: the softmax Jacobian of every row as a matrix."""
    return training.attention_backward_slow(q, k, v, mask, dout)


def _variant(kind):
    def answer(q, k, v, mask, dout):
        d = q.shape[1]
        s = q @ k.T / np.sqrt(d)
        allowed = np.ones(s.shape, bool) if mask is None else mask
        if kind == "nan":
            s = np.where(allowed, s, -np.inf)
            p = np.exp(s - s.max(axis=1, keepdims=True))
            p = p / p.sum(axis=1, keepdims=True)
        else:  # the masked softmax written out (the course's is locked while a check runs)
            use = np.ones(s.shape, bool) if kind == "forbidden" else allowed
            e = np.where(use, np.exp(s - np.where(use, s, -np.inf).max(axis=1, keepdims=True).clip(-1e300)), 0.0)
            total = e.sum(axis=1, keepdims=True)
            p = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
        dv, dp = p.T @ dout, dout @ v.T
        ds = p * dp if kind == "diagonal" else p * (dp - (p * dp).sum(axis=1, keepdims=True))
        scale = 1.0 if kind == "sqrt" else 1 / np.sqrt(d)
        if kind == "swapped":
            return ds.T @ k * scale, ds @ q * scale, dv
        return ds @ k * scale, ds.T @ q * scale, dv

    return answer


def test_the_checks_pass_correct_answers_in_two_styles():
    for answer in (_own, lambda *a: training.attention_backward_slow(*a)):
        checks.check_attention_backward(answer, seed=3, thorough=True)
        checks.check_attention_backward_masks(answer, seed=3, thorough=True)
    checks.check_rule_weights(
        lambda w: np.stack(
            [
                np.mean([w[:, :, t, t - 1] for t in range(2, w.shape[-1])], axis=(0, 1)),
                np.mean([w[:, :, t, 0] for t in range(2, w.shape[-1])], axis=(0, 1)),
            ],
            -1,
        ),
        seed=3,
        thorough=True,
    )


@pytest.mark.parametrize(
    "kind, check, says",
    [
        ("sqrt", checks.check_attention_backward, "1/√d is forgotten"),
        ("diagonal", checks.check_attention_backward, "only the diagonal of the softmax jacobian"),
        ("swapped", checks.check_attention_backward, "transposes swapped"),
        ("forbidden", checks.check_attention_backward, "forbidden entries"),
        ("nan", checks.check_attention_backward_masks, "nan on a fully masked row"),
    ],
)
def test_the_checks_name_each_misconception(kind, check, says):
    with pytest.raises(CheckFailed) as failure:
        check(_variant(kind), seed=5)
    assert says in str(failure.value).lower(), str(failure.value)
