"""The pool's tasks: a run's submissions sent to the Dask cluster, one task each, and each result recorded as
it comes back (step 3, ``pool.py``, decides which submissions, and starts the cluster).

The run's settings (the gradebook as it was, the assignment's source and releases, the grading key, the limits:
``run_data.py``) travel once to every worker; each task (``worker/grade_worker.py``) receives one submission's
files, read here as regular files only, and returns the grades and the autograded notebook as data. Only this
process writes the course: the graded notebook into ``autograded/``, the log, the gradebook (``results.py``).
A task whose worker died every time Dask retried it ends as "kernel died", with a note.
"""

from __future__ import annotations

import shutil
import uuid
import zlib
from pathlib import Path

from .cluster import ALLOWED_FAILURES
from .collect import original_ids
from .course import last_error_line
from .kernel.sandbox import sandbox_available
from .lateness import Lateness
from .results import Result, Status, merge_into_gradebook, now
from .run_data import Job, RunSettings, WorkerResult, checked, files_of, released_notebooks, snapshot_gradebook
from .submission_files import collected_timestamp, take_folder


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
    run = RunSettings(
        id=uuid.uuid4().hex[:8],
        course_id=course.course_id,
        assignment=assignment,
        gradebook=zlib.compress(snapshot_gradebook(course), 6),
        source=files_of(course.path("source", assignment=assignment)),
        releases=released_notebooks(course, assignment),
        key=key,
        submission_timeout=submission_timeout,
        config={"Judge.timeout": cell_timeout, "Judge.memory_mb": memory_mb, "Judge.budget": budget},
    )
    ids = original_ids(course)  # read once per run, not once per student
    sandboxed, why_not_sandboxed = sandbox_available()

    def conclude(student: str, message: WorkerResult | None, failure: str = "") -> None:
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

    def record(student: str, message: WorkerResult | None, failure: str):
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

    def job(student: str, last: bool) -> Job:
        folder = course.path("submitted", student, assignment)
        files, _notes, _newest = take_folder(folder)  # regular files only, read without following links (collect.py)
        rename = inspections[student].rename
        return Job(
            student=student,
            files={rename.get(name, name): data for name, data in files.items()},
            timestamp=collected_timestamp(folder),
            last=last,
        )

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
            message, failure = checked(WorkerResult, future.result()), ""  # a worker's: refused here if misshapen
        except KilledWorker as error:
            message, failure = None, f"died: {error}"
        except Exception as error:  # noqa: BLE001 - one submission never stops the class
            message, failure = None, f"{type(error).__name__}: {str(error)[:500]}"
        future.release()
        conclude(student, message, failure)
