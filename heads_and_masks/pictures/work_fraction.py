"""Notebook 04's static pictures: the used fraction, the price of small tiles, and the measured benchmark.

Each ``*_figure`` function takes numbers that the notebook computed and returns a matplotlib Figure;
``picture`` turns one into a PNG for the notebook, whatever matplotlib backend the kernel uses.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from ..figure_style import drawn_in_course_style
from ..grading import idle_while_grading
from ..i18n import _, number
from ..text_alternative import with_lead
from ..tiled import causal_used_entries, causal_used_fraction, tiled_computed_entries
from . import picture  # noqa: F401  (the notebook imports it from here)


@idle_while_grading()
@drawn_in_course_style
def used_fraction_figure(sizes) -> Figure:
    """(n+1)/(2n) against n, falling to 1/2 from above, with the used count as a second reading."""
    sizes = np.asarray(sizes)
    fractions = np.array([causal_used_fraction(int(n)) for n in sizes])
    figure = Figure(figsize=(6.4, 3.0), layout="constrained")
    ax = figure.subplots()
    ax.plot(sizes, fractions, marker="o", markersize=3, color="#2a9d8f", label=_("used share (n+1)/(2n)"))
    ax.axhline(0.5, color="black", linestyle="--", linewidth=1, label=_("limit 1/2"))
    lesson = (4, 128, 1024)  # the lesson's table, marked on the curve
    ax.plot(lesson, [causal_used_fraction(n) for n in lesson], "o", color="#e76f51", label=_("the lesson's table"))
    ax.text(
        0.3,
        0.62,
        "\n".join(
            _("n = {n}: {used} of {total} = {share}").format(
                n=n,
                used=number(causal_used_entries(n), ","),
                total=number(n * n, ","),
                share=number(causal_used_fraction(n), ".2%"),
            )
            for n in lesson
        ),
        transform=ax.transAxes,
        va="top",
    )
    ax.set(
        xscale="log",
        xlabel=_("sequence length n (log scale)"),
        ylabel=_("share of the n² scores used"),
        ylim=(0.45, 1.05),
    )
    ax.legend()
    ax.grid(alpha=0.3)
    lead = _(
        "The share of the n² scores a causal mask uses starts at {first} for n = {n_first} and sinks "
        "towards 1/2 as n grows, to {last} at n = {n_last}: a causal model uses about half of what full "
        "attention computes."
    ).format(
        first=number(fractions[0], ".0%"),
        n_first=number(sizes[0], ","),
        last=number(fractions[-1], ".2%"),
        n_last=number(sizes[-1], ","),
    )
    return with_lead(figure, lead)


@idle_while_grading()
@drawn_in_course_style
def tile_size_figure(n: int, seconds: dict[int, float]) -> Figure:
    """Left: computed share against tile size. Right: measured time against tile size (same n)."""
    blocks = np.array(sorted(seconds))
    fractions = [tiled_computed_entries(n, int(b)) / n**2 for b in blocks]
    tiles = [int(np.ceil(n / b)) * (int(np.ceil(n / b)) + 1) // 2 for b in blocks]
    figure = Figure(figsize=(7.2, 3.2), layout="constrained")
    ax_work, ax_time = figure.subplots(1, 2)
    ax_work.plot(blocks, fractions, marker="o", color="#2a9d8f", label=_("computed / n²"))
    ax_work.axhline(causal_used_fraction(n), color="black", linestyle="--", linewidth=1, label=_("ideal (n+1)/(2n)"))
    ax_work.set(
        xscale="log",
        xlabel=_("tile size B"),
        ylabel=_("share of n² computed"),
        title=_("work, n = {n}").format(n=n),
    )
    ax_work.legend()
    ax_time.plot(blocks, [seconds[int(b)] * 1000 for b in blocks], marker="o", color="#e76f51")
    for i, (b, count) in enumerate(zip(blocks, tiles)):
        above = i % 2 == 0
        ax_time.annotate(
            f"{count:,}",
            (b, seconds[int(b)] * 1000),
            textcoords="offset points",
            xytext=(0, 6 if above else -6),
            ha="center",
            va="bottom" if above else "top",
        )
    ax_time.set(
        xscale="log",
        yscale="log",
        xlabel=_("tile size B"),
        ylabel=_("milliseconds (best run)"),
        title=_("measured time (labels: tiles computed)"),
    )
    lowest, highest = min(seconds.values()) * 1000, max(seconds.values()) * 1000
    ax_time.set_ylim(lowest / 1.6, highest * 1.6)  # room for the labels above and below the points
    ax_time.set_yticks(
        [t for t in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000) if lowest / 2 <= t <= highest * 2]
        or [lowest],
        minor=False,
    )
    ax_time.yaxis.set_major_formatter("{x:g}")
    for ax in (ax_work, ax_time):
        ax.set_xticks(blocks, [str(b) for b in blocks])
        ax.minorticks_off()
        ax.set_xlim(blocks[0] / 1.4, blocks[-1] * 2.2)
        ax.grid(alpha=0.3)
    fastest, slowest = min(seconds, key=seconds.get), max(seconds, key=seconds.get)
    lead = _(
        "Smaller tiles waste less work: the share of n² computed falls from {most} with tiles of {largest} to "
        "{least} with tiles of {smallest}, close to the ideal {ideal}. The time does not follow: it is "
        "shortest with tiles of {fastest} ({fastest_ms} ms) and longest with tiles of {slowest} "
        "({slowest_ms} ms)."
    ).format(
        most=number(fractions[-1], ".0%"),
        largest=blocks[-1],
        least=number(fractions[0], ".1%"),
        smallest=blocks[0],
        ideal=number(causal_used_fraction(n), ".1%"),
        fastest=fastest,
        fastest_ms=number(seconds[fastest] * 1000, ".3g"),
        slowest=slowest,
        slowest_ms=number(seconds[slowest] * 1000, ".3g"),
    )
    return with_lead(figure, lead)


@idle_while_grading()
@drawn_in_course_style
def benchmark_figure(rows: list[dict]) -> Figure:
    """Left: the tiled kernel's speedup over unmasked full attention and over full-then-mask, beside the
    work ratio 2n/(n+1), for each float type in ``rows``. Right: peak extra memory of full-then-mask and tiled."""
    from matplotlib.lines import Line2D

    styles = {"float32": dict(marker="o", linestyle="-"), "float64": dict(marker="s", linestyle="--")}
    colours = {"unmasked": "#264653", "full": "#e76f51", "tiled": "#2a9d8f", "memory_full": "#8d99ae"}
    dtypes = [t for t in styles if any(r["dtype"] == t for r in rows)]
    figure = Figure(figsize=(7.2, 3.8), layout="constrained")
    ax_speed, ax_memory = figure.subplots(1, 2)
    mib = 2**20
    for dtype in dtypes:
        mine = [r for r in rows if r["dtype"] == dtype]
        n = [r["n"] for r in mine]
        style = dict(styles[dtype], markersize=4)
        ax_speed.plot(n, [r["speedup_over_unmasked"] for r in mine], color=colours["unmasked"], **style)
        ax_speed.plot(n, [r["speedup"] for r in mine], color=colours["full"], **style)
        ax_memory.plot(n, [r["full_peak_bytes"] / mib for r in mine], color=colours["memory_full"], **style)
        ax_memory.plot(n, [r["tiled_peak_bytes"] / mib for r in mine], color=colours["tiled"], **style)
    sizes = np.array(sorted({r["n"] for r in rows}))
    ax_speed.plot(sizes, 2 * sizes / (sizes + 1), color="black", linestyle=":", linewidth=1.2)
    ax_speed.axhline(1.0, color="#bbbbbb", linewidth=1)
    ax_speed.set(xscale="log", xlabel="n", ylabel=_("speedup of tiled (×)"), title=_("time: other / tiled"))
    ax_speed.set_ylim(bottom=0)
    ax_memory.set(xscale="log", yscale="log", xlabel="n", ylabel=_("peak extra memory (MiB)"), title=_("memory"))
    for ax in (ax_speed, ax_memory):
        ax.set_xticks(sizes, [str(x) for x in sizes])
        ax.minorticks_off()
        ax.grid(alpha=0.3)
    handles = [
        Line2D([], [], color=colours["unmasked"], label=_("tiled vs unmasked full attention")),
        Line2D([], [], color=colours["full"], label=_("tiled vs full-then-mask")),
        Line2D([], [], color="black", linestyle=":", label=_("work ratio 2n/(n+1)")),
        Line2D([], [], color=colours["memory_full"], label=_("memory of full-then-mask")),
        Line2D([], [], color=colours["tiled"], label=_("memory of tiled")),
    ]
    handles += [Line2D([], [], color="0.4", markersize=4, label=dtype, **styles[dtype]) for dtype in dtypes]
    figure.legend(handles=handles, loc="outside lower center", ncols=3, frameon=False)
    return with_lead(figure, _benchmark_lead(rows, dtypes[0]))


def _benchmark_lead(rows: list[dict], dtype: str) -> str:
    """The largest n measured, in the first float type: speedups against the work ratio, and peak memory."""
    largest = max((r for r in rows if r["dtype"] == dtype), key=lambda r: r["n"])
    smallest = min((r for r in rows if r["dtype"] == dtype), key=lambda r: r["n"])
    n = largest["n"]
    return _(
        "In {dtype} at n = {n}, the tiled kernel runs {over_unmasked} times as fast as unmasked full "
        "attention, against a work ratio 2n/(n+1) of {ratio}, and {over_full} times as fast as "
        "full-then-mask. From n = {n_small} to n = {n}, {longer} times longer, full-then-mask's extra memory "
        "grows {full_growth}-fold, to {full_mib} MiB, and the tiled kernel's only {tiled_growth}-fold, "
        "to {tiled_mib} MiB."
    ).format(
        dtype=dtype,
        n=n,
        n_small=smallest["n"],
        longer=number(n / smallest["n"], "g"),
        over_unmasked=number(largest["speedup_over_unmasked"], ".2f"),
        ratio=number(2 * n / (n + 1), ".2f"),
        over_full=number(largest["speedup"], ".1f"),
        full_growth=number(largest["full_peak_bytes"] / smallest["full_peak_bytes"], ".0f"),
        full_mib=number(largest["full_peak_bytes"] / 2**20, ",.0f"),
        tiled_growth=number(largest["tiled_peak_bytes"] / smallest["tiled_peak_bytes"], ".0f"),
        tiled_mib=number(largest["tiled_peak_bytes"] / 2**20, ",.1f"),
    )
