"""Notebook 03's widget, the lesson's own: attention weights over the lesson's sentence, with and without
the division by sqrt(d), with and without the causal mask, for any head size and temperature.

The sentence, its queries and keys and the readouts are computed in ``heads_and_masks.sentence`` and
``heads_and_masks.attention_stats``; this module only draws them.
"""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np
from matplotlib.patches import Polygon

from ..attention import masked_softmax
from ..attention_stats import lesson_readouts, max_entropies, row_entropies
from ..i18n import _, number
from ..masks import causal_mask
from ..sentence import MAX_HEAD_SIZE, TOKENS, sentence_logits
from .base import CourseWidget
from .slider import float_slider, int_slider
from .fast_text import PathTextPainter, path_text_patch


class LessonWidget(CourseWidget):
    """The lesson's widget: attention weights over a sentence (keys across, queries down)."""

    figsize = (7.3, 3.8)

    def __init__(self, **initial):
        self._numbers = []  # (text, axes, x, y, align, dark): the numbers of the current state
        super().__init__(**initial)
        self.widget.add_class("lesson-widget")

    def setup(self):
        self.controls["scale_by_sqrt_d"] = widgets.Checkbox(value=True, description=_("divide by √d"), indent=False)
        self.controls["causal"] = widgets.Checkbox(value=True, description=_("causal mask"), indent=False)
        self.controls["head_size"] = int_slider(
            value=64, min=8, max=MAX_HEAD_SIZE, step=8, description=_("head size d")
        )
        self.controls["temperature"] = float_slider(
            value=1.0, min=0.1, max=4.0, step=0.05, description=_("temperature T")
        )
        n = len(TOKENS)
        self.ax_weights, self.ax_entropy = self.figure.subplots(1, 2, width_ratios=[1.6, 1])

        # Left: the weights, keys across and queries down; forbidden cells hatched.
        ax = self.ax_weights
        self.heatmap = ax.imshow(np.zeros((n, n)), cmap="Blues", vmin=0.0, vmax=1.0, interpolation="nearest")
        ax.set_xticks(range(n), TOKENS)
        ax.set_yticks(range(n), TOKENS)
        ax.xaxis.tick_top()
        ax.xaxis.set_label_position("top")
        ax.set_xlabel(_("keys (looked at)"))
        ax.set_ylabel(_("queries (looking)"))
        ax.tick_params(length=0)
        self.figure.colorbar(self.heatmap, ax=ax, shrink=0.85, label=_("attention weight"))
        staircase = [(0.5, -0.5), (n - 0.5, -0.5), (n - 0.5, n - 1.5)]  # the cells above the diagonal
        for i in range(n - 2, -1, -1):
            staircase += [(i + 0.5, i + 0.5), (i + 0.5, i - 0.5)]
        self.forbidden = ax.add_patch(
            Polygon(
                staircase[:-1],
                closed=True,
                facecolor="0.93",
                edgecolor="0.5",
                hatch="///",
                linewidth=0.8,
                label=_("forbidden (the future)"),
            )
        )

        # Right: the entropy of every row, against the most it could be.
        ax = self.ax_entropy
        rows = np.arange(n)
        self.entropy_bars = ax.barh(rows, np.zeros(n), color="tab:orange", height=0.6)
        (self.entropy_limits,) = ax.plot(np.zeros(n), rows, "|", color="black", markersize=13, markeredgewidth=2)
        ax.set_yticks(rows, TOKENS)
        ax.set_ylim(n - 0.5, -0.5)  # first query on top, as in the heatmap
        ax.set_xlim(0, np.log2(n) * 1.3)
        ax.set_xlabel(_("entropy of the row (bits)"))
        ax.set_title(_("| = most possible:\nlog2(allowed keys)"))
        ax.spines[["top", "right"]].set_visible(False)

        # 36 numbers as Text artists took most of an update; as glyph paths (see fast_text) a few ms
        self.painter = PathTextPainter(dpi=self.dpi)
        self.dark_numbers = self.figure.add_artist(path_text_patch("black"))
        self.light_numbers = self.figure.add_artist(path_text_patch("white"))

    def draw(self):
        n = len(TOKENS)
        head_size, temperature = int(self.value("head_size")), float(self.value("temperature"))
        logits = sentence_logits(
            head_size, scale_by_sqrt_d=bool(self.value("scale_by_sqrt_d")), temperature=temperature
        )  # (n, n)
        mask = causal_mask(n) if self.value("causal") else np.ones((n, n), dtype=bool)  # True = may attend
        weights = masked_softmax(logits, mask)  # (n, n), forbidden cells exactly 0

        self.heatmap.set_data(weights)
        self.forbidden.set_visible(not mask.all())
        entropies, limits = row_entropies(weights), max_entropies(mask)
        for bar, entropy in zip(self.entropy_bars, entropies):
            bar.set_width(entropy)
        self.entropy_limits.set_xdata(limits)
        self._numbers = [
            (f"{weights[i, j]:.2f}", self.ax_weights, j, i, "center", weights[i, j] > 0.55)
            for i in range(n)
            for j in range(n)
            if mask[i, j]
        ]
        # each entropy is written past its bar and past its limit mark, so that the mark never crosses it
        self._numbers += [
            (f"{e:.2f}", self.ax_entropy, max(e, limit) + 0.1, i, "left", False)
            for i, (e, limit) in enumerate(zip(entropies, limits))
        ]
        return lesson_readouts(weights, logits, mask)

    @property
    def picture_lead(self) -> str:
        n = len(TOKENS)
        causal = self.value("causal")
        mask = causal_mask(n) if causal else np.ones((n, n), dtype=bool)
        if causal:
            seen = _(
                "The hatched cells above the diagonal are the future, forbidden: each word attends to itself and "
                "the words before it, and “{first}” puts all its weight on itself."
            )
        else:
            seen = _(
                "Without the causal mask every word attends to every other, the future too: even “{first}” "
                "spreads its weight, with an entropy of {first_entropy} bits."
            )
        if self.value("scale_by_sqrt_d"):
            scale = _(
                "With the scores divided by √d, at head size {d} and temperature {t}, the spread of the "
                "scores is {spread} and a row's entropy is {entropy} bits on average, out of at most "
                "{most}: the lower it is, the closer each row comes to putting all its weight on one key."
            )
        else:
            scale = _(
                "With the scores not divided by √d, at head size {d} and temperature {t}, the spread of the "
                "scores is {spread} and a row's entropy is {entropy} bits on average, out of at most "
                "{most}: the lower it is, the closer each row comes to putting all its weight on one key."
            )
        values = dict(
            first=TOKENS[0],
            first_entropy=number(self.readouts["first row entropy (bits)"], ".2f"),
            d=int(self.value("head_size")),
            t=number(float(self.value("temperature")), ".2f"),
            spread=number(self.readouts["score spread"], ".1f"),
            entropy=number(self.readouts["row entropy (bits)"], ".2f"),
            most=number(float(max_entropies(mask).mean()), ".2f"),
        )
        return f"{seen.format(**values)} {scale.format(**values)}"

    def _place_numbers(self) -> None:
        """Turn the numbers (in data coordinates) into two paths in pixels, once the layout is fixed."""
        for patch, dark in ((self.light_numbers, True), (self.dark_numbers, False)):
            items = [
                (text, *ax.transData.transform((x, y)), align)
                for text, ax, x, y, align, on_dark in self._numbers
                if on_dark == dark
            ]
            patch.set_path(self.painter.path(items))

    def _dynamic_artists(self):
        yield self.heatmap
        yield self.forbidden
        yield from self.entropy_bars
        yield self.entropy_limits
        yield self.dark_numbers
        yield self.light_numbers

    def dynamic_artists(self):
        """Blitting (see CourseWidget): a full redraw of this figure takes ~130 ms, the changing
        artists alone ~20 ms."""
        self._place_numbers()
        return self._dynamic_artists()
