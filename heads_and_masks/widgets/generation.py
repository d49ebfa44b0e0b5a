"""Notebook 07's widget: step through a generation and watch the mask, the cache slots and the memory."""

from __future__ import annotations

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.patches import Rectangle

from ..generation import cache_tokens, cached_positions, generation_steps, step_mask
from ..i18n import N_, _, ngettext, translated
from ..model_configs import KiB, model
from .base import CourseWidget
from .choice import toggle_buttons
from .slider import int_slider
from .fast_text import PathTextPainter, PathTitle, path_text_patch

TOTAL, PROMPT, WINDOW, SINKS = 20, 4, 6, 2
POLICY_LABELS = {
    N_("full cache"): "full",
    N_("sliding window"): "window",
    N_("sinks + window"): "sinks",
}  # shown: value
# 0 future / not yet, 1 forbidden at this step, 2 may attend at this step, 3 earlier steps (faded)
STEP_COLOURS = ListedColormap(["white", "#e4e4e4", "#1f4e79", "#b7c9dc"])


class GenerationStepper(CourseWidget):
    """A generation of 20 tokens: a prompt of 4 in one step, then `new tokens per step` at a time.

    Left: the mask of the whole generation, the current step's rows dark (may attend) and grey (forbidden).
    Right, top: the cache's slots after the step, each with the position it holds (orange: written now).
    Right, bottom: tokens held in the cache against the tokens generated: growing (full) or flat (window).
    Readouts: the step's positions, the cache's tokens, and its size at Mistral-7B's scale.
    """

    figsize = (7.3, 3.9)

    def setup(self):
        self.controls["policy"] = toggle_buttons(
            options=[(translated(label), label) for label in POLICY_LABELS],
            value="sliding window",
            description=_("cache"),
            button_width="10.5em",
        )
        self.controls["chunk"] = int_slider(value=1, min=1, max=4, description=_("new per step"))
        self.controls["step"] = int_slider(value=4, min=0, max=TOTAL - PROMPT, description=_("step"))
        self.mistral = model("Mistral-7B-v0.1")
        self.figure.set_layout_engine("none")
        self.ax_mask = self.figure.add_axes((0.07, 0.12, 0.43, 0.74))
        self.ax_slots = self.figure.add_axes((0.56, 0.58, 0.42, 0.34))
        self.ax_memory = self.figure.add_axes((0.62, 0.12, 0.36, 0.36))
        ax = self.ax_mask
        self.mask_image = ax.imshow(
            np.zeros((TOTAL, TOTAL)), cmap=STEP_COLOURS, vmin=0, vmax=3, interpolation="nearest", aspect="equal"
        )
        ax.set_xticks(range(0, TOTAL, 2), [str(j) for j in range(0, TOTAL, 2)])
        ax.set_yticks(range(0, TOTAL, 2), [str(j) for j in range(0, TOTAL, 2)])
        ax.set_xlabel(_("key position"))
        ax.set_ylabel(_("query position"))
        # the slots: drawn once, then moved and relabelled (blitting, see CourseWidget.dynamic_artists)
        ax = self.ax_slots
        ax.set_axis_off()
        ax.set(xlim=(0, 1), ylim=(0, 1))
        self.slot_boxes = [
            ax.add_patch(Rectangle((0, 0.3), 0, 0.34, edgecolor="gray", linewidth=0.8)) for _slot in range(TOTAL)
        ]
        self.slot_painter = PathTextPainter(dpi=self.dpi)  # 20 labels as one path: fast to redraw
        self.slot_labels = ax.add_patch(path_text_patch("white"))
        self.slot_title = ax.text(0, 0.72, "", va="bottom")
        self.slot_title_text = PathTitle(self.slot_title, self.dpi)
        self.mask_title = PathTitle(self.ax_mask.title, self.dpi)
        ax.text(0, 0.24, _("orange: written this step"), va="top", color="tab:orange")
        ax = self.ax_memory
        (self.memory_line,) = ax.plot([], [], color="tab:blue", lw=2)
        (self.memory_point,) = ax.plot([], [], "o", color="tab:orange", markersize=7)
        ax.set(xlim=(0, TOTAL), ylim=(0, TOTAL + 1))
        ax.set_xlabel(_("tokens generated so far"))
        ax.set_ylabel(_("tokens in cache"))
        ax.grid(True, alpha=0.3)

    def _clamp_step(self, steps) -> int:
        slider = self.controls["step"]
        if slider.max != len(steps) - 1:
            slider.max = len(steps) - 1  # the value follows (clamped) without a second update
        return min(slider.value, len(steps) - 1)

    def draw(self):
        policy = POLICY_LABELS[self.value("policy")]
        steps = generation_steps(TOTAL, PROMPT, self.value("chunk"))
        index = self._clamp_step(steps)
        start, stop = steps[index]
        self.step_positions = (start, stop)  # for the picture's lead

        picture = np.zeros((TOTAL, TOTAL))
        for a, b in steps[:index]:
            picture[a:b, :b] = 3 * step_mask(policy, a, b, WINDOW, SINKS)
        picture[start:stop, :stop] = 1 + step_mask(policy, start, stop, WINDOW, SINKS)
        self.mask_image.set_data(picture)
        if index == 0:
            title = _(
                "prefill (the prompt): queries {first}…{last}, mask {rows} × {columns}\n"
                "dark: may attend, grey: masked, pale: earlier steps"
            )
        else:
            title = _(
                "step {step}: queries {first}…{last}, mask {rows} × {columns}\n"
                "dark: may attend, grey: masked, pale: earlier steps"
            )
        self.ax_mask.set_title(title.format(step=index, first=start, last=stop - 1, rows=stop - start, columns=stop))

        # the slots after this step's write
        held = cached_positions(policy, stop, WINDOW, SINKS)
        slots = len(held) if policy != "full" else TOTAL
        width = 1 / slots
        to_pixels = self.ax_slots.transData.transform
        labels = []
        for s, box in enumerate(self.slot_boxes):
            p = held[s] if s < len(held) else -1
            box.set_visible(s < slots)
            box.set_x(s * width + 0.1 * width)
            box.set_width(0.8 * width)
            box.set_facecolor("tab:orange" if start <= p < stop else "#1f4e79" if p >= 0 else "white")
            if p >= 0:
                labels.append((str(p), *to_pixels(((s + 0.5) * width, 0.47)), "center"))
        self.slot_labels.set_path(self.slot_painter.path(labels))
        kind = {
            "full": _("cache slots after this step:\none slot per token (grows)"),
            "window": _("cache slots after this step:\nrolling buffer: w = {window} slots, p mod w"),
            "sinks": _("cache slots after this step:\n{sinks} sink slots + rolling buffer of {window}"),
        }[policy]
        self.slot_title.set_text(kind.format(window=WINDOW, sinks=SINKS))

        written = np.arange(TOTAL + 1)
        held_counts = [cache_tokens(policy, int(n), WINDOW, SINKS) for n in written]
        self.memory_line.set_data(written, held_counts)
        self.memory_point.set_data([stop], [cache_tokens(policy, stop, WINDOW, SINKS)])

        tokens = cache_tokens(policy, stop, WINDOW, SINKS)
        per_token = self.mistral.kv_bytes_per_token(2)
        long = 32768
        after_long = f"Mistral-7B after {long // 1024}K tokens (MiB)"
        self.shown_names[after_long] = _("Mistral-7B after {tokens}K tokens (MiB)").format(tokens=long // 1024)
        return {
            N_("positions written this step"): f"{start} … {stop - 1}",
            N_("keys this step's queries see"): int((picture[start:stop] == 2).any(axis=0).sum()),
            N_("tokens in the cache"): tokens,
            N_("cache at Mistral-7B's scale (KiB)"): tokens * per_token / KiB,
            after_long: cache_tokens(policy, long, 4096, 4) * per_token / 2**20,
        }

    @property
    def picture_lead(self) -> str:
        policy = POLICY_LABELS[self.value("policy")]
        start, stop = self.step_positions
        step = ngettext(
            "In this step the query at position {first} sees {keys} keys, and afterwards the cache holds {tokens} "
            "tokens.",
            "In this step the {count} queries at positions {first} to {last} together see {keys} keys, and afterwards "
            "the cache holds {tokens} tokens.",
            stop - start,
        )
        cache = {
            "full": _("A full cache grows by one slot with every token generated."),
            "window": _(
                "A rolling buffer of {window} slots stops growing once it is full: each new token overwrites the oldest."
            ),
            "sinks": _(
                "The {sinks} sink slots keep the first tokens and a rolling buffer of {window} the most recent ones: "
                "the cache stops growing."
            ),
        }[policy]
        values = dict(
            count=stop - start,
            first=start,
            last=stop - 1,
            keys=self.readouts["keys this step's queries see"],
            tokens=self.readouts["tokens in the cache"],
            window=WINDOW,
            sinks=SINKS,
        )
        return f"{step.format(**values)} {cache.format(**values)}"

    def dynamic_artists(self):
        """Blitting: the mask, the slots and the memory curve over axes drawn once."""
        return [
            self.mask_image,
            *self.ax_mask.spines.values(),
            self.mask_title,
            *self.slot_boxes,
            self.slot_labels,
            self.slot_title_text,
            self.memory_line,
            self.memory_point,
        ]

    def format_value(self, value) -> str:
        return value if isinstance(value, str) else super().format_value(value)
