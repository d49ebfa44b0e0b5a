"""Measure what the course promises, on this machine, in one run (what `make bench` runs).

    python tools/bench.py                  all four sections, prints a table, writes docs/benchmarks.md
    python tools/bench.py --only causal    one section (causal, widgets, course, grading)
    python tools/bench.py --quick          fewer repetitions and smaller sizes (a smoke run)

Ratios are measured side by side in the same run (medians of several repetitions), because absolute
times on shared machines are noisy. Exits 1 when a target is missed. Not part of `make test`.
"""
from __future__ import annotations

import argparse
import datetime
import importlib
import inspect
import os
import pkgutil
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "autograde"))
os.environ.setdefault("MPLBACKEND", "Agg")

TARGETS = {
    "causal_speedup": 1.8,  # tiled vs full-then-mask at n = 4096
    "causal_memory_ratio": 1 / 8,  # tiled peak / full peak at n = 4096
    "widget_update_ms": 100.0,  # median of one update, each notebook's widgets
    "course_seconds": 60.0,  # executing every solution notebook
    "grading_speedup": 1.6,  # parallel vs serial grading, 40 submissions
}


def section_causal(quick: bool) -> tuple[list[str], list[bool]]:
    from heads_and_masks.benchmarks import causal_attention_benchmark

    sizes = (512, 1024, 2048) if quick else (512, 1024, 2048, 4096)
    rows = causal_attention_benchmark(sizes=sizes, d=64, block=128, repeats=3 if quick else 5)
    lines = ["| n | full (ms) | tiled (ms) | speedup | theory 2n/(n+1) | computed fraction | full peak (MB) | tiled peak (MB) | memory ratio |",
             "|---|---|---|---|---|---|---|---|---|"]
    ok = []
    for row in rows:
        lines.append(f"| {row['n']} | {row['full_seconds'] * 1000:.1f} | {row['tiled_seconds'] * 1000:.1f} | {row['speedup']:.2f}× | "
                     f"{row['theoretical_speedup']:.3f}× | {row['computed_fraction']:.4f} | "
                     f"{row['full_peak_bytes'] / 1e6:.1f} | {row['tiled_peak_bytes'] / 1e6:.2f} | "
                     f"{row['tiled_peak_bytes'] / row['full_peak_bytes']:.4f} |")
    last = rows[-1]
    if last["n"] == 4096:
        ok.append(last["speedup"] >= TARGETS["causal_speedup"])
        ok.append(last["tiled_peak_bytes"] / last["full_peak_bytes"] <= TARGETS["causal_memory_ratio"])
        lines.append(f"\nTarget at n = 4096: speedup ≥ {TARGETS['causal_speedup']}× "
                     f"({'met' if ok[0] else 'MISSED'}), memory ≤ 1/8 of full ({'met' if ok[1] else 'MISSED'}).")
    return lines, ok


def _course_widgets():
    """Every CourseWidget subclass defined in heads_and_masks.widgets.*, with its module."""
    import heads_and_masks.widgets as package
    from heads_and_masks.widgets.base import CourseWidget

    for info in pkgutil.iter_modules(package.__path__):
        if info.name == "base":
            continue
        module = importlib.import_module(f"heads_and_masks.widgets.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, CourseWidget) and cls is not CourseWidget and cls.__module__ == module.__name__:
                yield info.name, cls


def _control_values(control):
    """A few values to move a control through: slider ends and middle, both checkbox states, options."""
    if hasattr(control, "options") and control.options:
        options = [o[1] if isinstance(o, tuple) else o for o in control.options]
        return options[:4]
    if isinstance(control.value, bool):
        return [not control.value, control.value]
    if hasattr(control, "min") and hasattr(control, "max"):
        lo, hi = control.min, control.max
        mid = lo + (hi - lo) / 2
        values = [hi, lo, mid, hi]
        return [type(control.value)(v) if isinstance(control.value, int) else v for v in values]
    return []


def section_widgets(quick: bool) -> tuple[list[str], list[bool]]:
    lines = ["| widget | updates timed | median update (ms) | slowest (ms) |", "|---|---|---|---|"]
    ok = []
    for module, cls in _course_widgets():
        try:
            widget = cls()
        except TypeError:
            lines.append(f"| {module}.{cls.__name__} | needs arguments: skipped | | |")
            continue
        times = []
        for _ in range(1 if quick else 3):
            for control in widget.controls.values():
                for value in _control_values(control):
                    try:
                        control.value = value
                    except Exception:  # a value the control refuses (e.g. a divisor rule)
                        continue
                    times.append(widget.last_update_seconds * 1000)
        if not times:
            continue
        median = statistics.median(times)
        ok.append(median <= TARGETS["widget_update_ms"])
        lines.append(f"| {module}.{cls.__name__} | {len(times)} | {median:.1f} | {max(times):.1f} |")
    lines.append(f"\nTarget: median update ≤ {TARGETS['widget_update_ms']:.0f} ms for each widget "
                 f"({'met' if all(ok) else 'MISSED'}).")
    return lines, ok


def section_course(quick: bool) -> tuple[list[str], list[bool]]:
    import tempfile

    import nbformat
    from nbclient import NotebookClient

    lines = ["| notebook | execution (s) |", "|---|---|"]
    total = 0.0
    for folder in sorted((REPO / "solutions").iterdir()):
        if not folder.is_dir():
            continue
        notebook = nbformat.read(folder / f"{folder.name}.ipynb", as_version=4)
        with tempfile.TemporaryDirectory() as scratch:
            start = time.perf_counter()
            NotebookClient(notebook, timeout=600, kernel_name="python3",
                           resources={"metadata": {"path": scratch}}).execute()
            seconds = time.perf_counter() - start
        total += seconds
        lines.append(f"| {folder.name} | {seconds:.1f} |")
    ok = [total <= TARGETS["course_seconds"]]
    lines.append(f"| **all** | **{total:.1f}** |")
    lines.append(f"\nTarget: every solution notebook executed in ≤ {TARGETS['course_seconds']:.0f} s in total "
                 f"({'met' if ok[0] else 'MISSED'}).")
    return lines, ok


def section_grading(quick: bool) -> tuple[list[str], list[bool]]:
    module = None
    for name in ("classroom", "pipeline", "benchmark", "grade"):
        try:
            candidate = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(candidate, "grading_throughput_benchmark"):
            module = candidate
            break
    if module is None:
        return ["grading_throughput_benchmark not found in autograde/"], [False]
    result = module.grading_throughput_benchmark(n_submissions=10 if quick else 40)
    lines = ["| mode | submissions | seconds | notebooks per minute |", "|---|---|---|---|"]
    for mode in ("serial", "parallel"):
        lines.append(f"| {mode} | {result['n_submissions']} | {result[mode + '_seconds']:.1f} | "
                     f"{result[mode + '_per_minute']:.1f} |")
    ok = [result["speedup"] >= TARGETS["grading_speedup"]]
    lines.append(f"\nParallel / serial: {result['speedup']:.2f}× with {result.get('workers', '?')} workers "
                 f"(target ≥ {TARGETS['grading_speedup']}×: {'met' if ok[0] else 'MISSED'}).")
    return lines, ok


SECTIONS = {
    "causal": ("Causal attention: full-then-mask vs tiled (d = 64, block = 128)", section_causal),
    "widgets": ("Widget responsiveness (one update: compute and redraw, headless)", section_widgets),
    "course": ("The whole course: executing every solution notebook (nbclient)", section_course),
    "grading": ("Grading throughput (real nbgrader autograde)", section_grading),
}


def machine() -> str:
    import numpy

    return (f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"numpy {numpy.__version__}, {platform.platform()}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=sorted(SECTIONS), action="append")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-write", action="store_true", help="do not rewrite docs/benchmarks.md")
    args = parser.parse_args()
    chosen = args.only or list(SECTIONS)
    report = [f"# Benchmarks", "", f"Measured {datetime.datetime.now():%Y-%m-%d %H:%M} on {machine()}"
              + (" (quick run)" if args.quick else "") + ".", ""]
    all_ok = True
    for key in chosen:
        title, run = SECTIONS[key]
        print(f"\n## {title}", flush=True)
        try:
            lines, ok = run(args.quick)
        except Exception as error:  # report and go on with the next section
            lines, ok = [f"failed: {type(error).__name__}: {error}"], [False]
        print("\n".join(lines), flush=True)
        report += [f"## {title}", "", *lines, ""]
        all_ok &= all(ok)
    if not args.no_write and not args.quick and set(chosen) == set(SECTIONS):
        (REPO / "docs" / "benchmarks.md").write_text("\n".join(report))
        print("\nwrote docs/benchmarks.md")
    print("\nall targets met" if all_ok else "\nSOME TARGETS MISSED", flush=True)
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
