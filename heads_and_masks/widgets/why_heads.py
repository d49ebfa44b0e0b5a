"""Notebook 02's widget: how the head size d and the noise move the scores and the winning rate."""

from __future__ import annotations

import functools

import numpy as np
from matplotlib.ticker import NullLocator

from ..i18n import N_, _, number
from ..score_noise import ScoreBank, win_probability
from .base import CourseWidget
from .slider import float_slider, selection_slider

D_VALUES = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768)
N_KEYS = 16
TRIALS = 600  # trials of the widget's simulation (the same draws for every d and noise)
EDGES = np.linspace(-3.0, 4.0, 106)  # bins of the similarity estimate q·k/d
PRACTICAL = (32, 128)


@functools.lru_cache(maxsize=64)
def _exact_curve(noise: float) -> np.ndarray:
    """Exact winning rate at every d of D_VALUES for this noise (a coarser grid: error below 1e-3)."""
    return np.array([win_probability(d, noise, noise, N_KEYS - 1, grid=121, nodes=32) for d in D_VALUES])


class ScoreNoiseWidget(CourseWidget):
    """Pick a head size and a noise: the similarity estimates of matching and unrelated keys narrow
    like 1/sqrt(d), and the match wins more often."""

    figsize = (7.3, 3.6)

    def setup(self):
        self.controls["d"] = selection_slider(options=D_VALUES, value=8, description=_("head size d"))
        self.controls["noise"] = float_slider(value=1.0, min=0.0, max=3.0, step=0.1, description=_("noise σ"))
        self.bank = ScoreBank(D_VALUES, n_keys=N_KEYS, trials=TRIALS, seed=2)
        self.ax_hist, self.ax_rate = self.figure.subplots(1, 2, width_ratios=[1.15, 1])

        ax = self.ax_hist
        zeros = np.zeros(len(EDGES) - 1)
        self.unrelated_steps = ax.stairs(
            zeros, EDGES, fill=True, alpha=0.45, color="tab:blue", label=_("unrelated keys (true similarity 0)")
        )
        self.match_steps = ax.stairs(
            zeros, EDGES, fill=True, alpha=0.55, color="tab:orange", label=_("the match (true similarity 1)")
        )
        for x in (0.0, 1.0):
            ax.axvline(x, color="0.3", lw=0.8, ls=":")
        ax.set(
            xlim=(EDGES[0], EDGES[-1]),
            ylim=(0, 1.3),
            yticks=[],
            xlabel=_("similarity estimate q·k / d"),
            ylabel=_("how often (tallest bar = 1)"),
        )
        ax.legend(loc="upper left", frameon=False)
        self.hist_title = ax.set_title(" ")

        ax = self.ax_rate
        ax.axvspan(*PRACTICAL, color="tab:green", alpha=0.12, label="d in [32, 128]")
        ax.axhline(1 / N_KEYS, color="0.5", lw=0.8, ls="--", label=_("chance (1/{keys})").format(keys=N_KEYS))
        (self.exact_line,) = ax.plot(D_VALUES, np.zeros(len(D_VALUES)), color="tab:red", lw=1.6, label=_("exact"))
        (self.sim_dots,) = ax.plot(
            D_VALUES,
            np.zeros(len(D_VALUES)),
            "o",
            color="tab:red",
            ms=3,
            alpha=0.6,
            label=_("simulated ({trials} trials)").format(trials=TRIALS),
        )
        (self.current,) = ax.plot([8], [0], "o", ms=11, mfc="none", mec="black", mew=1.6)
        ax.set_xscale("log", base=2)
        ax.xaxis.set_minor_locator(NullLocator())  # fewer ticks, faster redraws
        # the rate never exceeds 1: the legend lives above it, where no curve of any noise can go
        ax.set(
            xlim=(0.8, 960),
            ylim=(0, 1.32),
            xlabel=_("head size d (log scale)"),
            ylabel=_("match wins"),
            xticks=[1, 4, 16, 64, 256, 768],
            xticklabels=["1", "4", "16", "64", "256", "768"],
            yticks=[0, 0.2, 0.4, 0.6, 0.8, 1.0],
        )
        ax.legend(loc="upper left", ncols=2, frameon=False, borderaxespad=0.3, columnspacing=1.0)
        ax.set_title(_("how often the match outscores {others} unrelated keys").format(others=N_KEYS - 1))

    @property
    def picture_lead(self) -> str:
        return _(
            "At head size d = {d} and noise σ = {noise}, an unrelated key's estimate spreads by "
            "{spread} around its true similarity 0, against a gap of 1 to the match's, and the match "
            "outscores all {others} unrelated keys {wins}% of the time. A larger d narrows both spreads, and "
            "the rate climbs."
        ).format(
            d=self.value("d"),
            noise=number(self.value("noise"), ".1f"),
            spread=number(self.readouts["spread of unrelated"], ".2f"),
            others=N_KEYS - 1,
            wins=number(100 * self.readouts["match wins (exact)"], ".0f"),
        )

    def dynamic_artists(self):
        """Blitting (see CourseWidget): everything else is fixed, so one update redraws a few lines over
        the saved background instead of every tick label and the legend."""
        return [self.unrelated_steps, self.match_steps, self.hist_title, self.exact_line, self.sim_dots, self.current]

    def draw(self):
        d, noise = int(self.value("d")), float(self.value("noise"))
        scores = self.bank.scores(d, noise) / d  # (trials, keys): similarity estimates, column 0 the match
        match, unrelated = scores[:, 0], scores[:, 1:].ravel()
        match_share = np.histogram(match, EDGES)[0] / match.size  # fraction of estimates in each bin
        unrelated_share = np.histogram(unrelated, EDGES)[0] / unrelated.size
        tallest = max(match_share.max(), unrelated_share.max(), 1e-12)  # both scaled alike: shapes compare
        self.match_steps.set_data(match_share / tallest)
        self.unrelated_steps.set_data(unrelated_share / tallest)
        outside = float(np.mean((scores < EDGES[0]) | (scores > EDGES[-1])))
        if outside >= 0.005:
            title = _("d = {d}, noise σ = {noise}  ({outside}% of estimates off the scale)")
        else:
            title = _("d = {d}, noise σ = {noise}")
        self.hist_title.set_text(title.format(d=d, noise=number(noise, ".1f"), outside=number(100 * outside, ".0f")))

        exact = _exact_curve(round(noise, 6))
        simulated = np.array([self.bank.winning_rate(v, noise) for v in D_VALUES])
        self.exact_line.set_ydata(exact)
        self.sim_dots.set_ydata(simulated)
        i = D_VALUES.index(d)
        self.current.set_data([d], [exact[i]])

        spread_match, spread_unrelated = float(match.std()), float(unrelated.std())
        return {
            N_("match wins (exact)"): float(exact[i]),
            N_("match wins (simulated)"): float(simulated[i]),
            N_("spread of the match"): spread_match,
            N_("spread of unrelated"): spread_unrelated,
            N_("gap / spread"): 1.0 / spread_unrelated,
        }
