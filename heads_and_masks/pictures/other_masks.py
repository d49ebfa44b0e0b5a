"""Notebook 05's pictures: masks drawn as grids.

Every mask is drawn the same way: queries down, keys across, kept entries dark; entries forbidden
because the key is filler are tinted apart from those forbidden by the pattern (future, window, blocks).
"""

from __future__ import annotations

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch

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
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("key", fontsize=8)
    ax.set_ylabel("query", fontsize=8)
    if labels is not None:
        ax.set_xticks(range(n_k), labels, rotation=90, fontsize=8)
        ax.set_yticks(range(n_q), labels, fontsize=8)
    else:
        ax.tick_params(labelsize=8)
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
