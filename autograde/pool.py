"""Step 3, the pool: every submission of an assignment graded in parallel, each in its own private root.

``grade`` inspects every student (``inspection.py``), skips what is already graded from the same
files, and hands the rest to long-lived worker processes (``grade_worker.py``, one per core), each
grading into a private copy of the gradebook; only this process writes the course's gradebook and
the results (``results.py``). A progress line, a per-cell time limit, a per-submission time limit and
a per-kernel memory limit; a run that is interrupted resumes where it stopped.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Callable

from .collect import collection_notes, original_ids
from .course import HERE, Course, default_workers, roster, setup
from .feedback import last_error_line
from .inspection import Inspection, inspect
from .results import (
    Result,
    Status,
    grade_cells,
    merge_into_gradebook,
    now,
    pending_from_gradebook,
    read_results,
    scores_from_gradebook,
    write_result,
    written_answers,
)
from .sandbox import sandbox_available
from .tool_env import tool_env


# ---------------------------------------------------------------------------------------------
# Workers: long-lived processes, each grading in its own private root
# ---------------------------------------------------------------------------------------------


class Worker:
    def __init__(self, settings: dict, results: queue.Queue, prefix: list[str], stderr_path: Path):
        self.settings = settings
        with open(stderr_path, "a") as stderr:  # what nbgrader and the kernels print, for debugging
            self.process = subprocess.Popen(
                [*prefix, sys.executable, "-m", "autograde.grade_worker"],
                cwd=HERE,
                env=tool_env(headless=True),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                start_new_session=True,
            )
        self.job: dict | None = None
        self.started = 0.0
        self.process.stdin.write(json.dumps(settings) + "\n")
        self.process.stdin.flush()
        self.reader = threading.Thread(target=self._read, args=(results,), daemon=True)
        self.reader.start()

    def _read(self, results: queue.Queue) -> None:
        try:
            for line in self.process.stdout:
                try:
                    message = json.loads(line)
                except ValueError:
                    continue  # not a result (the worker keeps its protocol clean; be safe anyway)
                if isinstance(message, dict):
                    results.put((self, message))
        finally:
            results.put((self, None))  # the worker is gone

    def send(self, job: dict) -> None:
        self.job, self.started = job, time.monotonic()
        self.process.stdin.write(json.dumps(job) + "\n")
        self.process.stdin.flush()

    def kill(self) -> None:
        """End the worker and every process under it (its kernels run in their own sessions)."""
        import psutil

        try:
            family = psutil.Process(self.process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            family = []
        for process in [self.process, *family]:
            try:
                os.kill(process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self.process.wait()

    def close(self) -> None:
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()


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
        text = (
            f"[{bar}] {self.done}/{self.total} students, {self.failures} "
            f"failure{'s' if self.failures != 1 else ''} so far, {rate:.0f}/min"
        )
        if self.tty:
            self.stream.write("\r" + text + ("\n" if self.done == self.total else ""))
        else:
            self.stream.write(f"{text}  ({result.student}: {result.status})\n")
        self.stream.flush()


def snapshot_gradebook(course: Course, into: Path) -> Path:
    """A consistent copy of the course gradebook (sqlite's backup API) for the workers to start from."""
    target = into / "gradebook.db"
    source = sqlite3.connect(course.gradebook_path)
    copy = sqlite3.connect(target)
    with copy:
        source.backup(copy)
    source.close()
    copy.close()
    return target


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
    worker_prefix: list[str] | None = None,
    progress: bool = True,
    stream=None,
    on_result: Callable[[Result], None] | None = None,
) -> dict[str, Result]:
    """Autograde every student of ``assignment`` (or ``students``) in parallel; return each one's Result.

    Submissions already graded (a result record with the same fingerprint) are skipped unless
    ``force``: running it twice changes nothing, and a run that was killed resumes.
    """
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(HERE)).load_config()
    cell_timeout = int(cell_timeout or config.Judge.get("timeout", 60))
    memory_mb = int(memory_mb if memory_mb is not None else config.Judge.get("memory_mb", 2048))
    submission_timeout = float(submission_timeout or max(600.0, 10 * cell_timeout))
    workers = max(1, workers or default_workers())
    with exclusive(course):
        return _grade(
            course,
            assignment,
            students=students,
            workers=workers,
            force=force,
            cell_timeout=cell_timeout,
            submission_timeout=submission_timeout,
            memory_mb=memory_mb,
            worker_prefix=worker_prefix,
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
    worker_prefix,
    progress,
    stream,
    on_result,
) -> dict[str, Result]:
    setup(course, assignment)
    maxima = grade_cells(course, assignment)
    written = written_answers(course, assignment)
    everyone = students if students is not None else roster(course, assignment)
    previous = read_results(course, assignment)

    results: dict[str, Result] = {}
    jobs: list[dict] = []
    inspections: dict[str, Inspection] = {}
    collected = collection_notes(course, assignment)
    for student in everyone:
        try:
            found = inspect(course, assignment, student, collected=collected)
        except Exception as error:  # noqa: BLE001 - one unreadable submission never stops the class
            found = Inspection(
                status=Status.INVALID,
                notes=[f"the submission could not be inspected ({type(error).__name__}: {str(error)[:200]})"],
            )
        inspections[student] = found
        old = previous.get(student)
        if not force and old is not None and old.fingerprint == found.fingerprint:
            results[student] = old  # already graded from exactly these files
            continue
        if found.status is not None:  # cannot be graded: record it now
            results[student] = None  # placeholder, filled below
            continue
        jobs.append(
            {
                "assignment": assignment,
                "student": student,
                "folder": str(course.path("submitted", student, assignment)),
                "rename": found.rename,
            }
        )

    meter = Progress(len(everyone), stream, enabled=progress)
    for student in everyone:
        if results.get(student) is not None:
            meter.update(results[student])

    def finish(result: Result) -> None:
        write_result(course, result)
        results[result.student] = result
        meter.update(result)
        if on_result:
            on_result(result)

    for student in [s for s, r in results.items() if r is None]:
        found = inspections[student]
        had_files = course.path("submitted", student, assignment).is_dir()
        if had_files:
            merge_into_gradebook(course, assignment, student, None)
        shutil.rmtree(course.path("autograded", student, assignment), ignore_errors=True)
        finish(
            Result(
                student,
                assignment,
                found.status,
                {g: 0.0 for g in maxima},
                maxima,
                found.notes,
                found.fingerprint,
                0.0,
                now(),
                written=written,
            )
        )

    if jobs:
        run_jobs(
            course,
            assignment,
            jobs,
            inspections,
            maxima,
            written,
            workers=workers,
            cell_timeout=cell_timeout,
            submission_timeout=submission_timeout,
            memory_mb=memory_mb,
            prefix=worker_prefix or [],
            finish=finish,
        )
    return {s: results[s] for s in everyone}


def run_jobs(
    course,
    assignment,
    jobs,
    inspections,
    maxima,
    written,
    *,
    workers,
    cell_timeout,
    submission_timeout,
    memory_mb,
    prefix,
    finish,
) -> None:
    for stale in course.runtime_dir("work").glob("run-*"):  # left by a run that was killed
        shutil.rmtree(stale, ignore_errors=True)
    work = course.runtime_dir("work", f"run-{uuid.uuid4().hex[:8]}")
    snapshot = snapshot_gradebook(course, work)
    from . import grading_key

    key_file = grading_key.key_path(course.root)
    grading_key.load_or_create(key_file)  # made on the first grading run, kept out of git
    settings = {
        "source": str(course.path("source")),
        "gradebook": str(snapshot),
        "course_id": course.course_id,
        "config": {
            "Judge.timeout": cell_timeout,
            "Judge.memory_mb": memory_mb,
            "Judge.budget": max(30, int(submission_timeout * 0.8)),
            "Judge.key_file": str(key_file),
            "Judge.release_directory": str(course.path("release")),
            "Judge.source_directory": str(course.path("source")),
        },
    }
    incoming: queue.Queue = queue.Queue()
    pending = list(jobs)
    retried: set[str] = set()
    pool: list[Worker] = []

    from .judge import STUB_ENV, shared_stub_package

    os.environ[STUB_ENV] = str(shared_stub_package())  # made once here; the workers inherit its path

    def start_worker() -> Worker:
        worker_settings = dict(settings, root=str(work / f"worker-{uuid.uuid4().hex[:8]}"))
        worker = Worker(worker_settings, incoming, prefix, course.runtime_dir("logs", assignment) / "workers.stderr")
        pool.append(worker)
        return worker

    ids = original_ids(course)  # read once per run, not once per student
    sandboxed, why_not_sandboxed = sandbox_available()

    def conclude(job: dict, message: dict | None, killed_for: str | None = None) -> None:
        student = job["student"]
        found = inspections[student]
        try:
            status, scores, notes, seconds = record(job, message, killed_for)
        except Exception as error:  # noqa: BLE001 - recording one student never stops the class
            status, scores, notes, seconds = Status.REVIEW, {g: 0.0 for g in maxima}, list(found.notes), 0.0
            notes.append(f"the result could not be recorded ({type(error).__name__}: {str(error)[:200]}): grade again")
        if not sandboxed:  # say it on every grade: these kernels could reach everything
            notes.append(f"unsandboxed: {why_not_sandboxed}")
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
                pending=pending_from_gradebook(course, assignment, student),  # what nbgrader left for a person
            )
        )

    def record(job: dict, message: dict | None, killed_for: str | None):
        student = job["student"]
        notes = list(inspections[student].notes)
        log_text = (message or {}).get("log", "")
        (course.runtime_dir("logs", assignment) / f"{student}.log").write_text(log_text or "(no log)\n")
        seconds = message.get("seconds", 0.0) if message else 0.0
        if message and message.get("ok"):
            target = course.path("autograded", student, assignment)
            shutil.rmtree(target, ignore_errors=True)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(message["autograded"], target)  # written by nbgrader in the worker, never by a kernel
            merge_into_gradebook(course, assignment, student, message)
            notes += message.get("judge_notes", [])
            judged = message.get("judge_status")  # a Status's value, or None
            status = Status(judged) if judged else (Status.REVIEW if notes else Status.GRADED)
            return status, scores_from_gradebook(course, assignment, student), notes, seconds
        status = Status(killed_for or (message or {}).get("failure") or Status.DIED)
        log = (message or {}).get("log", "")
        if status == Status.REVIEW:
            notes.append("nbgrader could not grade it: " + last_error_line(log))
        elif status == Status.DIED:
            notes.append(
                "the grading process died while grading it (twice): nothing could be graded; " + last_error_line(log)
            )
        elif status == Status.TIMED_OUT:
            notes.append(
                f"grading took longer than {submission_timeout:g} s and was stopped"
                if killed_for
                else "a cell could not be interrupted after its time limit: " + last_error_line(log)
            )
        elif status == Status.INVALID:
            notes.append("nbgrader could not read the notebook: " + last_error_line(log))
        merge_into_gradebook(course, assignment, student, None)
        shutil.rmtree(course.path("autograded", student, assignment), ignore_errors=True)
        return status, {g: 0.0 for g in maxima}, notes, seconds

    try:
        while pending or any(w.job for w in pool):
            idle = [w for w in pool if w.job is None]
            while pending and (idle or len(pool) < workers):
                worker = idle.pop() if idle else start_worker()
                worker.send(pending.pop(0))
            try:
                worker, message = incoming.get(timeout=1.0)
            except queue.Empty:
                for worker in list(pool):
                    if worker.job and time.monotonic() - worker.started > submission_timeout:
                        job = worker.job
                        worker.job = None
                        pool.remove(worker)
                        worker.kill()
                        conclude(job, None, killed_for=Status.TIMED_OUT)
                continue
            if worker not in pool:
                continue  # a killed worker's last words
            job = worker.job
            if message is None:  # the worker process itself died
                pool.remove(worker)
                worker.kill()
                if job is not None:
                    if job["student"] in retried:
                        conclude(job, {"ok": False, "failure": Status.DIED.value, "log": "the grading process died"})
                    else:
                        retried.add(job["student"])
                        pending.insert(0, job)
                continue
            worker.job = None
            conclude(job, message)
    finally:
        for worker in pool:
            worker.close()
        shutil.rmtree(work, ignore_errors=True)
