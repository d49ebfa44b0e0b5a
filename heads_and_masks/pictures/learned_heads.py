"""Static pictures of notebook 08: attention maps of trained heads, loss curves, one head against several."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from ..figure_style import drawn_in_course_style
from ..grading import idle_while_grading
from ..i18n import N_, _, ngettext, number, translated
from ..readable import readable_number
from ..text_alternative import with_lead
from ..training import RULES, Run, chance_loss, rule_weights

from . import picture  # noqa: F401  (the notebook imports it from here)

RULE_COLOURS = {"previous token": "tab:orange", "first token": "tab:purple"}
# each rule's curve in the legend (the rules' names, training.RULES, stay English: they are keys)
PREDICTING = {"previous token": N_("predicting the previous token"), "first token": N_("predicting the first token")}
# each rule's name in a sentence
RULE_NAMES = {"previous token": N_("previous token"), "first token": N_("first token")}


def draw_map(ax, weights: np.ndarray, title: str = "") -> object:
    """One head's mean attention map (n, n) on ``ax``: queries down, keys across, 0 white to 1 dark."""
    n = weights.shape[-1]
    image = ax.imshow(weights, cmap="Blues", vmin=0.0, vmax=1.0, interpolation="nearest")
    ax.set_xticks(range(n), [str(i) for i in range(n)])
    ax.set_yticks(range(n), [str(i) for i in range(n)])
    ax.tick_params(length=0, pad=1)
    if title:
        ax.set_title(title)
    return image


def head_label(i: int, scores: np.ndarray) -> str:
    previous, first = scores[i]
    return _("head {i}\nprev {previous}, first {first}").format(
        i=i, previous=number(previous, ".2f"), first=number(first, ".2f")
    )


@idle_while_grading()
@drawn_in_course_style
def head_maps_figure(run: Run, snapshots=(0, None, -1)) -> Figure:
    """Every head (rows) at a few snapshots (columns): its attention map averaged over the probe sequences.

    ``None`` in ``snapshots`` picks the snapshot where the loss has fallen half way (in log scale).
    """
    chosen = [_halfway(run) if s is None else (s % len(run.snapshot_steps)) for s in snapshots]
    h = run.config.heads
    figure = Figure(figsize=(2.2 * len(chosen) + 0.4, 2.15 * h + 0.3), layout="constrained")
    axes = figure.subplots(h, len(chosen), squeeze=False)
    for column, index in enumerate(chosen):
        maps = run.maps(index)  # (b, h, n, n)
        scores = rule_weights(maps)  # (h, 2)
        for i in range(h):
            ax = axes[i, column]
            step = _("step {step}").format(step=run.snapshot_steps[index])
            draw_map(ax, maps[:, i].mean(axis=0), step if i == 0 else "")
            ax.set_ylabel(head_label(i, scores))
            if i == h - 1:
                ax.set_xlabel(_("key position"))
    figure.suptitle(_("attention of each head, averaged over held-out sequences (rows: queries)"))
    return with_lead(figure, _head_maps_lead(run, chosen[0], chosen[-1]))


def _head_maps_lead(run: Run, start: int, end: int) -> str:
    """Where the heads look at the first snapshot shown and at the last: the weight each puts where each rule
    needs it (a previous-token head draws the band below the diagonal, a first-token head column 0)."""
    before, after = rule_weights(run.maps(start)), rule_weights(run.maps(end))
    sentences = [
        _("At step {step}, no head puts more than {most} of its weight where a rule needs it.").format(
            step=run.snapshot_steps[start], most=number(before.max(), ".0%")
        )
    ]
    for head, (previous, first) in enumerate(after):
        sentences.append(
            _(
                "By step {step}, head {head} puts {previous} of its weight on the previous token (the band just "
                "below the diagonal) and {first} on the first token (column 0)."
            ).format(
                step=run.snapshot_steps[end],
                head=head,
                previous=number(previous, ".0%"),
                first=number(first, ".0%"),
            )
        )
    return " ".join(sentences)


def _halfway(run: Run) -> int:
    """The snapshot nearest to the step at which the training loss first falls to half its starting value."""
    losses = run.losses
    step = int(np.argmax(losses <= losses[0] / 2))
    return int(np.argmin(np.abs(np.array(run.snapshot_steps) - step)))


@idle_while_grading()
@drawn_in_course_style
def loss_curves_figure(run: Run) -> Figure:
    """The training loss of each rule against the step (log scale), with the loss of knowing nothing."""
    figure = Figure(figsize=(6.6, 2.8), layout="constrained")
    ax = figure.subplots()
    steps = np.arange(1, len(run.losses) + 1)
    for j, rule in enumerate(RULES):
        ax.plot(steps, run.rule_losses[:, j], color=RULE_COLOURS[rule], lw=1.3, label=translated(PREDICTING[rule]))
    chance = _("knowing nothing: ln {vocab}").format(vocab=run.config.vocab)
    ax.axhline(chance_loss(run.config), color="0.4", ls="--", lw=0.9, label=chance)
    ax.set(yscale="log", xlabel=_("training step"), ylabel=_("cross-entropy (log scale)"))
    ax.legend(frameon=False, loc="upper right", bbox_to_anchor=(1.0, 0.88))
    ax.set_title(
        _("training: h = {h} heads of d = {d}, seed {seed}").format(
            h=run.config.heads, d=run.config.head_size, seed=run.seed
        )
    )
    return with_lead(figure, _loss_curves_lead(run))


def _loss_curves_lead(run: Run) -> str:
    """Where each rule's loss starts and ends, and which rule is learnt first (its loss halved first)."""
    losses = np.asarray(run.rule_losses)  # (steps, rules)
    halved = [int(np.argmax(losses[:, j] <= losses[0, j] / 2)) + 1 for j in range(len(RULES))]
    template = ngettext(
        "The losses start at {previous_start} (previous token) and {first_start} (first token), where "
        "knowing nothing gives ln {vocab} = {chance}, and after {steps} step they end at {previous_end} "
        "and {first_end}.",
        "The losses start at {previous_start} (previous token) and {first_start} (first token), where "
        "knowing nothing gives ln {vocab} = {chance}, and after {steps} steps they end at {previous_end} "
        "and {first_end}.",
        len(losses),
    )
    sentences = [
        template.format(
            previous_start=number(losses[0, 0], ".2f"),
            first_start=number(losses[0, 1], ".2f"),
            vocab=run.config.vocab,
            chance=number(chance_loss(run.config), ".2f"),
            steps=len(losses),
            previous_end=number(losses[-1, 0], ".2g"),
            first_end=number(losses[-1, 1], ".2g"),
        )
    ]
    if all(losses[h - 1, j] <= losses[0, j] / 2 for j, h in enumerate(halved)):
        first = int(np.argmin(halved))
        sentences.append(
            _("The “{rule}” rule is learnt first: its loss halves by step {step}, the other's by step {other}.").format(
                rule=translated(RULE_NAMES[RULES[first]]), step=halved[first], other=halved[1 - first]
            )
        )
    return " ".join(sentences)


@idle_while_grading()
@drawn_in_course_style
def head_count_figure(results: dict[int, np.ndarray], width: int) -> Figure:
    """Final loss of every seed (dots) and the median (bar) for each way of cutting the width into heads."""
    figure = Figure(figsize=(6.0, 3.2), layout="constrained")
    ax = figure.subplots()
    for x, (h, losses) in enumerate(results.items()):
        jitter = np.linspace(-0.12, 0.12, len(losses))
        ax.plot(x + jitter, losses, "o", color="tab:blue", ms=5, alpha=0.8)
        ax.plot([x - 0.25, x + 0.25], [np.median(losses)] * 2, color="black", lw=2)
    ax.set_xticks(range(len(results)), [f"h = {h}, d = {width // h}" for h in results])
    ax.set(yscale="log", ylabel=_("held-out loss after training\n(log scale)"))
    ax.set_title(
        _("the same width D = {width}, the same cost:\none head against several (dots: seeds)").format(width=width)
    )
    return with_lead(figure, _head_count_lead({h: float(np.median(losses)) for h, losses in results.items()}, width))


def _head_count_lead(medians: dict[int, float], width: int) -> str:
    """One head against the best number of heads, by the median over the seeds."""
    best = min(medians, key=medians.get)
    if 1 in medians and best != 1:
        return _(
            "With one head of size {width}, the median held-out loss is {one}; with {best} heads of size {d} "
            "it is {best_loss}, {ratio} times lower, for the same width and the same cost."
        ).format(
            width=width,
            one=number(medians[1], ".2g"),
            best=best,
            d=width // best,
            best_loss=number(medians[best], ".2g"),
            ratio=readable_number(medians[1] / medians[best], 2),
        )
    sentences = [
        ngettext(
            "With {h} head of size {d}, the median held-out loss is {median}.",
            "With {h} heads of size {d}, the median held-out loss is {median}.",
            h,
        ).format(h=h, d=width // h, median=number(median, ".2g"))
        for h, median in medians.items()
    ]
    return " ".join(sentences)
