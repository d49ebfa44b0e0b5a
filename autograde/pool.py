"""Step 3, the pool: every submission of an assignment graded in parallel, on Dask distributed.

``grade`` skips what is already graded from the same files, starts the cluster, inspects the rest
(``inspection.py``) while the workers get ready, and sends what can be graded to the cluster, one task
per submission (``grade_worker.py``): on one machine a local cluster of its own (one worker process
per core, nothing to set up); with ``scheduler=ADDRESS`` an existing cluster whose workers have the
course installed and bubblewrap.
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
import logging
import os
import shutil
import sqlite3
import sys
import time
import uuid
import zlib
from heads_and_masks.i18n import ngettext
from pathlib import Path
from typing import Callable

from distributed.diagnostics.plugin import WorkerPlugin

from .worker import fork_server
from .collect import collected_timestamp, collection_notes, original_ids, take_folder
from .course import (
    Course,
    default_workers,
    due_date,
    gradebook,
    last_error_line,
    roster,
    setup,
    share_gradebook_engines,
)
from .inspection import Inspection, inspect, submission_fingerprint
from .late_policy import describe_policy
from .lateness import Lateness
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
from .run_folder import GradingStopped, run_folder, worker_folders
from .kernel.sandbox import check_kernels_can_see_the_course, forked_kernels, sandbox_available

# A submission is graded at most this many times more when the worker grading it dies (Dask's
# ``distributed.scheduler.allowed-failures``, set for the local cluster; an existing cluster has its own).
ALLOWED_FAILURES = 1


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


def snapshot_gradebook(course: Course) -> bytes:
    """A consistent copy of the course gradebook, as the bytes of a SQLite file, for the workers to start from
    (each grades into its own copy: grade_worker.py). The course's SQLite file is copied with sqlite's backup
    API; a gradebook on a database server, table by table in one transaction (``copy_gradebook``)."""
    work = course.runtime_dir("work")
    for stale in work.glob("snapshot-*.db"):  # left by a run that was killed
        stale.unlink(missing_ok=True)
    target = work / f"snapshot-{uuid.uuid4().hex[:8]}.db"
    try:
        if course.gradebook_in_file:
            source = sqlite3.connect(course.gradebook_path)
            copy = sqlite3.connect(target)
            with copy:
                source.backup(copy)
            source.close()
            copy.close()
        else:
            copy_gradebook(course.db_url, f"sqlite:///{target}")
        return target.read_bytes()
    finally:
        target.unlink(missing_ok=True)


def copy_gradebook(source_url: str, target_url: str) -> None:
    """Copy every row of nbgrader's tables, and its schema version, from one gradebook to a new, empty one.

    From a database server the rows are read in one REPEATABLE READ transaction, which sees the database as it
    was when it began: graders writing meanwhile (formgrader) change nothing of the copy half way. (A SQLite
    source is read as it is; the course's own file is copied with sqlite's backup API instead.)"""
    from nbgrader.api import Base
    from sqlalchemy import create_engine, text

    source, target = create_engine(source_url), create_engine(target_url)
    snapshot = {} if source.dialect.name == "sqlite" else {"isolation_level": "REPEATABLE READ"}
    try:
        Base.metadata.create_all(bind=target)
        with (
            source.connect().execution_options(**snapshot) as reading,
            target.begin() as writing,
        ):
            for table in Base.metadata.sorted_tables:  # a table after those its rows refer to
                rows = [dict(row._mapping) for row in reading.execute(table.select())]
                if rows:
                    writing.execute(table.insert(), rows)
            # nbgrader reads the schema's version from alembic's table (not one of its own models)
            version = reading.execute(text("SELECT version_num FROM alembic_version")).scalar_one()
            writing.execute(text("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)"))
            writing.execute(text("INSERT INTO alembic_version (version_num) VALUES (:version)"), {"version": version})
    finally:
        source.dispose()
        target.dispose()


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


def run_jobs(
    client,
    book,
    course,
    assignment,
    students,
    inspections,
    maxima,
    written,
    *,
    cell_timeout,
    submission_timeout,
    memory_mb,
    budget,
    local_workers,
    finish,
    deadline,
) -> None:
    """Grade ``students`` on ``client``'s cluster (a local one of ``local_workers``, or an existing one: 0)
    and ``finish`` each one's Result as it comes back, merged into the open course gradebook ``book``."""
    from distributed import as_completed
    from distributed.scheduler import KilledWorker

    from . import grading_key
    from .worker.grade_worker import grade_submission, run_settings

    key = grading_key.load_or_create(grading_key.key_path(course.root))  # made on the first run, kept out of git
    run = {
        "id": uuid.uuid4().hex[:8],
        "course_id": course.course_id,
        "assignment": assignment,
        "gradebook": zlib.compress(snapshot_gradebook(course), 6),
        "source": _files(course.path("source", assignment=assignment)),
        "releases": released_notebooks(course, assignment),
        "key": key,
        "submission_timeout": submission_timeout,
        "config": {
            "Judge.timeout": cell_timeout,
            "Judge.memory_mb": memory_mb,
            "Judge.budget": budget,
        },
    }
    ids = original_ids(course)  # read once per run, not once per student
    sandboxed, why_not_sandboxed = sandbox_available()

    def conclude(student: str, message: dict | None, failure: str = "") -> None:
        found = inspections[student]
        try:
            status, scores, notes, seconds, pending, lateness = record(student, message, failure)
        except Exception as error:  # noqa: BLE001 - recording one student never stops the class
            status, scores, notes, seconds = Status.REVIEW, {g: 0.0 for g in maxima}, list(found.notes), 0.0
            notes.append(f"the result could not be recorded ({type(error).__name__}: {str(error)[:200]}): grade again")
            pending, lateness = [], Lateness()
        if not sandboxed:  # say it on every grade: these kernels could reach everything
            notes.append(f"unsandboxed: {why_not_sandboxed}")
        limits = [*found.limits, *(message or {}).get("judge_limits", [])]  # the bounds it hit (bounds.py)
        if message and message.get("stopped"):
            limits.append(
                f"time: grading took {seconds:.0f} s and was stopped at the limit of {submission_timeout:g} s"
            )
        finish(
            Result(
                student,
                assignment,
                status,
                scores,
                maxima,
                notes,
                found.fingerprint,
                round(seconds, 2),
                now(),
                ids.get(student, ""),
                written=written,
                pending=pending,  # what nbgrader left for a person
                limits=limits,
                seconds_late=lateness.seconds,
                late_penalty=lateness.penalty,
                deadline=deadline,
            )
        )

    def record(student: str, message: dict | None, failure: str):
        notes = list(inspections[student].notes)
        log = (message or {}).get("log", "") or failure
        (course.runtime_dir("logs", assignment) / f"{student}.log").write_text(log or "(no log)\n")
        seconds = message.get("seconds", 0.0) if message else 0.0
        target = course.path("autograded", student, assignment)
        shutil.rmtree(target, ignore_errors=True)
        if message and message.get("ok"):
            target.mkdir(parents=True)
            for name, data in message["autograded"].items():  # written by nbgrader, never by a kernel
                (target / Path(name).name).write_bytes(data)
            scores, pending, lateness = merge_into_gradebook(course, assignment, student, message, book)
            notes += message.get("judge_notes", [])
            judged = message.get("judge_status")  # a Status's value, or None
            status = Status(judged) if judged else (Status.REVIEW if notes else Status.GRADED)
            return status, scores, notes, seconds, pending, lateness
        if message is None:  # the task itself failed: its worker died every time, or grading raised
            status = Status.DIED if failure.startswith("died") else Status.REVIEW
        else:
            status = Status(message.get("failure") or Status.DIED)
        if message is None and status == Status.DIED:
            notes.append(
                f"the grading process died each of the {ALLOWED_FAILURES + 1} times it graded this "
                "submission: nothing could be graded"
            )
        elif status == Status.REVIEW:
            notes.append("nbgrader could not grade it: " + last_error_line(log))
        elif status == Status.DIED:
            notes.append("the kernel died: nothing could be graded; " + last_error_line(log))
        elif status == Status.TIMED_OUT:
            notes.append(
                f"grading took longer than {submission_timeout:g} s and was stopped"
                if message.get("stopped")
                else "a cell could not be interrupted after its time limit: " + last_error_line(log)
            )
        elif status == Status.INVALID:
            notes.append("nbgrader could not read the notebook: " + last_error_line(log))
        _counts, pending, lateness = merge_into_gradebook(course, assignment, student, None, book)
        return status, {g: 0.0 for g in maxima}, notes, seconds, pending, lateness

    def job(student: str, last: bool) -> dict:
        folder = course.path("submitted", student, assignment)
        files, _notes, _newest = take_folder(folder)  # regular files only, read without following links (collect.py)
        rename = inspections[student].rename
        return {
            "student": student,
            "files": {rename.get(name, name): data for name, data in files.items()},
            "timestamp": collected_timestamp(folder),
            "last": last,
        }

    # Every submission is submitted at once and queued by the scheduler, which hands each worker one
    # at a time (worker-saturation 1.0): a worker that dies held only the submission it was grading.
    # The run's settings travel once to every worker, not once per submission, as a task's result.
    shared = client.submit(run_settings, run, pure=False, key=f"run-{assignment}-{run['id']}")
    # The scheduler hands the submissions out in this order, one per free worker: the last `slots`
    # are (barring a dead worker) each worker's last one, and their workers start no kernel after them.
    slots = local_workers or max(1, sum(client.nthreads().values()))
    futures = client.map(
        grade_submission,
        [shared] * len(students),
        [job(s, last=index >= len(students) - slots) for index, s in enumerate(students)],
        pure=False,
        key=[f"grade-{assignment}-{s}-{run['id']}" for s in students],
    )  # one graph: queued
    owner = dict(zip(futures, students))
    for future in as_completed(owner, loop=client.loop):
        student = owner.pop(future)
        try:
            message, failure = future.result(), ""
        except KilledWorker as error:
            message, failure = None, f"died: {error}"
        except Exception as error:  # noqa: BLE001 - one submission never stops the class
            message, failure = None, f"{type(error).__name__}: {str(error)[:500]}"
        future.release()
        conclude(student, message, failure)


def released_notebooks(course: Course, assignment: str) -> dict[str, dict[str, bytes]]:
    """{language: {file name: bytes}} of every language the assignment is released in (English: notebooks/, Russian:
    notebooks-ru/): a worker compares each submission with the release of its own language (judge.Judge)."""
    from heads_and_masks import i18n

    from .course import released_folder

    folders = {language: released_folder(course, assignment, language) for language in sorted(i18n.course_languages())}
    return {language: _files(folder) for language, folder in folders.items() if folder.is_dir()}


def _files(folder: Path) -> dict[str, bytes]:
    """The regular files at the top of an assignment's folder (the notebooks, and any data they read)."""
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*")) if p.is_file() and not p.is_symlink()}


class GradingWorker(WorkerPlugin):
    """Makes a Dask worker ready to grade, as it starts (a worker plugin: each local worker is made with it,
    before it joins the scheduler; an existing cluster has it registered):
    nbgrader imported and the course package without its reference implementations made
    (``stub_package.shared_stub_package``), once per worker process, before its first submission; and
    the worker's kernel supply (``kernel_supply.KernelSupply``), held until the worker stops (on an existing
    cluster, or until a later run registers the plugin again). On the local cluster (``log``), what the
    worker and its kernels print goes to the course's log instead of the instructor's terminal; with
    ``pin`` (a local worker per core), worker *i* and everything it starts (its zygote, its kernels) keep
    to core *i*."""

    name = "heads-and-masks-grading-worker"

    def __init__(
        self,
        log: Path | None = None,
        kernel_limits: tuple[int, int] | None = None,
        pin: bool = False,
        assignment: str | None = None,
    ):
        self.log = str(log) if log else None
        self.kernel_limits = kernel_limits  # the run's (kernel_client.kernel_limits): its first kernel starts at once
        self.assignment = assignment  # the run's: its kernels import that notebook's allowlist (kernel_package.py)
        self.kernels = None
        self.pin = pin

    def setup(self, worker) -> None:
        import nbgrader.converters  # noqa: F401 - imported once per worker, not per submission

        from .course import share_gradebook_engines
        from .kernel.kernel_supply import KernelSupply
        from .kernel.stub_package import shared_stub_package

        share_gradebook_engines()
        worker_folders()  # a worker of an existing cluster: folders of its own, as a run's (run_folder.py)
        if self.pin and isinstance(worker.name, int):
            # A worker and its kernel take turns (one waits while the other computes): on a core of their own,
            # the pair neither migrates nor collides with the other pair (7 % less wall time on two cores).
            # Only a local worker per core is pinned; a lone worker uses every core.
            cores = sorted(os.sched_getaffinity(0))
            core = {cores[worker.name % len(cores)]}
            for thread in os.listdir("/proc/self/task"):  # every thread: affinity is a thread's, not a process's
                with contextlib.suppress(OSError):
                    os.sched_setaffinity(int(thread), core)

        if self.log:
            descriptor = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            os.dup2(descriptor, 1)
            os.dup2(descriptor, 2)
            os.close(descriptor)
        shared_stub_package(self.assignment)
        # Warm kernels: each submission's sandboxed kernel boots while the one before is graded. One
        # supply per worker process, for its lifetime (a worker grades one submission at a time).
        self.kernels = KernelSupply()
        self.kernels.__enter__()
        if self.kernel_limits:  # it boots while the worker receives its first submission and nbgrader starts
            self.kernels.prepare(*self.kernel_limits, self.assignment)

    def teardown(self, worker) -> None:
        import gc

        from distributed.core import Status as WorkerStatus

        if self.kernels is not None:
            kernels, self.kernels = self.kernels, None
            kernels.__exit__(None, None, None)  # the spare kernel shut down
        if worker.status in (WorkerStatus.closing, WorkerStatus.closing_gracefully):
            # The worker is exiting (not just replacing this plugin for the next run): frozen, the heap
            # nbgrader's imports built is not collected again on the way out (2 s in
            # the old pool's workers).
            gc.freeze()


class InsecureScheduler(ValueError):
    pass


def scheduler_security(address: str, insecure: bool = False):
    """The TLS settings to reach an existing cluster at ``address``: Dask's configuration
    (``distributed.comm.tls.*``, docs/instructors.md). A plain TCP address is refused unless ``insecure``:
    anyone who reaches it (on a shared JupyterHub host, every student, over loopback too) would run code as
    the instructor and receive the grading key and the hidden tests sent to the workers."""
    from distributed.comm import parse_address
    from distributed.security import Security

    scheme, _rest = parse_address(address)
    security = Security()  # from dask's configuration
    if scheme == "tls":
        if not (security.tls_ca_file and security.tls_client_cert):
            raise InsecureScheduler(
                f"{address} speaks TLS, but no TLS settings are configured for this client: set "
                "distributed.comm.tls.ca-file, distributed.comm.tls.client.cert and .key (see docs/instructors.md)"
            )
        return security
    if not insecure:
        raise InsecureScheduler(
            f"{address} is plain {scheme.upper()}: whoever can reach it, on this machine or the network, can run "
            "code as you and read the grading key and hidden tests the run sends its workers. Start the cluster "
            "with TLS and pass its tls:// address (docs/instructors.md), or pass --insecure-scheduler if every "
            "user and machine that can reach it is trusted."
        )
    return security


@contextlib.contextmanager
def dask_client(
    scheduler: str | None,
    workers: int,
    log: Path,
    kernel_limits: tuple[int, int] | None = None,
    stub_folder: Path | None = None,
    security=None,
    submissions: int | None = None,
    assignment: str | None = None,
):
    """A Dask client: on an existing cluster at ``scheduler``, or on a local cluster of ``workers`` processes
    (whose workers print into ``log``); each worker starts a kernel with ``kernel_limits`` as it joins (on an
    existing cluster, only when the run's ``submissions`` are at least its worker threads).
    The local workers' kernels import the stub package of ``assignment`` kept in ``stub_folder`` (else one made
    for this run).

    Whoever can talk to a cluster's scheduler, nannies or workers runs code as the instructor (Dask runs the
    functions it is sent): the local cluster speaks only mutual TLS with a certificate made in memory for this
    run (no other process has it, even on this machine), and has no dashboard (its pages name the students and
    answer anyone). An existing cluster must speak TLS too: ``security`` is what ``scheduler_security`` gave."""
    import dask
    from distributed import Client, LocalCluster
    from distributed.utils import get_mp_context

    from .kernel.stub_package import STUB_ENV, kept_stub_package, shared_stub_package
    from .tool_env import tool_env

    if scheduler:
        with Client(
            scheduler,
            security=security if security is not None else scheduler_security(scheduler),
            set_as_default=False,
        ) as client:
            # A worker boots a kernel as the plugin reaches it: worth it only when every worker will have a
            # submission to grade, not on a cluster of a hundred workers for a handful of submissions.
            slots = sum(client.nthreads().values())
            warm = submissions is None or submissions >= slots
            client.register_plugin(GradingWorker(kernel_limits=kernel_limits if warm else None, assignment=assignment))
            yield client
        return
    environment = tool_env(headless=True)
    env = {
        "PATH": environment["PATH"],
        "MPLBACKEND": environment["MPLBACKEND"],
        STUB_ENV: str(kept_stub_package(stub_folder, assignment) if stub_folder else shared_stub_package(assignment)),
    }  # the stub package made once here (or kept from the last run), for every worker
    # Every temporary file of the run, in every process of the cluster, goes in one folder of this process's,
    # removed when the run ends, however it ends (run_folder.py): the workers' temporary folder is in it.
    # Dask's scratch folder is in it too, ours alone (0700, a name no one can guess). Dask's default is
    # <tmp>/dask-scratch-space, used as found when we may write there, and put on the module path of
    # every process of the cluster: a student who made it first, writable by all, runs code as us.
    with (
        run_folder() as run,
        dask.config.set(
            {
                "temporary-directory": str(run.files / "dask"),
                "distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
                "distributed.scheduler.worker-saturation": 1.0,
                "distributed.worker.profile.enabled": False,  # no stack sampling next to the kernels
                # Each process of the cluster wakes 50 times a second to see whether its event loop is blocked
                # (a diagnostic), and samples the machine's use twice a second; a worker on a core of its own
                # takes it from its kernel. Idle, a cluster of 2 workers took 0.07 cores with the defaults and
                # 0.011 with these; stealing work does nothing where the scheduler queues the submissions.
                "distributed.admin.tick.interval": "1s",
                "distributed.admin.system-monitor.interval": "5s",
                "distributed.scheduler.work-stealing": False,
                # Each scheduler and worker still serves HTTP (no dashboard is not no server): its pages list the
                # tasks, named after the students, and its metrics, to anyone on the machine. Nothing is served.
                "distributed.scheduler.http.routes": [],
                "distributed.worker.http.routes": [],
                # for as long as the cluster lives: a worker restarted after a crash is forked the same way
                "distributed.worker.multiprocessing-method": "forkserver",
            }
        ),
    ):
        env.update(run.environ())  # (the workers' private course roots, with the hidden tests; kernels' sockets)
        # (after Dask's own choice, made on its first call) what the fork server imports as it starts,
        # if it is not running yet (``fork_server.start``)
        get_mp_context().set_forkserver_preload(fork_server.WORKER_PRELOAD)
        # Every worker at once, each forked from the fork server as soon as its imports are done: they start
        # side by side, and the cluster is up when they all are (the scheduler queues every submission and
        # hands them out one at a time). One worker first and the others once it was up started the second
        # 0.3-0.4 s later, on a core left idle meanwhile. Each worker is made ready to grade (GradingWorker:
        # its zygote and first kernel booting) as it starts, before it joins the scheduler: not a round trip
        # later, once the cluster is up (0.15-0.3 s of every run's start-up), and a worker restarted after a
        # crash is made ready the same way.
        one_per_core = 1 < workers == len(os.sched_getaffinity(0))
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            memory_limit=0,
            host="127.0.0.1",
            # mutual TLS, a key and certificate made in memory for this run (distributed.Security.temporary):
            # every comm between the coordinator, the scheduler, the nannies and the workers needs them
            security=True,
            dashboard_address=None,
            # The scheduler starts its HTTP server (serving nothing, routes above) even without a dashboard,
            # on Dask's port 8787 when none is given: taken by another run or a notebook's cluster, that printed
            # "Port 8787 is already in use" on the grading run's output. A port of the system's choosing, on
            # loopback, asks for no port anyone else may hold; ``dashboard`` stays False.
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
            silence_logs=logging.ERROR,
            env=env,
            plugins=(GradingWorker(log, kernel_limits, pin=one_per_core, assignment=assignment),),
        )
        dask_logger = logging.getLogger("distributed")
        level = dask_logger.level
        try:
            with cluster, Client(cluster, set_as_default=False) as client:
                try:
                    yield client
                except (KeyboardInterrupt, GradingStopped):
                    # Stopped (Ctrl-C reaches the workers too): as the cluster closes, each nanny logs its worker's
                    # end, cancelled half way, as an error with a traceback. The user is told what happened.
                    dask_logger.setLevel(logging.CRITICAL)
                    raise
        finally:
            dask_logger.setLevel(level)
