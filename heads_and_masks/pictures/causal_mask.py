"""Static pictures of notebook 03: a mask with its forbidden cells hatched, the four ways of
forbidding a score side by side, and how the widget's readouts move with the head size."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from ..attention import masked_softmax
from ..figure_style import drawn_in_course_style
from ..grading import idle_while_grading
from ..i18n import N_, _, ngettext, number, translated
from ..text_alternative import with_lead
from . import picture  # noqa: F401  (the notebooks import it from here)

HATCH = dict(facecolor="0.93", edgecolor="0.5", hatch="///", linewidth=0)


def _grid(ax, labels_x, labels_y, *, keys_label=None, queries_label=None):
    ax.set_xticks(range(len(labels_x)), labels_x)
    ax.set_yticks(range(len(labels_y)), labels_y)
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    ax.set_xlabel(keys_label or _("keys"))
    ax.set_ylabel(queries_label or _("queries"))
    ax.tick_params(length=0)


def hatch_cells(ax, cells) -> None:
    """Hatch the (row, column) cells: the picture of 'forbidden', distinct from a weight of 0."""
    for i, j in cells:
        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, **HATCH))


def weights_heatmap(ax, weights, tokens, *, forbidden=None, title="", numbers=True, missing=None):
    """A weight matrix (keys across, queries down), forbidden cells hatched, absent cells blank."""
    n_q, n_k = weights.shape
    shown = np.where(missing, np.nan, weights) if missing is not None else weights
    ax.imshow(shown, cmap="Blues", vmin=0.0, vmax=1.0)
    _grid(ax, tokens[:n_k], tokens[:n_q])
    if forbidden is not None:
        hatch_cells(ax, np.argwhere(forbidden))
    if numbers:
        for i in range(n_q):
            for j in range(n_k):
                if (missing is None or not missing[i, j]) and (
                    forbidden is None or not forbidden[i, j] or weights[i, j] != 0
                ):
                    ax.text(
                        j,
                        i,
                        f"{weights[i, j]:.2f}",
                        ha="center",
                        va="center",
                        color="white" if weights[i, j] > 0.55 else "black",
                    )
    ax.set_title(title, pad=8)


@idle_while_grading()
@drawn_in_course_style
def mask_figure(mask, tokens) -> Figure:
    """The boolean mask itself: allowed cells marked True, forbidden ones hatched."""
    mask = np.asarray(mask, dtype=bool)
    figure = Figure(figsize=(3.8, 3.6), layout="constrained")
    ax = figure.add_subplot()
    ax.imshow(np.where(mask, 0.35, 0.0), cmap="Greens", vmin=0, vmax=1)
    _grid(ax, tokens, tokens, keys_label=_("keys (may be looked at?)"))
    hatch_cells(ax, np.argwhere(~mask))
    for i, j in np.argwhere(mask):
        ax.text(j, i, "True", ha="center", va="center")
    if np.array_equal(mask, np.tril(np.ones_like(mask))):
        lead = _(
            "The allowed cells form the lower triangle, on and below the diagonal: each query may look at itself "
            "and at the tokens before it, so “{first}” sees only itself and “{last}” sees all {n}. The hatched "
            "cells above the diagonal are the future, forbidden."
        ).format(first=tokens[0], last=tokens[-1], n=len(tokens))
    else:
        lead = _("{allowed} of the {cells} cells are allowed (True); the hatched ones are forbidden.").format(
            allowed=int(mask.sum()), cells=mask.size
        )
    return with_lead(figure, lead)


@idle_while_grading()
@drawn_in_course_style
def four_ways_figure(scores, mask, tokens) -> Figure:
    """The four candidate ways of forbidding the future, each run on the same scores."""
    scores, mask = np.asarray(scores, dtype=float), np.asarray(mask, dtype=bool)
    n = scores.shape[-1]
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    plain = e / e.sum(axis=-1, keepdims=True)  # softmax with nothing forbidden
    zero_filled = np.where(mask, scores, 0.0)
    e0 = np.exp(zero_filled - zero_filled.max(axis=-1, keepdims=True))
    panels = [
        (_("−∞ before softmax"), masked_softmax(scores, mask), ~mask, None),
        (_("0 before softmax"), e0 / e0.sum(axis=-1, keepdims=True), ~mask, None),
        (_("entries deleted"), masked_softmax(scores, mask), None, ~mask),
        (_("mask after softmax"), plain * mask, ~mask, None),
    ]
    figure = Figure(figsize=(7.2, 6.8), layout="constrained")  # two by two: fits a laptop's notebook
    axes = figure.subplots(2, 2).ravel()
    for ax, (title, weights, forbidden, missing) in zip(axes, panels):
        weights_heatmap(ax, weights, tokens, forbidden=forbidden, missing=missing, title=title)
        sums = np.where(missing, 0.0, weights).sum(axis=-1) if missing is not None else weights.sum(axis=-1)
        for i, total in enumerate(sums):
            entries = ngettext("{n} entry", "{n} entries", i + 1).format(n=i + 1)
            note = f"Σ={total:.2f}" if missing is None else entries  # beside the cells' numbers: the same point
            bad = missing is None and abs(total - 1) > 1e-9
            ax.text(n - 0.3, i, note, ha="left", va="center", color="tab:red" if bad else "0.3")
        ax.set_xlim(-0.5, n + 1.3)
    axes[1].set_xlabel(_("forbidden keys get weight: a leak"), color="tab:red")
    axes[2].set_xlabel(_("rows of 1, 2, … entries: not a matrix"), color="tab:red")
    axes[3].set_xlabel(_("rows no longer sum to 1"), color="tab:red")
    leak = panels[1][1][~mask].max()  # the most weight a forbidden key gets when its score is set to 0
    lengths = mask.sum(axis=-1)
    lead = _(
        "Only −∞ before softmax gives the forbidden keys exactly 0 with every row summing to 1. Setting their "
        "scores to 0 gives a forbidden key up to {leak} of a row (a leak), deleting the entries leaves rows "
        "of {shortest} to {longest} entries (not a matrix), and masking after softmax leaves rows that sum to as "
        "little as {smallest}."
    ).format(
        leak=number(leak, ".2f"),
        shortest=lengths.min(),
        longest=lengths.max(),
        smallest=number(panels[3][1].sum(axis=-1).min(), ".2f"),
    )
    return with_lead(figure, lead)


@idle_while_grading()
@drawn_in_course_style
def readouts_versus_d_figure(head_sizes, with_sqrt, without_sqrt) -> Figure:
    """Spread, entropy and gradient scale against the head size, with and without dividing by √d.

    ``with_sqrt`` and ``without_sqrt`` map a readout name to a list of values, one per head size.
    """
    head_sizes = np.asarray(head_sizes, dtype=float)
    figure = Figure(figsize=(7.2, 3.2), layout="constrained")
    axes = figure.subplots(1, 3)
    for ax, (name, title), log in zip(axes, READOUT_TITLES.items(), [True, False, False]):
        ax.plot(head_sizes, with_sqrt[name], "o-", color="tab:blue", label=_("divided by √d"))
        ax.plot(head_sizes, without_sqrt[name], "s-", color="tab:red", label=_("not divided"))
        ax.set_xscale("log", base=2)
        ax.set_xlabel(_("head size d"))
        ax.set_title(translated(title))
        if log:
            ax.set_yscale("log", base=2)
            reference = np.sqrt(head_sizes) * without_sqrt[name][0] / np.sqrt(head_sizes[0])
            ax.plot(head_sizes, reference, ":", color="0.4", label="∝ √d")  # a formula: the same in every language
        ax.grid(alpha=0.3)
    axes[0].legend()
    return with_lead(figure, _readouts_lead(head_sizes, with_sqrt, without_sqrt))


# the widget's readouts drawn (its readout names, which stay English: the keys of with_sqrt and without_sqrt),
# each with its panel's title
READOUT_TITLES = {
    "score spread": N_("score spread (max − min)"),
    "row entropy (bits)": N_("row entropy (bits)"),
    "gradient scale": N_("gradient scale"),
}


def _readouts_lead(head_sizes, with_sqrt, without_sqrt) -> str:
    """How far each readout moves from the smallest head size to the largest, without and with √d."""
    raw = {name: np.asarray(values) for name, values in without_sqrt.items()}
    scaled = {name: np.asarray(values) for name, values in with_sqrt.items()}
    return _(
        "Not divided by √d (red squares), the score spread grows {growth}-fold from d = {d_first} to "
        "d = {d_last}, along the dotted √d line, while the row entropy goes from {entropy_first} to "
        "{entropy_last} bits and the gradient scale from {gradient_first} to {gradient_last}: the rows "
        "saturate. Divided by √d (blue circles), the spread stays between {low} and {high} and the row "
        "entropy between {entropy_low} and {entropy_high} bits at every head size."
    ).format(
        growth=number(raw["score spread"][-1] / raw["score spread"][0], ".1f"),
        d_first=number(head_sizes[0]),
        d_last=number(head_sizes[-1]),
        entropy_first=number(raw["row entropy (bits)"][0], ".2f"),
        entropy_last=number(raw["row entropy (bits)"][-1], ".2f"),
        gradient_first=number(raw["gradient scale"][0], ".3g"),
        gradient_last=number(raw["gradient scale"][-1], ".3g"),
        low=number(scaled["score spread"].min(), ".2f"),
        high=number(scaled["score spread"].max(), ".2f"),
        entropy_low=number(scaled["row entropy (bits)"].min(), ".2f"),
        entropy_high=number(scaled["row entropy (bits)"].max(), ".2f"),
    )
