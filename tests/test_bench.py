"""`make bench` (tools/bench.py): its report, and that README and docs show a full run's figures.

The timings themselves are never asserted here (shared machines are noisy); the benchmark command
checks its own targets and exits non-zero on a miss.
"""

from __future__ import annotations

import math
import os
import re
import sys

from course import REPO

sys.path.insert(0, str(REPO / "tools"))
import bench


def test_summary_says_which_targets_were_missed():
    checks = [bench.Check("fast thing", "2.0×", "≥ 1.8×", True), bench.Check("slow thing", "1.1×", "≥ 1.6×", False)]
    rows = bench.summary(checks)
    assert rows[2].startswith("| fast thing | 2.0× | ≥ 1.8× | met |")
    assert rows[3].startswith("| slow thing | 1.1× | ≥ 1.6× | MISSED |")


def test_write_readme_replaces_only_its_block(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"before\n{bench.README_BEGIN}\nold figures\n{bench.README_END}\nafter\n", encoding="utf-8")
    bench.write_readme("Measured today.", [bench.Check("thing", "1 s", "≤ 2 s", True)], path=readme)
    text = readme.read_text(encoding="utf-8")
    assert text.startswith("before\n") and text.endswith("\nafter\n")
    assert "old figures" not in text
    assert "Measured today." in text and "| thing | 1 s | ≤ 2 s | met |" in text


def test_readme_shows_the_last_full_run():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert bench.README_BEGIN in text and bench.README_END in text, "README lost its benchmark block"
    block = text.split(bench.README_BEGIN, 1)[1].split(bench.README_END, 1)[0]
    assert re.search(r"Measured \d{4}-\d\d-\d\d \d\d:\d\d on .*cores", block), "no date and machine in README's figures"
    promised = ["causal attention at n = 4096", "widget", "the whole course", "grading"]
    missing = [p for p in promised if p not in block]
    assert not missing, f"README's figures lack {missing}: run `make bench` on an idle machine"


def test_docs_hold_every_section_of_a_full_run():
    text = (REPO / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    missing = [title for title, _ in bench.SECTIONS.values() if f"## {title}" not in text]
    assert not missing, f"docs/benchmarks.md lacks {missing}: run `make bench` (all sections)"
    assert "(quick run)" not in text, "docs/benchmarks.md holds a quick run"
    unfilled = re.findall(r"\{[A-Za-z_][\w\[\]'\".]*\}", text)  # a text that was meant to be an f-string
    assert not unfilled, f"docs/benchmarks.md prints placeholders instead of figures: {unfilled}"


def test_the_cpu_meter_counts_the_processes_a_command_starts():
    """Cores busy (grading throughput) count the workers and kernels a grading command starts, not only
    the command: a command that only waits for a child burning CPU is charged the child's CPU."""
    from autograde.throughput import CpuMeter

    burn = "import time; t = time.process_time()\nwhile time.process_time() - t < 0.4: pass"
    waits = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {burn!r}], check=True)"
    meter = CpuMeter()
    try:
        wall, cpu, done = meter.run([sys.executable, "-c", waits])
        assert done.returncode == 0
        assert cpu >= 0.35, f"the child's 0.4 s of CPU were not counted ({cpu:.2f} s, {meter.scope})"
        cores = os.cpu_count() or 1  # steal: what the host took from this machine's cores over the run
        assert 0 <= meter.stolen <= wall * cores + 0.05, f"{meter.stolen:.2f} s stolen in {wall:.2f} s on {cores} cores"
        if meter.group is not None:  # its own cgroup: other jobs are not counted, so a sleep costs next to nothing
            wall, cpu, _ = meter.run([sys.executable, "-c", "import time; time.sleep(0.5)"])
            assert wall >= 0.5 and cpu < 0.25, f"a sleeping command was charged {cpu:.2f} s of CPU"
    finally:
        meter.close()


def test_a_class_sized_run_gives_every_worker_the_same_share():
    """N is what one worker grades in the run's time, rounded up to a multiple of the workers: an odd N would
    end the 2-worker run with one worker idle, counted against the second worker."""
    from autograde.throughput import class_size

    assert class_size(1.0, 29.0, 6, 2) == 30  # 29 rounded up
    assert class_size(0.36, 30.0, 6, 2) == 84  # already even
    assert class_size(1.0, 29.0, 6, 3) == 30 and class_size(1.0, 31.0, 6, 3) == 33
    assert class_size(10.0, 30.0, 6, 2) == 6  # at least the small run's submissions
    assert class_size(0.01, 30.0, 6, 2) == 300  # at most a class of 300
    assert class_size(1.0, 29.0, 6, 1) == 29  # one worker: nothing to share


def _nearest_to_one_core(measure, attempts: int = 3) -> float:
    """The measurement nearest one core's worth among up to ``attempts`` (stopping at the first within a quarter
    of it). A burst of the host's other work moves one measurement (the medians of 3 rounds moved by 0.4 on a
    loaded CI machine); a wrong measure is wrong every time."""
    measured = []
    for _attempt in range(attempts):
        measured.append(measure())
        if 0.8 <= measured[-1] <= 1.25:
            break
    return min(measured, key=lambda ratio: abs(math.log(ratio)))


def test_the_machines_capacity_is_the_work_of_processes_at_once_over_one_alone():
    """The ceiling's measure of the machine: pinned to one core, two processes do one core's worth of work
    (each half of it), however many cores the machine has; one process is one core's worth. A measure that
    ran them one after the other would say 2, one that averaged them would say 0.5: the bounds lie between."""
    from autograde.throughput import machine_capacity

    cores = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {min(cores)})  # this process and the ones it starts: one core
        shared = _nearest_to_one_core(lambda: machine_capacity(2, seconds=0.25))
    finally:
        os.sched_setaffinity(0, cores)
    assert 0.71 <= shared <= 1.41, f"two processes on one core did {shared:.2f} cores' worth of work"
    alone = _nearest_to_one_core(lambda: machine_capacity(1, seconds=0.25))
    assert 0.71 <= alone <= 1.41, f"one process did {alone:.2f} cores' worth of its own work"


def _repository_with(tmp_path, monkeypatch, benchmarks: str, readme_block: str, around=("", "")):
    """A repository of two files for ``bench`` to write into: docs/benchmarks.md as given, and README.md with
    ``readme_block`` between the bench's markers (``around`` the text before and after them)."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "benchmarks.md").write_text(benchmarks, encoding="utf-8")
    before, after = around
    (tmp_path / "README.md").write_text(
        f"{before}{bench.README_BEGIN}\n{readme_block}{bench.README_END}\n{after}", encoding="utf-8"
    )
    monkeypatch.setattr(bench, "REPO", tmp_path)
    return tmp_path


def test_a_section_measured_alone_replaces_only_its_own_section_and_rows(tmp_path, monkeypatch):
    docs = (
        _repository_with(
            tmp_path,
            monkeypatch,
            "# Benchmarks\n\n| promise | measured | target | |\n|---|---|---|---|\n"
            "| fast thing | 1.0× | ≥ 1.8× | MISSED |\n| other thing | 3 s | ≤ 5 s | met |\n\n"
            "## Causal\n\nold table\n\n## Widgets\n\nwidget table\n",
            "| fast thing | 1.0× | ≥ 1.8× | MISSED |\n",
            around=("intro\n", "end\n"),
        )
        / "docs"
    )
    checks = [bench.Check("fast thing", "2.0×", "≥ 1.8×", True)]
    bench.write_sections("Measured now.", ["Causal"], ["## Causal", "", "new table", ""], checks)
    text = (docs / "benchmarks.md").read_text(encoding="utf-8")
    assert "| fast thing | 2.0× | ≥ 1.8× | met |" in text and "| other thing | 3 s | ≤ 5 s | met |" in text
    assert "new table" in text and "old table" not in text and "Re-measured alone: Measured now." in text
    assert "## Widgets\n\nwidget table" in text  # the other sections stay as the last full run left them
    readme = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert (
        "| fast thing | 2.0× | ≥ 1.8× | met |" in readme and readme.startswith("intro\n") and readme.endswith("end\n")
    )
    assert "Re-measured alone (Causal): Measured now." in readme  # the rows' date, where the block's differs


def test_a_section_measured_for_the_first_time_is_added_with_its_rows(tmp_path, monkeypatch):
    docs = (
        _repository_with(
            tmp_path,
            monkeypatch,
            "# Benchmarks\n\n| promise | measured | target | |\n|---|---|---|---|\n| other thing | 3 s | ≤ 5 s | met |\n\n"
            "## Causal\n\nold table\n",
            "| promise | measured | target | |\n|---|---|---|---|\n| other thing | 3 s | ≤ 5 s | met |\n",
            around=("intro\n", "end\n"),
        )
        / "docs"
    )
    checks = [bench.Check("new thing", "20 s", "≤ 60 s", True)]
    bench.write_sections("Measured now.", ["New"], ["## New", "", "new table", ""], checks)
    text = (docs / "benchmarks.md").read_text(encoding="utf-8")
    assert "| other thing | 3 s | ≤ 5 s | met |\n| new thing | 20 s | ≤ 60 s | met |\n" in text
    assert "## Causal\n\nold table" in text and text.rstrip().endswith(
        "## New\n\nRe-measured alone: Measured now.\n\nnew table"
    )
    readme = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert "| other thing | 3 s | ≤ 5 s | met |\n| new thing | 20 s | ≤ 60 s | met |\n" in readme


def test_a_section_measured_alone_keeps_the_notes_of_the_others(tmp_path, monkeypatch):
    """README's note of an earlier partial run says when its rows were measured: another section's run keeps it,
    a new run of the same section replaces it."""
    _repository_with(
        tmp_path,
        monkeypatch,
        "# Benchmarks\n\n## Causal\n\nold\n\n## New\n\nold\n",
        "| a | b | c | met |\n\nRe-measured alone (Causal): Measured then.\n",
    )
    bench.write_sections("Measured now.", ["New"], ["## New", "", "new table", ""], [])
    readme = (tmp_path / "README.md").read_text()
    assert "Re-measured alone (Causal): Measured then." in readme, readme
    assert "Re-measured alone (New): Measured now." in readme, readme
    bench.write_sections("Measured again.", ["Causal"], ["## Causal", "", "newer table", ""], [])
    readme = (tmp_path / "README.md").read_text()
    assert "Measured then." not in readme and "Re-measured alone (Causal): Measured again." in readme, readme
    assert "Re-measured alone (New): Measured now." in readme, readme
