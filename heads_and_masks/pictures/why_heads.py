"""The static pictures of notebook 02 (each returns a matplotlib Figure; the notebook only calls them)."""

from __future__ import annotations

import itertools

import numpy as np
from matplotlib.figure import Figure

from ..figure_style import drawn_in_course_style, ordered_colours
from ..grading import idle_while_grading
from ..retrieval import convex_hull, reachable_outputs
from . import picture  # noqa: F401  (the notebook imports it from here)

PRACTICAL = (32, 128)


@idle_while_grading()
@drawn_in_course_style
def hull_figure(values, previous: int, first: int) -> Figure:
    """One head's reachable outputs (the convex hull of the values) and what the task would need."""
    figure = Figure(figsize=(7.2, 5.4), layout="constrained")
    ax = figure.subplots()
    cloud = reachable_outputs(values, samples=4000, seed=1)
    hull = convex_hull(values)
    ax.scatter(*cloud.T, s=2, color="0.75", label="outputs of one head (random weights)")
    ax.fill(*hull.T, facecolor="none", edgecolor="tab:blue", lw=1.5, label="convex hull of the values")
    ax.scatter(*values.T, s=36, color="tab:blue", zorder=3)
    for i, (x, y) in enumerate(values):
        ax.annotate(f"v{i}", (x, y), textcoords="offset points", xytext=(5, 4))
    segment = np.linspace(0, 1, 50)[:, None] * values[previous] + np.linspace(1, 0, 50)[:, None] * values[first]
    ax.plot(*segment.T, color="tab:red", lw=3, alpha=0.7, label="one head splitting its weight\nbetween the two")
    ax.scatter(
        *(values[previous] / 2 + values[first] / 2),
        marker="*",
        s=220,
        color="tab:red",
        zorder=4,
        label="one head, half and half: a blend",
    )
    ax.scatter(
        *np.stack([values[previous], values[first]]).T,
        marker="o",
        s=180,
        facecolors="none",
        edgecolors="tab:green",
        linewidths=2,
        zorder=4,
        label="two heads: each value, intact",
    )
    ax.set(
        aspect="equal",
        xlabel="value, component 1",
        ylabel="value, component 2",
        title=f"query t = {previous + 1} wants v{previous} (previous) and v{first} (first)",
    )
    figure.legend(loc="outside lower center", ncols=2, frameon=False)
    return figure


@idle_while_grading()
@drawn_in_course_style
def recovery_figure(weights_on_previous, recovered_previous, recovered_first) -> Figure:
    """How much of each content the best linear readout of one head's blend recovers."""
    figure = Figure(figsize=(7.2, 3.7), layout="constrained")
    ax = figure.subplots()
    w = np.asarray(weights_on_previous)
    ax.plot(w, recovered_previous, "o-", color="tab:orange", ms=4, label="content of the previous token")
    ax.plot(w, recovered_first, "o-", color="tab:purple", ms=4, label="content of the first token")
    ax.plot(
        w, (np.asarray(recovered_previous) + np.asarray(recovered_first)) / 2, "k--", lw=1.2, label="average of the two"
    )
    ax.axhline(1.0, color="tab:green", lw=2, alpha=0.7, label="two heads (each recovered completely)")
    ax.set(
        xlim=(0, 1),
        ylim=(-0.03, 1.05),
        xlabel="one head's weight on the previous token (the rest on the first)",
        ylabel="fraction of variance recovered",
    )
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    return figure


@idle_while_grading()
@drawn_in_course_style
def head_weights_figure(weights, titles) -> Figure:
    """Heat maps of the attention weights of several heads (queries down, keys across)."""
    weights = np.asarray(weights)
    figure = Figure(figsize=(3.2 * len(weights) + 0.7, 3.5), layout="constrained")
    axes = np.atleast_1d(figure.subplots(1, len(weights)))
    for ax, w, title in zip(axes, weights, titles):
        image = ax.imshow(w, vmin=0, vmax=1, cmap="Blues")
        ax.set(title=title, xlabel="key position", ylabel="query position")
        ax.set_xticks(range(w.shape[1]))
        ax.set_yticks(range(w.shape[0]))
    figure.colorbar(image, ax=list(axes), shrink=0.8, label="weight")
    return figure


@idle_while_grading()
@drawn_in_course_style
def spread_figure(d_values, spread_match, spread_unrelated, formula_match, formula_unrelated, noise) -> Figure:
    """Standard deviation of the similarity estimate q·k/d against d, simulated and by formula."""
    figure = Figure(figsize=(6.7, 4.0), layout="constrained")
    ax = figure.subplots()
    ax.loglog(d_values, formula_match, "-", color="tab:orange", lw=1.2, label="match, formula")
    ax.loglog(d_values, spread_match, "o", color="tab:orange", ms=5, label="match, simulated")
    ax.loglog(d_values, formula_unrelated, "-", color="tab:blue", lw=1.2, label="unrelated, formula")
    ax.loglog(d_values, spread_unrelated, "s", color="tab:blue", ms=4, label="unrelated, simulated")
    ax.axhline(1.0, color="0.4", ls=":", lw=1)
    ax.annotate(
        "gap between the true similarities (1 − 0)",
        (d_values[0], 1.0),
        textcoords="offset points",
        xytext=(2, 4),
        color="0.3",
    )
    ax.axvspan(*PRACTICAL, color="tab:green", alpha=0.12, label="d in [32, 128]")
    ax.set(
        xlabel="head size d",
        ylabel="spread (standard deviation) of q·k / d",
        title=f"the estimate narrows like 1/√d (noise σ = {noise})",
    )
    ax.legend(frameon=False, loc="lower left")
    return figure


@idle_while_grading()
@drawn_in_course_style
def winning_figure(d_values, curves: dict, n_keys: int, marks=(), simulated=None) -> Figure:
    """Winning rate against d, one exact curve per noise; optional simulated points and marked head sizes."""
    figure = Figure(figsize=(7.2, 4.2), layout="constrained")
    ax = figure.subplots()
    ax.axvspan(*PRACTICAL, color="tab:green", alpha=0.12, label="d in [32, 128]")
    for (noise, curve), colour, style in zip(curves.items(), ordered_colours(len(curves)), itertools.cycle("-:")):
        ax.plot(d_values, curve, ls=style, color=colour, lw=1.6, label=f"noise σ = {noise}")
    if simulated is not None:
        (d_points, rates, label) = simulated
        ax.plot(d_points, rates, "k^", ms=6, label=label)
    for d, text in marks:
        ax.axvline(d, color="0.5", lw=0.8, ls="--")
        ax.annotate(text, (d, 0.02), rotation=90, color="0.3", xytext=(3, 0), textcoords="offset points")
    ax.axhline(1 / n_keys, color="0.5", lw=0.8, ls=":")
    ax.set_xscale("log", base=2)
    ax.set_xticks([1, 4, 16, 64, 256, 1024], ["1", "4", "16", "64", "256", "1024"])
    ax.set(
        ylim=(0, 1.03),
        xlabel="head size d (log scale)",
        ylabel="match wins",
        title=f"how often the match outscores {n_keys - 1} unrelated keys",
    )
    ax.legend(frameon=False, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return figure
