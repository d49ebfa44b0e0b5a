"""Notebook 05's widget: compose masks (causal, padding, window, block-sparse) and see what each query may attend to.

Every mask is drawn the same way: queries down, keys across, kept entries dark; entries forbidden
because the key is filler are tinted apart from those forbidden by the pattern (future, window, blocks).
"""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np
from matplotlib.collections import LineCollection
from matplotlib.ticker import MaxNLocator

from ..i18n import N_, _, number, translated
from ..local_attention import LAYOUTS, layout_mask
from ..masks import causal_mask, padding_mask, sliding_window_mask
from ..pictures.other_masks import KEPT_COLOUR, LEGEND_ITEMS, draw_mask, mask_image
from .base import CourseWidget
from .choice import dropdown
from .slider import int_slider
from .fast_text import PathTitle


def steps_down(values):
    """x, y of a step line with one flat step per row: ``values[i]`` from y = i - 0.5 to i + 0.5."""
    rows = np.arange(len(values))
    return np.repeat(values, 2), np.ravel(np.column_stack([rows - 0.5, rows + 0.5]))


class MaskWidget(CourseWidget):
    """Compose masks with a logical AND and see the pattern, the work it keeps and the cache it needs."""

    figsize = (7.0, 3.8)
    max_n = 64
    # the controls that only act through one mask: greyed out (disabled) while that mask is not ticked
    PARAMETERS = {"padding": ("length",), "window": ("w",), "block-sparse": ("block", "layout")}

    def setup(self):
        check = dict(indent=False, layout=widgets.Layout(width="auto"))
        self.controls["causal"] = widgets.Checkbox(value=True, description=_("causal"), **check)
        self.controls["padding"] = widgets.Checkbox(value=False, description=_("padding"), **check)
        self.controls["window"] = widgets.Checkbox(value=False, description=_("sliding window"), **check)
        self.controls["block-sparse"] = widgets.Checkbox(value=False, description=_("block-sparse"), **check)
        self.controls["n"] = int_slider(value=16, min=2, max=self.max_n, description="n")
        self.controls["length"] = int_slider(value=11, min=0, max=16, description=_("length"))
        self.controls["w"] = int_slider(value=4, min=1, max=16, description=_("window w"))
        self.controls["block"] = int_slider(value=4, min=1, max=16, description=_("block"))
        self.controls["layout"] = dropdown(
            options=[(translated(name), name) for name in LAYOUTS], value="global + local", description=_("layout")
        )
        self.controls["n"].observe(self._follow_n, names="value")
        for mask_name in self.PARAMETERS:
            self.controls[mask_name].observe(self._enable_parameters, names="value")
        self._enable_parameters()

        # Text is what costs most to render, so the picture carries little of it: the legend and the
        # description of the composed mask live in the HTML beside it (format_readouts).
        self.ax_mask, self.ax_keys = self.figure.subplots(1, 2, width_ratios=[1.25, 1])
        n = self.value("n")
        self.mask_artist = draw_mask(self.ax_mask, np.zeros((n, n), dtype=bool), _("the mask"))
        (self.keys_line,) = self.ax_keys.plot([], [], color=KEPT_COLOUR, lw=2)
        (self.causal_line,) = self.ax_keys.plot([], [], color="0.55", lw=1, ls="--")
        self.ax_keys.set_title(_("keys per query (solid;\ndashed: causal) = the KV\ncache each token needs"))
        self.ax_keys.set_xlabel(_("keys"))
        self.ax_keys.set_ylabel(_("query"))
        for ax in (self.ax_mask, self.ax_keys):
            ax.xaxis.set_major_locator(MaxNLocator(5, integer=True))
            ax.yaxis.set_major_locator(MaxNLocator(5, integer=True))
        # the lines between the blocks: a collection drawn over the mask (the minor grid of draw_mask is part of
        # the axes, which are rendered once per n; see background_key)
        self.block_lines = self.ax_mask.add_collection(LineCollection([], colors="white", linewidths=1.2))
        self.mask_title = PathTitle(self.ax_mask.title, self.dpi)
        self.description = ""

    def format_readouts(self, readouts):
        """The composed mask's name, the colour key, then the numbers."""
        # The name may be long ("causal + padding + sliding window ..."): it wraps, within about the readouts' width.
        name = f"<p style='max-width:16em;line-height:1.3;margin:0 0 0.8em'><b>{self.description}</b></p>"
        # Each meaning on one line beside its swatch, in any language ("можно обращать внимание" is longer than
        # "may attend"): the column grows to fit the longest rather than breaking a meaning in two, and the lines
        # are spaced as text (the widget's HTML otherwise spaces each line as high as a control).
        entries = "".join(
            "<li style='display:flex;align-items:center;gap:0.4em;white-space:nowrap'>"
            f"<span style='flex:none;width:0.9em;height:0.9em;background:{colour};border:1px solid #999'></span>"
            f"{translated(label)}</li>"
            for colour, label in LEGEND_ITEMS
        )
        key = (
            f"<ul class='course-key' style='list-style:none;padding:0;margin:0 0 0.8em;line-height:1.5'>{entries}</ul>"
        )
        return f"<div style='font-size:90%'>{name}{key}</div>" + super().format_readouts(readouts)

    def _enable_parameters(self, _change=None):
        """A parameter whose mask is off does nothing: it looks so (disabled) until its mask is ticked."""
        for mask_name, parameters in self.PARAMETERS.items():
            for parameter in parameters:
                self.controls[parameter].disabled = not self.value(mask_name)

    def _follow_n(self, change):
        """Keep the length and window sliders within the sequence (before the redraw)."""
        n = change["new"]
        self.controls["length"].max = n
        self.controls["w"].max = n
        self.controls["block"].max = max(1, min(16, n))

    def mask(self):
        """The composed (n, n) mask, the (n,) reality of the keys, and a title naming the parts."""
        n = self.value("n")
        allowed = np.ones((n, n), dtype=bool)
        parts, block = [], None
        if self.value("causal"):
            allowed &= causal_mask(n)
            parts.append(_("causal"))
        if self.value("window"):
            allowed &= sliding_window_mask(n, min(self.value("w"), n))
            parts.append(_("window w={w}").format(w=min(self.value("w"), n)))
        if self.value("block-sparse"):
            block = min(self.value("block"), n)
            allowed &= layout_mask(self.value("layout"), n, block)[1]
            parts.append(_("{layout} blocks of {block}").format(layout=translated(self.value("layout")), block=block))
        key_is_real = np.ones(n, dtype=bool)
        if self.value("padding"):
            length = min(self.value("length"), n)
            key_is_real = padding_mask([length], n)[0]
            allowed &= key_is_real[None, :]
            parts.append(_("padding (length {length})").format(length=length))
        return (
            allowed,
            key_is_real,
            block,
            " AND ".join(parts) or _("no mask (full attention)"),
        )  # AND: the operator, in every language

    def draw(self):
        allowed, key_is_real, block, title = self.mask()
        n = allowed.shape[0]
        kept = int(allowed.sum())
        self.mask_artist.set_data(mask_image(allowed, key_is_real))
        self.mask_artist.set_extent((-0.5, n - 0.5, n - 0.5, -0.5))
        edges = np.arange(block, n, block) - 0.5 if block else np.zeros(0)
        self.block_lines.set_segments(
            [[(x, -0.5), (x, n - 0.5)] for x in edges] + [[(-0.5, y), (n - 0.5, y)] for y in edges]
        )
        self.description = title
        self.ax_mask.set_title(_("{kept} of {cells} entries kept").format(kept=kept, cells=n * n))

        keys_per_query = allowed.sum(axis=1)  # (n,) allowed keys of each query
        self.keys_line.set_data(*steps_down(keys_per_query))
        self.causal_line.set_data(*steps_down(np.arange(1, n + 1)))
        self.ax_keys.set_xlim(0, n + 0.5)
        self.ax_keys.set_ylim(n - 0.5, -0.5)
        causal_entries = n * (n + 1) // 2
        return {
            N_("kept entries"): kept,
            N_("kept fraction"): kept / (n * n),
            N_("fraction of causal"): kept / causal_entries,
            N_("max keys per query"): int(keys_per_query.max()),
        }

    @property
    def picture_lead(self) -> str:
        n = self.value("n")
        return _(
            "The mask “{title}” keeps {kept} of the {cells} entries ({fraction}%), {of_causal}% of what the "
            "causal mask alone keeps, and the most keys any query sees is {most}: what a kernel computes, and what "
            "the cache must hold, shrink with each mask joined by AND."
        ).format(
            title=self.description,
            kept=self.readouts["kept entries"],
            cells=n * n,
            fraction=number(100 * self.readouts["kept fraction"], ".1f"),
            of_causal=number(100 * self.readouts["fraction of causal"], ".0f"),
            most=self.readouts["max keys per query"],
        )

    def background_key(self):
        """The axes (limits, ticks) depend on n alone: one background per n, the rest drawn over it."""
        return self.value("n")

    def dynamic_artists(self):
        return [
            self.mask_artist,
            self.block_lines,
            *self.ax_mask.spines.values(),
            self.mask_title,
            self.keys_line,
            self.causal_line,
        ]
