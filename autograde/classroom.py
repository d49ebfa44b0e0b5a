"""The instructor's grading pipeline: release, collect, autograde in parallel, feedback, grades, report.

Everything goes through the real nbgrader; this module adds what a class needs on top of it:

* ``collect_*``     submissions from nbgrader's exchange, from an LMS zip, or from a folder
                    ``<student>/<assignment>/<notebook>.ipynb``, all into ``submitted/``;
* ``grade``         every student of an assignment, in parallel (one worker per core, each grading
                    into a private copy of the gradebook; only this process writes the course's
                    gradebook), with a progress line, a per-cell time limit, a per-submission time
                    limit and a per-kernel memory limit; a status and plain-words notes per student;
                    a run that is interrupted resumes where it stopped;
* ``feedback``      nbgrader's feedback HTML with the hidden tests removed (``feedback_filter``),
                    checked, and released through the exchange;
* ``export_grades`` a CSV, one row per student and assignment, one column per graded exercise;
* ``report``        what went wrong, per student, in plain words.

The command line is ``grade.py`` (``python -m autograde.grade --help``); docs/instructors.md walks
through a term.
"""
from __future__ import annotations

import contextlib
import csv
import dataclasses
import datetime as dt
import hashlib
import json
import os
import queue
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Callable, Iterable

import nbformat

from . import collect
from .tool_env import tool_env

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

# The statuses, from best to worst. Every student of an assignment gets exactly one.
GRADED, REVIEW, TIMED_OUT, DIED, INVALID, MISSING = (
    "graded", "needs review", "timed out", "kernel died", "invalid notebook", "missing")
STATUSES = (GRADED, REVIEW, TIMED_OUT, DIED, INVALID, MISSING)
FAILED = {TIMED_OUT, DIED, INVALID, MISSING}  # counted as failures on the progress line

MAX_NOTEBOOK_MB = 50  # a bigger .ipynb is refused as invalid (stored outputs are cleared anyway)


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


# ---------------------------------------------------------------------------------------------
# The course: where everything lives, and how nbgrader is called on it
# ---------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Course:
    """A course root laid out as in nbgrader_config.py (the repository itself, or a copy for tests)."""

    root: Path = REPO
    exchange: Path | None = None  # nbgrader's exchange folder (None: nbgrader's default, /srv/nbgrader/exchange)
    course_id: str = "heads-and-masks"
    source: str = "solutions"
    release: str = "notebooks"
    submitted: str = "autograde/submitted"
    autograded: str = "autograde/autograded"
    feedback: str = "autograde/feedback"
    solution: str = "autograde/solution"
    runtime: str = "autograde"  # gradebook.db, results/, reports/, work/, downloaded/

    def __post_init__(self):
        self.root = Path(self.root).resolve()
        if self.exchange is not None:
            self.exchange = Path(self.exchange).resolve()

    def path(self, step: str, student: str | None = None, assignment: str | None = None) -> Path:
        folder = self.root / getattr(self, step)
        if student is not None:
            folder = folder / student
        if assignment is not None:
            folder = folder / assignment
        return folder

    @property
    def gradebook_path(self) -> Path:
        return self.root / self.runtime / "gradebook.db"

    @property
    def db_url(self) -> str:
        return f"sqlite:///{self.gradebook_path}"

    def runtime_dir(self, *parts: str) -> Path:
        folder = self.root / self.runtime / Path(*parts)
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def assignments(self) -> list[str]:
        return sorted(p.name for p in self.path("source").iterdir() if p.is_dir() and p.name[:2].isdigit())

    def nbgrader_args(self, **overrides: str) -> list[str]:
        """Every CourseDirectory setting on the command line (``overrides``: e.g. release=...)."""
        args = [f"--CourseDirectory.root={self.root}", f"--CourseDirectory.course_id={self.course_id}",
                f"--CourseDirectory.db_url={self.db_url}"]
        for step in ("source", "release", "submitted", "autograded", "feedback", "solution"):
            args.append(f"--CourseDirectory.{step}_directory={overrides.get(step, getattr(self, step))}")
        if self.exchange is not None:
            args.append(f"--Exchange.root={self.exchange}")
        return args

    def nbgrader(self, *args: str, check: bool = True, **overrides: str) -> subprocess.CompletedProcess:
        """Run an nbgrader command on this course with the course's nbgrader_config.py."""
        command = [sys.executable, "-m", "nbgrader", *args, *self.nbgrader_args(**overrides)]
        run = subprocess.run(command, cwd=HERE, env=tool_env(headless=True), capture_output=True, text=True)
        if check and run.returncode != 0:
            raise RuntimeError(f"`nbgrader {' '.join(args)}` failed:\n{run.stdout}\n{run.stderr}")
        return run


def gradebook(course: Course):
    from nbgrader.api import Gradebook

    course.gradebook_path.parent.mkdir(parents=True, exist_ok=True)
    return Gradebook(course.db_url, course.course_id)


# ---------------------------------------------------------------------------------------------
# Setting up and releasing
# ---------------------------------------------------------------------------------------------

def in_gradebook(course: Course, assignment: str) -> bool:
    from nbgrader.api import MissingEntry

    if not course.gradebook_path.exists():
        return False
    with gradebook(course) as gb:
        try:
            return bool(gb.find_assignment(assignment).notebooks)
        except MissingEntry:
            return False


def setup(course: Course, assignment: str, force: bool = False) -> list[str]:
    """Record the assignment (its cells and hidden tests) in the course's gradebook.

    ``generate_assignment`` does it; its release goes to a scratch folder and is compared with the
    committed ``notebooks/``, which is never rewritten here. Returns warnings (e.g. stale notebooks).
    """
    if in_gradebook(course, assignment) and not force:
        return []
    scratch = course.runtime_dir("work", "release-check")
    shutil.rmtree(scratch / assignment, ignore_errors=True)
    course.nbgrader("generate_assignment", assignment, "--force", release=str(scratch))
    warnings = []
    released = course.path("release", assignment=assignment)
    for built in sorted((scratch / assignment).glob("*.ipynb")):
        committed = released / built.name
        if not committed.exists() or strip_ids(committed) != strip_ids(built):
            warnings.append(f"{committed.relative_to(course.root)} differs from what the solutions generate: "
                            "run `make notebooks` before releasing")
    shutil.rmtree(scratch, ignore_errors=True)
    return warnings


def strip_ids(path: Path) -> str:
    return json.dumps(nbformat.read(path, as_version=4), sort_keys=True)


def release(course: Course, assignment: str) -> list[str]:
    """Put the student notebooks (``notebooks/<assignment>``) into the exchange for students to fetch."""
    warnings = setup(course, assignment)
    course.nbgrader("release_assignment", assignment, "--force")
    return warnings


# ---------------------------------------------------------------------------------------------
# Collecting
# ---------------------------------------------------------------------------------------------

def collection(course: Course, assignment: str) -> collect.Collection:
    return collect.Collection(course.path("submitted"), assignment, course.runtime_dir("results") / "collection.json")


def collect_exchange(course: Course, assignment: str) -> list[str]:
    """The latest submission of every student in the exchange, into ``submitted/`` (``collect.py``)."""
    setup(course, assignment)
    exchange = course.exchange or Path("/srv/nbgrader/exchange")
    return collect.from_exchange(collection(course, assignment), exchange / course.course_id / "inbound")


def collect_zip(course: Course, assignment: str, archives: Iterable[Path], regexp: str | None = None) -> list[str]:
    """An LMS download (zip files, or loose files named by student), one level, with caps (``collect.py``)."""
    setup(course, assignment)
    students, notes = collect.from_zips(collection(course, assignment), archives, regexp,
                                        expected_notebooks(course, assignment))
    for note in notes:
        print(f"note: {collect.printable(note)}", file=sys.stderr)
    return students


def collect_folder(course: Course, assignment: str, folder: Path) -> list[str]:
    """Collect ``<folder>/<student>/<assignment>/...`` (e.g. copied from a shared drive)."""
    return collect.from_folder(collection(course, assignment), Path(folder))


def collection_notes(course: Course, assignment: str) -> dict[str, list[str]]:
    return collection(course, assignment).data.get("notes", {}).get(assignment, {})


def original_ids(course: Course) -> dict[str, str]:
    record = course.root / course.runtime / "results" / "collection.json"
    return json.loads(record.read_text()).get("ids", {}) if record.exists() else {}


def students_with_submissions(course: Course, assignment: str) -> list[str]:
    base = course.path("submitted")
    if not base.exists():
        return []
    return sorted(p.name for p in base.iterdir() if (p / assignment).is_dir())


def roster(course: Course, assignment: str) -> list[str]:
    """Every student the course knows: in the gradebook, with a submission, or graded before."""
    students = set(students_with_submissions(course, assignment))
    if course.gradebook_path.exists():
        with gradebook(course) as gb:
            students |= {s.id for s in gb.students}
    results = course.root / course.runtime / "results" / assignment
    if results.exists():
        students |= {p.stem for p in results.glob("*.json")}
    return sorted(students)


# ---------------------------------------------------------------------------------------------
# Looking at a submission before grading it
# ---------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Inspection:
    status: str | None = None  # set when the submission cannot be graded at all
    notes: list[str] = dataclasses.field(default_factory=list)
    rename: dict[str, str] = dataclasses.field(default_factory=dict)
    fingerprint: str = ""


def _grade_id(cell) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def _is_test(cell) -> bool:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return bool(meta.get("grade")) and not meta.get("solution")


def fingerprint(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and ".ipynb_checkpoints" not in p.parts):
        digest.update(str(path.relative_to(folder)).encode() + b"\0")
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def expected_notebooks(course: Course, assignment: str) -> list[str]:
    return sorted(p.stem for p in course.path("release", assignment=assignment).glob("*.ipynb")) or \
        sorted(p.stem for p in course.path("source", assignment=assignment).glob("*.ipynb"))


def inspect(course: Course, assignment: str, student: str, max_mb: float = MAX_NOTEBOOK_MB,
            collected: dict[str, list[str]] | None = None) -> Inspection:
    """Decide whether a submission can be graded, and note everything unusual about it."""
    folder = course.path("submitted", student, assignment)
    result = Inspection()
    collected = collection_notes(course, assignment) if collected is None else collected  # read once per run
    result.notes += collected.get(student, [])
    if folder.is_symlink() or not folder.is_dir():
        result.status = MISSING
        result.notes.append("nothing was submitted")
        return result
    result.fingerprint = fingerprint(folder)
    present = sorted(p.name for p in folder.glob("*.ipynb") if not p.is_symlink())
    expected = [f"{name}.ipynb" for name in expected_notebooks(course, assignment)]
    missing = [name for name in expected if name not in present]
    extra = [name for name in present if name not in expected]
    if missing and len(missing) == len(extra) == 1:
        result.rename[extra[0]] = missing[0]
        result.notes.append(f"the notebook was named `{extra[0]}` instead of `{missing[0]}`: graded it as `{missing[0]}`")
        missing = []
    if missing:
        found = f" (found: {', '.join(present)})" if present else " (no notebook at all)"
        result.status = MISSING
        result.notes.append(f"no `{missing[0]}` in the submission{found}")
        return result
    release = course.path("release", assignment=assignment)
    for name in expected:
        submitted_name = next((wrong for wrong, right in result.rename.items() if right == name), name)
        path = folder / submitted_name
        size_mb = path.stat().st_size / 1e6
        if size_mb > max_mb:
            result.status = INVALID
            result.notes.append(f"`{submitted_name}` is {size_mb:.0f} MB, over the {max_mb:g} MB limit: "
                                "clear its outputs and submit again")
            return result
        try:
            raw = json.loads(collect.read_regular(path, int(max_mb * 1e6)).decode("utf-8"))
        except RecursionError:
            result.status = INVALID
            result.notes.append(f"`{submitted_name}` is nested too deeply to be a notebook")
            return result
        except (UnicodeDecodeError, ValueError) as error:
            result.status = INVALID
            result.notes.append(f"`{submitted_name}` is not valid JSON ({str(error)[:120]}): the file is damaged "
                                "or not a notebook")
            return result
        try:
            notebook = nbformat.reads(json.dumps(raw), as_version=4)
        except (Exception, RecursionError) as error:  # nbformat raises several kinds
            result.status = INVALID
            result.notes.append(f"`{submitted_name}` is JSON but not a Jupyter notebook "
                                f"({type(error).__name__}: {str(error)[:120]})")
            return result
        if (release / name).exists():
            result.notes += compare_with_release(notebook, nbformat.read(release / name, as_version=4))
        result.notes += suspicious_code(notebook, assignment)
    return result


def suspicious_code(notebook, assignment: str) -> list[str]:
    """Constructs that can game the grader (``scan.py``): a note each, the score is not changed."""
    try:
        from .scan import scan_notebook
    except ImportError:
        return []
    try:
        findings = scan_notebook(notebook, assignment)
    except Exception as error:  # a scanner problem must not stop grading
        return [f"the code scan failed ({type(error).__name__}: {error})"]
    if not findings:
        return []
    shown = "; ".join(str(f) for f in findings[:3]) + (f"; and {len(findings) - 3} more" if len(findings) > 3 else "")
    return [f"suspicious code, check it by hand: {shown}"]


def compare_with_release(submitted, released) -> list[str]:
    """What the student did to the test cells (nbgrader puts them back; the instructor should know)."""
    notes = []
    original = {_grade_id(c): c for c in released.cells if _is_test(c)}
    answers = [_grade_id(c) for c in released.cells if c.get("metadata", {}).get("nbgrader", {}).get("solution")]
    seen: dict[str, list] = {}
    for cell in submitted.cells:
        gid = _grade_id(cell)
        if gid is not None:
            seen.setdefault(gid, []).append(cell)
    for gid, cell in original.items():
        copies = seen.get(gid, [])
        if not copies:
            notes.append(f"test cell `{gid}` was deleted: put back and run")
            continue
        if len(copies) > 1:
            notes.append(f"test cell `{gid}` appears {len(copies)} times: the last copy was graded, the others ran as ordinary code")
        last = copies[-1]
        if last.cell_type != cell.cell_type:
            notes.append(f"test cell `{gid}` was changed to {last.cell_type}: put back as {cell.cell_type} and run")
        elif last.source.strip() != cell.source.strip():
            notes.append(f"test cell `{gid}` was edited: the original was put back and run")
    for gid in answers:
        if gid not in seen:
            notes.append(f"answer cell `{gid}` is missing (deleted or its metadata removed)")
    return notes


# ---------------------------------------------------------------------------------------------
# Results: one JSON record per student and assignment, written after the gradebook
# ---------------------------------------------------------------------------------------------

@dataclasses.dataclass
class Result:
    student: str
    assignment: str
    status: str
    scores: dict[str, float]
    max_scores: dict[str, float]
    notes: list[str]
    fingerprint: str = ""
    seconds: float = 0.0  # nbgrader's autograde of this submission
    graded_at: str = ""
    original_id: str = ""  # the student id as submitted, when it had to be made safe (collect.py)

    @property
    def total(self) -> float:
        return sum(self.scores.values())

    @property
    def max_total(self) -> float:
        return sum(self.max_scores.values())

    def line(self) -> str:
        """The report's line for this student."""
        score = f"{self.total:g}/{self.max_total:g}" if self.max_scores else "no score"
        text = f"{self.student}: {self.status}, {score}"
        return collect.printable(text + (": " + "; ".join(self.notes) if self.notes else ""))


def results_dir(course: Course, assignment: str) -> Path:
    return course.runtime_dir("results", assignment)


def write_result(course: Course, result: Result) -> None:
    path = results_dir(course, result.assignment) / f"{result.student}.json"
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(json.dumps(dataclasses.asdict(result), indent=1))
    os.replace(temporary, path)  # atomic: a record is either there whole or not at all


def read_results(course: Course, assignment: str) -> dict[str, Result]:
    folder = course.root / course.runtime / "results" / assignment
    results = {}
    if folder.exists():
        for path in sorted(folder.glob("*.json")):
            try:
                data = json.loads(path.read_text())
                data.pop("recheck_seconds", None)  # records of an earlier version
                results[path.stem] = Result(**data)
            except (ValueError, TypeError):
                continue  # a damaged record: that student is graded again
    return results


def grade_cells(course: Course, assignment: str) -> dict[str, float]:
    """grade_id -> max points of every graded cell of the assignment, from the gradebook."""
    with gradebook(course) as gb:
        found = gb.find_assignment(assignment)
        return {cell.name: float(cell.max_score) for nb in found.notebooks for cell in nb.grade_cells}


# ---------------------------------------------------------------------------------------------
# Writing into the course's gradebook (only ever from this process)
# ---------------------------------------------------------------------------------------------

def _parse_time(text: str | None):
    if not text:
        return None
    return dt.datetime.fromisoformat(text)


def merge_into_gradebook(course: Course, assignment: str, student: str, graded: dict | None) -> None:
    """Record one student's autograde in the course gradebook, replacing any earlier one.

    ``graded`` is what a worker read from its private gradebook; ``None`` records a submission that
    could not be graded: every grade 0 and flagged for manual grading, so formgrader shows it.
    Manual scores an instructor already gave are kept.
    """
    import warnings

    from sqlalchemy.exc import SAWarning

    with gradebook(course) as gb, warnings.catch_warnings():
        warnings.simplefilter("ignore", SAWarning)  # nbgrader's own ORM use, harmless and noisy
        gb.update_or_create_student(student)
        timestamp = _parse_time(graded.get("timestamp")) if graded else None
        submission = gb.update_or_create_submission(assignment, student, **({"timestamp": timestamp} if timestamp else {}))
        for notebook in submission.notebooks:
            data = (graded or {}).get("notebooks", {}).get(notebook.name)
            for grade in notebook.grades:
                if data and grade.name in data["grades"]:
                    grade.auto_score = data["grades"][grade.name]["auto_score"]
                    grade.needs_manual_grade = bool(data["grades"][grade.name]["needs_manual_grade"])
                else:
                    grade.auto_score = 0.0
                    grade.needs_manual_grade = True
            for comment in notebook.comments:
                if data and comment.name in data["comments"]:
                    comment.auto_comment = data["comments"][comment.name]
            notebook.late_submission_penalty = data.get("late_submission_penalty") if data else None
        gb.db.commit()


def scores_from_gradebook(course: Course, assignment: str, student: str) -> dict[str, float]:
    from nbgrader.api import MissingEntry

    with gradebook(course) as gb:
        try:
            submission = gb.find_submission(assignment, student)
        except MissingEntry:
            return {}
        return {g.name: float(g.score or 0.0) for nb in submission.notebooks for g in nb.grades}


# ---------------------------------------------------------------------------------------------
# Workers: long-lived processes, each grading in its own private root
# ---------------------------------------------------------------------------------------------

class Worker:
    def __init__(self, settings: dict, results: queue.Queue, prefix: list[str], stderr_path: Path):
        self.settings = settings
        with open(stderr_path, "a") as stderr:  # what nbgrader and the kernels print, for debugging
            self.process = subprocess.Popen(
                [*prefix, sys.executable, "-m", "autograde.grade_worker"], cwd=HERE, env=tool_env(headless=True),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True,
                start_new_session=True)
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
        self.failures += result.status in FAILED
        if not self.enabled:
            return
        width = 30
        filled = round(width * self.done / max(self.total, 1))
        bar = "#" * filled + "." * (width - filled)
        rate = self.done / max(time.monotonic() - self.started, 1e-9) * 60
        text = (f"[{bar}] {self.done}/{self.total} students, {self.failures} "
                f"failure{'s' if self.failures != 1 else ''} so far, {rate:.0f}/min")
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


def grade(course: Course, assignment: str, *, students: list[str] | None = None, workers: int | None = None,
          force: bool = False, cell_timeout: int | None = None, submission_timeout: float | None = None,
          memory_mb: int | None = None, worker_prefix: list[str] | None = None, progress: bool = True,
          stream=None, on_result: Callable[[Result], None] | None = None) -> dict[str, Result]:
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
        return _grade(course, assignment, students=students, workers=workers, force=force,
                      cell_timeout=cell_timeout, submission_timeout=submission_timeout, memory_mb=memory_mb,
                      worker_prefix=worker_prefix, progress=progress, stream=stream, on_result=on_result)


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


def _grade(course, assignment, *, students, workers, force, cell_timeout, submission_timeout, memory_mb,
           worker_prefix, progress, stream, on_result) -> dict[str, Result]:
    setup(course, assignment)
    maxima = grade_cells(course, assignment)
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
            found = Inspection(status=INVALID, notes=[f"the submission could not be inspected "
                                                       f"({type(error).__name__}: {str(error)[:200]})"])
        inspections[student] = found
        old = previous.get(student)
        if not force and old is not None and old.fingerprint == found.fingerprint:
            results[student] = old  # already graded from exactly these files
            continue
        if found.status is not None:  # cannot be graded: record it now
            results[student] = None  # placeholder, filled below
            continue
        jobs.append({"assignment": assignment, "student": student,
                     "folder": str(course.path("submitted", student, assignment)), "rename": found.rename})

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
        finish(Result(student, assignment, found.status, {g: 0.0 for g in maxima}, maxima, found.notes,
                      found.fingerprint, 0.0, now()))

    if jobs:
        run_jobs(course, assignment, jobs, inspections, maxima, workers=workers, cell_timeout=cell_timeout,
                 submission_timeout=submission_timeout, memory_mb=memory_mb, prefix=worker_prefix or [],
                 finish=finish)
    return {s: results[s] for s in everyone}


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def run_jobs(course, assignment, jobs, inspections, maxima, *, workers, cell_timeout, submission_timeout,
             memory_mb, prefix, finish) -> None:
    for stale in course.runtime_dir("work").glob("run-*"):  # left by a run that was killed
        shutil.rmtree(stale, ignore_errors=True)
    work = course.runtime_dir("work", f"run-{uuid.uuid4().hex[:8]}")
    snapshot = snapshot_gradebook(course, work)
    from . import grading_key

    key_file = grading_key.key_path(course.root)
    grading_key.load_or_create(key_file)  # made on the first grading run, kept out of git
    settings = {"source": str(course.path("source")), "gradebook": str(snapshot), "course_id": course.course_id,
                "config": {"Judge.timeout": cell_timeout, "Judge.memory_mb": memory_mb,
                           "Judge.budget": max(30, int(submission_timeout * 0.8)), "Judge.key_file": str(key_file),
                           "Judge.release_directory": str(course.path("release")),
                           "Judge.source_directory": str(course.path("source"))}}
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

    def conclude(job: dict, message: dict | None, killed_for: str | None = None) -> None:
        student = job["student"]
        found = inspections[student]
        try:
            status, scores, notes, seconds = record(job, message, killed_for)
        except Exception as error:  # noqa: BLE001 - recording one student never stops the class
            status, scores, notes, seconds = REVIEW, {g: 0.0 for g in maxima}, list(found.notes), 0.0
            notes.append(f"the result could not be recorded ({type(error).__name__}: {str(error)[:200]}): grade again")
        if not sandbox_state()[0]:  # say it on every grade: these kernels could reach everything
            notes.append(f"unsandboxed: {sandbox_state()[1]}")
        finish(Result(student, assignment, status, scores, maxima, notes, found.fingerprint, round(seconds, 2), now(),
                      ids.get(student, "")))

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
            status = message.get("judge_status") or (REVIEW if notes else GRADED)
            return status, scores_from_gradebook(course, assignment, student), notes, seconds
        status = killed_for or (message or {}).get("failure") or DIED
        log = (message or {}).get("log", "")
        if status == "grading error":
            status = REVIEW
            notes.append("nbgrader could not grade it: " + last_error_line(log))
        elif status == DIED:
            notes.append("the grading process died while grading it (twice): nothing could be graded; "
                         + last_error_line(log))
        elif status == TIMED_OUT:
            notes.append(f"grading took longer than {submission_timeout:g} s and was stopped" if killed_for
                         else "a cell could not be interrupted after its time limit: " + last_error_line(log))
        elif status == INVALID:
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
                        conclude(job, None, killed_for=TIMED_OUT)
                continue
            if worker not in pool:
                continue  # a killed worker's last words
            job = worker.job
            if message is None:  # the worker process itself died
                pool.remove(worker)
                worker.kill()
                if job is not None:
                    if job["student"] in retried:
                        conclude(job, {"ok": False, "failure": DIED, "log": "the grading process died"})
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


def last_error_line(log: str) -> str:
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    for line in reversed(lines):
        if "Error" in line or "error" in line:
            return line[:300]
    return lines[-1][:300] if lines else "(no log)"


# ---------------------------------------------------------------------------------------------
# Feedback
# ---------------------------------------------------------------------------------------------

def hidden_lines(course: Course, assignment: str) -> set[str]:
    """The lines of the assignment's hidden tests (from the source), for checking feedback."""
    from .feedback_filter import split_hidden

    lines = set()
    for path in course.path("source", assignment=assignment).glob("*.ipynb"):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                lines |= {line.strip() for line in split_hidden(cell.source)[1] if len(line.strip()) >= 8}
    return lines


def leaked_lines(html: str, hidden: set[str]) -> list[str]:
    import html as html_module
    import re

    text = html_module.unescape(re.sub(r"<[^>]+>", "", html))
    return sorted(line for line in hidden if line in text)


def _feedback_app(course: Course, assignment: str, student: str):
    from nbgrader.converters import GenerateFeedback
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(HERE)).load_config()
    overrides = Config()
    for argument in course.nbgrader_args():
        dotted, value = argument[2:].split("=", 1)
        section, name = dotted.split(".", 1)
        overrides[section][name] = value
    config.merge(overrides)
    coursedir = CourseDirectory(config=config)
    coursedir.assignment_id, coursedir.student_id = assignment, student
    app = GenerateFeedback(coursedir=coursedir, config=config)
    app.force = True
    return app


def feedback(course: Course, assignment: str, release_to_students: bool = False,
             students: list[str] | None = None) -> list[Path]:
    """Generate each student's feedback (HTML, hidden tests removed), check it, optionally release it.

    One student at a time: a problem with one submission's feedback is a note in that student's
    result, never the end of the run. Released through the exchange for students who submitted
    there; for the others (an LMS zip, a folder) one zip to upload back: ``feedback/<assignment>-for-lms.zip``.
    """
    hidden = hidden_lines(course, assignment)
    results = read_results(course, assignment)
    files: list[Path] = []
    through_exchange: list[str] = []
    for student in sorted(results if students is None else set(students) & set(results)):
        result = results[student]
        if not course.path("autograded", student, assignment).is_dir():
            continue
        folder = course.path("feedback", student, assignment)
        problem = None
        try:
            _feedback_app(course, assignment, student).start()
            made = sorted(folder.glob("*.html"))
            for path in made:
                leaks = leaked_lines(path.read_text(encoding="utf-8", errors="replace"), hidden)
                if leaks:
                    problem = "its feedback showed a line of the hidden tests and was withheld"
            if problem:
                shutil.rmtree(folder, ignore_errors=True)
            else:
                files += made
                if (course.path("submitted", student, assignment) / "submission_secret.txt").is_file():
                    through_exchange.append(student)
        except Exception as error:  # noqa: BLE001
            problem = f"no feedback could be made ({type(error).__name__}: {str(error)[:200]})"
            shutil.rmtree(folder, ignore_errors=True)
        if problem and problem not in result.notes:
            result.notes.append(problem)
            write_result(course, result)
    if release_to_students:
        for student in through_exchange:
            run = course.nbgrader("release_feedback", assignment, f"--student={student}", check=False)
            if run.returncode != 0:
                result = results[student]
                result.notes.append("its feedback could not be released through the exchange: "
                                    + last_error_line(run.stdout + run.stderr))
                write_result(course, result)
        others = [p for p in files if p.parts[-3] not in through_exchange]
        if others:
            import zipfile

            bundle = course.path("feedback") / f"{assignment}-for-lms.zip"
            with zipfile.ZipFile(bundle, "w", zipfile.ZIP_DEFLATED) as archive:
                for path in others:
                    archive.write(path, f"{path.parts[-3]}/{path.name}")
    return files


# ---------------------------------------------------------------------------------------------
# Grades and the report
# ---------------------------------------------------------------------------------------------

def exercise_of(grade_id: str, answers: list[str]) -> str:
    """The exercise a test cell grades: ``test_split_heads_errors`` -> ``split_heads`` (longest answer id)."""
    name = grade_id[len("test_"):] if grade_id.startswith("test_") else grade_id
    matches = [a for a in answers if name == a or name.startswith(a + "_")]
    return max(matches, key=len) if matches else name


def exercises(course: Course, assignment: str) -> dict[str, list[str]]:
    """exercise -> its grade cells, in notebook order."""
    from nbgrader.api import MissingEntry

    with gradebook(course) as gb:
        try:
            found = gb.find_assignment(assignment)
        except MissingEntry:
            return {}
        grouped: dict[str, list[str]] = {}
        for notebook in found.notebooks:
            answers = [c.name for c in notebook.solution_cells]
            for cell in sorted(notebook.grade_cells, key=lambda c: c.name):
                grouped.setdefault(exercise_of(cell.name, answers), []).append(cell.name)
    return grouped


def export_grades(course: Course, path: Path, assignments: list[str] | None = None) -> list[dict]:
    """Write the grades CSV: student, assignment, status, one column per exercise, total, max, notes."""
    assignments = assignments or [a for a in course.assignments() if in_gradebook(course, a)]
    rows, columns = [], []
    for assignment in assignments:
        grouped = exercises(course, assignment)
        columns += [e for e in grouped if e not in columns]
        recorded = read_results(course, assignment)
        maxima = grade_cells(course, assignment)
        for student in roster(course, assignment):
            result = recorded.get(student)
            status = result.status if result else (MISSING if not course.path("submitted", student, assignment).is_dir()
                                                   else "not graded yet")
            scores = scores_from_gradebook(course, assignment, student) if result else {}
            row = {"student": student, "student_as_submitted": (result.original_id if result else "") or student,
                   "assignment": assignment, "status": status}
            for exercise, cells in grouped.items():
                row[exercise] = f"{sum(scores.get(c, 0.0) for c in cells):g}"
            row["total"] = f"{sum(scores.get(c, 0.0) for c in maxima):g}"
            row["max_total"] = f"{sum(maxima.values()):g}"
            row["notes"] = "; ".join(result.notes) if result else ""
            rows.append(row)
    header = ["student", "student_as_submitted", "assignment", "status", *columns, "total", "max_total", "notes"]
    rows = [{k: spreadsheet_safe(v) for k, v in row.items()} for row in rows]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=header, restval="")
        writer.writeheader()
        writer.writerows(rows)
    return rows


def spreadsheet_safe(value) -> str:
    """A CSV cell a spreadsheet shows as text: no formula (``=1+2``, ``+``, ``-``, ``@``), no control characters."""
    text = collect.printable(str(value))
    if text[:1] in ("=", "+", "-", "@", "\t", "\r") and not _number(text):
        return "'" + text
    return text


def _number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def sandbox_state() -> tuple[bool, str]:
    """(True, "") when grading kernels run in the bubblewrap sandbox (sandbox.py), else (False, why)."""
    from .sandbox import sandbox_available

    return sandbox_available()


def report(course: Course, assignment: str) -> str:
    """Everything that went wrong, per student, in plain words (also written to reports/)."""
    results = read_results(course, assignment)
    everyone = roster(course, assignment)
    counts = {status: 0 for status in STATUSES}
    lines = []
    for student in everyone:
        result = results.get(student)
        if result is None:
            status = MISSING if not course.path("submitted", student, assignment).is_dir() else "not graded yet"
            counts[status] = counts.get(status, 0) + 1
            lines.append(collect.printable(f"  {student}: {status}") + (": nothing was submitted" if status == MISSING
                                                                          else ": run `grade.py autograde` again"))
            continue
        counts[result.status] += 1
        if result.status != GRADED:
            lines.append("  " + result.line())
    summary = ", ".join(f"{n} {status}" for status, n in counts.items() if n)
    text = [f"{assignment}: {len(everyone)} students: {summary or 'nobody yet'}"]
    if not sandbox_state()[0]:
        text.insert(0, f"WARNING: graded UNSANDBOXED ({sandbox_state()[1]}): every grade below is unsandboxed")
    text += lines if lines else ["  every submission was graded without trouble"]
    out = "\n".join(text) + "\n"
    (course.runtime_dir("reports") / f"{assignment}.txt").write_text(out, encoding="utf-8")
    return out


# ---------------------------------------------------------------------------------------------
# Throughput: serial against parallel, side by side (``make bench`` and ``grade.py bench``)
# ---------------------------------------------------------------------------------------------

def filled_submission(course: Course, assignment: str) -> nbformat.NotebookNode:
    """The released notebook with every answer cell filled from the solutions: a correct submission."""
    name = expected_notebooks(course, assignment)[0]
    released = nbformat.read(course.path("release", assignment=assignment) / f"{name}.ipynb", as_version=4)
    solutions = nbformat.read(course.path("source", assignment=assignment) / f"{name}.ipynb", as_version=4)
    answers = {_grade_id(c): c.source for c in solutions.cells
               if c.get("metadata", {}).get("nbgrader", {}).get("solution")}
    for cell in released.cells:
        if _grade_id(cell) in answers:
            cell.source = "\n".join(line for line in answers[_grade_id(cell)].splitlines()
                                    if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))
    return released


def make_course_copy(root: Path, exchange: Path | None = None) -> Course:
    """A fresh course root with this repository's solutions/ and notebooks/ (for tests and benchmarks)."""
    root = Path(root)
    for name in ("solutions", "notebooks"):
        shutil.copytree(REPO / name, root / name, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    return Course(root=root, exchange=exchange)


def grading_throughput_benchmark(assignment: str | Iterable[str] | None = None, n_submissions: int = 6,
                                 workers: int | None = None) -> dict:
    """Grade the same ``n_submissions`` correct submissions of every assignment three ways, side by side.

    * ``plain``: nbgrader's own ``nbgrader autograde`` command, serially, with nbgrader's default
      configuration (its ``Execute`` step and the notebook's default kernel, no sandbox, no judge),
      in a course copy of its own;
    * ``one``: this pipeline with one worker (sandboxed kernel and judge on);
    * ``two``: this pipeline with ``workers`` workers (one per core by default).

    The three run one after the other for each assignment (``assignment``: one name, several, or
    None for every one), so that each assignment's ratios come from the same minutes of the
    machine. Seconds per notebook are wall-clock times divided by ``n_submissions`` (start-up of
    nbgrader and of the workers included). Every submission must score full marks in every mode.
    """
    import tempfile

    from .sandbox import GRADING_ENV

    workers = workers or default_workers()
    if assignment is None:
        assignments = Course(root=REPO).assignments()
    elif isinstance(assignment, str):
        assignments = [assignment]
    else:
        assignments = list(assignment)
    figures: dict = {"assignments": assignments, "n_submissions": n_submissions, "workers": workers,
                     "cores": default_workers(), "rows": []}
    plain_env = tool_env(headless=True)
    plain_env.pop(GRADING_ENV, None)  # plain nbgrader knows nothing of grading mode
    with tempfile.TemporaryDirectory(prefix="hm-bench-") as scratch:
        plain_root = Path(scratch) / "plain"
        plain_root.mkdir()
        shutil.copytree(REPO / "solutions", plain_root / "source",
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
        (plain_root / "nbgrader_config.py").write_text(  # nbgrader's defaults, but for where the course is
            f"c = get_config()\nc.CourseDirectory.root = {str(plain_root)!r}\n"
            "c.CourseDirectory.course_id = 'plain-nbgrader'\n", encoding="utf-8")

        def plain_nbgrader(*args: str) -> None:
            run = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=plain_root, env=plain_env,
                                 capture_output=True, text=True)
            if run.returncode != 0:
                raise RuntimeError(f"`nbgrader {' '.join(args)}` failed:\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}")

        def plain_full_marks(name: str) -> int:
            from nbgrader.api import Gradebook

            with Gradebook(f"sqlite:///{plain_root / 'gradebook.db'}") as book:
                return sum(book.find_submission(name, f"student{i:03d}").score
                           == book.find_assignment(name).max_score for i in range(n_submissions))

        courses = {mode: make_course_copy(Path(scratch) / mode) for mode in ("one", "two")}
        for name in assignments:
            row: dict = {"assignment": name}
            notebook = filled_submission(courses["one"], name)
            notebook_name = expected_notebooks(courses["one"], name)[0]
            plain_nbgrader("generate_assignment", name, "--force")
            for root in (plain_root / "submitted", *(c.path("submitted") for c in courses.values())):
                for index in range(n_submissions):
                    folder = root / f"student{index:03d}" / name
                    folder.mkdir(parents=True)
                    nbformat.write(notebook, folder / f"{notebook_name}.ipynb")
            started = time.perf_counter()
            plain_nbgrader("autograde", name)
            row["plain_seconds"] = time.perf_counter() - started
            row["plain_full_marks"] = plain_full_marks(name)
            for mode, count in (("one", 1), ("two", workers)):
                setup(courses[mode], name)
                started = time.perf_counter()
                results = grade(courses[mode], name, workers=count, progress=False)
                row[f"{mode}_seconds"] = time.perf_counter() - started
                row[f"{mode}_full_marks"] = sum(r.status == GRADED and r.total == r.max_total
                                                for r in results.values())
                row[f"{mode}_median_submission"] = statistics.median(r.seconds for r in results.values())
                row[f"{mode}_problems"] = [r.line() for r in results.values()
                                           if not (r.status == GRADED and r.total == r.max_total)][:3]
            for mode in ("plain", "one", "two"):
                row[f"{mode}_per_notebook"] = row[f"{mode}_seconds"] / n_submissions
            row["one_over_plain"] = row["one_seconds"] / row["plain_seconds"]
            row["speedup"] = row["one_seconds"] / row["two_seconds"]
            row["all_full_marks"] = all(row[f"{m}_full_marks"] == n_submissions for m in ("plain", "one", "two"))
            figures["rows"].append(row)
    rows = figures["rows"]
    for mode in ("plain", "one", "two"):
        figures[f"{mode}_seconds"] = sum(r[f"{mode}_seconds"] for r in rows)
    figures["one_over_plain"] = figures["one_seconds"] / figures["plain_seconds"]
    figures["speedup"] = figures["one_seconds"] / figures["two_seconds"]
    figures["worst_one_over_plain"] = max(rows, key=lambda r: r["one_over_plain"])
    figures["worst_speedup"] = min(rows, key=lambda r: r["speedup"])
    # A class: every student hands in every assignment measured here, graded with `workers` workers. Each
    # assignment's run costs its start-up (what the measured wall time holds beyond its submissions) once,
    # then each submission its median time inside a worker, `workers` at a time.
    figures["class_students"] = students = 300
    class_seconds = 0.0
    for r in rows:
        marginal = r["two_median_submission"] / workers
        class_seconds += max(0.0, r["two_seconds"] - n_submissions * marginal) + students * marginal
    figures["class_hours"] = class_seconds / 3600
    figures["class_hours_wall"] = students * sum(r["two_per_notebook"] for r in rows) / 3600  # start-up per N
    figures["all_full_marks"] = all(r["all_full_marks"] for r in rows)
    return figures


def describe(figures: dict) -> str:
    n, workers = figures["n_submissions"], figures["workers"]
    lines = [f"grading the same {n} correct submissions of each assignment ({figures['cores']} cores), "
             "seconds per notebook (wall clock / submissions):",
             f"  {'assignment':<18} {'plain nbgrader':>14} {'1 worker':>9} {f'{workers} workers':>10} "
             f"{'1 worker/plain':>15} {'speedup':>8}  full marks"]
    for r in figures["rows"]:
        lines.append(f"  {r['assignment']:<18} {r['plain_per_notebook']:14.2f} {r['one_per_notebook']:9.2f} "
                     f"{r['two_per_notebook']:10.2f} {r['one_over_plain']:14.2f}x {r['speedup']:7.2f}x  "
                     f"{r['all_full_marks']}")
    total = len(figures["rows"]) * n
    lines += [f"  {'all':<18} {figures['plain_seconds'] / total:14.2f} {figures['one_seconds'] / total:9.2f} "
              f"{figures['two_seconds'] / total:10.2f} {figures['one_over_plain']:14.2f}x {figures['speedup']:7.2f}x  "
              f"{figures['all_full_marks']}",
              f"  a class of {figures['class_students']} on these {len(figures['rows'])} assignments with {workers} "
              f"workers: {figures['class_hours']:.2f} h ({figures['class_hours_wall']:.2f} h if every {n} "
              "submissions paid the start-up again)"]
    return "\n".join(lines)
