"""The notebooks' static pictures: every one is a function of heads_and_masks/pictures/<slug>.py, so that a
grading kernel neither imports matplotlib nor draws; and the experiments that only feed a picture or a printed
table compute nothing in grading mode (heads_and_masks.grading) while giving the lesson's numbers outside it."""

from __future__ import annotations

import importlib
import math
import re

import numpy as np
import pytest
from course import ASSIGNMENTS, solution_notebook
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import heads_and_masks as hm
from heads_and_masks import cost, local_attention, retrieval, score_noise
from heads_and_masks.grading import GRADING_ENV, Idle
from figure_text import clipped_text, overlapping_texts
from heads_and_masks import generation, model_configs, training
from heads_and_masks.figure_style import text_sizes_px
from heads_and_masks.pictures import LEGIBLE_TEXT_PX, STATIC_PICTURE_WIDTH_PX
from heads_and_masks.pictures import causal_mask as causal_pictures
from heads_and_masks.pictures import generation as generation_pictures
from heads_and_masks.pictures import heads as heads_pictures
from heads_and_masks.pictures import kv_heads as kv_pictures
from heads_and_masks.pictures import learned_heads as learned_pictures
from heads_and_masks.pictures import other_masks as mask_pictures
from heads_and_masks.pictures import why_heads as why_pictures
from heads_and_masks.pictures import work_fraction as work_pictures

DRAWING = re.compile(r"^\s*(import matplotlib|from matplotlib)|\bplt\.", re.MULTILINE)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_no_notebook_draws_its_own_figures(assignment):
    """Pictures come from the package (idle while grading); a notebook cell that imports matplotlib or
    calls pyplot would import and draw in every grading kernel."""
    drawing = [c.source.splitlines()[0] for c in solution_notebook(assignment).cells if DRAWING.search(c.source)]
    assert not drawing, f"{assignment}: cells that draw themselves: {drawing}"


def test_the_drawing_pattern_can_fail():
    assert DRAWING.search("import numpy as np\nimport matplotlib.pyplot as plt\n")
    assert DRAWING.search("fig, ax = plt.subplots()")
    assert not DRAWING.search("picture(score_sum_figure(a, b))  # plt-free")


def test_clipped_text_can_fail():
    figure = Figure(figsize=(2, 1))
    figure.subplots().set_title("a title far too long for a picture two inches wide, cut at both ends")
    assert clipped_text(figure)


def _masks(n=12):
    causal = hm.causal_mask(n)
    return causal, causal & hm.padding_mask([8], n)[0][None, :], hm.padding_mask([8], n)[0]


def test_overlapping_texts_can_fail():
    figure = Figure(figsize=(2, 1))
    ax = figure.subplots()
    ax.text(0.1, 0.5, "one label")
    ax.text(0.15, 0.5, "another label")
    assert overlapping_texts(figure)


def _benchmark_rows():
    """Rows as causal_attention_benchmark returns them (the figure reads these keys), for two float types."""
    return [
        {
            "dtype": dtype,
            "n": n,
            "speedup": 1.9 * n / (n + 64),
            "speedup_over_unmasked": 1.6 * n / (n + 64),
            "full_peak_bytes": 3 * n * n * (4 if dtype == "float32" else 8),
            "tiled_peak_bytes": 3 * 128 * n * (4 if dtype == "float32" else 8),
        }
        for dtype in ("float32", "float64")
        for n in (256, 512, 1024, 2048)
    ]


def _figures():
    """Every picture function of the notebooks, with arguments as the notebooks pass them (the data made up
    where the notebook measures or trains: the figure's layout is what is tested here)."""
    n = 12
    causal, padded, real = _masks(n)
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(2, 5, 8))
    layouts = {kind: local_attention.layout_mask(kind, 48, 6) for kind in ("local", "global + local", "strided")}
    tokens = ["The", "cat", "sat", "on", "the", "mat"]
    scores = rng.normal(size=(6, 6))
    head_sizes = [8, 16, 32, 64, 128, 256, 512]
    readouts = {
        scaled: {
            name: list(rng.uniform(0.1, 3, len(head_sizes)))
            for name in ("score spread", "row entropy (bits)", "gradient scale", "max weight")
        }
        for scaled in (True, False)
    }
    d_grid = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512])
    spreads = np.sqrt(2 / d_grid)
    d_curve = np.unique(np.geomspace(1, 1024, 31).astype(int))
    curves = {sigma: list(1 - 0.9 * np.exp(-d_curve / (8 * (1 + sigma)))) for sigma in (0.0, 0.5, 1.0, 1.5)}
    demo_weights = np.stack([np.eye(8, k=-1) + np.eye(8) * 0.01, np.eye(8)[:, [0] * 8].T])
    values = np.array([[0.2, 2.0], [1.8, 1.4], [2.2, -0.4], [0.6, -1.6], [-1.6, -0.9], [-1.4, 1.1]])
    weights_on_previous = np.linspace(0, 1, 11)
    theory = weights_on_previous**2 / (weights_on_previous**2 + (1 - weights_on_previous) ** 2)
    mistral = local_attention.MISTRAL_7B
    per_token = local_attention.kv_cache_bytes_per_token(
        mistral["n_layers"], mistral["n_kv_heads"], mistral["head_dim"]
    )
    run = training.train(steps=8, probe_batch=16)
    return [
        (heads_pictures.score_sum_figure, ([q[:, :4] @ k[:, :4].T, q[:, 4:] @ k[:, 4:].T], q @ k.T)),
        (heads_pictures.split_orders_figure, (8, 2)),
        (why_pictures.hull_figure, (values, 4, 0)),
        (why_pictures.recovery_figure, (weights_on_previous, theory, 1 - theory)),
        (why_pictures.head_weights_figure, (demo_weights, ["head 0: previous token", "head 1: first token"])),
        (why_pictures.spread_figure, (d_grid, spreads, spreads, spreads, spreads, 1.0)),
        (
            why_pictures.winning_figure,
            (
                d_curve,
                curves,
                100,
                [(8, "h = 96"), (64, "h = 12"), (768, "h = 1")],
                ([2, 8, 32, 128], [0.1, 0.3, 0.7, 0.95], "your winning_rate, σ = 1"),
            ),
        ),
        (causal_pictures.mask_figure, (hm.causal_mask(6), tokens)),
        (causal_pictures.four_ways_figure, (scores, hm.causal_mask(6), tokens)),
        (causal_pictures.readouts_versus_d_figure, (head_sizes, readouts[True], readouts[False])),
        (work_pictures.used_fraction_figure, (np.unique(np.geomspace(1, 8192, 40).round().astype(int)),)),
        (
            work_pictures.tile_size_figure,
            (512, {b: 1e-3 * (1 + 64 / b + b / 128) for b in (8, 16, 32, 64, 128, 256, 512)}),
        ),
        (work_pictures.benchmark_figure, (_benchmark_rows(),)),
        (
            mask_pictures.four_masks_figure,
            (
                {
                    "causal": (causal, None, None),
                    "padding (length 8 of 12)": (padded, real, None),
                    "sliding window (w = 4)": (hm.sliding_window_mask(n, 4), None, None),
                    "block-sparse (tiles of 3)": (local_attention.layout_mask("global + local", n, 3)[1], None, 3),
                },
            ),
        ),
        (mask_pictures.keys_not_queries_figure, (padded, padded & real[:, None], real)),
        (mask_pictures.padding_damage_figure, (np.arange(1, 33), np.linspace(1, 0, 32), np.linspace(2, 0, 32), 32)),
        (mask_pictures.cache_growth_figure, (per_token, 32768, mistral["sliding_window"], mistral["name"])),
        (
            mask_pictures.receptive_field_figure,
            ({layers: local_attention.receptive_field(16, 3, layers) for layers in (1, 2, 4)},),
        ),
        (
            mask_pictures.granting_masks_figure,
            (
                {
                    "prefix LM:\ncausal OR key < 4": local_attention.prefix_lm_mask(n, 4),
                    "window 3 OR 2 sinks\n(and causal)": local_attention.window_with_sinks_mask(n, 3, 2),
                    "local 3 OR global\nfirst (and causal)": local_attention.global_local_layout(
                        n, width=3, n_global=1
                    ),
                },
            ),
        ),
        (mask_pictures.block_sparse_figure, (layouts, 6)),
        (kv_pictures.head_mapping_figure, (8, 2)),
        (kv_pictures.cache_per_token_figure, (model_configs.load_models(),)),
        (
            kv_pictures.cache_vs_context_figure,
            (model_configs.model("Llama-2-70B"),),
            {"memory_bytes": 2 * model_configs.load_gpus()["H100"]},
        ),
        (generation_pictures.decode_masks_figure, (3, 8)),
        (
            generation_pictures.composed_masks_figure,
            (
                {
                    "window 4 OR 2 sinks\n(causal AND)": generation.sinks_window_mask(n, 4, 2),
                    "window 4 AND 2 sinks\n(the bug)": hm.sliding_window_mask(n, 4) & (np.arange(n)[None, :] < 2),
                    "prefix LM, prompt of 5:\ncausal OR key < 5": generation.prefix_lm_mask(n, 5),
                },
            ),
        ),
        (
            generation_pictures.composed_masks_figure,
            (
                {
                    "causal only: documents\nsee earlier documents": hm.causal_mask(12),
                    "document mask:\nsame id AND causal": generation.document_mask(np.repeat([0, 1, 2], [3, 5, 4])),
                },
            ),
        ),
        (generation_pictures.bytes_per_token_figure, (generation.cache_layouts(),)),
        (learned_pictures.loss_curves_figure, (run,)),
        (learned_pictures.head_maps_figure, (run,)),
        (learned_pictures.head_count_figure, ({h: rng.uniform(0.1, 1.0, 5) for h in (1, 2, 4)}, 16)),
    ]


FIGURES = [entry if len(entry) == 3 else (*entry, {}) for entry in _figures()]  # (function, args, kwargs)


def test_every_picture_function_is_tested():
    """A new picture function must join FIGURES, so that its text is measured too."""
    import inspect

    modules = {importlib.import_module(f.__module__) for f, _, _ in FIGURES}
    defined = {
        f"{module.__name__}.{name}"
        for module in modules
        for name, function in inspect.getmembers(module, inspect.isfunction)
        if name.endswith("_figure") and function.__module__ == module.__name__
    }
    tested = {f"{f.__module__}.{f.__name__}" for f, _, _ in FIGURES}
    assert defined <= tested, f"picture functions without a test: {sorted(defined - tested)}"


@pytest.mark.parametrize("function, args, kwargs", FIGURES, ids=[f.__name__ for f, _, _ in FIGURES])
def test_each_picture_draws_outside_grading_and_nothing_while_grading(function, args, kwargs, monkeypatch):
    monkeypatch.delenv(GRADING_ENV, raising=False)
    figure = function(*args, **kwargs)
    assert isinstance(figure, Figure) and figure.axes
    png = importlib.import_module(function.__module__).picture(figure).data  # as the notebook shows it
    figure.set_layout_engine("none")  # measured as the PNG shows it (a constrained layout moves on each draw)
    assert png.startswith(b"\x89PNG")
    width = int.from_bytes(png[16:20], "big")
    assert width <= STATIC_PICTURE_WIDTH_PX, (
        f"{function.__name__} is {width} px wide: a laptop's notebook would scale it"
    )
    assert not clipped_text(figure), f"{function.__name__}: text cut by the picture's edge: {clipped_text(figure)}"
    # The PNG is shown at its own size (no wider than the notebook): its pixels are the screen's. Its text
    # is the figure's, drawn at the PNG's dpi (the figure's width in inches over the PNG's in pixels).
    png_dpi = width / figure.get_figwidth()
    sizes = [round(float(size * png_dpi / figure.dpi), 2) for size in text_sizes_px(figure)]  # (to 1/100 px)
    assert min(sizes) >= LEGIBLE_TEXT_PX, (
        f"{function.__name__}: its smallest text is {min(sizes):.1f} px high on the screen "
        f"(below {LEGIBLE_TEXT_PX} px); sizes {sorted(set(sizes))}"
    )
    assert not overlapping_texts(figure), (
        f"{function.__name__}: texts drawn over each other: {overlapping_texts(figure)}"
    )

    monkeypatch.setenv(GRADING_ENV, "1")

    def refuse(*args, **kwargs):
        raise AssertionError("something was drawn in grading mode")

    monkeypatch.setattr(FigureCanvasAgg, "draw", refuse)
    monkeypatch.setattr(Figure, "__init__", refuse)
    assert isinstance(function(*args, **kwargs), Idle)


def test_mask_titles_carry_the_share_kept():
    causal, padded, real = _masks()
    figure = mask_pictures.four_masks_figure({"causal": (causal, None, None), "padding": (padded, real, None)})
    titles = [ax.get_title() for ax in figure.axes]
    assert titles[0] == f"causal\nkeeps {causal.mean():.1%}" and titles[1].endswith(f"keeps {padded.mean():.1%}")
    reach = {4: local_attention.receptive_field(16, 3, 4)}
    assert mask_pictures.receptive_field_figure(reach).axes[0].get_title().endswith("reaches back\n8 positions")


def test_one_head_recovers_half_and_two_heads_everything(monkeypatch):
    monkeypatch.delenv(GRADING_ENV, raising=False)
    weights = np.array([0.0, 0.25, 0.5, 1.0])
    previous, first, two_heads = retrieval.one_head_recovery(weights, c=3, pairs=20_000, seed=1)
    theory = weights**2 / (weights**2 + (1 - weights) ** 2)  # E[previous | blend] for independent normals
    assert np.abs(previous - theory).max() < 0.02 and np.abs(first - (1 - theory)).max() < 0.02
    assert np.abs((previous + first) / 2 - 0.5).max() < 0.01 and math.isclose(two_heads, 1.0)


def test_simulated_spreads_follow_the_formula(monkeypatch):
    monkeypatch.delenv(GRADING_ENV, raising=False)
    d_values = [1, 16, 256]
    simulated = score_noise.simulated_spreads(d_values, 1.0, pairs=20_000, seed=3)
    formula = np.array([score_noise.estimate_spread(d, 1.0) for d in d_values])
    assert simulated.shape == (3, 2) and np.abs(simulated / formula - 1).max() < 0.05


def test_experiments_for_pictures_and_tables_compute_nothing_while_grading(monkeypatch):
    monkeypatch.setenv(GRADING_ENV, "1")

    def refuse(*args, **kwargs):
        raise AssertionError("an experiment ran in grading mode")

    monkeypatch.setattr(retrieval, "linear_recovery", refuse)
    monkeypatch.setattr(score_noise, "similarity_estimates", refuse)
    monkeypatch.setattr(cost, "counted_multi_head_attention", refuse)
    previous, first, two_heads = retrieval.one_head_recovery(np.linspace(0, 1, 11))
    assert previous.shape == first.shape == (11,) and np.isnan(previous).all() and math.isnan(two_heads)
    assert f"{((previous + first) / 2).min():.3f}" == "nan"  # what notebook 02 prints still formats
    spreads = score_noise.simulated_spreads(np.array([1, 8, 64]), 1.0)
    assert spreads.shape == (3, 2) and np.isnan(spreads).all()
    assert cost.cost_table(32, 768, 12) == []
