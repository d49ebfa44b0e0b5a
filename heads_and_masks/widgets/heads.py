"""Notebook 01's widget: choose a width and a number of heads, see the width cut, see the cost stay put."""

from __future__ import annotations

import numpy as np
from matplotlib.artist import Artist
from matplotlib.ticker import FuncFormatter

from ..heads import ORDERS, cost_parts, divisors, head_of_column, mha_cost
from ..i18n import N_, _
from ..pictures.heads import HEAD_COLOURS
from ..readable import readable_number
from .base import CourseWidget
from .choice import dropdown, toggle_buttons
from .slider import selection_slider
from .fast_text import PathTextPainter, PathTitle, path_text_patch

WIDTHS = [8, 12, 24, 48, 64, 96, 192, 384, 768]
LENGTHS = [2**k for k in range(4, 14)]  # 16 … 8192 tokens
CURVE_LENGTHS = np.unique(np.geomspace(1, 2**14, 80).round().astype(int))  # x axis of the cost plot
ZOOM_COLUMNS = 16  # the middle strip shows the first columns, large enough to read their head
MAX_HEAD_LABELS = 8  # above this many heads the overview strip is not labelled (text is slow to draw)


SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def power_of_ten(value, _position=None) -> str:
    """Tick labels 10², 10³ … as plain text (mathtext labels take several times longer to draw)."""
    exponent = int(round(np.log10(value))) if value > 0 else 0
    return "10" + str(exponent).translate(SUPERSCRIPTS) if np.isclose(value, 10.0**exponent) else ""


def columns_text(columns) -> str:
    """Which columns a head reads, as the zoom strip shows them: "0 … 63" (contiguous) or "0, 12, 24, … 756"."""
    columns = [int(c) for c in columns]
    if len(columns) <= 4:
        return ", ".join(map(str, columns))
    if columns[-1] - columns[0] == len(columns) - 1:
        return f"{columns[0]} … {columns[-1]}"
    return ", ".join(map(str, columns[:3])) + f", … {columns[-1]}"


class _HiddenText(Artist):
    """Draws a Text that is otherwise invisible: a legend entry left out of the saved background, where
    the legend is drawn (and lays the entry out), and drawn over it on every update."""

    def __init__(self, text):
        super().__init__()
        self.text = text
        text.set_visible(False)

    def draw(self, renderer):
        self.text.set_visible(True)
        try:
            self.text.draw(renderer)
        finally:
            self.text.set_visible(False)


class HeadSplitWidget(CourseWidget):
    """Pick D and h: the picture shows which columns of the width feed which head, the cost does not move."""

    figsize = (7.3, 5.6)

    def setup(self):
        self.controls["width"] = dropdown(options=WIDTHS, value=768, description=_("width D"))
        self.controls["heads"] = dropdown(options=divisors(768), value=12, description=_("heads h"))
        self.controls["order"] = toggle_buttons(
            options=list(ORDERS), value="(h d)", description=_("split"), button_width="60px"
        )
        self.controls["n"] = selection_slider(options=LENGTHS, value=1024, description=_("length n"))
        self._syncing = False

        grid = self.figure.add_gridspec(3, 1, height_ratios=[0.55, 0.55, 3.0])
        self.ax_all = self.figure.add_subplot(grid[0])
        self.ax_zoom = self.figure.add_subplot(grid[1])
        self.ax_cost = self.figure.add_subplot(grid[2])

        # the whole width, one pixel column (or less) per feature, coloured by head
        self.strip_all = self.ax_all.imshow(np.zeros((1, 8, 4)), aspect="auto", interpolation="antialiased")
        self.ax_all.set_yticks([])
        # the labels of the strips are drawn as paths (see fast_text): 24 Text artists took half the update
        self.painter = PathTextPainter(dpi=self.dpi, weight="bold")
        self.head_labels = self.figure.add_artist(path_text_patch("white"))
        self._head_label_items = []  # (text, x) in the data coordinates of ax_all
        # the first columns, large, each with the number of its head
        self.strip_zoom = self.ax_zoom.imshow(np.zeros((1, ZOOM_COLUMNS, 4)), aspect="auto", interpolation="nearest")
        self.ax_zoom.set_yticks([])
        self.zoom_numbers = self.figure.add_artist(path_text_patch("white"))
        self._zoom_number_items = []  # (text, x) in the data coordinates of ax_zoom

        ax = self.ax_cost
        ax.set(xscale="log", yscale="log", xlabel=_("sequence length n"), ylabel=_("multiply-adds of one layer"))
        ax.grid(True, which="major", alpha=0.3)
        ax.minorticks_off()
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(FuncFormatter(power_of_ten))
        (self.curve_one,) = ax.plot([], [], color="#4e79a7", lw=7, alpha=0.35, label="h = 1")
        (self.curve_h,) = ax.plot([], [], color="#f28e2b", lw=2.2, label="h")
        (self.curve_all,) = ax.plot([], [], color="black", lw=1, ls=(0, (4, 3)), label="h = D")
        (self.curve_proj,) = ax.plot([], [], color="grey", lw=1, ls=":", label=_("4nD² (projections)"))
        (self.curve_attn,) = ax.plot([], [], color="grey", lw=1, ls="-.", label=_("2n²D (scores + weighted sum)"))
        (self.point,) = ax.plot([], [], "o", color="#e15759", markersize=7, zorder=5)
        self.legend = ax.legend(loc="upper left", frameon=False)
        self.title_all = PathTitle(self.ax_all.title, self.dpi)  # titles change with the controls
        self.title_zoom = PathTitle(self.ax_zoom.title, self.dpi)
        self.legend_h = _HiddenText(self.legend.get_texts()[1])  # the only entry that depends on h

    def _on_change(self, change) -> None:
        if self._syncing:
            return
        if change["owner"] is self.controls["width"]:
            self._offer_heads_for_width()
        self.update()

    def _offer_heads_for_width(self) -> None:
        """Only divisors of D are offered; keep h if it still divides D, else the nearest divisor."""
        width, heads = self.value("width"), self.value("heads")
        options = divisors(width)
        keep = heads if heads in options else min(options, key=lambda k: (abs(np.log(k / heads)), k))
        self._syncing = True
        try:
            self.controls["heads"].options = options
            self.controls["heads"].value = keep
        finally:
            self._syncing = False

    def draw(self):
        width = self.value("width")
        if list(self.controls["heads"].options) != divisors(width):  # a width given to the constructor
            self._offer_heads_for_width()
        heads, order, n = self.value("heads"), self.value("order"), self.value("n")
        d = width // heads
        owners = head_of_column(width, heads, order)  # (D,) head of each column
        colours = HEAD_COLOURS(owners % HEAD_COLOURS.N)  # (D, 4)

        self.strip_all.set_data(colours[None])
        self.strip_all.set_extent((0, width, 0.5, -0.5))  # column c spans [c, c + 1]: head i starts at i·d
        # ticks at the head boundaries when there are few heads, else five round positions
        self.ax_all.set_xticks(
            np.arange(0, width + 1, d) if heads <= MAX_HEAD_LABELS else np.linspace(0, width, 5).round()
        )
        self.ax_all.set_xlim(0, width)  # after the ticks, which would widen it
        self.ax_all.set_title(
            _("the width D = {width} cut into h = {heads} heads of d = {d}, read as {order}").format(
                width=width, heads=heads, d=d, order=order
            )
        )
        labelled = order == "(h d)" and heads <= MAX_HEAD_LABELS
        self._head_label_items = [(_("head {i}").format(i=i), (i + 0.5) * d) for i in range(heads)] if labelled else []

        shown = min(width, ZOOM_COLUMNS)
        self.strip_zoom.set_data(colours[None, :shown])
        self.strip_zoom.set_extent((-0.5, shown - 0.5, 0.5, -0.5))
        self.ax_zoom.set_xlim(-0.5, shown - 0.5)
        self.ax_zoom.set_xticks(range(0, shown, 3 if shown > 12 else 1))
        self._zoom_number_items = [(str(owners[column]), column) for column in range(shown)]
        rule = (
            _("columns 0–{last}, numbered by their head: head i = columns i·d … (i+1)·d − 1 (contiguous)")
            if order == "(h d)"
            else _(
                "columns 0–{last}, numbered by their head: head i = columns i, i+h, i+2h, … (scattered: the silent bug)"
            )
        )
        self.ax_zoom.set_title(rule.format(last=shown - 1))

        projections, attention = cost_parts(CURVE_LENGTHS, width)
        total = projections + attention  # the same for every h: h is not in the formula
        for curve, h_curve in ((self.curve_one, 1), (self.curve_h, heads), (self.curve_all, width)):
            curve.set_data(
                CURVE_LENGTHS, [mha_cost(int(m), width, h_curve) for m in CURVE_LENGTHS] if h_curve == heads else total
            )
        self.curve_proj.set_data(CURVE_LENGTHS, projections)
        self.curve_attn.set_data(CURVE_LENGTHS, attention)
        cost = mha_cost(n, width, heads)
        self.point.set_data([n], [cost])
        self.ax_cost.set_xlim(CURVE_LENGTHS[0], CURVE_LENGTHS[-1])
        self.ax_cost.set_ylim(total.min() / 3, total.max() * 3)
        texts = self.legend.get_texts()
        texts[0].set_text(f"h = 1 (d = {width})")
        texts[1].set_text(f"h = {heads} (d = {d})")
        texts[2].set_text(f"h = D = {width} (d = 1)")
        self.ax_cost.set_title(_("cost against n: the curves for different h lie on top of each other"))
        return {
            N_("head size d"): d,
            N_("multiply-adds"): cost,
            N_("same with h = 1"): mha_cost(n, width, 1),
            N_("projections 4nD²"): 4 * n * width**2,
            N_("scores + sum 2n²D"): 2 * n * n * width,
            N_("columns of head 0"): columns_text(np.flatnonzero(owners == 0)),  # the split, said in words too
        }

    @property
    def picture_lead(self) -> str:
        width, heads = self.value("width"), self.value("heads")
        d = width // heads
        owned = np.flatnonzero(head_of_column(width, heads, self.value("order")) == 0)
        if self.value("order") == ORDERS[0]:
            where = _("Read as {order}, head 0 owns the neighbouring columns 0 to {last}, as every checkpoint expects.")
        else:
            where = _(
                "Read as {order}, head 0 owns one column in every {heads}, scattered ({first_few}, …): the shapes are "
                "right and nothing fails, but every head gets the wrong features."
            )
        cost = _(
            "At length n = {n}, the layer costs {cost} multiply-adds with {heads} heads of d = {d}, exactly as "
            "many as with one head: cutting the width into heads changes nothing in the cost."
        )
        values = dict(
            order=self.value("order"),
            last=owned[-1],
            heads=heads,
            first_few=", ".join(str(c) for c in owned[:3]),
            n=readable_number(self.value("n")),
            cost=readable_number(self.readouts["multiply-adds"]),
            d=d,
        )
        return f"{where.format(**values)} {cost.format(**values)}"

    def format_value(self, value) -> str:
        return value if isinstance(value, str) else super().format_value(value)

    def background_key(self):
        """The cost axis (its limits, ticks and the curves of h = 1) and the zoom strip's axis depend on D
        alone: one background per width, the rest is drawn over it."""
        return self.value("width")

    def _place_labels(self) -> None:
        for patch, ax, items in (
            (self.head_labels, self.ax_all, self._head_label_items),
            (self.zoom_numbers, self.ax_zoom, self._zoom_number_items),
        ):
            patch.set_path(self.painter.path([(text, *ax.transData.transform((x, 0)), "center") for text, x in items]))

    def dynamic_artists(self):
        self._place_labels()
        return [
            self.strip_all,
            self.ax_all.xaxis,
            *self.ax_all.spines.values(),
            self.title_all,
            self.head_labels,
            self.strip_zoom,
            *self.ax_zoom.spines.values(),
            self.title_zoom,
            self.zoom_numbers,
            self.curve_h,
            self.curve_all,
            self.curve_proj,
            self.curve_attn,
            self.point,
            self.legend_h,
        ]
