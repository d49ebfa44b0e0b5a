"""Step 3, the pool: every submission of an assignment graded in parallel, on Dask distributed.

``grade`` skips what is already graded from the same files, starts the cluster, inspects the rest
(``inspection.py``) while the workers get ready, and sends what can be graded to the cluster, one task
per submission (``run_tasks.py``, ``worker/grade_worker.py``): on one machine a local cluster of its own
(one worker process per core, nothing to set up); with ``scheduler=ADDRESS`` an existing cluster whose
workers have the course installed and bubblewrap.
A task receives the submission's bytes and the run's settings and returns the grades and the
autograded notebook as data; the gradebook, the results, the CSV and the report stay here, and only
this process writes them (``results.py``).

A worker process that dies costs only the submission it was grading: Dask grades it again on
another worker. A submission whose grading kills its worker every time ends after
``ALLOWED_FAILURES + 1`` tries as "kernel died", with a note, instead of going round forever.
A progress line, a per-cell, a per-submission time limit and a per-kernel memory limit; a run that
is interrupted resumes where it stopped.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import time
from heads_and_masks.i18n import ngettext
from typing import Callable

from .collect import collection_notes
from .course import (
    Course,
    default_workers,
    due_date,
    gradebook,
    roster,
    setup,
    share_gradebook_engines,
)
from .inspection import Inspection, inspect, submission_fingerprint
from .late_policy import describe_policy
from .results import (
    Result,
    Status,
    grade_cells,
    merge_into_gradebook,
    now,
    read_results,
    write_result,
    written_answers,
)
from .cluster import dask_client, scheduler_security
from .worker import fork_server
from .run_tasks import run_jobs
from .kernel.sandbox import check_kernels_can_see_the_course, forked_kernels


class Progress:
    """``[#####.....] 12/40 graded, 1 failure so far`` on a terminal; a line per student otherwise."""

    def __init__(self, total: int, stream=None, enabled: bool = True):
        self.total, self.done, self.failures = total, 0, 0
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.started = time.monotonic()

    def update(self, result: Result) -> None:
        self.done += 1
        self.failures += result.status.failed
        if not self.enabled:
            return
        width = 30
        filled = round(width * self.done / max(self.total, 1))
        bar = "#" * filled + "." * (width - filled)
        rate = self.done / max(time.monotonic() - self.started, 1e-9) * 60
        text = ngettext(
            "[{bar}] {done}/{total} students, {failures} failure so far, {rate:.0f}/min",
            "[{bar}] {done}/{total} students, {failures} failures so far, {rate:.0f}/min",
            self.failures,
        ).format(bar=bar, done=self.done, total=self.total, failures=self.failures, rate=rate)
        if self.tty:
            self.stream.write("\r" + text + ("\n" if self.done == self.total else ""))
        else:
            self.stream.write(f"{text}  ({result.student}: {result.status})\n")
        self.stream.flush()


def grade(
    course: Course,
    assignment: str,
    *,
    students: list[str] | None = None,
    workers: int | None = None,
    force: bool = False,
    cell_timeout: int | None = None,
    submission_timeout: float | None = None,
    memory_mb: int | None = None,
    scheduler: str | None = None,
    insecure_scheduler: bool = False,
    progress: bool = True,
    stream=None,
    on_result: Callable[[Result], None] | None = None,
) -> dict[str, Result]:
    """Autograde every student of ``assignment`` (or ``students``) in parallel; return each one's Result.

    ``workers``: worker processes of the local cluster (one per core by default); ``scheduler``: the
    address of an existing Dask cluster to grade on instead (``workers`` is then the cluster's), a ``tls://``
    one unless ``insecure_scheduler`` (``scheduler_security``).
    Submissions already graded (a result record with the same fingerprint) are skipped unless
    ``force``: running it twice changes nothing, and a run that was killed resumes.
    """
    judge = course.config().Judge
    cell_timeout = int(cell_timeout or judge.get("timeout", 60))
    memory_mb = int(memory_mb if memory_mb is not None else judge.get("memory_mb", 2048))
    submission_timeout = float(submission_timeout or max(600.0, 10 * cell_timeout))
    workers = max(1, workers or default_workers())
    # an existing cluster's TLS settings, or its refusal, before anything is done
    security = scheduler_security(scheduler, insecure=insecure_scheduler) if scheduler else None
    if not scheduler and forked_kernels():  # local kernels that would not find the course: said now, once
        check_kernels_can_see_the_course()
    with exclusive(course):
        course.make_private()  # also what an earlier version, or nbgrader elsewhere, left readable
        return _grade(
            course,
            assignment,
            students=students,
            workers=workers,
            force=force,
            cell_timeout=cell_timeout,
            submission_timeout=submission_timeout,
            memory_mb=memory_mb,
            scheduler=scheduler,
            security=security,
            progress=progress,
            stream=stream,
            on_result=on_result,
        )


class GradingInProgress(RuntimeError):
    pass


@contextlib.contextmanager
def exclusive(course: Course):
    """One grading run per course at a time (the lock goes with the process, even when it is killed)."""
    import fcntl

    handle = open(course.runtime_dir("work") / ".lock", "w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        raise GradingInProgress("another grading run is working on this course; wait for it to finish") from None
    try:
        yield
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def _grade(
    course,
    assignment,
    *,
    students,
    workers,
    force,
    cell_timeout,
    submission_timeout,
    memory_mb,
    scheduler,
    security,
    progress,
    stream,
    on_result,
) -> dict[str, Result]:
    share_gradebook_engines()  # this process opens the course gradebook a few times per student
    setup(course, assignment)
    maxima = grade_cells(course, assignment)
    written = written_answers(course, assignment)
    everyone = students if students is not None else roster(course, assignment)
    previous = read_results(course, assignment)
    deadline = graded_against(course, assignment)
    budget = max(30, int(submission_timeout * 0.8))  # a submission's time in its kernel (the judge's budget)

    results: dict[str, Result] = {}
    meter = Progress(len(everyone), stream, enabled=progress)

    def finish(result: Result) -> None:
        write_result(course, result)
        results[result.student] = result
        meter.update(result)
        if on_result:
            on_result(result)

    # First what changed since the last run, from the files alone (cheap): nothing is graded twice. A note of
    # the latest collection that the last result lacks (a refused folder in the exchange) is a change too.
    collected = collection_notes(course, assignment)
    changed: dict[str, str | None] = {}  # student -> the fingerprint of their files now (None: unreadable)
    for student in everyone:
        try:
            files = submission_fingerprint(course, assignment, student)
        except Exception:  # noqa: BLE001 - unreadable files: inspection says so, for this student alone
            files = None
        old = previous.get(student)
        noted = old is not None and all(note in old.notes for note in collected.get(student, []))
        if not force and noted and old.fingerprint == files and old.deadline == deadline:
            results[student] = old  # already graded from exactly these files
            meter.update(old)
        else:
            changed[student] = files
    submitted = sum(files != "" for files in changed.values())  # (nearly) what the workers will grade

    with contextlib.ExitStack() as stack:
        client, started = None, 0
        if submitted:
            # The cluster starts now (its workers are up when this returns): the workers make their
            # sandboxes and boot their first kernels while this process inspects the submissions (about
            # 8 ms each: 2.4 s for a class of 300).
            from .kernel.kernel_client import kernel_limits

            if scheduler is None:
                fork_server.start()  # (if the command has not started it already)
            started = min(workers, submitted)  # no local worker started for nothing
            client = stack.enter_context(
                dask_client(
                    scheduler,
                    started,
                    course.runtime_dir("logs", assignment) / "workers.log",
                    kernel_limits(memory_mb, budget, assignment),  # what each submission's kernel gets
                    course.runtime_dir("work"),
                    security,
                    submissions=submitted,
                    assignment=assignment,
                )
            )
        book = stack.enter_context(gradebook(course))  # open for the run's merges (each one is committed)
        inspections: dict[str, Inspection] = {}
        jobs: list[str] = []
        for student, files in changed.items():
            try:
                found = inspect(course, assignment, student, collected=collected, files_fingerprint=files)
            except Exception as error:  # noqa: BLE001 - one unreadable submission never stops the class
                found = Inspection(
                    status=Status.INVALID,
                    notes=[f"the submission could not be inspected ({type(error).__name__}: {str(error)[:200]})"],
                    fingerprint=files or "",
                )
            inspections[student] = found
            if found.status is None:
                jobs.append(student)
                continue
            # it cannot be graded: recorded now, every grade 0 (flagged for a person when there were files)
            if course.path("submitted", student, assignment).is_dir():
                merge_into_gradebook(course, assignment, student, None, book)
            shutil.rmtree(course.path("autograded", student, assignment), ignore_errors=True)
            scores = {g: 0.0 for g in maxima}
            finish(
                Result(
                    student,
                    assignment,
                    found.status,
                    scores,
                    maxima,
                    found.notes,
                    found.fingerprint,
                    0.0,
                    now(),
                    written=written,
                    limits=found.limits,
                    deadline=deadline,
                )
            )
        if jobs:
            run_jobs(
                client,
                book,
                course,
                assignment,
                jobs,
                inspections,
                maxima,
                written,
                cell_timeout=cell_timeout,
                submission_timeout=submission_timeout,
                memory_mb=memory_mb,
                budget=budget,
                local_workers=started if scheduler is None else 0,
                finish=finish,
                deadline=deadline,
            )
    return {s: results[s] for s in everyone}


def graded_against(course: Course, assignment: str) -> str:
    """The due date and late policy a grading run applies ("": no due date). A result graded against others
    is graded again (from the same files), so that a due date or a policy changed after grading reaches
    every grade: the penalty is nbgrader's, given as it grades."""
    due = due_date(course, assignment)
    return "" if due is None else f"due {due.isoformat()} UTC; {describe_policy(course.config())}"
