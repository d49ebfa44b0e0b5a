"""Notebook 08's widget: the heads of the trained model at any snapshot of training, and what each one is worth.

A slider moves through the snapshots recorded during training; every head's attention map (averaged over
held-out sequences) and the loss curve follow. Toggles remove heads from the model (their output set to
zero) and the readouts give the loss of each rule without them.
"""

from __future__ import annotations

import html

import numpy as np

from ..i18n import N_, _, number, translated
from ..pictures.learned_heads import RULE_COLOURS, draw_map
from ..training import RULES, Run, chance_loss, notebook_run, rule_weights
from .base import CourseWidget
from .choice import on_off_button
from .slider import selection_slider


class LearnedHeadsWidget(CourseWidget):
    """Slide through training; switch heads off and watch the loss of each rule."""

    def __init__(self, run: Run | None = None, **initial):
        self._run = run
        super().__init__(**initial)

    @property
    def figsize(self):
        heads = 2 if self._run is None else self._run.config.heads
        # Two rows: the heads' maps side by side on top (each ~260 px wide, legible projected), the loss below
        # across the whole width. 630 px wide for two heads: a laptop notebook shows it at its own size.
        return (min(2.9 * heads + 1.2, 7.3), 5.4)

    def setup(self):
        self.run = self._run if self._run is not None else notebook_run()
        h = self.run.config.heads
        self.controls["step"] = selection_slider(
            options=self.run.snapshot_steps,
            value=self.run.snapshot_steps[-1],
            description=_("step"),
        )
        for i in range(h):
            # its name stays "head i on" and its state (checked or not) is read out: a name that changed with the
            # state would be heard as the action ("head 0 off, button") and told nothing of what the head is
            self.controls[f"head {i}"] = on_off_button(
                True,
                _("head {i} on").format(i=i),
                tooltip=_("Unchecked, head {i} is switched off: its output is set to zero (ablated).").format(i=i),
            )
        grid = self.figure.add_gridspec(2, h, height_ratios=[1.35, 1])
        self.map_axes = [self.figure.add_subplot(grid[0, i]) for i in range(h)]
        n = self.run.config.n
        self.images = [draw_map(ax, np.zeros((n, n)), _("head {i}").format(i=i)) for i, ax in enumerate(self.map_axes)]
        self.map_axes[0].set_ylabel(_("query"))
        for ax in self.map_axes:
            ax.set_xlabel(_("key"))
        self.ax_loss = ax = self.figure.add_subplot(grid[1, :])
        steps = np.arange(1, len(self.run.losses) + 1)
        for j, rule in enumerate(RULES):
            ax.plot(steps, self.run.rule_losses[:, j], color=RULE_COLOURS[rule], lw=1.1, label=translated(rule))
        ax.axhline(chance_loss(self.run.config), color="0.4", ls="--", lw=0.8)
        ax.set(yscale="log", xlabel=_("step"), ylabel=_("training loss"))
        ax.legend(frameon=False, loc="center right")
        self.marker = ax.axvline(0, color="black", lw=1.0)
        self.titles = [ax.title for ax in self.map_axes]

    def dynamic_artists(self):
        return [*self.images, *self.titles, self.marker]

    def draw(self):
        run, h = self.run, self.run.config.heads
        index = run.snapshot_steps.index(int(self.value("step")))
        keep = np.array([1.0 if self.value(f"head {i}") else 0.0 for i in range(h)])
        maps = run.maps(index)  # (b, h, n, n)
        scores = rule_weights(maps)  # (h, 2)
        for i, image in enumerate(self.images):
            image.set_data(maps[:, i].mean(axis=0) * keep[i])  # an ablated head shows empty
            self.titles[i].set_text((_("head {i}") if keep[i] else _("head {i} (off)")).format(i=i))
        self.marker.set_xdata([max(run.snapshot_steps[index], 1)] * 2)
        loss, per_rule = run.evaluate(keep, params=run.snapshot_params[index])
        readouts = {
            N_("step"): run.snapshot_steps[index],
            N_("held-out loss (nats)"): loss,  # cross-entropies: natural log
            N_("loss, previous token (nats)"): per_rule[0],
            N_("loss, first token (nats)"): per_rule[1],
        }
        for i in range(h):
            # keys made here: the table shows each one's own translation (CourseWidget.shown_names)
            if keep[i]:
                readouts[f"head {i}: weight on t − 1"] = scores[i, 0]
                readouts[f"head {i}: weight on 0"] = scores[i, 1]
                self.shown_names[f"head {i}: weight on t − 1"] = _("head {i}: weight on t − 1").format(i=i)
                self.shown_names[f"head {i}: weight on 0"] = _("head {i}: weight on 0").format(i=i)
            else:  # its map is blank: weights it no longer uses would contradict the picture
                readouts[f"head {i}"] = switched_off(i)
                self.shown_names[f"head {i}"] = _("head {i}").format(i=i)
        return readouts

    @property
    def picture_lead(self) -> str:
        sentences = [
            _(
                "At step {step}, the held-out loss is {loss} nats: {previous} predicting the previous token "
                "and {first} predicting the first token."
            ).format(
                step=self.readouts["step"],
                loss=number(self.readouts["held-out loss (nats)"], ".2g"),
                previous=number(self.readouts["loss, previous token (nats)"], ".2g"),
                first=number(self.readouts["loss, first token (nats)"], ".2g"),
            )
        ]
        for i in range(self.run.config.heads):
            if self.value(f"head {i}"):
                sentences.append(
                    _(
                        "Head {head} puts {previous}% of its weight on the previous token (the band below the "
                        "diagonal) and {first}% on the first token (column 0)."
                    ).format(
                        head=i,
                        previous=number(100 * self.readouts[f"head {i}: weight on t − 1"], ".0f"),
                        first=number(100 * self.readouts[f"head {i}: weight on 0"], ".0f"),
                    )
                )
            else:
                sentences.append(switched_off(i))
        return " ".join(sentences)

    def format_value(self, value) -> str:
        """Numbers as people read them; a sentence (a switched-off head) as it is, escaped."""
        return html.escape(value) if isinstance(value, str) else super().format_value(value)


def switched_off(head: int) -> str:
    """What the readouts say of a head switched off: one whole sentence, for a translator and a screen reader."""
    return _("Head {head} is switched off: its output is set to zero, so it attends to nothing.").format(head=head)
