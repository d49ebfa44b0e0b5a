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
from heads_and_masks.pictures import STATIC_PICTURE_WIDTH_PX
from heads_and_masks.pictures import heads as heads_pictures
from heads_and_masks.pictures import other_masks as mask_pictures

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


def clipped_text(figure: Figure) -> list[str]:
    """The edges of the picture that cut what the figure draws (titles, labels, ticks, legends), by how
    many inches: what ``bbox_inches="tight"`` would have grown the picture by."""
    canvas = FigureCanvasAgg(figure)
    canvas.draw()  # lays the figure out (constrained layout runs while drawing)
    renderer = canvas.get_renderer()
    drawn, edge = figure.get_tightbbox(renderer), figure.bbox_inches  # inches
    overflow = {
        "left": edge.x0 - drawn.x0,
        "bottom": edge.y0 - drawn.y0,
        "right": drawn.x1 - edge.x1,
        "top": drawn.y1 - edge.y1,
    }
    return [f"{side} by {inches:.2f} in" for side, inches in overflow.items() if inches > 0.01]


def test_clipped_text_can_fail():
    figure = Figure(figsize=(2, 1))
    figure.subplots().set_title("a title far too long for a picture two inches wide, cut at both ends")
    assert clipped_text(figure)


def _masks(n=12):
    causal = hm.causal_mask(n)
    return causal, causal & hm.padding_mask([8], n)[0][None, :], hm.padding_mask([8], n)[0]


def _figures():
    """Every picture function of notebooks 01 and 05, with arguments as the notebooks pass them."""
    n = 12
    causal, padded, real = _masks(n)
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(2, 5, 8))
    layouts = {kind: local_attention.layout_mask(kind, 48, 6) for kind in ("local", "strided")}
    return [
        (heads_pictures.score_sum_figure, ([q[:, :4] @ k[:, :4].T, q[:, 4:] @ k[:, 4:].T], q @ k.T)),
        (heads_pictures.split_orders_figure, (8, 2)),
        (mask_pictures.four_masks_figure, ({"causal": (causal, None, None), "padding": (padded, real, None)},)),
        (mask_pictures.keys_not_queries_figure, (padded, padded & real[:, None], real)),
        (mask_pictures.padding_damage_figure, (np.arange(1, 33), np.linspace(1, 0, 32), np.linspace(2, 0, 32), 32)),
        (mask_pictures.cache_growth_figure, (131072, 8192, 4096, "Mistral 7B")),
        (mask_pictures.receptive_field_figure, ({1: local_attention.receptive_field(16, 3, 1)},)),
        (mask_pictures.granting_masks_figure, ({"prefix": local_attention.prefix_lm_mask(n, 4), "causal": causal},)),
        (mask_pictures.block_sparse_figure, (layouts, 6)),
    ]


FIGURES = _figures()


@pytest.mark.parametrize("function, args", FIGURES, ids=[f.__name__ for f, _ in FIGURES])
def test_each_picture_draws_outside_grading_and_nothing_while_grading(function, args, monkeypatch):
    monkeypatch.delenv(GRADING_ENV, raising=False)
    figure = function(*args)
    assert isinstance(figure, Figure) and figure.axes
    png = importlib.import_module(function.__module__).picture(figure).data  # as the notebook shows it
    assert png.startswith(b"\x89PNG")
    width = int.from_bytes(png[16:20], "big")
    assert width <= STATIC_PICTURE_WIDTH_PX, (
        f"{function.__name__} is {width} px wide: a laptop's notebook would scale it"
    )
    assert not clipped_text(figure), f"{function.__name__}: text cut by the picture's edge: {clipped_text(figure)}"

    monkeypatch.setenv(GRADING_ENV, "1")

    def refuse(*args, **kwargs):
        raise AssertionError("something was drawn in grading mode")

    monkeypatch.setattr(FigureCanvasAgg, "draw", refuse)
    monkeypatch.setattr(Figure, "__init__", refuse)
    assert isinstance(function(*args), Idle)


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
