"""Notebook 05's pictures: masks drawn as grids.

Every mask is drawn the same way: queries down, keys across, kept entries dark; entries forbidden
because the key is filler are tinted apart from those forbidden by the pattern (future, window, blocks).
"""

from __future__ import annotations

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from ..figure_style import drawn_in_course_style
from ..grading import idle_while_grading
from ..i18n import N_, _, ngettext, number, translated
from ..local_attention import block_sparse_work, keys_in_cache
from ..masks import kept_fraction
from ..text_alternative import with_lead
from . import picture  # noqa: F401  (the notebook imports it from here)

FORBIDDEN, FILLER, KEPT = 0, 1, 2
KEPT_COLOUR, FORBIDDEN_COLOUR, FILLER_COLOUR = "#2f6fb0", "#eeeeee", "#f5c99b"
MASK_COLOURS = ListedColormap([FORBIDDEN_COLOUR, FILLER_COLOUR, KEPT_COLOUR])  # indexed by the codes above
# The titles notebook 05 passes to these pictures. A notebook's code is the same in every language, so its
# titles are English there; they are marked here and translated where they are drawn (``translated``), and a
# title not listed stays as the notebook wrote it.
NOTEBOOK_TITLES = (
    N_("causal"),
    N_("padding (length 8 of 12)"),
    N_("sliding window (w = 4)"),
    N_("block-sparse (tiles of 3)"),
    N_("prefix LM:\ncausal OR key < 4"),
    N_("window 3 OR 2 sinks\n(and causal)"),
    N_("local 3 OR global\nfirst (and causal)"),
    N_("local"),  # the kinds of block-sparse layout (local_attention.layout_mask's names)
    N_("global + local"),
    N_("strided"),
)

# each colour's meaning, for a legend (the mask widget's): marked N_, shown through translated() when drawn
LEGEND_ITEMS = [
    (KEPT_COLOUR, N_("may attend")),
    (FORBIDDEN_COLOUR, N_("forbidden by the pattern")),
    (FILLER_COLOUR, N_("key is filler")),
]


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
    ax.set_xlabel(_("key"))
    ax.set_ylabel(_("query"))
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
    return _("{title}\nkeeps {kept}").format(title=title, kept=number(kept_fraction(mask), ".1%"))


def _one_line(title: str) -> str:
    """A panel's title as one line, for the text alternative."""
    return " ".join(title.split())


def _rows_without_keys(mask) -> int:
    return int((~np.asarray(mask, dtype=bool).any(axis=-1)).sum())


@idle_while_grading()
@drawn_in_course_style
def four_masks_figure(panels: dict) -> Figure:
    """The four masks of the lesson in a 2 × 2 grid: ``{title: (mask, key_is_real or None, block or None)}``,
    each titled with the share of the score matrix it keeps."""
    panels = {translated(title): panel for title, panel in panels.items()}
    figure = Figure(figsize=(7.1, 7.3), layout="constrained")
    axes = figure.subplots(2, 2)
    for ax, (title, (mask, key_is_real, block)) in zip(axes.flat, panels.items()):
        draw_mask(ax, mask, _keeps(title, mask), key_is_real=key_is_real, block=block)
    kept = {title: kept_fraction(mask) for title, (mask, _, _) in panels.items()}
    most, least = max(kept, key=kept.get), min(kept, key=kept.get)
    lead = _(
        "The dark cells are the scores a kernel must compute, and the masks keep very different shares of them: "
        "“{most}” keeps the most, {most_kept}, and “{least}” the least, {least_kept}."
    ).format(
        most=_one_line(most),
        most_kept=number(kept[most], ".1%"),
        least=_one_line(least),
        least_kept=number(kept[least], ".1%"),
    )
    return with_lead(figure, lead)


@idle_while_grading()
@drawn_in_course_style
def keys_not_queries_figure(keys_masked, rows_masked_too, key_is_real) -> Figure:
    """Padding that masks the filler keys (left) against padding that also masks the filler queries (right)."""
    figure = Figure(figsize=(7.1, 4.2), layout="constrained")
    left, right = figure.subplots(1, 2)
    draw_mask(left, keys_masked, _("causal AND key is real\n(the course's attention_mask)"), key_is_real=key_is_real)
    draw_mask(
        right,
        rows_masked_too,
        _("…and filler queries masked too\n(rows with nothing allowed)"),
        key_is_real=key_is_real,
    )
    filler = int((~np.asarray(key_is_real, dtype=bool)).sum())
    if filler == 1:  # "the last column", or "the last 3 columns": different sentences, not one counted
        left_says = _("On the left only the filler key, the last column, is forbidden to every query.")
    else:
        left_says = _("On the left only the filler keys, the last {filler} columns, are forbidden to every query.")
    left_says = left_says.format(filler=filler)
    empty = _rows_without_keys(rows_masked_too)
    right_says = ngettext(
        "On the right the filler's own queries are masked too, which leaves {empty} row with no allowed key at "
        "all: where a softmax without a guard returns NaN, for an output nobody uses.",
        "On the right the filler's own queries are masked too, which leaves {empty} rows with no allowed key at "
        "all: where a softmax without a guard returns NaN, for outputs nobody uses.",
        empty,
    ).format(empty=empty)
    return with_lead(figure, f"{left_says} {right_says}")  # two whole sentences, one per panel


@idle_while_grading()
@drawn_in_course_style
def padding_damage_figure(lengths, filler_share, output_error, n: int) -> Figure:
    """What a forgotten padding mask costs each real length L in a batch padded to ``n``."""
    lengths = np.asarray(lengths)
    figure = Figure(figsize=(7.1, 3.8), layout="constrained")
    ax = figure.subplots()
    ax.plot(lengths, filler_share, "o-", ms=3, label=_("share of attention on filler"))
    ax.plot(lengths, output_error, "s-", ms=3, label=_("error of the output (in value-vector lengths)"))
    ax.plot(lengths, (n - lengths) / n, "k:", lw=1, label="(n − L) / n")
    ax.set(
        xlabel=_("real length L of the sequence (batch padded to n = {n})").format(n=n),
        ylim=(0, None),
    )
    ax.set_title(_("forgetting the padding mask: the shorter the sequence, the worse"))
    ax.legend()
    short, long = 0, int(np.flatnonzero(lengths < n)[-1])  # the shortest length, and the longest with filler
    lead = _(
        "The shorter the real sequence, the more of its attention goes to the filler, close to the dotted line "
        "(n − L)/n: at L = {short} the filler takes {short_share} and the output is off by {short_error} "
        "value-vector lengths; at L = {long} it takes {long_share} and the output is off by "
        "{long_error}."
    ).format(
        short=lengths[short],
        short_share=number(filler_share[short], ".0%"),
        short_error=number(output_error[short], ".2f"),
        long=lengths[long],
        long_share=number(filler_share[long], ".0%"),
        long_error=number(output_error[long], ".2f"),
    )
    return with_lead(figure, lead)


@idle_while_grading()
@drawn_in_course_style
def cache_growth_figure(bytes_per_token: int, context: int, window: int, model: str) -> Figure:
    """The KV cache while generating ``context`` tokens: every earlier token (causal) against a window."""
    figure = Figure(figsize=(7.1, 3.1), layout="constrained")
    ax = figure.subplots()
    tokens = np.arange(1, context + 1)
    ax.plot(tokens, bytes_per_token * keys_in_cache(context) / 2**30, label=_("causal: every earlier token"))
    window_label = _("window of {window}").format(window=window)
    ax.plot(tokens, bytes_per_token * keys_in_cache(context, window) / 2**30, label=window_label)
    ax.set(
        xlabel=_("tokens generated"),
        ylabel=_("KV cache (GiB)"),
        title=_("the window bounds the cache ({model} shape)").format(model=model),
    )
    ax.legend()
    full, bounded = (bytes_per_token * keys_in_cache(context, w)[-1] / 2**30 for w in (None, window))
    ratio = round(full / bounded)  # a whole number of times: counted (Russian: "в 2 раза", "в 5 раз")
    lead = ngettext(
        "With the causal mask the cache grows with every token, to {full} GiB after {context} tokens. "
        "With a window of {window} it stops growing once it holds {window} tokens, at {bounded} GiB, "
        "{ratio} time less.",
        "With the causal mask the cache grows with every token, to {full} GiB after {context} tokens. "
        "With a window of {window} it stops growing once it holds {window} tokens, at {bounded} GiB, "
        "{ratio} times less.",
        ratio,
    ).format(
        full=number(full, ".1f"),
        context=number(context, ","),
        window=number(window, ","),
        bounded=number(bounded, ".1f"),
        ratio=ratio,
    )
    return with_lead(figure, lead)


@idle_while_grading()
@drawn_in_course_style
def receptive_field_figure(reach_by_layers: dict) -> Figure:
    """``{layers: (n, n) reach}`` side by side, each titled with how far back the last token reaches."""
    figure = Figure(figsize=(6.9, 3.1), layout="constrained")
    axes = np.atleast_1d(figure.subplots(1, len(reach_by_layers)))
    reaches = {}  # layers: how far back the last token reaches
    for ax, (layers, reach) in zip(axes, reach_by_layers.items()):
        reach = np.asarray(reach, dtype=bool)
        back = reach.shape[1] - 1 - int(np.argmax(reach[-1]))  # from the last token to the first it sees
        title = ngettext(
            "{layers} layer: the last\ntoken reaches back\n{back} positions",
            "{layers} layers: the last\ntoken reaches back\n{back} positions",
            layers,
        ).format(layers=layers, back=back)
        draw_mask(ax, reach, title)
        reaches[layers] = back
    (fewest, near), (most, far) = min(reaches.items()), max(reaches.items())
    lead = ngettext(
        "Through {most} layers the last token reaches back {far} positions, against {near} through {fewest} "
        "layer: a window limits what one layer sees, not how far the layers together reach.",
        "Through {most} layers the last token reaches back {far} positions, against {near} through {fewest} "
        "layers: a window limits what one layer sees, not how far the layers together reach.",
        fewest,
    ).format(most=most, far=far, near=near, fewest=fewest)
    return with_lead(figure, lead)


@idle_while_grading()
@drawn_in_course_style
def granting_masks_figure(masks: dict) -> Figure:
    """Masks built with OR (rules that grant attention) side by side, ``{title: mask}``, each with its share kept."""
    masks = {translated(title): mask for title, mask in masks.items()}
    figure = Figure(figsize=(7.2, 3.2), layout="constrained")  # fits a laptop's notebook
    axes = np.atleast_1d(figure.subplots(1, len(masks)))
    for ax, (title, mask) in zip(axes, masks.items()):
        draw_mask(ax, mask, _keeps(title, mask))
    sentences = [_granted(title, np.asarray(mask, dtype=bool)) for title, mask in masks.items()]
    return with_lead(figure, " ".join(sentences))


def _granted(title: str, mask) -> str:
    """What the granting rule adds to a mask, as it shows: a prompt read both ways (a full square in the top
    left corner, above the diagonal too), or first keys every later query sees beside its band."""
    n = mask.shape[0]
    prompt = next((p for p in range(n, 1, -1) if mask[:p, :p].all()), 0)
    seen_by_all = 0
    while seen_by_all < n and mask[seen_by_all:, seen_by_all].all():
        seen_by_all += 1
    if prompt:
        return _(
            "“{title}” reads its first {prompt} tokens both ways: a full square in the top left corner, above "
            "the diagonal too."
        ).format(title=_one_line(title), prompt=prompt)
    if seen_by_all:
        if seen_by_all == 1:  # "the first key", or "the first 2 keys": different sentences
            granted = _("“{title}” keeps the first key visible to every query, beside a band of recent keys.")
        else:
            granted = _("“{title}” keeps the first {keys} keys visible to every query, beside a band of recent keys.")
        return granted.format(title=_one_line(title), keys=seen_by_all)
    return _("“{title}” keeps {kept} of the matrix.").format(
        title=_one_line(title), kept=number(kept_fraction(mask), ".1%")
    )


@idle_while_grading()
@drawn_in_course_style
def block_sparse_figure(layouts: dict, block: int) -> Figure:
    """For each ``{kind: (layout, token mask)}``: the layout of tiles above, the token mask below, with the
    share the mask keeps and the share of n² a kernel computes (kept tiles whole)."""
    figure = Figure(figsize=(6.9, 5.6), layout="constrained")
    axes = figure.subplots(2, len(layouts), height_ratios=[1, 2.0], squeeze=False)
    extra = []  # for each layout, what its kernel computes beyond what its mask keeps (share of n²)
    for column, (kind, (layout, mask)) in enumerate(layouts.items()):
        n = np.asarray(mask).shape[0]
        draw_mask(
            axes[0, column], layout, _("{kind}: layout {shape}").format(kind=translated(kind), shape=np.shape(layout))
        )
        axes[0, column].set(xlabel=_("key block"), ylabel=_("query block"))
        work = block_sparse_work(layout, block, n) / n**2
        tokens = _("tokens: keeps {kept}\ncomputes {work} of n²").format(
            kept=number(kept_fraction(mask), ".1%"), work=number(work, ".1%")
        )
        draw_mask(axes[1, column], mask, tokens, block=block)
        extra.append(work - kept_fraction(mask))
    lead = _(
        "Each layout of tiles (above) becomes a token mask (below), and a kernel computes every kept tile whole, "
        "the masked half of each diagonal tile too: each layout computes up to {most} points of n² more than "
        "its mask keeps."
    ).format(most=number(100 * max(extra), ".1f"))
    return with_lead(figure, lead)
