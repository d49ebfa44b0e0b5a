"""Static pictures of notebook 07: masks at decode time, composed masks, and cache bytes per token of every
model of the course."""

from __future__ import annotations

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure

from ..generation import CacheLayout, bottom_right_causal_mask, top_left_causal_mask
from ..figure_style import KV_LAYOUT_COLOURS, drawn_in_course_style
from ..grading import idle_while_grading
from ..model_configs import KiB
from . import picture  # noqa: F401  (the notebook imports it from here)

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
    ax.set_xlabel("key position")
    ax.set_ylabel("query position")
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
        f"bottom right (right): query {first} + i\nsees keys 0 … {first} + i",
        first_query=first,
    )
    draw_mask(
        right,
        top_left_causal_mask(n_new, n_keys),
        "top left, np.tril (wrong for a cache):\nquery i sees keys 0 … i",
        first_query=first,
    )
    return figure


@idle_while_grading()
@drawn_in_course_style
def composed_masks_figure(masks: dict[str, np.ndarray]) -> Figure:
    """A row of square masks side by side, each with its title."""
    figure = Figure(figsize=(min(2.4 * len(masks), 7.2), 3.0), layout="constrained")
    axes = np.atleast_1d(figure.subplots(1, len(masks)))
    for ax, (title, mask) in zip(axes, masks.items()):
        draw_mask(ax, mask, title)
        ax.set_ylabel("query" if ax is axes[0] else "")
    return figure


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
            f"{at_long:,.0f}" + (f" (at {short // 1024}K: {at_short:,.0f})" if abs(at_short - at_long) > 0.5 else ""),
            va="center",
        )
    labels = []
    for name in names:
        layout = layouts[name]
        kind = layout.attention + (
            f", {layout.local_layers} of {layout.layers} layers local"
            if 0 < layout.local_layers < layout.layers
            else ", rolling buffer"
            if layout.local_layers
            else ""
        )
        labels.append(f"{name} ({kind})")
    ax.set_yticks(y, labels)
    ax.set_xscale("log")
    ax.set_xlim(2, 30000)
    ax.set_xlabel(
        f"KV cache per token of context (KiB, bf16):\nfilled at {long // 1024}K tokens, open at {short // 1024}K",
    )
    ax.grid(True, axis="x", alpha=0.3)
    for spine in ("top", "right"):
        ax.spines[spine].set_visible(False)
    return figure
