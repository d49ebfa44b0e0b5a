"""Notebook 00's widget: one query, four keys, and how scores become attention weights."""

from __future__ import annotations

import numpy as np

from ..attention import attention_weights, row_entropy_bits
from ..i18n import N_, _, number, translated
from .base import CourseWidget
from .slider import float_slider, int_slider

KEYS = np.array([[1.0, 0.2], [0.1, 1.0], [-1.0, 0.3], [0.2, -1.0]])  # four 2-D keys
VALUES = np.array([[2.0, 0.5], [0.5, 2.0], [-2.0, 0.8], [0.4, -2.0]])  # what each key hands back
KEY_NAMES = [N_("east"), N_("north"), N_("west"), N_("south")]  # shown in the widget's language


class QueryWidget(CourseWidget):
    """Turn a query around and lengthen it: watch the weights sharpen and the output move."""

    figsize = (7.3, 3.4)

    def setup(self):
        self.controls["angle"] = int_slider(
            value=30,
            min=0,
            max=359,
            step=1,
            description=_("query angle°"),
        )
        self.controls["length"] = float_slider(value=1.5, min=0.1, max=8.0, step=0.1, description=_("query length"))
        self.ax_space, self.ax_weights = self.figure.subplots(1, 2, width_ratios=[1, 1.2])
        ax = self.ax_space
        ax.set(
            xlim=(-2.9, 2.9), ylim=(-2.9, 2.9), aspect="equal", title=_("values (dots), query (arrow)")
        )  # room for the names
        ax.scatter(*VALUES.T, s=40, color="tab:blue")
        for name, (x, y) in zip(KEY_NAMES, VALUES):
            ax.annotate(translated(name), (x, y), textcoords="offset points", xytext=(4, 4))
        self.query_arrow = ax.annotate(
            "", xy=(1, 0), xytext=(0, 0), arrowprops=dict(arrowstyle="->", color="tab:red", lw=2)
        )
        (self.output_dot,) = ax.plot([], [], "*", color="tab:red", markersize=14, label=_("output"))
        ax.legend(loc="lower left")
        self.bars = self.ax_weights.bar([translated(name) for name in KEY_NAMES], np.zeros(4), color="tab:blue")
        self.ax_weights.set(ylim=(0, 1), title=_("attention weights (sum to 1)"))

    def draw(self):
        angle = np.deg2rad(self.value("angle"))
        query = self.value("length") * np.array([np.cos(angle), np.sin(angle)])
        weights = attention_weights(query[None, :], KEYS)[0]  # (4,)
        self.weights = weights  # for the picture's lead
        output = weights @ VALUES  # a convex combination of the values
        self.query_arrow.xy = tuple(query / max(1.0, np.linalg.norm(query) / 2.4))
        self.output_dot.set_data([output[0]], [output[1]])
        for bar, w in zip(self.bars, weights):
            bar.set_height(w)
        return {
            N_("max weight"): float(weights.max()),
            N_("entropy (bits)"): float(row_entropy_bits(weights)),
            N_("output x"): float(output[0]),
            N_("output y"): float(output[1]),
        }

    @property
    def picture_lead(self) -> str:
        heaviest = translated(KEY_NAMES[int(np.argmax(self.weights))])
        return _(
            "The query points at {angle}° with length {length}: the {key} key takes the largest weight, "
            "{weight}%, and the output (the star) is pulled towards the {key} value, to ({x}, {y}). "
            "A longer query sharpens the weights towards one key; a shorter one evens them out."
        ).format(
            angle=self.value("angle"),
            length=number(self.value("length"), ".1f"),
            key=heaviest,
            weight=number(100 * self.readouts["max weight"], ".0f"),
            x=number(self.readouts["output x"], ".2f"),
            y=number(self.readouts["output y"], ".2f"),
        )

    def dynamic_artists(self):
        """Blitting (see CourseWidget): the axes, the dots and the names stay; the arrow, the output and
        the bars move (the legend and the bottom spine are drawn again to stay on top of them)."""
        return [
            self.query_arrow,
            self.output_dot,
            self.ax_space.get_legend(),
            *self.bars,
            self.ax_weights.spines["bottom"],
        ]
