"""Step 4, the results: one record per student and assignment, the one the pipeline, the CLI and the tests read.

A :class:`Result` is written as ``results/<assignment>/<student>.json`` after the student's grades went
into the course's gradebook (``merge_into_gradebook``, only ever from the coordinating process). Every
student of an assignment gets exactly one :class:`Status`; statuses cross process and machine
boundaries by their value (a plain string) and are turned back into a :class:`Status` on arrival.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import enum
import json
import os
from pathlib import Path

from heads_and_masks.i18n import N_, _, number, translated

from .submission_files import printable
from .course import Course, gradebook
from .lateness import Lateness, how_late


class Status(enum.StrEnum):
    """What became of a submission, from best to worst. The value is what records and CSVs keep (English);
    ``translated(status)`` is how a report in the instructor's language names it."""

    GRADED = N_("graded")
    REVIEW = N_("needs review")  # graded, with something an instructor should look at (the notes say what)
    TIMED_OUT = N_("timed out")
    DIED = N_("kernel died")
    INVALID = N_("invalid notebook")
    MISSING = N_("missing")
    NOT_GRADED = N_("not graded yet")  # submitted, but no grading run has finished it (yet)

    @property
    def failed(self) -> bool:
        """Nothing could be graded (counted as a failure on the progress line)."""
        return self in (Status.TIMED_OUT, Status.DIED, Status.INVALID, Status.MISSING)


@dataclasses.dataclass
class Result:
    """One student's grading of one assignment."""

    student: str
    assignment: str
    status: Status
    scores: dict[str, float]  # grade id -> points
    max_scores: dict[str, float]
    notes: list[str]  # everything unusual, in plain words
    fingerprint: str = ""  # of the submitted files: the same files are not graded twice
    seconds: float = 0.0  # nbgrader's autograde of this submission
    graded_at: str = ""
    original_id: str = ""  # the student id as submitted, when it had to be made safe (collect.py)
    # Written answers (markdown answer cells, 2 points each in the course) are graded by a person in the
    # formgrader, not by the autograder: their grade ids, and those that still wait for that person. An
    # answer left as released is not pending: nbgrader itself gives it 0.
    written: list[str] = dataclasses.field(default_factory=list)
    pending: list[str] = dataclasses.field(default_factory=list)
    # The bounds of a class run this submission hit (bounds.py): each says which bound, and what it cost.
    limits: list[str] = dataclasses.field(default_factory=list)
    # Deadlines (late_policy.py): how long after the due date the submission came, the points the late policy
    # took (nbgrader's late_submission_penalty), and the due date and policy it was graded against ("": no due
    # date), so that a new due date or policy grades the class again.
    seconds_late: float = 0.0
    late_penalty: float = 0.0
    deadline: str = ""
    # The autograded notebook, when a caller loaded it (``load_notebook``); not part of the record.
    notebook: object = dataclasses.field(default=None, repr=False, compare=False)

    def __post_init__(self):
        self.status = Status(self.status)

    @property
    def total(self) -> float:
        """The points given so far (a pending written answer counts 0 until a person grades it)."""
        return sum(self.scores.values())

    @property
    def max_total(self) -> float:
        """All the points of the assignment, written answers included."""
        return sum(self.max_scores.values())

    @property
    def autograded_total(self) -> float:
        """The points the autograder gave (the test cells)."""
        return sum(s for g, s in self.scores.items() if g not in self.written)

    @property
    def autograded_max(self) -> float:
        return sum(m for g, m in self.max_scores.items() if g not in self.written)

    @property
    def pending_max(self) -> float:
        """The points of the written answers that wait for a person."""
        return sum(self.max_scores.get(g, 0.0) for g in self.pending)

    def line(self) -> str:
        """The report's line for this student, in the current language (the notes as grading wrote them)."""
        score = f"{number(self.total)}/{number(self.max_total)}" if self.max_scores else _("no score")
        if self.pending:
            score = _("{score} ({points} points of written answers pending: grade them in the formgrader)").format(
                score=score, points=number(self.pending_max)
            )
        if self.seconds_late > 0:
            score = _("{score}, {late} late, {points} points off for it").format(
                score=score, late=how_late(self.seconds_late), points=number(self.late_penalty)
            )
        text = _("{student}: {status}, {score}").format(
            student=self.student, status=translated(self.status), score=score
        )
        return printable(text + (": " + "; ".join(self.notes) if self.notes else ""))

    def record(self) -> dict:
        """The record as plain data (what ``results/`` keeps)."""
        data = dataclasses.asdict(self)
        data.pop("notebook")
        data["status"] = self.status.value
        return data

    def load_notebook(self, course: Course):
        """The autograded notebook (with the verdict of every test cell), or None when there is none."""
        import nbformat

        path = course.path("autograded", self.student, self.assignment) / f"{self.assignment}.ipynb"
        self.notebook = nbformat.read(path, as_version=4) if path.exists() else None
        return self.notebook

    def error_text(self, grade_id: str) -> str:
        """What a test cell reported as its failure (the judge's verdict), from the loaded notebook."""
        for cell in getattr(self.notebook, "cells", []):
            if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id:
                parts = []
                for output in cell.get("outputs", []):
                    if output.get("output_type") == "error":
                        parts += [output.get("ename", ""), output.get("evalue", "")]
                    elif output.get("name") == "stderr":
                        parts.append(output.get("text", ""))
                return "\n".join(parts)
        return ""


def read_verdicts(notebook) -> dict[str, dict]:
    """grade_id -> the judge's verdict on every graded test cell of an autograded notebook.

    Each is the record the judge wrote into the cell's metadata (``verdicts.VERDICT_KEY``: passed, answered,
    misconception, failure), with ``message``: what the judge wrote as the cell's output (a failure's
    words for the learner, or the check's lines when it passed). The one reader of verdicts: the class
    report and the benchmark's list of failing cells both go through it.
    """
    from .verdicts import VERDICT_KEY  # the writer's key (imported here: reading results starts no kernel machinery)

    found = {}
    for cell in notebook.cells:
        record = cell.get("metadata", {}).get(VERDICT_KEY)
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id and isinstance(record, dict):
            words = [str(o.get("evalue") or o.get("text") or "") for o in cell.get("outputs", [])]
            found[grade_id] = {**record, "message": "\n".join(w for w in words if w).strip()}
    return found


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def results_dir(course: Course, assignment: str) -> Path:
    return course.runtime_dir("results", assignment)


def write_result(course: Course, result: Result) -> None:
    path = results_dir(course, result.assignment) / f"{result.student}.json"
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    temporary.write_text(json.dumps(result.record(), indent=1))
    os.replace(temporary, path)  # atomic: a record is either there whole or not at all


def read_results(course: Course, assignment: str) -> dict[str, Result]:
    folder = course.runtime_root / "results" / assignment
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
# Writing into the course's gradebook (only ever from the coordinating process)
# ---------------------------------------------------------------------------------------------


def _parse_time(text: str | None):
    if not text:
        return None
    return dt.datetime.fromisoformat(text)


def merge_into_gradebook(
    course: Course, assignment: str, student: str, graded: dict | None, book=None
) -> tuple[dict[str, float], list[str], Lateness]:
    """Record one student's autograde in the course gradebook, replacing any earlier one; return the
    submission's scores, its written answers waiting for a person (``scores_from_gradebook``,
    ``pending_from_gradebook``) and how late it came (``lateness_from_gradebook``), read in the same session.

    ``graded`` is what a worker read from its private gradebook; ``None`` records a submission that
    could not be graded: every grade 0 and flagged for manual grading, so formgrader shows it.
    Manual scores an instructor already gave are kept. ``book``: the course gradebook, already open, for
    a caller that records a whole class (opening it costs a third of a merge); each merge is committed.
    """
    import warnings

    from sqlalchemy.exc import SAWarning

    with contextlib.ExitStack() as opened, warnings.catch_warnings():
        gb = book if book is not None else opened.enter_context(gradebook(course))
        warnings.simplefilter("ignore", SAWarning)  # nbgrader's own ORM use, harmless and noisy
        try:
            return _merge(gb, assignment, student, graded)
        except BaseException:
            gb.db.rollback()  # an open gradebook stays usable for the next student
            raise


def _merge(gb, assignment: str, student: str, graded: dict | None) -> tuple[dict[str, float], list[str], Lateness]:
    """``merge_into_gradebook`` in an open gradebook ``gb``."""
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
    return _scores(submission), _pending(submission), Lateness.of(submission)


def written_answers(course: Course, assignment: str) -> list[str]:
    """The grade ids of the answers a person grades (markdown answer cells), from the gradebook."""
    with gradebook(course) as gb:
        found = gb.find_assignment(assignment)
        return [c.name for nb in found.notebooks for c in nb.grade_cells if c.cell_type == "markdown"]


def pending_from_gradebook(course: Course, assignment: str, student: str) -> list[str]:
    """The written answers of a submission that nbgrader left for manual grading and nobody graded yet."""
    from nbgrader.api import MissingEntry

    with gradebook(course) as gb:
        try:
            return _pending(gb.find_submission(assignment, student))
        except MissingEntry:
            return []


def _pending(submission) -> list[str]:
    return [g.name for nb in submission.notebooks for g in pending_grades(nb)]


def pending_grades(notebook) -> list:
    """The grades of a submitted notebook (gradebook rows) whose written answer waits for a person."""
    return [
        g
        for g in notebook.grades
        # auto_score None: nbgrader saw an answer to read (merge_into_gradebook gives an ungradable
        # submission 0 instead, and its status says why)
        if g.cell_type == "markdown" and g.needs_manual_grade and g.manual_score is None and g.auto_score is None
    ]


def lateness_from_gradebook(course: Course, assignment: str, student: str) -> Lateness:
    """When the submission came, against the due date, and the points the late policy took (none: on time)."""
    from nbgrader.api import MissingEntry

    with gradebook(course) as gb:
        try:
            return Lateness.of(gb.find_submission(assignment, student))
        except MissingEntry:
            return Lateness()


def scores_from_gradebook(course: Course, assignment: str, student: str) -> dict[str, float]:
    from nbgrader.api import MissingEntry

    with gradebook(course) as gb:
        try:
            return _scores(gb.find_submission(assignment, student))
        except MissingEntry:
            return {}


def _scores(submission) -> dict[str, float]:
    return {g.name: float(g.score or 0.0) for nb in submission.notebooks for g in nb.grades}
