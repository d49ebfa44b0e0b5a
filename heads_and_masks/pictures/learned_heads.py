"""Static pictures of notebook 08: attention maps of trained heads, loss curves, one head against several."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from ..figure_style import drawn_in_course_style
from ..grading import idle_while_grading
from ..training import RULES, Run, chance_loss, rule_weights

from . import picture  # noqa: F401, E402  (the notebook imports it from here)

RULE_COLOURS = {"previous token": "tab:orange", "first token": "tab:purple"}


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
    return f"head {i}\nprev {previous:.2f}, first {first:.2f}"


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
            draw_map(ax, maps[:, i].mean(axis=0), f"step {run.snapshot_steps[index]}" if i == 0 else "")
            ax.set_ylabel(head_label(i, scores))
            if i == h - 1:
                ax.set_xlabel("key position")
    figure.suptitle("attention of each head, averaged over held-out sequences (rows: queries)")
    return figure


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
        ax.plot(steps, run.rule_losses[:, j], color=RULE_COLOURS[rule], lw=1.3, label=f"predicting the {rule}")
    ax.axhline(chance_loss(run.config), color="0.4", ls="--", lw=0.9, label=f"knowing nothing: ln {run.config.vocab}")
    ax.set(yscale="log", xlabel="training step", ylabel="cross-entropy (log scale)")
    ax.legend(frameon=False, loc="upper right", bbox_to_anchor=(1.0, 0.88))
    ax.set_title(f"training: h = {run.config.heads} heads of d = {run.config.head_size}, seed {run.seed}")
    return figure


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
    ax.set(yscale="log", ylabel="held-out loss after training\n(log scale)")
    ax.set_title(f"the same width D = {width}, the same cost:\none head against several (dots: seeds)")
    return figure
