"""Step 6, export: the grades, for a spreadsheet or for the gradebook of the LMS.

* ``export_grades`` writes the course's CSV: one row per student and assignment, one column per graded
  exercise, when it was handed in and how late, the late penalty, the total after it, the status and the notes
  (``make export``);
* ``export_for_lms`` writes the file that Canvas's or Moodle's gradebook import reads: one row per student,
  one column per assignment, or per exercise (``make export FORMAT=canvas``, ``FORMAT=moodle``; the layouts,
  with the documents they follow, are in docs/instructors.md, section 5).

Both read the same grades (``read_grades``): the scores and the late penalties from the course's gradebook (an
instructor's manual grades included), the status and the notes from each student's result. A late submission's
grade is its points less the penalty the course's late policy gave it (late_policy.py), in every file. Every
text cell is written so that a spreadsheet shows it as text (``spreadsheet_safe``); a score is a plain number.
"""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

from .submission_files import printable
from .course import Course, due_date, gradebook, in_gradebook, roster
from .lateness import Lateness, late_sentence, shown_time
from .results import (
    Result,
    Status,
    grade_cells,
    lateness_from_gradebook,
    pending_from_gradebook,
    read_results,
    scores_from_gradebook,
)

FORMATS = ("csv", "canvas", "moodle")


def exercise_of(grade_id: str, answers: list[str]) -> str:
    """The exercise a test cell grades: ``test_split_heads_errors`` -> ``split_heads`` (longest answer id)."""
    name = grade_id[len("test_") :] if grade_id.startswith("test_") else grade_id
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


def graded_assignments(course: Course) -> list[str]:
    """The assignments an export covers by default: those recorded in the gradebook."""
    return [a for a in course.assignments() if in_gradebook(course, a)]


# ---------------------------------------------------------------------------------------------
# The grades, as every export reads them
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Grades:
    """One student's grades in one assignment."""

    student: str
    assignment: str
    status: Status
    result: Result | None  # None: no grading run recorded the student (nothing handed in, or not graded yet)
    points: dict[str, float | None]  # exercise -> points given; None while a written answer in it waits
    maxima: dict[str, float]  # exercise -> its points
    total: float  # the points given so far (a written answer that waits counts 0), before any late penalty
    lateness: Lateness = dataclasses.field(default_factory=Lateness)  # when it came, and the penalty for it

    @property
    def max_total(self) -> float:
        return sum(self.maxima.values())

    @property
    def grade(self) -> float:
        """The points given so far less the late penalty (nbgrader's score: never below 0)."""
        return max(0.0, self.total - self.lateness.penalty)

    def exercise_grade(self, exercise: str) -> float | None:
        """An exercise's points with its share of the late penalty (in proportion to its points, so that the
        exercises add up to ``grade``); None while a written answer in it waits."""
        given = self.points[exercise]
        if given is None or self.total <= 0:
            return given
        return given * self.grade / self.total

    @property
    def complete(self) -> bool:
        """Graded, and nothing waits for a person: ``total`` is the student's grade for the assignment."""
        return self.result is not None and None not in self.points.values()


def read_grades(course: Course, assignment: str) -> list[Grades]:
    """The grades of every student the course knows (``course.roster``) in one assignment."""
    grouped = exercises(course, assignment)
    recorded = read_results(course, assignment)
    cell_maxima = grade_cells(course, assignment) if grouped else {}
    maxima = {exercise: sum(cell_maxima[c] for c in cells) for exercise, cells in grouped.items()}
    everyone = []
    for student in roster(course, assignment):
        result = recorded.get(student)
        if result:
            status = result.status
        elif course.path("submitted", student, assignment).is_dir():
            status = Status.NOT_GRADED
        else:
            status = Status.MISSING
        scores = scores_from_gradebook(course, assignment, student) if result else {}
        pending = set(pending_from_gradebook(course, assignment, student)) if result else set()
        points = {  # a written answer nobody graded yet has no points, not 0
            exercise: None if pending & set(cells) else sum(scores.get(c, 0.0) for c in cells)
            for exercise, cells in grouped.items()
        }
        total = sum(scores.get(c, 0.0) for c in cell_maxima)
        lateness = lateness_from_gradebook(course, assignment, student) if result else Lateness()
        everyone.append(Grades(student, assignment, status, result, points, maxima, total, lateness))
    return everyone


# ---------------------------------------------------------------------------------------------
# The course's CSV
# ---------------------------------------------------------------------------------------------


def export_grades(course: Course, path: Path, assignments: list[str] | None = None) -> list[dict]:
    """Write the grades CSV: student, assignment, status, one column per exercise, when it was handed in,
    the due date, how late, the late penalty, total, max, notes.

    A written answer shows "pending" until a person grades it in the formgrader; ``submitted`` and ``due`` are
    UTC times (``due`` empty: no due date), ``hours_late`` 0 for a submission on time, ``late_penalty`` the points
    the late policy took; ``total`` is the points given so far less that penalty and ``max_total`` all the
    points of the assignment, written answers included.
    """
    rows, columns = [], []
    for assignment in assignments or graded_assignments(course):
        due = shown_time(due_date(course, assignment))
        for grades in read_grades(course, assignment):
            columns += [e for e in grades.points if e not in columns]
            result = grades.result
            row = {
                "student": grades.student,
                "student_as_submitted": (result.original_id if result else "") or grades.student,
                "assignment": assignment,
                "status": grades.status.value,
            }
            for exercise, given in grades.points.items():
                row[exercise] = "pending" if given is None else f"{given:g}"
            late = grades.lateness
            row["submitted"] = shown_time(late.submitted)
            row["due"] = shown_time(late.due) or due  # (nbgrader's due date of the student: with an extension)
            row["hours_late"] = f"{late.hours:.2f}" if late.late else "0"
            row["late_penalty"] = f"{late.penalty:g}"
            row["total"] = f"{grades.grade:g}"
            row["max_total"] = f"{grades.max_total:g}"
            row["notes"] = "; ".join(result.notes) if result else ""
            rows.append(row)
    lateness = ["submitted", "due", "hours_late", "late_penalty"]
    header = ["student", "student_as_submitted", "assignment", "status", *columns, *lateness, "total", "max_total"]
    header.append("notes")
    rows = [{k: spreadsheet_safe(v) for k, v in row.items()} for row in rows]
    _write(path, header, rows)
    return rows


# ---------------------------------------------------------------------------------------------
# For the LMS: Canvas's and Moodle's gradebook import
# ---------------------------------------------------------------------------------------------

# Canvas's gradebook import (docs/instructors.md names the documents): the student's columns, then one
# column per assignment. Canvas finds the student by ID (its own user id), else by SIS User ID, else by SIS
# Login ID, else by name; the row "Points Possible" gives the points of an assignment the import creates.
CANVAS_STUDENT_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
CANVAS_POINTS_ROW = "Points Possible"
# Moodle's grade import: any columns; the instructor maps one of them to a user field ("Identifier" to
# username, ID number or email address, or "Email address" to email address) and each other to a grade item.
MOODLE_STUDENT_COLUMNS = ["First name", "Last name", "Identifier", "Email address"]


@dataclasses.dataclass(frozen=True)
class Person:
    """A student as the roster in the gradebook knows them (nbgrader's ``student`` table)."""

    student: str  # the course's student id (nbgrader's)
    first_name: str = ""
    last_name: str = ""
    email: str = ""
    lms_user_id: str = ""  # the roster's column lms_user_id (nbgrader's own): the student's id in the LMS

    @property
    def lms_identifier(self) -> str:
        """The student's id in the LMS: the roster's ``lms_user_id``, else the course's student id."""
        return self.lms_user_id or self.student

    @property
    def sortable_name(self) -> str:
        """The name as Canvas writes its Student column, "Last, First"; the student id when the roster has none."""
        return ", ".join(n for n in (self.last_name, self.first_name) if n) or self.student


def people(course: Course) -> dict[str, Person]:
    """student id -> Person, for every student in the gradebook's roster."""
    if not course.has_gradebook():
        return {}
    with gradebook(course) as gb:
        return {
            s.id: Person(s.id, s.first_name or "", s.last_name or "", s.email or "", s.lms_user_id or "")
            for s in gb.students
        }


class Points(float):
    """A score in an LMS file: written as a plain decimal number (``2``, ``2.5``, ``0.3333``; never an exponent
    or a thousands mark) and left unquoted (``_write``), so that a spreadsheet reads it as a number even where
    it reads every quoted cell as text."""

    def __str__(self) -> str:
        return f"{float(self):.4f}".rstrip("0").rstrip(".")


def lms_cell(grades: Grades | None, exercise: str | None = None) -> Points | str:
    """A grade as the LMS should import it: its points less the late penalty (spread over the exercises in
    proportion to their points); empty where the gradebook has no grade yet (a written answer nobody graded, a
    student no grading run recorded), so the LMS keeps what it has."""
    if grades is None or grades.result is None:
        return ""
    if exercise is None:
        return Points(grades.grade) if grades.complete else ""
    given = grades.exercise_grade(exercise)
    return "" if given is None else Points(given)


def late_column(assignment: str) -> str:
    """Moodle's column of late notes for an assignment, which its import maps to the grade item's feedback."""
    return f"{assignment}: late"


def lms_column(assignment: str, exercise: str | None = None) -> str:
    """A grade column's title: the assignment, or ``assignment: exercise``."""
    return assignment if exercise is None else f"{assignment}: {exercise}"


def export_for_lms(
    course: Course,
    path: Path,
    lms: str,
    assignments: list[str] | None = None,
    per_exercise: bool = False,
) -> list[dict]:
    """Write the file ``lms``'s gradebook import reads ("canvas" or "moodle"): one row per student, one column
    per assignment (the assignment's points), or with ``per_exercise`` one column per exercise. Returns the rows
    written after the header (Canvas's "Points Possible" row first)."""
    if lms not in ("canvas", "moodle"):
        raise ValueError(f"no LMS layout {lms!r}: canvas or moodle")
    maxima: dict[tuple[str, str | None], float] = {}  # (assignment, exercise or None) -> its points, in order
    grades: dict[str, dict[str, Grades]] = {}  # student -> assignment -> grades
    for assignment in assignments or graded_assignments(course):
        for found in read_grades(course, assignment):
            grades.setdefault(found.student, {})[assignment] = found
            if per_exercise:
                maxima.update({(assignment, e): m for e, m in found.maxima.items()})
            else:
                maxima[(assignment, None)] = found.max_total
    columns = list(maxima)
    # Moodle's import maps any column to a grade item's feedback: each assignment with a due date gets one
    # column of sentences on lateness. Canvas's would create an assignment of it: its file has the grades alone.
    noted = [a for a in dict.fromkeys(a for a, _ in columns) if lms == "moodle" and due_date(course, a)]
    known = people(course)
    rows = []
    if lms == "canvas":
        header = CANVAS_STUDENT_COLUMNS + [lms_column(*c) for c in columns]
        points = {lms_column(*c): Points(maxima[c]) for c in columns}
        rows.append(dict.fromkeys(CANVAS_STUDENT_COLUMNS, "") | {"Student": CANVAS_POINTS_ROW} | points)
    else:
        header = MOODLE_STUDENT_COLUMNS + [lms_column(*c) for c in columns] + [late_column(a) for a in noted]
    for student in sorted(grades):
        person = known.get(student, Person(student))
        if lms == "canvas":  # Canvas's own user id where the roster has it; the course's id as the login
            row = {
                "Student": person.sortable_name,
                "ID": person.lms_user_id,
                "SIS User ID": "",
                "SIS Login ID": person.student,
                "Section": "",
            }
        else:
            row = {
                "First name": person.first_name,
                "Last name": person.last_name,
                "Identifier": person.lms_identifier,
                "Email address": person.email,
            }
        for assignment, exercise in columns:
            row[lms_column(assignment, exercise)] = lms_cell(grades[student].get(assignment), exercise)
        for assignment in noted:
            found = grades[student].get(assignment)
            row[late_column(assignment)] = late_sentence(found.lateness) if found else ""
        rows.append(row)
    rows = [{k: v if isinstance(v, Points) else spreadsheet_safe(v) for k, v in row.items()} for row in rows]
    _write(path, header, rows, quoting=csv.QUOTE_NONNUMERIC)
    return rows


# ---------------------------------------------------------------------------------------------
# Writing a CSV a spreadsheet reads safely
# ---------------------------------------------------------------------------------------------


def _write(path: Path, header: list[str], rows: list[dict], quoting: int = csv.QUOTE_ALL) -> None:
    """Every cell quoted (see ``spreadsheet_safe``); with ``QUOTE_NONNUMERIC``, every cell but the numbers."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=header, restval="", quoting=quoting)
        writer.writeheader()
        writer.writerows(rows)


def spreadsheet_safe(value) -> str:
    """A CSV cell a spreadsheet shows as text: no formula (``=1+2``, ``+``, ``-``, ``@``), no control characters.

    The writers also quote every cell: a spreadsheet whose locale separates CSV fields with ``;`` would
    otherwise start a new cell, perhaps a formula, at each ``;`` of an unquoted one (``x;=HYPERLINK(...)``)."""
    text = printable(str(value))
    if text[:1] in ("=", "+", "-", "@", "\t", "\r") and not _number(text):
        return "'" + text
    return text


def _number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False
