"""Which columns of the width feed which head: the split ``(h d)`` and the silent bug ``(d h)``.

Splitting the width ``D = h·d`` into heads is one axis read as two. Read as ``(h d)`` (h outer,
d inner) head ``i`` owns the contiguous columns ``i*d … (i+1)*d - 1``. Read as ``(d h)`` the roles
are swapped and head ``i`` owns every h-th column ``i, i+h, i+2h, …``: the shapes are the same,
nothing fails, and every head sees the wrong features.
"""

from __future__ import annotations

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure

from ..figure_style import drawn_in_course_style
from ..grading import idle_while_grading
from ..i18n import _, number
from ..heads import ORDERS, head_of_column
from ..text_alternative import with_lead
from . import picture  # noqa: F401  (the notebook imports it from here)

# Ten clearly different colours, reused in a cycle when there are more than ten heads.
HEAD_COLOURS = ListedColormap(
    ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#ff9da7", "#bab0ac"],
    name="heads",
)


def draw_columns(ax, owners: np.ndarray, *, numbers: bool = True):
    """Draw one row of cells, one per column, coloured by the head it feeds; return the image."""
    image = ax.imshow(
        (owners % HEAD_COLOURS.N)[None, :],
        cmap=HEAD_COLOURS,
        vmin=-0.5,
        vmax=HEAD_COLOURS.N - 0.5,
        aspect="auto",
        interpolation="nearest",
    )
    ax.set_yticks([])
    if numbers:
        for column, head in enumerate(owners):
            ax.text(column, 0, str(head), ha="center", va="center", color="white", fontweight="bold")
    return image


@idle_while_grading()
@drawn_in_course_style
def split_orders_figure(width: int = 8, heads: int = 2) -> Figure:
    """The same width cut as ``(h d)`` and as ``(d h)``: each cell is a column, its number the head."""
    figure = Figure(figsize=(7.0, 2.2), layout="constrained")
    axes = figure.subplots(2, 1)
    for ax, order in zip(axes, ORDERS):
        draw_columns(ax, head_of_column(width, heads, order))
        ax.set_xticks(range(width))
        ax.set_ylabel(order, rotation=0, ha="right", va="center")
    axes[0].set_title(
        _(
            "D = {width} columns cut into h = {heads} heads of d = {d}:\nthe number in each column is the head it feeds"
        ).format(width=width, heads=heads, d=width // heads),
    )
    axes[-1].set_xlabel(_("column of the width"))
    return with_lead(figure, _split_orders_lead(width, heads))


def _split_orders_lead(width: int, heads: int) -> str:
    """What the two readings give head 0, from the columns each reading assigns it."""
    contiguous, scattered = (np.flatnonzero(head_of_column(width, heads, order) == 0) for order in ORDERS)
    return _(
        "Read as {right}, head 0 owns the neighbouring columns {first} to {last}; read as {wrong}, it owns the "
        "scattered columns {scattered}. The shapes are the same, so nothing fails, yet each head gets the wrong "
        "features."
    ).format(
        right=ORDERS[0],
        wrong=ORDERS[1],
        first=contiguous[0],
        last=contiguous[-1],
        scattered=", ".join(str(c) for c in scattered),
    )


@idle_while_grading()
@drawn_in_course_style
def score_sum_figure(head_scores, single_head_scores) -> Figure:
    """Each head's score matrix ``Q_i K_iᵀ`` and the single head's ``Q Kᵀ``, their sum, on one colour scale."""
    single_head_scores = np.asarray(single_head_scores)  # (n, n)
    matrices = [np.asarray(s) for s in head_scores] + [single_head_scores]
    titles = [_("head {i}:\n$Q_{i} K_{i}^T$").format(i=i) for i in range(len(head_scores))]
    titles.append(_("one head:\n$Q K^T$ = the sum"))
    limit = max(np.abs(m).max() for m in matrices)  # one symmetric scale, so that colours add up by eye
    n_q, n_k = single_head_scores.shape
    figure = Figure(figsize=(7.2, 2.9), layout="constrained")
    axes = figure.subplots(1, len(matrices), sharey=True)
    for ax, matrix, title in zip(axes, matrices, titles):
        image = ax.imshow(matrix, cmap="RdBu_r", vmin=-limit, vmax=limit)
        ax.set_title(title)
        ax.set(xlabel=_("key"), xticks=range(n_k), yticks=range(n_q))
    axes[0].set_ylabel(_("query"))
    figure.colorbar(image, ax=list(axes), shrink=0.85, label=_("score (before 1/√d)"))
    return with_lead(figure, _score_sum_lead(matrices[:-1], single_head_scores))


def _score_sum_lead(head_scores, single_head_scores) -> str:
    """The heads' patterns differ and add up to the single head's, cell by cell (how closely: measured)."""
    heads = len(head_scores)
    largest_difference = np.abs(sum(head_scores) - single_head_scores).max()
    if heads == 1:  # nothing to sum: a different sentence, not a count
        template = _("The head's matrix is the single head's matrix: the largest difference is {difference}.")
    else:
        template = _(
            "Each of the {heads} heads sees its own pattern of scores, and the last matrix, the single head's, is "
            "their sum cell by cell (the largest difference is {difference}). One head gets only the sum; "
            "{heads} heads keep the parts apart, each with its own softmax."
        )
    return template.format(heads=heads, difference=number(largest_difference, ".1e"))
