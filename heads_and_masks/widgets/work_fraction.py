"""Notebook 04's widget: the score matrix cut into tiles, and how much of it a tiled kernel computes."""

from __future__ import annotations

import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.colors import ListedColormap
from matplotlib.ticker import FixedLocator, MaxNLocator, NullLocator

from ..tiled import (
    MASKED,
    causal_used_fraction,
    computed_fraction_by_tile_size,
    entry_kinds,
    tile_kinds,
    tiled_computed_entries,
)
from ..i18n import N_, _, number, translated
from .base import CourseWidget
from .slider import int_slider
from .fast_text import PathTitle

# The colour and the name of each kind of entry (tiled.SKIPPED, MASKED, USED_ON_DIAGONAL, USED).
ENTRY_COLOURS = ["#e6e6e6", "#f4a261", "#8ecae6", "#2a9d8f"]
ENTRY_LABELS = [
    N_("skipped tile (never computed)"),
    N_("computed, then masked (diagonal tile)"),
    N_("computed and used (diagonal tile)"),
    N_("computed and used (full tile)"),
]


class TileGridWidget(CourseWidget):
    """Choose n and the tile size: see which tiles are computed and what share of the work that is."""

    figsize = (7.3, 3.4)
    max_n = 256
    max_block = 64

    def setup(self):
        self.controls["n"] = int_slider(value=48, min=1, max=self.max_n, step=1, description="n")
        self.controls["block"] = int_slider(value=8, min=1, max=self.max_block, step=1, description=_("tile size B"))
        self.ax_grid, self.ax_curve = self.figure.subplots(1, 2, width_ratios=[1, 1.25])

        ax = self.ax_grid
        self.grid_image = ax.imshow(
            np.zeros((1, 1)), cmap=ListedColormap(ENTRY_COLOURS), vmin=-0.5, vmax=3.5, interpolation="nearest"
        )
        self.tile_lines = LineCollection([], colors="white", linewidths=1.0)
        ax.add_collection(self.tile_lines)
        ax.set_xlabel(_("key"))
        ax.set_ylabel(_("query"))
        ax.xaxis.set_label_position("top")
        ax.xaxis.tick_top()
        for axis in (ax.xaxis, ax.yaxis):  # few tick labels: text is the slowest thing to draw
            axis.set_major_locator(MaxNLocator(4, integer=True))

        ax = self.ax_curve
        (self.curve,) = ax.plot(
            [], [], color="#2a9d8f", marker=".", markersize=3, linewidth=1.2, label=_("tiled: computed / n²")
        )
        self.ideal_line = ax.axhline(1.0, color="black", linestyle="--", linewidth=1, label=_("ideal (n+1)/(2n)"))
        (self.current,) = ax.plot([], [], "o", color="#e76f51", markersize=8, label=_("this tile size"))
        ax.set(xscale="log", ylim=(0.45, 1.03), xlabel=_("tile size B (log scale)"), ylabel=_("share of n² computed"))
        ax.xaxis.set_major_locator(FixedLocator([1, 4, 16, 64, 256]))
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter("{x:.0f}")
        ax.yaxis.set_major_locator(FixedLocator([0.5, 0.625, 0.75, 0.875, 1.0]))
        ax.legend(loc="upper left")
        ax.grid(True, which="major", alpha=0.3)
        self.grid_title = PathTitle(self.ax_grid.title, self.dpi)  # the title names the tile size

    @property
    def picture_lead(self) -> str:
        n, block = int(self.value("n")), int(self.value("block"))
        return _(
            "With n = {n} and tiles of {block} × {block}, the computed tiles cover {computed}% of the n² "
            "entries, against the {ideal}% a causal mask needs: the {masked}% in between is computed in the "
            "diagonal tiles and then masked. The curve shows that smaller tiles come closer to the ideal."
        ).format(
            n=n,
            block=block,
            computed=number(100 * self.readouts["computed fraction"], ".1f"),
            ideal=number(100 * self.readouts["ideal (n+1)/(2n)"], ".1f"),
            masked=number(100 * self.readouts["computed, then masked"], ".1f"),
        )

    def format_readouts(self, readouts):
        """The colour key (as HTML: crisper, and cheaper than a legend redrawn on every update), then the numbers."""
        swatches = "".join(
            f"<div><span style='display:inline-block;width:0.9em;height:0.9em;background:{colour};"
            f"margin-right:0.4em;vertical-align:middle'></span>{translated(label)}</div>"
            for colour, label in zip(ENTRY_COLOURS, ENTRY_LABELS)
        )
        return (
            f"<div class='course-key' style='font-size:85%;margin-bottom:0.6em'>{swatches}</div>"
            + super().format_readouts(readouts)
        )

    def background_key(self):
        """Axis limits and ticks, the curve and the ideal depend on n alone: one background per n."""
        return int(self.value("n"))

    def dynamic_artists(self):
        """What the tile size moves: the grid, its lines and title, the point (under the legend, as before)."""
        return [
            self.grid_image,
            self.tile_lines,
            *self.ax_grid.spines.values(),
            self.grid_title,
            self.current,
            self.ax_curve.get_legend(),
        ]

    def draw(self):
        n, block = int(self.value("n")), int(self.value("block"))
        kinds = entry_kinds(n, block)  # (n, n)
        self.grid_image.set_data(kinds)
        self.grid_image.set_extent((-0.5, n - 0.5, n - 0.5, -0.5))
        self.ax_grid.set(xlim=(-0.5, n - 0.5), ylim=(n - 0.5, -0.5))
        self.ax_grid.set_title(_("n = {n}, tiles of {block} × {block}").format(n=n, block=block))
        borders = np.arange(block, n, block) - 0.5
        if len(borders) <= 64:  # finer grids would be a grey smear: the colours alone show the tiles
            self.tile_lines.set_segments(
                [[(x, -0.5), (x, n - 0.5)] for x in borders] + [[(-0.5, y), (n - 0.5, y)] for y in borders]
            )
        else:
            self.tile_lines.set_segments([])

        blocks = np.unique(np.geomspace(1, max(n, 1), num=min(n, 40)).round().astype(int))
        fractions = computed_fraction_by_tile_size(n, blocks)
        self.curve.set_data(blocks, fractions)
        self.ax_curve.set_xlim(0.8, max(n, 2) * 1.6)  # room for the last tick label (256), clear of the edge
        self.ax_curve.set_title(_("share computed against tile size, n = {n}").format(n=n))
        ideal = causal_used_fraction(n)
        self.ideal_line.set_ydata([ideal, ideal])

        computed = tiled_computed_entries(n, block)
        fraction = computed / n**2
        self.current.set_data([min(block, n)], [fraction])
        tiles = tile_kinds(n, block)
        return {
            N_("tiles a side"): tiles.shape[0],
            N_("tiles computed"): int(np.count_nonzero(tiles)),
            N_("of which diagonal"): int(np.count_nonzero(tiles == 1)),
            N_("entries computed"): computed,
            N_("computed fraction"): fraction,
            N_("ideal (n+1)/(2n)"): ideal,
            N_("computed, then masked"): float(np.count_nonzero(kinds == MASKED)) / n**2,
        }
