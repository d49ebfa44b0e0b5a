"""Many short labels drawn as one filled path: ten times faster than as many Text artists.

Matplotlib lays out and rasterises every Text anew on each draw (a few ms each); here the glyphs of
each character are turned into paths once, and a label is their concatenation (no kerning, which
short labels in a small sans-serif font do not need).
"""

from __future__ import annotations

import matplotlib
import numpy as np
from matplotlib.artist import Artist
from matplotlib.font_manager import FontProperties
from matplotlib.lines import Line2D
from matplotlib.patches import FancyBboxPatch, PathPatch
from matplotlib.path import Path
from matplotlib.textpath import TextPath
from matplotlib.transforms import IdentityTransform


class PathTextPainter:
    """Glyph paths of one font, in pixels; ``path(items)`` lays out many labels as one Path.

    ``size_points`` None: the course's text size (rcParams["font.size"], set by figure_style.course_style).
    """

    def __init__(self, size_points: float | None = None, dpi: float = 72.0, weight: str = "normal"):
        if size_points is None:
            size_points = matplotlib.rcParams["font.size"]
        self.font = FontProperties(family="DejaVu Sans", size=size_points, weight=weight)
        self.scale = dpi / 72.0  # points -> pixels
        self.glyphs, self.advances = {}, {}
        self._zeros_x1 = TextPath((0, 0), "00", prop=self.font).get_extents().x1
        self.height = TextPath((0, 0), "0", prop=self.font).get_extents().height * self.scale
        self.line_height = TextPath((0, 0), "lp", prop=self.font).get_extents().height * self.scale

    def _glyph(self, char: str):
        if char not in self.glyphs:
            if char.isspace():  # no outline
                self.glyphs[char] = (np.zeros((0, 2)), np.zeros(0, dtype=np.uint8))
            else:
                path = TextPath((0, 0), char, prop=self.font)
                self.glyphs[char] = (path.vertices * self.scale, path.codes)
            # between two zeros, so that the advance is measured from ink to ink
            self.advances[char] = (
                TextPath((0, 0), "0" + char + "0", prop=self.font).get_extents().x1 - self._zeros_x1
            ) * self.scale
        return self.glyphs[char]

    def width(self, text: str) -> float:
        for char in text:
            self._glyph(char)
        return sum(self.advances[c] for c in text)

    def path(self, items) -> Path:
        """items: (text, x, y, align) in pixels, align 'left', 'center' or 'right'; y: the middle of a digit."""
        vertices, codes = [np.zeros((1, 2))], [np.array([Path.MOVETO], dtype=np.uint8)]
        for text, x, y, align in items:
            x = x - self.width(text) * {"left": 0.0, "center": 0.5, "right": 1.0}[align]
            for char in text:
                glyph_vertices, glyph_codes = self._glyph(char)
                if len(glyph_vertices):
                    vertices.append(glyph_vertices + (x, y - self.height / 2))
                    codes.append(glyph_codes)
                x += self.advances[char]
        return Path(np.concatenate(vertices), np.concatenate(codes))


def path_text_patch(colour) -> PathPatch:
    """An empty patch in pixel coordinates, to receive ``PathTextPainter.path``."""
    return PathPatch(Path(np.zeros((1, 2))), facecolor=colour, edgecolor="none", transform=IdentityTransform())


class PathTitle(PathPatch):
    """Draws a Text (e.g. an Axes title) as glyph paths at its place: a few ms instead of ~15.

    The Text itself stays the reference (its string, position, colour and size; ``get_title()`` works)
    but is made transparent (not invisible: the layout still makes room for it); this patch, blitted
    as a dynamic artist, shows it.
    """

    def __init__(self, text, dpi: float):
        super().__init__(Path(np.zeros((1, 2))), edgecolor="none", transform=IdentityTransform())
        self.text, self.dpi = text, dpi
        self.painters = {}
        text.set_alpha(0.0)

    def draw(self, renderer):
        text = self.text
        key = (text.get_fontsize(), text.get_fontweight())
        if key not in self.painters:
            self.painters[key] = PathTextPainter(key[0], self.dpi, weight=key[1])
        painter = self.painters[key]
        x, y = text.get_transform().transform(text.get_position())
        lines = text.get_text().split("\n")  # the last line on the baseline, the others above it
        spacing = text.get_linespacing()
        step = painter.line_height * (spacing if isinstance(spacing, (int, float)) else 1.2)  # "normal": 1.2
        # y of the middle of the digits on the last line, for each vertical alignment
        y += {
            "baseline": painter.height / 2,
            "bottom": painter.line_height - painter.height / 2,
            "top": painter.height / 2 - painter.line_height,
            "center": 0.0,
        }[text.get_verticalalignment()]
        if text.get_verticalalignment() == "top":
            y -= (len(lines) - 1) * step
        self.set_path(
            painter.path(
                [
                    (line, x, y + (len(lines) - 1 - i) * step, text.get_horizontalalignment())
                    for i, line in enumerate(lines)
                ]
            )
        )
        self.set_facecolor(text.get_color())  # opaque: the Text's alpha of 0 is not the colour's
        super().draw(renderer)


class PathLegend(Artist):
    """A legend in the upper left of an Axes, as matplotlib draws it (rounded frame, handle lines, labels),
    with the labels as glyph paths: a few ms a draw where a Legend takes ~30. ``set_entries(lines)``
    takes the lines whose labels do not start with "_", in order, like ``Axes.legend``."""

    def __init__(self, ax, dpi: float, fontsize: float | None = None):
        super().__init__()
        self.painter = PathTextPainter(fontsize, dpi)  # None: the course's text size
        self.ax, self.size = ax, self.painter.font.get_size_in_points() * dpi / 72.0  # in pixels: the unit of spacing
        self.frame = FancyBboxPatch(
            (0, 0),
            1,
            1,
            boxstyle=f"round,pad=0,rounding_size={0.2 * self.size}",
            facecolor="white",
            edgecolor="0.8",
            alpha=0.8,
            linewidth=0.8,
            transform=IdentityTransform(),
        )
        self.labels = path_text_patch("black")
        self.entries = []

    def set_entries(self, lines) -> None:
        self.entries = [(line, line.get_label()) for line in lines if not line.get_label().startswith("_")]

    def draw(self, renderer):
        if not self.entries:
            return
        size, pad = self.size, 0.4 * self.size
        row = max(self.painter.line_height * 1.15, 0.7 * size)
        handle_length, gap, spacing = 2.0 * size, 0.8 * size, 0.5 * size
        left, top = self.ax.bbox.x0 + 0.5 * size, self.ax.bbox.y1 - 0.5 * size
        width = 2 * pad + handle_length + gap + max(self.painter.width(label) for _, label in self.entries)
        height = 2 * pad + len(self.entries) * row + (len(self.entries) - 1) * spacing
        self.frame.set_bounds(left, top - height, width, height)
        self.frame.draw(renderer)
        items = []
        for i, (line, label) in enumerate(self.entries):
            y = top - pad - row / 2 - i * (row + spacing)
            handle = Line2D(
                [left + pad, left + pad + handle_length],
                [y, y],
                transform=IdentityTransform(),
                color=line.get_color(),
                linewidth=line.get_linewidth(),
                linestyle=line.get_linestyle(),
            )
            handle.set_figure(self.ax.figure)
            handle.draw(renderer)
            items.append((label, left + pad + handle_length + gap, y, "left"))
        self.labels.set_path(self.painter.path(items))
        self.labels.draw(renderer)
