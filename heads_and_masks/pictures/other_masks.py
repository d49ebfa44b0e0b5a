"""Notebook 05's pictures: masks drawn as grids.

Every mask is drawn the same way: queries down, keys across, kept entries dark; entries forbidden
because the key is filler are tinted apart from those forbidden by the pattern (future, window, blocks).
"""

from __future__ import annotations

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from ..figure_style import drawn_in_course_style
from ..grading import idle_while_grading
from ..local_attention import block_sparse_work, keys_in_cache
from ..masks import kept_fraction
from . import picture  # noqa: F401  (the notebook imports it from here)

FORBIDDEN, FILLER, KEPT = 0, 1, 2
KEPT_COLOUR, FORBIDDEN_COLOUR, FILLER_COLOUR = "#2f6fb0", "#eeeeee", "#f5c99b"
MASK_COLOURS = ListedColormap([FORBIDDEN_COLOUR, FILLER_COLOUR, KEPT_COLOUR])  # indexed by the codes above
LEGEND_ITEMS = [
    (KEPT_COLOUR, "may attend"),
    (FORBIDDEN_COLOUR, "forbidden by the pattern"),
    (FILLER_COLOUR, "key is filler"),
]
LEGEND = [Patch(facecolor=colour, edgecolor="0.6", label=label) for colour, label in LEGEND_ITEMS]


def mask_image(mask, key_is_real=None):
    """(n_q, n_k) codes for drawing: KEPT where allowed, FILLER where the key is padding, else FORBIDDEN."""
    mask = np.asarray(mask, dtype=bool)
    codes = np.where(mask, KEPT, FORBIDDEN)
    if key_is_real is not None:
        codes = np.where(~mask & ~np.asarray(key_is_real, dtype=bool)[None, :], FILLER, codes)
    return codes


def draw_mask(ax, mask, title="", key_is_real=None, block=None, labels=None):
    """Draw one (n_q, n_k) mask on ``ax``: queries down, keys across. Returns the image artist."""
    codes = mask_image(mask, key_is_real)
    image = ax.imshow(codes, cmap=MASK_COLOURS, vmin=0, vmax=2, interpolation="nearest")
    n_q, n_k = codes.shape
    ax.set_title(title)
    ax.set_xlabel("key")
    ax.set_ylabel("query")
    if labels is not None:
        ax.set_xticks(range(n_k), labels, rotation=90)
        ax.set_yticks(range(n_q), labels)
    else:
        for axis in (ax.xaxis, ax.yaxis):  # positions are whole numbers: no tick at 2.5
            axis.set_major_locator(MaxNLocator(nbins=5, integer=True))
    show_blocks(ax, block, n_q, n_k)
    return image


def show_blocks(ax, block, n_q, n_k):
    """White lines between the tiles of a block-sparse mask (none when ``block`` is None)."""
    step = block or max(n_q, n_k) + 1
    ax.set_xticks(np.arange(step, n_k, step) - 0.5, minor=True)
    ax.set_yticks(np.arange(step, n_q, step) - 0.5, minor=True)
    if block:
        ax.grid(which="minor", color="white", linewidth=1.2)
    else:
        ax.grid(False, which="minor")
    ax.tick_params(which="minor", length=0)


# ---------------------------------------------------------------- the notebook's pictures
# Each returns a matplotlib Figure (drawn by heads_and_masks.pictures.picture); in grading mode none is built.


def _keeps(title: str, mask) -> str:
    return f"{title}\nkeeps {kept_fraction(mask):.1%}"


@idle_while_grading()
@drawn_in_course_style
def four_masks_figure(panels: dict) -> Figure:
    """The four masks of the lesson in a 2 × 2 grid: ``{title: (mask, key_is_real or None, block or None)}``,
    each titled with the share of the score matrix it keeps."""
    figure = Figure(figsize=(7.1, 7.3), layout="constrained")
    axes = figure.subplots(2, 2)
    for ax, (title, (mask, key_is_real, block)) in zip(axes.flat, panels.items()):
        draw_mask(ax, mask, _keeps(title, mask), key_is_real=key_is_real, block=block)
    return figure


@idle_while_grading()
@drawn_in_course_style
def keys_not_queries_figure(keys_masked, rows_masked_too, key_is_real) -> Figure:
    """Padding that masks the filler keys (left) against padding that also masks the filler queries (right)."""
    figure = Figure(figsize=(7.1, 4.2), layout="constrained")
    left, right = figure.subplots(1, 2)
    draw_mask(left, keys_masked, "causal AND key is real\n(the course's attention_mask)", key_is_real=key_is_real)
    draw_mask(
        right, rows_masked_too, "…and filler queries masked too\n(rows with nothing allowed)", key_is_real=key_is_real
    )
    return figure


@idle_while_grading()
@drawn_in_course_style
def padding_damage_figure(lengths, filler_share, output_error, n: int) -> Figure:
    """What a forgotten padding mask costs each real length L in a batch padded to ``n``."""
    lengths = np.asarray(lengths)
    figure = Figure(figsize=(7.1, 3.8), layout="constrained")
    ax = figure.subplots()
    ax.plot(lengths, filler_share, "o-", ms=3, label="share of attention on filler")
    ax.plot(lengths, output_error, "s-", ms=3, label="error of the output (in value-vector lengths)")
    ax.plot(lengths, (n - lengths) / n, "k:", lw=1, label="(n − L) / n")
    ax.set(
        xlabel=f"real length L of the sequence (batch padded to n = {n})",
        ylim=(0, None),
    )
    ax.set_title("forgetting the padding mask: the shorter the sequence, the worse")
    ax.legend()
    return figure


@idle_while_grading()
@drawn_in_course_style
def cache_growth_figure(bytes_per_token: int, context: int, window: int, model: str) -> Figure:
    """The KV cache while generating ``context`` tokens: every earlier token (causal) against a window."""
    figure = Figure(figsize=(7.1, 3.1), layout="constrained")
    ax = figure.subplots()
    tokens = np.arange(1, context + 1)
    ax.plot(tokens, bytes_per_token * keys_in_cache(context) / 2**30, label="causal: every earlier token")
    ax.plot(tokens, bytes_per_token * keys_in_cache(context, window) / 2**30, label=f"window of {window}")
    ax.set(xlabel="tokens generated", ylabel="KV cache (GiB)", title=f"the window bounds the cache ({model} shape)")
    ax.legend()
    return figure


@idle_while_grading()
@drawn_in_course_style
def receptive_field_figure(reach_by_layers: dict) -> Figure:
    """``{layers: (n, n) reach}`` side by side, each titled with how far back the last token reaches."""
    figure = Figure(figsize=(6.9, 3.1), layout="constrained")
    axes = np.atleast_1d(figure.subplots(1, len(reach_by_layers)))
    for ax, (layers, reach) in zip(axes, reach_by_layers.items()):
        reach = np.asarray(reach, dtype=bool)
        back = reach.shape[1] - 1 - int(np.argmax(reach[-1]))  # from the last token to the first it sees
        draw_mask(ax, reach, f"{layers} layer(s): the last\ntoken reaches back\n{back} positions")
    return figure


@idle_while_grading()
@drawn_in_course_style
def granting_masks_figure(masks: dict) -> Figure:
    """Masks built with OR (rules that grant attention) side by side, ``{title: mask}``, each with its share kept."""
    figure = Figure(figsize=(7.2, 3.2), layout="constrained")  # fits a laptop's notebook
    axes = np.atleast_1d(figure.subplots(1, len(masks)))
    for ax, (title, mask) in zip(axes, masks.items()):
        draw_mask(ax, mask, _keeps(title, mask))
    return figure


@idle_while_grading()
@drawn_in_course_style
def block_sparse_figure(layouts: dict, block: int) -> Figure:
    """For each ``{kind: (layout, token mask)}``: the layout of tiles above, the token mask below, with the
    share the mask keeps and the share of n² a kernel computes (kept tiles whole)."""
    figure = Figure(figsize=(6.9, 5.6), layout="constrained")
    axes = figure.subplots(2, len(layouts), height_ratios=[1, 2.0], squeeze=False)
    for column, (kind, (layout, mask)) in enumerate(layouts.items()):
        n = np.asarray(mask).shape[0]
        draw_mask(axes[0, column], layout, f"{kind}: layout {np.shape(layout)}")
        axes[0, column].set(xlabel="key block", ylabel="query block")
        work = block_sparse_work(layout, block, n) / n**2
        draw_mask(
            axes[1, column], mask, f"tokens: keeps {kept_fraction(mask):.1%}\ncomputes {work:.1%} of n²", block=block
        )
    return figure
