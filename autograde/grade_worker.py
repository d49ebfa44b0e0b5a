"""One grading worker: grades submissions one after another with nbgrader, in a private course root.

Started by ``pool.grade`` (one worker per core, ``python -m autograde.grade_worker``), never by hand. It speaks JSON lines:

    stdin, first line   {"root": ..., "source": ..., "gradebook": ..., "course_id": ..., "config": {...}}
    stdin, then         {"assignment": ..., "student": ..., "folder": ..., "rename": {...}}   one per job
    stdout              {"student": ..., "ok": true/false, "failure": ..., "grades": {...}, ...}  one per job

Why a private root: nbgrader grades serially and writes its gradebook as it goes. Each worker has
its own copy of the course gradebook (the assignment, its cells and hidden tests), grades into
it, and sends the scores back; only the coordinating process writes the course's gradebook, one
student at a time. No two processes ever write the same database, so no grade is lost to a
locked database or written twice.

Why a long-lived process: importing nbgrader and building its converter costs about 1.5 s per
call; a worker pays it once and then spends its time running notebooks.
"""

from __future__ import annotations

import io
import json
import logging
import shutil
import sys
import time
import traceback
from pathlib import Path

from .results import Status

HERE = Path(__file__).resolve().parent


def load_config(settings: dict):
    """The course's nbgrader_config.py, pointed at this worker's private root."""
    from traitlets.config.loader import Config, PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(HERE)).load_config()
    root = Path(settings["root"])
    overrides = Config()
    overrides.CourseDirectory.root = str(root)
    overrides.CourseDirectory.course_id = settings["course_id"]
    overrides.CourseDirectory.source_directory = settings["source"]  # absolute: read only (data files)
    overrides.CourseDirectory.submitted_directory = "submitted"
    overrides.CourseDirectory.autograded_directory = "autograded"
    overrides.CourseDirectory.db_url = f"sqlite:///{root / 'gradebook.db'}"
    for dotted, value in settings.get("config", {}).items():  # e.g. {"Execute.timeout": 10}
        section, name = dotted.rsplit(".", 1)
        overrides[section][name] = value
    config.merge(overrides)
    return config


def read_grades(db_url: str, assignment: str, student: str) -> dict:
    """Everything nbgrader recorded for this submission, as plain data."""
    from nbgrader.api import Gradebook

    with Gradebook(db_url) as gradebook:
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

    notebook = nbformat.read(path, as_version=4)
    last: dict[str, int] = {}
    for index, cell in enumerate(notebook.cells):
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id is not None:
            last[grade_id] = index
    changed = False
    for index, cell in enumerate(notebook.cells):
        meta = cell.get("metadata", {})
        if "nbgrader" not in meta:
            continue
        grade_id = meta["nbgrader"].get("grade_id")
        if grade_id is None or last[grade_id] != index:
            del meta["nbgrader"]
            changed = True
    if changed:
        nbformat.write(notebook, path)


def grade_one(settings: dict, job: dict) -> dict:
    from nbgrader.converters import Autograde
    from nbgrader.coursedir import CourseDirectory

    from . import judge
    from .collect import collected_timestamp, take_folder, write_submission

    root = Path(settings["root"])
    assignment, student = job["assignment"], job["student"]
    submitted = root / "submitted" / student / assignment
    shutil.rmtree(root / "autograded" / student / assignment, ignore_errors=True)
    # Only the regular files grading needs, read without following links (collect.py), under the
    # names the assignment expects: nothing else a student handed in reaches nbgrader.
    files, _, _ = take_folder(Path(job["folder"]))
    files = {job.get("rename", {}).get(name, name): data for name, data in files.items()}
    write_submission(submitted, files, collected_timestamp(Path(job["folder"])))
    for path in submitted.glob("*.ipynb"):
        try:
            repair_duplicates(path)
        except Exception:  # unreadable: nbgrader will say so
            pass

    config = load_config(settings)
    coursedir = CourseDirectory(config=config)
    coursedir.assignment_id, coursedir.student_id = assignment, student
    app = Autograde(coursedir=coursedir, config=config)
    app.force = True
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setFormatter(logging.Formatter("[%(levelname)s] %(message)s"))
    handler.setLevel(logging.INFO)
    logger = app.log if isinstance(app.log, logging.Logger) else logging.getLogger("nbgrader")
    logger.addHandler(handler)
    old_level = logger.level
    logger.setLevel(logging.INFO)
    started = time.monotonic()
    ok = True
    try:
        app.start()
    except BaseException:  # nbgrader raises NbGraderException after logging the cause
        ok = False
        buffer.write(traceback.format_exc())
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    log = buffer.getvalue()
    result = {
        "assignment": assignment,
        "student": student,
        "ok": ok,
        "seconds": time.monotonic() - started,
        "log": log[-20000:],
        "autograded": str(root / "autograded" / student / assignment),
    }
    notes, statuses = [], []
    for key in [k for k in judge.REPORTS if k[0] == assignment and k[1] == student]:
        report = judge.REPORTS.pop(key)
        notes += report.notes
        statuses.append(report.status)
    result["judge_notes"] = notes
    judged = next((s for s in (Status.DIED, Status.TIMED_OUT) if s in statuses), None)
    result["judge_status"] = judged.value if judged else None  # statuses cross the pipe by value
    if ok:
        result.update(read_grades(config.CourseDirectory.db_url, assignment, student))
    else:
        result["failure"] = classify_failure(log).value
    return result


def watch_parent() -> None:
    """Exit (with any kernel still running under us) as soon as the coordinating process is gone."""
    import os
    import threading

    parent = os.getppid()

    def watch():
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                try:
                    import psutil

                    for child in psutil.Process().children(recursive=True):
                        child.kill()
                finally:
                    os._exit(3)

    threading.Thread(target=watch, daemon=True).start()


def main() -> None:
    watch_parent()
    # The protocol gets a private copy of the stdout pipe; file descriptor 1 itself (inherited by
    # nbgrader's kernels and any other child process) and sys.stdout now go to stderr, so nothing
    # but results can ever reach the coordinator.
    import os

    sys.stdout.flush()
    stdout = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    settings = json.loads(sys.stdin.readline())
    root = Path(settings["root"])
    root.mkdir(parents=True, exist_ok=True)
    if not (root / "gradebook.db").exists():
        shutil.copy(settings["gradebook"], root / "gradebook.db")
    from .judge import KernelSupply

    with KernelSupply():  # each submission's kernel boots while the one before is graded
        for line in sys.stdin:
            if not line.strip():
                continue
            job = json.loads(line)
            try:
                result = grade_one(settings, job)
            except BaseException:
                result = {
                    "assignment": job.get("assignment"),
                    "student": job.get("student"),
                    "ok": False,
                    "failure": Status.REVIEW.value,
                    "log": traceback.format_exc(),
                }
            stdout.write(json.dumps(result) + "\n")
            stdout.flush()
    # The coordinator waits for this exit. Frozen, the heap nbgrader's imports built is not collected
    # again on the way out (a full collection of it took about 2 s, for nothing).
    import gc

    gc.freeze()


if __name__ == "__main__":
    main()
