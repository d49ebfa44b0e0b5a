"""Static pictures of notebook 07: masks at decode time, composed masks, and cache bytes per token of every
model of the course."""

from __future__ import annotations

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure

from ..generation import CacheLayout, bottom_right_causal_mask, top_left_causal_mask
from ..figure_style import KV_LAYOUT_COLOURS, drawn_in_course_style
from ..grading import idle_while_grading
from ..i18n import N_, _, ngettext, number, translated
from ..model_configs import KiB
from ..text_alternative import with_lead
from . import picture  # noqa: F401  (the notebook imports it from here)

# The titles notebook 07 passes to these pictures. A notebook's code is the same in every language, so its
# titles are English there; they are marked here and translated where they are drawn (``translated``), and a
# title not listed stays as the notebook wrote it.
NOTEBOOK_TITLES = (
    N_("window 4 OR 2 sinks\n(causal AND)"),
    N_("window 4 AND 2 sinks\n(the bug)"),
    N_("prefix LM, prompt of 5:\ncausal OR key < 5"),
    N_("causal only: documents\nsee earlier documents"),
    N_("document mask:\nsame id AND causal"),
)
MASK_COLOURS = ListedColormap(["#e8e8e8", "#1f4e79"])  # forbidden, may attend
ATTENTION_COLOURS = KV_LAYOUT_COLOURS


def draw_mask(ax, mask, title: str, *, first_query: int = 0, key_labels: bool = True) -> None:
    """One boolean mask, [query, key], dark = may attend; rows labelled with their positions."""
    mask = np.asarray(mask, dtype=bool)
    ax.imshow(mask, cmap=MASK_COLOURS, vmin=0, vmax=1, aspect="equal", interpolation="nearest")
    n_q, n_k = mask.shape
    step = 1 if max(n_q, n_k) <= 8 else 2  # every other position labelled on larger masks
    ax.set_xticks(np.arange(0, n_k, step), [str(j) for j in range(0, n_k, step)] if key_labels else [])
    ax.set_yticks(np.arange(0, n_q, step), [str(first_query + i) for i in range(0, n_q, step)])
    ax.set_xticks(np.arange(-0.5, n_k), minor=True)
    ax.set_yticks(np.arange(-0.5, n_q), minor=True)
    ax.grid(which="minor", color="white", linewidth=1)
    ax.tick_params(which="minor", length=0)
    ax.set_xlabel(_("key position"))
    ax.set_ylabel(_("query position"))
    ax.set_title(title)


@idle_while_grading()
@drawn_in_course_style
def decode_masks_figure(n_new: int = 3, n_keys: int = 8) -> Figure:
    """The (n_new, n_keys) causal mask of a chunk of new queries: bottom-right (right) and top-left (wrong)."""
    figure = Figure(figsize=(7.2, 2.6), layout="constrained")
    left, right = figure.subplots(1, 2)
    first = n_keys - n_new  # the position of the first new query
    draw_mask(
        left,
        bottom_right_causal_mask(n_new, n_keys),
        _("bottom right (right): query {first} + i\nsees keys 0 … {first} + i").format(first=first),
        first_query=first,
    )
    draw_mask(
        right,
        top_left_causal_mask(n_new, n_keys),
        _("top left, np.tril (wrong for a cache):\nquery i sees keys 0 … i"),
        first_query=first,
    )
    right, wrong = (mask(n_new, n_keys).sum(axis=-1) for mask in (bottom_right_causal_mask, top_left_causal_mask))
    # one new query and several are different sentences (a position, or a range of them), not one counted
    if n_new == 1:
        lead = _(
            "The new query sits at position {first}. Aligned bottom right, it sees {right_first} keys: every cached "
            "key and itself. Aligned top left, as np.tril does, it sees {wrong_first}: the cache is hidden from it."
        )
    else:
        lead = _(
            "The {new} new queries sit at positions {first} to {last}. Aligned bottom right, they see from "
            "{right_first} to {right_last} keys: every cached key and themselves. Aligned top left, as np.tril "
            "does, they see only {wrong_first} to {wrong_last}: most of the cache is hidden from them."
        )
    lead = lead.format(
        new=n_new,
        first=first,
        last=n_keys - 1,
        right_first=right[0],
        right_last=right[-1],
        wrong_first=wrong[0],
        wrong_last=wrong[-1],
    )
    return with_lead(figure, lead)


@idle_while_grading()
@drawn_in_course_style
def composed_masks_figure(masks: dict[str, np.ndarray]) -> Figure:
    """A row of square masks side by side, each with its title."""
    masks = {translated(title): mask for title, mask in masks.items()}
    figure = Figure(figsize=(min(2.4 * len(masks), 7.2), 3.0), layout="constrained")
    axes = np.atleast_1d(figure.subplots(1, len(masks)))
    for ax, (title, mask) in zip(axes, masks.items()):
        draw_mask(ax, mask, title)
        ax.set_ylabel(_("query") if ax is axes[0] else "")
    sentences = [_mask_sentence(title, np.asarray(mask, dtype=bool)) for title, mask in masks.items()]
    if len(masks) == 2:  # a mask and its correction: what the second takes away from the first
        (first, allowed), (second, kept) = ((" ".join(t.split()), np.asarray(m, dtype=bool)) for t, m in masks.items())
        removed = int((allowed & ~kept).sum())
        sentences.append(
            ngettext(
                "“{second}” forbids {removed} cell that “{first}” allows.",
                "“{second}” forbids {removed} cells that “{first}” allows.",
                removed,
            ).format(first=first, second=second, removed=removed)
        )
    return with_lead(figure, " ".join(sentences))


def _mask_sentence(title: str, mask) -> str:
    """How much a mask keeps, and whether some query is left with nothing to attend to."""
    empty = int((~mask.any(axis=-1)).sum())
    title = " ".join(title.split())
    if not empty:
        return _("“{title}” keeps {kept} of the {cells} cells, and every query sees at least one key.").format(
            title=title, kept=int(mask.sum()), cells=mask.size
        )
    return ngettext(
        "“{title}” keeps {kept} of the {cells} cells, and {empty} query sees no key at all: its row is empty.",
        "“{title}” keeps {kept} of the {cells} cells, and {empty} queries see no key at all: their rows are empty.",
        empty,
    ).format(title=title, kept=int(mask.sum()), cells=mask.size, empty=empty)


@idle_while_grading()
@drawn_in_course_style
def bytes_per_token_figure(
    layouts: dict[str, CacheLayout], short: int = 4096, long: int = 131072, bytes_per_value: int = 2
) -> Figure:
    """Cache per token of context (KiB, log scale) for every model: at a short context (open bar) and a long
    one (filled bar). Global layers cost the same per token at any length; local layers and rolling buffers
    cost less the longer the context; latent caches (MLA) are small from the start."""
    names = sorted(layouts, key=lambda m: layouts[m].bytes_per_token(long, bytes_per_value))
    figure = Figure(figsize=(7.2, 0.32 * len(names) + 1.3), layout="constrained")
    ax = figure.subplots()
    y = np.arange(len(names))
    for i, name in enumerate(names):
        layout = layouts[name]
        colour = ATTENTION_COLOURS.get(layout.attention, "tab:gray")
        at_short = layout.bytes_per_token(short, bytes_per_value) / KiB
        at_long = layout.bytes_per_token(long, bytes_per_value) / KiB
        ax.barh(i, at_short, color="none", edgecolor=colour, height=0.75, linewidth=1.2)
        ax.barh(i, at_long, color=colour, height=0.45)
        ax.text(
            max(at_short, at_long) * 1.08,
            i,
            _bar_label(at_long, at_short, short),
            va="center",
        )
    labels = []
    for name in names:
        layout = layouts[name]
        labels.append(_layout_label(name, layout))
    ax.set_yticks(y, labels)
    ax.set_xscale("log")
    ax.set_xlim(2, 30000)
    ax.set_xlabel(
        _("KV cache per token of context (KiB, bf16):\nfilled at {long_k}K tokens, open at {short_k}K").format(
            long_k=long // 1024, short_k=short // 1024
        ),
    )
    ax.grid(True, axis="x", alpha=0.3)
    for spine in ("top", "right"):
        ax.spines[spine].set_visible(False)
    return with_lead(figure, _bytes_per_token_lead(layouts, short, long, bytes_per_value))


def _bar_label(at_long: float, at_short: float, short: int) -> str:
    """The KiB a token costs at the long context, and at the short one where that differs."""
    if abs(at_short - at_long) <= 0.5:
        return number(at_long, ",.0f")
    return _("{at_long} (at {short_k}K: {at_short})").format(
        at_long=number(at_long, ",.0f"), short_k=short // 1024, at_short=number(at_short, ",.0f")
    )


def _layout_label(name: str, layout: CacheLayout) -> str:
    """A model's name with its kind of attention, and its local layers or its rolling buffer."""
    if 0 < layout.local_layers < layout.layers:
        return _("{name} ({attention}, {local} of {layers} layers local)").format(
            name=name, attention=layout.attention, local=layout.local_layers, layers=layout.layers
        )
    if layout.local_layers:
        return _("{name} ({attention}, rolling buffer)").format(name=name, attention=layout.attention)
    return f"{name} ({layout.attention})"


def _bytes_per_token_lead(layouts: dict[str, CacheLayout], short: int, long: int, bytes_per_value: int) -> str:
    """The spread at the long context, and the model whose cost per token falls most from short to long."""
    at_long = {name: layout.bytes_per_token(long, bytes_per_value) / KiB for name, layout in layouts.items()}
    at_short = {name: layout.bytes_per_token(short, bytes_per_value) / KiB for name, layout in layouts.items()}
    most, least = max(at_long, key=at_long.get), min(at_long, key=at_long.get)
    falls = max(layouts, key=lambda name: at_short[name] / at_long[name])
    return _(
        "At {long_k}K tokens of context, a token costs from {least_kib} KiB of cache ({least}) to "
        "{most_kib} KiB ({most}). Models whose layers are all global cost the same at any length; local "
        "layers and rolling buffers cost less the longer the context: {falls} from {falls_short} KiB at "
        "{short_k}K to {falls_long} KiB at {long_k}K."
    ).format(
        long_k=long // 1024,
        short_k=short // 1024,
        least=least,
        least_kib=number(at_long[least], ",.0f"),
        most=most,
        most_kib=number(at_long[most], ",.0f"),
        falls=falls,
        falls_short=number(at_short[falls], ",.0f"),
        falls_long=number(at_long[falls], ",.0f"),
    )
