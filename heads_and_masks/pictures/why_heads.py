"""The static pictures of notebook 02 (each returns a matplotlib Figure; the notebook only calls them)."""

from __future__ import annotations

import itertools
import numpy as np
from matplotlib.figure import Figure

from ..figure_style import drawn_in_course_style, ordered_colours
from ..grading import idle_while_grading
from ..i18n import N_, _, ngettext, number, translated
from ..retrieval import convex_hull, inside_hull, reachable_outputs
from ..text_alternative import with_lead
from . import picture  # noqa: F401  (the notebook imports it from here)

PRACTICAL = (32, 128)

# The titles notebook 02 passes to these pictures. A notebook's code is the same in every language, so its
# titles are English there; they are marked here and translated where they are drawn (``translated``), and a
# title not listed stays as the notebook wrote it.
NOTEBOOK_TITLES = (
    N_("head 0: previous token"),
    N_("head 1: first token"),
    N_("your winning_rate, σ = 1"),
    N_("course's simulation, σ = 1"),
)


def _practical_range() -> str:
    return _("d in [{low}, {high}]").format(low=PRACTICAL[0], high=PRACTICAL[1])


@idle_while_grading()
@drawn_in_course_style
def hull_figure(values, previous: int, first: int) -> Figure:
    """One head's reachable outputs (the convex hull of the values) and what the task would need."""
    figure = Figure(figsize=(7.2, 5.4), layout="constrained")
    ax = figure.subplots()
    cloud = reachable_outputs(values, samples=4000, seed=1)
    hull = convex_hull(values)
    ax.scatter(*cloud.T, s=2, color="0.75", label=_("outputs of one head (random weights)"))
    ax.fill(*hull.T, facecolor="none", edgecolor="tab:blue", lw=1.5, label=_("convex hull of the values"))
    ax.scatter(*values.T, s=36, color="tab:blue", zorder=3)
    for i, (x, y) in enumerate(values):
        ax.annotate(f"v{i}", (x, y), textcoords="offset points", xytext=(5, 4))
    segment = np.linspace(0, 1, 50)[:, None] * values[previous] + np.linspace(1, 0, 50)[:, None] * values[first]
    ax.plot(*segment.T, color="tab:red", lw=3, alpha=0.7, label=_("one head splitting its weight\nbetween the two"))
    ax.scatter(
        *(values[previous] / 2 + values[first] / 2),
        marker="*",
        s=220,
        color="tab:red",
        zorder=4,
        label=_("one head, half and half: a blend"),
    )
    ax.scatter(
        *np.stack([values[previous], values[first]]).T,
        marker="o",
        s=180,
        facecolors="none",
        edgecolors="tab:green",
        linewidths=2,
        zorder=4,
        label=_("two heads: each value, intact"),
    )
    ax.set(
        aspect="equal",
        xlabel=_("value, component 1"),
        ylabel=_("value, component 2"),
        title=_("query t = {t} wants v{previous} (previous) and v{first} (first)").format(
            t=previous + 1, previous=previous, first=first
        ),
    )
    figure.legend(loc="outside lower center", ncols=2, frameon=False)
    lead = _(
        "{inside} of one head's outputs (the grey cloud) lie inside the convex hull of the values: one head "
        "gives one point, at best a blend of v{previous} and v{first} on the red segment between them. Two heads "
        "give v{previous} and v{first} themselves, intact (the green circles)."
    ).format(inside=number(inside_hull(cloud, hull).mean(), ".0%"), previous=previous, first=first)
    return with_lead(figure, lead)


@idle_while_grading()
@drawn_in_course_style
def recovery_figure(weights_on_previous, recovered_previous, recovered_first) -> Figure:
    """How much of each content the best linear readout of one head's blend recovers."""
    figure = Figure(figsize=(7.2, 3.7), layout="constrained")
    ax = figure.subplots()
    w = np.asarray(weights_on_previous)
    ax.plot(w, recovered_previous, "o-", color="tab:orange", ms=4, label=_("content of the previous token"))
    ax.plot(w, recovered_first, "o-", color="tab:purple", ms=4, label=_("content of the first token"))
    ax.plot(
        w,
        (np.asarray(recovered_previous) + np.asarray(recovered_first)) / 2,
        "k--",
        lw=1.2,
        label=_("average of the two"),
    )
    ax.axhline(1.0, color="tab:green", lw=2, alpha=0.7, label=_("two heads (each recovered completely)"))
    ax.set(
        xlim=(0, 1),
        ylim=(-0.03, 1.05),
        xlabel=_("one head's weight on the previous token (the rest on the first)"),
        ylabel=_("fraction of variance recovered"),
    )
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    average = (np.asarray(recovered_previous) + np.asarray(recovered_first)) / 2
    lead = _(
        "The more of its weight one head puts on the previous token, the more of that token's content it "
        "recovers and the less of the first token's, and the average of the two stays at {low} to "
        "{high}, about half, whatever the weight. Two heads recover all of both."
    ).format(
        low=number(average.min() - 0.005, ".2f"), high=number(average.max() + 0.005, ".2f")
    )  # (rounded outwards: 0.49 to 0.51)
    return with_lead(figure, lead)


@idle_while_grading()
@drawn_in_course_style
def head_weights_figure(weights, titles) -> Figure:
    """Heat maps of the attention weights of several heads (queries down, keys across)."""
    weights, titles = np.asarray(weights), [translated(title) for title in titles]
    figure = Figure(figsize=(3.2 * len(weights) + 0.7, 3.5), layout="constrained")
    axes = np.atleast_1d(figure.subplots(1, len(weights)))
    for ax, w, title in zip(axes, weights, titles):
        image = ax.imshow(w, vmin=0, vmax=1, cmap="Blues")
        ax.set(title=title, xlabel=_("key position"), ylabel=_("query position"))
        ax.set_xticks(range(w.shape[1]))
        ax.set_yticks(range(w.shape[0]))
    figure.colorbar(image, ax=list(axes), shrink=0.8, label=_("weight"))
    return with_lead(figure, _head_weights_lead(weights, titles))


def _head_weights_lead(weights, titles) -> str:
    """Where each head's largest weight goes, over the queries from position 2 on (at 1, the previous token
    is the first token: that row tells the two rules apart no more)."""
    sentences = [
        _(
            "A head that takes the previous token draws a line just below the diagonal; one that takes the first "
            "token draws a column on the left."
        )
    ]
    queries = np.arange(2, weights.shape[-2])
    for w, title in zip(weights, titles):
        favourite = w[queries].argmax(axis=-1)
        template = ngettext(
            "In “{title}”, the previous token takes the largest weight in {previous} of the {rows} row from query "
            "2 on, and the first token in {first}.",
            "In “{title}”, the previous token takes the largest weight in {previous} of the {rows} rows from query "
            "2 on, and the first token in {first}.",
            len(queries),
        )
        sentences.append(
            template.format(
                title=" ".join(title.split()),
                previous=int((favourite == queries - 1).sum()),
                first=int((favourite == 0).sum()),
                rows=len(queries),
            )
        )
    return " ".join(sentences)


@idle_while_grading()
@drawn_in_course_style
def spread_figure(d_values, spread_match, spread_unrelated, formula_match, formula_unrelated, noise) -> Figure:
    """Standard deviation of the similarity estimate q·k/d against d, simulated and by formula."""
    figure = Figure(figsize=(6.7, 4.0), layout="constrained")
    ax = figure.subplots()
    ax.loglog(d_values, formula_match, "-", color="tab:orange", lw=1.2, label=_("match, formula"))
    ax.loglog(d_values, spread_match, "o", color="tab:orange", ms=5, label=_("match, simulated"))
    ax.loglog(d_values, formula_unrelated, "-", color="tab:blue", lw=1.2, label=_("unrelated, formula"))
    ax.loglog(d_values, spread_unrelated, "s", color="tab:blue", ms=4, label=_("unrelated, simulated"))
    ax.axhline(1.0, color="0.4", ls=":", lw=1)
    ax.annotate(
        _("gap between the true similarities (1 − 0)"),
        (d_values[0], 1.0),
        textcoords="offset points",
        xytext=(2, 4),
        color="0.3",
    )
    ax.axvspan(*PRACTICAL, color="tab:green", alpha=0.12, label=_practical_range())
    ax.set(
        xlabel=_("head size d"),
        ylabel=_("spread (standard deviation) of q·k / d"),
        title=_("the estimate narrows like 1/√d (noise σ = {noise})").format(noise=number(noise, "")),
    )
    ax.legend(frameon=False, loc="lower left")
    simulated = np.concatenate([spread_match, spread_unrelated])
    formula = np.concatenate([formula_match, formula_unrelated])
    lead = _(
        "The spread of an unrelated key's estimate falls like 1/√d, from {widest} at d = {d_first} to "
        "{narrowest} at d = {d_last}, and the simulated points lie on the formula's lines (at most "
        "{apart} apart). Against the gap of 1 between the true similarities, a small head confuses a match "
        "with an unrelated key; in the shaded range the spread falls from {at_low} at d = {low} to "
        "{at_high} at d = {high}."
    ).format(
        low=PRACTICAL[0],
        high=PRACTICAL[1],
        at_low=number(np.interp(np.log(PRACTICAL[0]), np.log(d_values), formula_unrelated), ".2f"),
        at_high=number(np.interp(np.log(PRACTICAL[1]), np.log(d_values), formula_unrelated), ".2f"),
        widest=number(formula_unrelated[0], ".2f"),
        narrowest=number(formula_unrelated[-1], ".3f"),
        d_first=d_values[0],
        d_last=d_values[-1],
        apart=number(np.abs(simulated / formula - 1).max(), ".1%"),
    )
    return with_lead(figure, lead)


@idle_while_grading()
@drawn_in_course_style
def winning_figure(d_values, curves: dict, n_keys: int, marks=(), simulated=None) -> Figure:
    """Winning rate against d, one exact curve per noise; optional simulated points and marked head sizes."""
    figure = Figure(figsize=(7.2, 4.2), layout="constrained")
    ax = figure.subplots()
    ax.axvspan(*PRACTICAL, color="tab:green", alpha=0.12, label=_practical_range())
    for (noise, curve), colour, style in zip(curves.items(), ordered_colours(len(curves)), itertools.cycle("-:")):
        ax.plot(
            d_values,
            curve,
            ls=style,
            color=colour,
            lw=1.6,
            label=_("noise σ = {noise}").format(noise=number(noise, "")),
        )
    if simulated is not None:
        (d_points, rates, label) = simulated
        ax.plot(d_points, rates, "k^", ms=6, label=translated(label))
    for d, text in marks:
        ax.axvline(d, color="0.5", lw=0.8, ls="--")
        ax.annotate(text, (d, 0.02), rotation=90, color="0.3", xytext=(3, 0), textcoords="offset points")
    ax.axhline(1 / n_keys, color="0.5", lw=0.8, ls=":")
    ax.set_xscale("log", base=2)
    ax.set_xticks([1, 4, 16, 64, 256, 1024], ["1", "4", "16", "64", "256", "1024"])
    ax.set(
        ylim=(0, 1.03),
        xlabel=_("head size d (log scale)"),
        ylabel=_("match wins"),
        title=ngettext(
            "how often the match outscores {unrelated} unrelated key",
            "how often the match outscores {unrelated} unrelated keys",
            n_keys - 1,
        ).format(unrelated=n_keys - 1),
    )
    ax.legend(frameon=False, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return with_lead(figure, _winning_lead(d_values, curves, n_keys))


def _winning_lead(d_values, curves: dict, n_keys: int) -> str:
    """How the rate climbs, read off the least and the most noisy curves at the ends of the practical range."""
    at = lambda curve, d: float(np.interp(np.log(d), np.log(d_values), curve))  # noqa: E731  (log-spaced d)
    calm, noisy = min(curves), max(curves)
    starts = [curve[0] for curve in curves.values()]
    return _(
        "Every curve starts low, between {start_low} and {start_high} at d = {d_first}, climbs steeply up "
        "to a few dozen components and then flattens. With noise σ = {noisy}, the match wins {noisy_low} of "
        "the time at d = {low} and {noisy_high} at d = {high}; with σ = {calm}, {calm_low} and "
        "{calm_high}. A blind guess among {keys} keys wins {chance} of the time (the dotted line)."
    ).format(
        start_low=number(min(starts), ".0%"),
        start_high=number(max(starts), ".0%"),
        d_first=d_values[0],
        calm=number(calm, ""),
        noisy=number(noisy, ""),
        low=PRACTICAL[0],
        high=PRACTICAL[1],
        calm_low=number(at(curves[calm], PRACTICAL[0]), ".0%"),
        calm_high=number(at(curves[calm], PRACTICAL[1]), ".0%"),
        noisy_low=number(at(curves[noisy], PRACTICAL[0]), ".0%"),
        noisy_high=number(at(curves[noisy], PRACTICAL[1]), ".0%"),
        chance=number(1 / n_keys, ".1%"),
        keys=n_keys,
    )
