"""Grading throughput: plain nbgrader, this pipeline with one worker, and with one worker per core, side by side.

Not a step of the pipeline: the measurement behind ``make bench`` (its grading section) and
``python -m autograde.grade bench``. It grades through the same command as instructors do (``python -m autograde.grade``).
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterable

import nbformat

from .course import REPO, Course, default_workers, expected_notebooks, grade_id, is_answer, make_course_copy, setup
from .results import Status, read_results, read_verdicts
from .kernel.sandbox import GRADING_ENV
from .tool_env import tool_env


def filled_submission(course: Course, assignment: str) -> nbformat.NotebookNode:
    """The released notebook with every answer cell filled from the solutions: a correct submission."""
    name = expected_notebooks(course, assignment)[0]
    released = nbformat.read(course.path("release", assignment=assignment) / f"{name}.ipynb", as_version=4)
    solutions = nbformat.read(course.path("source", assignment=assignment) / f"{name}.ipynb", as_version=4)
    answers = {grade_id(c): c.source for c in solutions.cells if is_answer(c)}
    for cell in released.cells:
        if grade_id(cell) in answers:
            cell.source = "\n".join(
                line
                for line in answers[grade_id(cell)].splitlines()
                if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION")
            )
    return released


def hand_in(submitted: Path, assignment: str, notebook, notebook_name: str, n: int) -> None:
    """``n`` students (``student000``...) hand ``notebook`` in, into the ``submitted`` folder of a course."""
    for index in range(n):
        folder = submitted / f"student{index:03d}" / assignment
        folder.mkdir(parents=True)
        nbformat.write(notebook, folder / f"{notebook_name}.ipynb")


def handed_in(results: dict, n: int) -> dict:
    """The results of the ``n`` students who handed this assignment in (``student000``...): a course copy
    also lists, as missing, the students of an earlier assignment's larger run."""
    return {student: r for student, r in results.items() if student in {f"student{i:03d}" for i in range(n)}}


def failing_cells(course, assignment: str, student: str) -> str:
    """`; cell: the judge's message` for each graded test cell whose verdict is not a pass (a correct
    submission has none), read from the verdict records of the autograded notebook (``read_verdicts``)."""
    found = []
    for path in sorted(course.path("autograded", student, assignment).glob("*.ipynb")):
        for cell, verdict in read_verdicts(nbformat.read(path, as_version=4)).items():
            if not verdict.get("passed"):
                words = " ".join(verdict["message"].split()) or f"({verdict.get('failure') or 'failed'})"
                found.append(f"; {cell}: {words[:400]}")
    return "".join(found)


class CpuMeter:
    """CPU seconds used by commands and by every process they start (workers, fork server, sandboxed
    kernels), from a cpuacct cgroup of the meter's own where the machine lets us make one (cgroup v1,
    as root); else machine-wide from /proc/stat, which also counts other jobs (``scope`` says which).

        meter = CpuMeter()
        seconds = meter.run(subprocess.run, [...])   # (wall seconds, CPU seconds) of the command
        meter.stolen                                 # CPU seconds the host took from this machine meanwhile

    On a virtual machine the host runs other machines' work on the same physical cores: the time a core of
    this one was ready to run but the host ran something else is its *steal* (/proc/stat), counted on every
    core, ours or not. A run that lost much of it was slowed by the host, not by the grading.
    """

    CPUACCT = Path("/sys/fs/cgroup/cpuacct")

    def __init__(self):
        self.group: Path | None = None
        self.stolen = 0.0
        try:
            # Each kernel runs in a cpu cgroup of its own (kernel/resources.py, Cgroups): where cpu and cpuacct are one
            # hierarchy, that takes the kernels out of the meter's group, so the meter counts machine-wide.
            if self.CPUACCT.resolve() == (self.CPUACCT.parent / "cpu").resolve():
                raise OSError("cpu and cpuacct are one hierarchy")
            group = self.CPUACCT / f"hm-bench-{os.getpid()}"
            group.mkdir(exist_ok=True)
            (group / "cpuacct.usage").read_text()
            self.group, self.scope = group, "measured in a cpuacct cgroup of the run's own"
        except OSError:
            self.scope = "measured machine-wide from /proc/stat: other jobs included"

    def _used(self) -> float:
        if self.group is not None:
            return int((self.group / "cpuacct.usage").read_text()) / 1e9
        busy = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
        return (sum(busy) - busy[3] - busy[4]) / os.sysconf("SC_CLK_TCK")  # all but idle and iowait

    def run(self, command: list[str], **options) -> tuple[float, float, subprocess.CompletedProcess]:
        if self.group is not None:
            procs = str(self.group / "cgroup.procs")

            def join() -> None:  # in the child, before it execs: it and all it starts are counted
                with open(procs, "w") as handle:
                    handle.write(str(os.getpid()))

            options["preexec_fn"] = join
        cpu, stolen, started = self._used(), self._stolen(), time.perf_counter()
        done = subprocess.run(command, **options)
        wall = time.perf_counter() - started
        self.stolen = self._stolen() - stolen
        return wall, self._used() - cpu, done

    @staticmethod
    def _stolen() -> float:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()  # cpu user nice system idle ... steal
        return (int(fields[8]) if len(fields) > 8 else 0) / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        if self.group is not None:
            with contextlib.suppress(OSError):
                self.group.rmdir()


def _interpreter_work(start, seconds: float, done) -> None:
    """Python's own kind of work (small dicts and strings, as grading does), for ``seconds`` from ``start``."""
    start.wait()
    count, end = 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        for i in range(1000):
            count += len({"value": i, "text": str(i)}["text"])
    done.put(count)


def machine_capacity(processes: int, seconds: float = 1.0, rounds: int = 3) -> float:
    """How many cores' worth of work this machine does with ``processes`` busy processes at once: the work
    they all do together over what one process alone does in the same time.

    The two are measured one after the other, ``rounds`` times, and the median ratio is returned: a burst of
    the host's other work during one measurement (one process alone once did 1.35 times its own work in a
    single round, on a shared CI machine) moves one round, not the result.

    On a virtual machine a "core" may share a physical core with other work: two processes then each run at
    a fraction of one's speed, although every core counts as busy and no time shows as stolen. Here, with
    nothing else running, two at once measured 1.8 to 2.0 cores' worth; beside another job of ours, about 1.
    Whatever the grading does, ``n`` workers give at most this over one worker.
    """
    import multiprocessing

    context = multiprocessing.get_context("fork")

    def together(n: int) -> int:
        start, done = context.Barrier(n), context.Queue()
        workers = [context.Process(target=_interpreter_work, args=(start, seconds, done)) for _ in range(n)]
        for worker in workers:
            worker.start()
        counts = [done.get(timeout=seconds + 60) for _ in workers]
        for worker in workers:
            worker.join()
        return sum(counts)

    ratios = []
    for _ in range(rounds):
        alone = together(1)
        ratios.append(together(processes) / alone)
    return statistics.median(ratios)


# A class-sized run: as many submissions as one worker grades in this many seconds. A minute is less than any
# assignment's class of 300 takes one worker (1-4.5 minutes here), so start-up weighs on it no more than on a class.
CLASS_RUN_SECONDS = 60.0


def class_size(seconds_per_submission: float, class_run_seconds: float, at_least: int, workers: int) -> int:
    """How many submissions a class-sized run grades: as many as one worker grades in ``class_run_seconds``
    (``at_least`` of them, at most 300), rounded up to a multiple of ``workers``. With one more, the run's
    last submission is graded with every other worker idle: half a submission lost, which a class of 300
    never notices but a run of a minute does (up to 1.5 %)."""
    n = min(300, max(at_least, math.ceil(class_run_seconds / seconds_per_submission)))
    return workers * math.ceil(n / workers)


def grading_throughput_benchmark(
    assignment: str | Iterable[str] | None = None,
    n_submissions: int = 6,
    workers: int | None = None,
    class_run_seconds: float = CLASS_RUN_SECONDS,
) -> dict:
    """Grade the same ``n_submissions`` correct submissions of every assignment three ways, side by side,
    then a class-sized run of each assignment with 1 worker and with ``workers``.

    * ``plain``: nbgrader's own ``nbgrader autograde`` command, serially, with nbgrader's default
      configuration (its ``Execute`` step and the notebook's default kernel, no sandbox, no judge),
      in a course copy of its own;
    * ``one``: this pipeline with one worker (sandboxed kernel and judge on);
    * ``two``: this pipeline with ``workers`` workers (one per core by default);

    the pipeline as instructors run it, ``python -m autograde.grade autograde`` in a process of its
    own (its imports and its cluster's start-up paid in every run, as plain nbgrader pays its own).

    The three run one after the other for each assignment (``assignment``: one name, several, or
    None for every one), so that each assignment's ratios come from the same minutes of the
    machine. Seconds per notebook are wall-clock times divided by ``n_submissions`` (start-up of
    nbgrader and of the workers included). Every submission must score full marks in every mode.

    A run of 6 is mostly start-up (the command's imports, the cluster, the first kernel: 2-3 s, against
    0.3-1.5 s a submission), which no second worker shares. How much a second worker gives a class is
    measured on a *class-sized* run of each assignment: as many submissions as one worker grades in about
    ``class_run_seconds`` (from the small run's median submission; at least ``n_submissions``, at most 300,
    rounded up to a multiple of ``workers``), graded with 1 worker and with ``workers``, the same submissions
    in both, each twice (1, ``workers``, ``workers``, 1): its time is the mean of its two runs.
    """
    workers = workers or default_workers()
    if assignment is None:
        assignments = Course(root=REPO).assignments()
    elif isinstance(assignment, str):
        assignments = [assignment]
    else:
        assignments = list(assignment)
    figures: dict = {
        "assignments": assignments,
        "n_submissions": n_submissions,
        "workers": workers,
        "cores": default_workers(),
        "rows": [],
    }
    meter = CpuMeter()
    plain_env = tool_env(headless=True)
    plain_env.pop(GRADING_ENV, None)  # plain nbgrader knows nothing of grading mode
    with tempfile.TemporaryDirectory(prefix="hm-bench-") as scratch:
        plain_root = Path(scratch) / "plain"
        plain_root.mkdir()
        shutil.copytree(
            REPO / "solutions",
            plain_root / "source",
            ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"),
        )
        (plain_root / "nbgrader_config.py").write_text(  # nbgrader's defaults, but for where the course is
            f"c = get_config()\nc.CourseDirectory.root = {str(plain_root)!r}\n"
            "c.CourseDirectory.course_id = 'plain-nbgrader'\n",
            encoding="utf-8",
        )

        def plain_nbgrader(*args: str) -> tuple[float, float]:
            wall, cpu, run = meter.run(
                [sys.executable, "-m", "nbgrader", *args], cwd=plain_root, env=plain_env, capture_output=True, text=True
            )
            if run.returncode != 0:
                raise RuntimeError(f"`nbgrader {' '.join(args)}` failed:\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}")
            return wall, cpu

        def plain_full_marks(name: str) -> int:
            from nbgrader.api import Gradebook

            with Gradebook(f"sqlite:///{plain_root / 'gradebook.db'}") as book:
                return sum(  # full marks on what the autograder grades (written answers wait for a person)
                    all(
                        g.score == g.max_score
                        for nb in book.find_submission(name, f"student{i:03d}").notebooks
                        for g in nb.grades
                        if g.cell_type != "markdown"
                    )
                    for i in range(n_submissions)
                )

        def pipeline(*args: str) -> tuple[float, float]:  # what an instructor runs: a process of its own
            wall, cpu, run = meter.run(
                [sys.executable, "-m", "autograde.grade", *args], cwd=REPO, capture_output=True, text=True
            )
            if run.returncode != 0:
                raise RuntimeError(
                    f"`autograde.grade {' '.join(args)}` failed:\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}"
                )
            return wall, cpu

        def graded(mode: str, course: Course, name: str, count: int, n: int, row: dict, again: bool = False) -> None:
            """Grade ``name`` in ``course`` with ``count`` workers; into ``row``: the time, the CPU and, over its
            ``n`` hand-ins, how many got full marks, the median submission and the first problems. ``again``:
            all of it once more (``--force``): the time and the CPU become the mean of the two runs."""
            seconds, cpu = pipeline(
                "--root", str(course.root), "autograde", name, "--workers", str(count), "--quiet",
                *(["--force"] if again else []),
            )  # fmt: skip
            stolen = meter.stolen / (seconds * (os.cpu_count() or 1))  # a share of all the machine's core time
            results = handed_in(read_results(course, name), n)
            full = {s: r.status == Status.GRADED and r.autograded_total == r.autograded_max for s, r in results.items()}
            times, full_marks = [r.seconds for r in results.values()], sum(full.values())
            if again:
                stolen = (stolen + row[f"{mode}_stolen"]) / 2
                seconds, cpu = (seconds + row[f"{mode}_seconds"]) / 2, (cpu + row[f"{mode}_cpu"]) / 2
                times += row[f"{mode}_submission_times"]
                full_marks = min(full_marks, row[f"{mode}_full_marks"])
            row[f"{mode}_seconds"], row[f"{mode}_cpu"], row[f"{mode}_submission_times"] = seconds, cpu, times
            row[f"{mode}_full_marks"], row[f"{mode}_stolen"] = full_marks, stolen
            row[f"{mode}_median_submission"] = statistics.median(times)
            row[f"{mode}_problems"] = [
                f"{r.line()} [{mode}, {count} worker(s)]{failing_cells(course, name, r.student)}"
                for s, r in results.items()
                if not full[s]
            ][:3] or row.get(f"{mode}_problems", [])

        modes = ("one", "two", "one_class", "two_class")
        courses = {mode: make_course_copy(Path(scratch) / mode) for mode in modes}
        for name in assignments:
            row: dict = {"assignment": name, "load": os.getloadavg()[0]}  # other work on the machine, as it began
            notebook = filled_submission(courses["one"], name)
            notebook_name = expected_notebooks(courses["one"], name)[0]
            plain_nbgrader("generate_assignment", name, "--force")
            for submitted in (
                plain_root / "submitted",
                courses["one"].path("submitted"),
                courses["two"].path("submitted"),
            ):
                hand_in(submitted, name, notebook, notebook_name, n_submissions)
            row["plain_seconds"], row["plain_cpu"] = plain_nbgrader("autograde", name)
            row["plain_full_marks"] = plain_full_marks(name)
            for mode, count in (("one", 1), ("two", workers)):
                setup(courses[mode], name)
                graded(mode, courses[mode], name, count, n_submissions, row)
            # A class-sized run, in two courses of its own: n_class copies of the same submission.
            row["class_n"] = n_class = class_size(
                row["one_median_submission"], class_run_seconds, n_submissions, workers
            )
            for mode in ("one_class", "two_class"):
                hand_in(courses[mode].path("submitted"), name, notebook, notebook_name, n_class)
                setup(courses[mode], name)
            # 1 worker, 2, 2 again, 1 again (A B B A): a drift in what other jobs take of the machine over the
            # four runs weighs on both alike, and each is timed as the mean of its two runs.
            capacity = [machine_capacity(workers)]  # before and after: it drifts as the host's other work does
            for mode, again in (("one_class", False), ("two_class", False), ("two_class", True), ("one_class", True)):
                count = 1 if mode == "one_class" else workers
                graded(mode, courses[mode], name, count, n_class, row, again=again)
            capacity.append(machine_capacity(workers))
            row["machine_capacity"] = statistics.mean(capacity)
            for mode in ("plain", "one", "two", "one_class", "two_class"):
                row[f"{mode}_per_notebook"] = row[f"{mode}_seconds"] / (n_class if "class" in mode else n_submissions)
                row[f"{mode}_cores"] = row[f"{mode}_cpu"] / row[f"{mode}_seconds"]  # cores busy on average
            # The most a second worker can add: the cores' worth of work the machine does with `workers` busy
            # processes (measured, machine_capacity) over the cores one worker keeps busy.
            row["ceiling"] = min(workers, row["machine_capacity"] / row["one_class_cores"])
            row["one_over_plain"] = row["one_seconds"] / row["plain_seconds"]
            row["small_speedup"] = row["one_seconds"] / row["two_seconds"]
            row["speedup"] = row["one_class_seconds"] / row["two_class_seconds"]
            # once the workers are up: a worker grades one submission after the other, `workers` of them at once
            row["steady_speedup"] = workers * row["one_class_median_submission"] / row["two_class_median_submission"]
            row["all_full_marks"] = all(
                row[f"{m}_full_marks"] == (n_class if "class" in m else n_submissions)
                for m in ("plain", "one", "two", "one_class", "two_class")
            )
            figures["rows"].append(row)
    meter.close()
    rows = figures["rows"]
    for mode in ("plain", "one", "two", "one_class", "two_class"):
        figures[f"{mode}_seconds"] = sum(r[f"{mode}_seconds"] for r in rows)
        figures[f"{mode}_cpu"] = sum(r[f"{mode}_cpu"] for r in rows)
        figures[f"{mode}_cores"] = figures[f"{mode}_cpu"] / figures[f"{mode}_seconds"]
    for mode in ("one_class", "two_class"):  # the host's steal over the class-sized runs, weighted by their time
        stolen = sum(r[f"{mode}_stolen"] * r[f"{mode}_seconds"] for r in rows)
        figures[f"{mode}_stolen"] = stolen / figures[f"{mode}_seconds"]
    figures["class_n"] = sum(r["class_n"] for r in rows)
    figures["machine_capacity"] = sum(r["machine_capacity"] * r["one_class_seconds"] for r in rows) / sum(
        r["one_class_seconds"] for r in rows
    )  # weighted by the time of the runs it stood beside
    figures["ceiling"] = min(workers, figures["machine_capacity"] / figures["one_class_cores"])
    figures["cpu_scope"] = meter.scope
    figures["one_over_plain"] = figures["one_seconds"] / figures["plain_seconds"]
    figures["small_speedup"] = figures["one_seconds"] / figures["two_seconds"]
    figures["speedup"] = figures["one_class_seconds"] / figures["two_class_seconds"]
    figures["worst_one_over_plain"] = max(rows, key=lambda r: r["one_over_plain"])
    figures["worst_speedup"] = min(rows, key=lambda r: r["speedup"])
    figures["steady_speedup"] = (
        workers
        * sum(r["one_class_median_submission"] for r in rows)
        / sum(r["two_class_median_submission"] for r in rows)
    )
    # A class: every student hands in every assignment measured here, graded with `workers` workers. Each
    # assignment's run costs its start-up (what the measured wall time holds beyond its submissions) once,
    # then each submission its median time inside a worker, `workers` at a time.
    figures["class_students"] = students = 300
    class_seconds = 0.0
    for r in rows:
        marginal = r["two_class_median_submission"] / workers
        class_seconds += max(0.0, r["two_class_seconds"] - r["class_n"] * marginal) + students * marginal
    figures["class_hours"] = class_seconds / 3600
    figures["class_hours_wall"] = students * sum(r["two_per_notebook"] for r in rows) / 3600  # start-up per N
    figures["all_full_marks"] = all(r["all_full_marks"] for r in rows)
    return figures


def describe(figures: dict) -> str:
    n, workers = figures["n_submissions"], figures["workers"]
    lines = [
        f"grading the same {n} correct submissions of each assignment ({figures['cores']} cores), "
        "seconds per notebook (wall clock / submissions), then a class-sized run (N submissions):",
        f"  {'assignment':<18} {'plain nbgrader':>14} {'1 worker':>9} {f'{workers} workers':>10} "
        f"{'1 worker/plain':>15} {'N':>4} {'speedup at N':>13}  full marks",
    ]
    for r in figures["rows"]:
        lines.append(
            f"  {r['assignment']:<18} {r['plain_per_notebook']:14.2f} {r['one_per_notebook']:9.2f} "
            f"{r['two_per_notebook']:10.2f} {r['one_over_plain']:14.2f}x {r['class_n']:4d} {r['speedup']:12.2f}x  "
            f"{r['all_full_marks']}  (at {n}: {r['small_speedup']:.2f}x; steady state {r['steady_speedup']:.2f}x; "
            f"cores busy at N: 1 worker {r['one_class_cores']:.2f}, {workers} workers {r['two_class_cores']:.2f}; "
            f"machine {r['machine_capacity']:.2f} cores' worth; ceiling {r['ceiling']:.2f}x; taken by the host at N: {r['one_class_stolen']:.0%} / {r['two_class_stolen']:.0%})"
        )
    total = len(figures["rows"]) * n
    lines += [
        f"  {'all':<18} {figures['plain_seconds'] / total:14.2f} {figures['one_seconds'] / total:9.2f} "
        f"{figures['two_seconds'] / total:10.2f} {figures['one_over_plain']:14.2f}x {figures['class_n']:4d} "
        f"{figures['speedup']:12.2f}x  {figures['all_full_marks']}  (at {n}: {figures['small_speedup']:.2f}x; "
        f"cores busy at N: 1 worker {figures['one_class_cores']:.2f}, {workers} workers "
        f"{figures['two_class_cores']:.2f}; machine {figures['machine_capacity']:.2f} cores' worth; "
        f"ceiling {figures['ceiling']:.2f}x; CPU {figures['cpu_scope']}; "
        f"taken by the host at N: 1 worker {figures['one_class_stolen']:.0%}, {workers} workers "
        f"{figures['two_class_stolen']:.0%})",
        f"  a class of {figures['class_students']} on these {len(figures['rows'])} assignments with {workers} "
        f"workers: {figures['class_hours']:.2f} h ({figures['class_hours_wall']:.2f} h if every {n} "
        "submissions paid the start-up again)",
    ]
    return "\n".join(lines)
