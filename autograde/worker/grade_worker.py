"""What a grading worker does with one submission: a Dask task, run in a worker process of the pool.

``grade_submission(run, job)`` receives everything as data (their shapes: ``run_data.RunSettings``, ``Job``,
``WorkerResult``, each checked where it arrives: ``run_data.checked``), never a path on the coordinator's disk:

    run    {"id", "course_id", "assignment", "gradebook" (zlib of a snapshot of the course gradebook),
            "source" ({file name: bytes} of the assignment), "releases" ({language: {file name: bytes}}: its
            release in each language, run_data.released_notebooks), "key" (the grading key),
            "config" ({"Judge.timeout": ..., ...}), "submission_timeout"}
    job    {"student", "files" ({file name: bytes}: the regular files collection took), "timestamp",
            "last" (one of the run's last submissions, one per worker: no kernel is started after it)}

and returns plain data: ``{"student", "ok", "failure", "judge_status", "judge_notes", "judge_limits", "grades" ...,
"autograded" ({file name: bytes} written by nbgrader), "log", "seconds"}``. Statuses travel as their
values (``results.Status``).

Why a private root: nbgrader grades serially and writes its gradebook as it goes. Each worker
process has its own copy of the course gradebook (the assignment, its cells and hidden tests) in a
private course root, made on its first submission of a run and kept for the next ones; it grades
into it and sends the scores back; only the coordinating process writes the course's gradebook, one
student at a time. No two processes ever write the same database, so no grade is lost to a
locked database or written twice. The kernels that run the student's code are sandboxed
(``sandbox.py``) and write nowhere the worker reads: the autograded notebook is nbgrader's.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import threading
import time
import zlib
from pathlib import Path

from ..course import Course
from ..results import Status
from ..run_data import Job, RunSettings, WorkerResult, checked

_ROOTS: dict[str, Path] = {}  # run id -> this process's private course root for that run
_LOCK = threading.Lock()


def private_course(run: RunSettings) -> Course:
    """This worker process's private course root for ``run`` (made once per run and process)."""
    with _LOCK:
        root = _ROOTS.get(run["id"])
        if root is None:
            for old in list(_ROOTS):  # an earlier run's root is not needed any more
                shutil.rmtree(_ROOTS.pop(old), ignore_errors=True)
            root = Path(tempfile.mkdtemp(prefix=f"hm-grading-{run['id']}-"))
            atexit.register(shutil.rmtree, root, True)
            (root / "gradebook.db").write_bytes(zlib.decompress(run["gradebook"]))
            from ..adopt_release import language_release  # (the grading machinery is imported where it grades)

            folders = {root / "source" / run["assignment"]: run["source"]}
            for language, files in run["releases"].items():  # release/, release-ru/: adopt_release.language_release
                folders[language_release(root / "release", language) / run["assignment"]] = files
            for folder, files in folders.items():
                folder.mkdir(parents=True)
                for name, data in files.items():
                    (folder / name).write_bytes(data)
            _ROOTS[run["id"]] = root
    return Course(
        root=root,
        course_id=run["course_id"],
        source="source",
        release="release",
        submitted="submitted",
        autograded="autograded",
        feedback="feedback",
        solution="solution",
        runtime=".",
    )


def read_grades(course: Course, assignment: str, student: str) -> dict:
    """Everything nbgrader recorded for this submission, as plain data."""
    from nbgrader.api import Gradebook

    with Gradebook(course.db_url) as gradebook:
        submission = gradebook.find_submission(assignment, student)
        notebooks = {}
        for notebook in submission.notebooks:
            notebooks[notebook.name] = {
                "grades": {
                    g.name: {
                        "auto_score": g.auto_score,
                        "max_score": g.max_score,
                        "needs_manual_grade": g.needs_manual_grade,
                    }
                    for g in notebook.grades
                },
                "comments": {c.name: c.auto_comment for c in notebook.comments},
                "late_submission_penalty": notebook.late_submission_penalty,
            }
        timestamp = submission.timestamp.isoformat() if submission.timestamp else None
    return {"notebooks": notebooks, "timestamp": timestamp}


def classify_failure(log: str) -> Status:
    """What kind of failure a failed nbgrader run was, from its log (REVIEW: nbgrader could not grade it)."""
    if "DeadKernelError" in log or "Kernel died" in log or "kernel died" in log:
        return Status.DIED
    if "UnresponsiveKernelError" in log or "became unresponsive" in log or "CellTimeoutError" in log:
        return Status.TIMED_OUT
    if (
        "NotJSONError" in log
        or "JSONDecodeError" in log
        or "ValidationError" in log
        or "Notebook does not appear" in log
    ):
        return Status.INVALID
    return Status.REVIEW


def repair_duplicates(path: Path) -> None:
    """Keep nbgrader's metadata only on the last cell of each grade id (what DeduplicateIds keeps).

    nbgrader 0.9.6 empties the metadata of duplicates (``nbgrader: {}``) and then, with
    ``add_missing_cells``, crashes on it (KeyError 'grade_id' in add_missing_task_cells): a student
    who duplicated a test cell would get no grade at all. Removing the key avoids the crash and
    means the same: the earlier copies run as ordinary code, the last one is graded.
    """
    import nbformat

    from ..course import grade_id

    notebook = nbformat.read(path, as_version=4)
    last = {grade_id(cell): index for index, cell in enumerate(notebook.cells) if grade_id(cell) is not None}
    changed = False
    for index, cell in enumerate(notebook.cells):
        if "nbgrader" in cell.get("metadata", {}) and last.get(grade_id(cell)) != index:
            del cell["metadata"]["nbgrader"]
            changed = True
    if changed:
        nbformat.write(notebook, path)


class Watchdog:
    """Stops a submission that outlives its time: its kernels are killed (nbgrader then finishes with a
    dead kernel, reported as timed out). Kernels are this worker process's children; a worker grades
    one submission at a time (one thread per worker process)."""

    def __init__(self, seconds: float):
        self.fired = False
        self.timer = threading.Timer(seconds, self._fire)
        self.timer.daemon = True

    def _fire(self) -> None:
        import psutil

        self.fired = True
        for child in psutil.Process().children(recursive=True):
            try:
                child.kill()
            except psutil.Error:
                pass

    def __enter__(self):
        self.timer.start()
        return self

    def __exit__(self, *exc):
        self.timer.cancel()


def run_settings(run: RunSettings) -> RunSettings:
    """The run's settings as a task of their own, which every grading task depends on: each worker
    fetches them once (from a peer), and a worker that dies never takes them away: the scheduler runs
    this again (data scattered to the first worker alone was lost with it)."""
    return run


def grade_submission(run: RunSettings, job: Job) -> WorkerResult:
    """Grade one submission with nbgrader in this process's private course root (a Dask task)."""
    from .. import judge
    from ..kernel import kernel_supply
    from ..collect import write_submission

    run, job = checked(RunSettings, run), checked(Job, job)  # from the coordinator: refused here if misshapen
    if job.get("last"):  # among the run's last submissions: this worker expects none after it
        kernel_supply.kernel_supply().last_one()
    course = private_course(run)
    assignment, student = run["assignment"], job["student"]
    submitted = course.path("submitted", student, assignment)
    autograded = course.path("autograded", student, assignment)
    shutil.rmtree(submitted, ignore_errors=True)
    shutil.rmtree(autograded, ignore_errors=True)
    write_submission(submitted, job["files"], job.get("timestamp"))
    for path in submitted.glob("*.ipynb"):
        try:
            repair_duplicates(path)
        except Exception:  # noqa: BLE001 - unreadable: nbgrader will say so
            pass
    settings = dict(
        run["config"],
        **{
            "Judge.key": run["key"],  # in memory: the worker writes no copy of the key on its disk
            # where the sanitize step (AdoptRelease) and the judge find the instructor's notebooks
            "CourseFolders.release_directory": str(course.path("release")),
            "CourseFolders.source_directory": str(course.path("source")),
        },
    )
    started = time.monotonic()
    with Watchdog(run["submission_timeout"]) as watchdog:
        answer = course.nbgrader("autograde", assignment, student, settings=settings, check=False)
    log = answer["log"] + answer["error"]
    result: WorkerResult = {
        "student": student,
        "ok": bool(answer["success"]) and not watchdog.fired,
        "seconds": time.monotonic() - started,
        "log": log[-20000:],
        "stopped": watchdog.fired,
    }
    notes, statuses, limits = [], [], []
    for key in [k for k in judge.REPORTS if k[0] == assignment and k[1] == student]:
        report = judge.REPORTS.pop(key)
        notes += report.notes
        statuses.append(report.status)
        limits += report.limits
    result["judge_notes"] = notes
    result["judge_limits"] = limits
    judged = next((s for s in (Status.DIED, Status.TIMED_OUT) if s in statuses), None)
    result["judge_status"] = judged.value if judged else None  # statuses travel by value
    if watchdog.fired:
        result["failure"] = Status.TIMED_OUT.value
    elif result["ok"]:
        result.update(read_grades(course, assignment, student))
        result["autograded"] = {p.name: p.read_bytes() for p in sorted(autograded.iterdir()) if p.is_file()}
    else:
        result["failure"] = classify_failure(log).value
    shutil.rmtree(submitted, ignore_errors=True)
    shutil.rmtree(autograded, ignore_errors=True)
    return result
