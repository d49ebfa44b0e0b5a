"""Step 6, export: the grades as a CSV, one row per student and assignment, one column per graded exercise.

Scores come from the course's gradebook (an instructor's manual grades included); the status and the
notes from each student's result. Every cell is written so that a spreadsheet shows it as text.
"""

from __future__ import annotations

import csv
from pathlib import Path

from .collect import printable
from .course import Course, gradebook, in_gradebook, roster
from .results import Status, grade_cells, pending_from_gradebook, read_results, scores_from_gradebook


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


def export_grades(course: Course, path: Path, assignments: list[str] | None = None) -> list[dict]:
    """Write the grades CSV: student, assignment, status, one column per exercise, total, max, notes.

    A written answer shows "pending" until a person grades it in the formgrader; ``total`` is the points
    given so far and ``max_total`` all the points of the assignment, written answers included.
    """
    assignments = assignments or [a for a in course.assignments() if in_gradebook(course, a)]
    rows, columns = [], []
    for assignment in assignments:
        grouped = exercises(course, assignment)
        columns += [e for e in grouped if e not in columns]
        recorded = read_results(course, assignment)
        maxima = grade_cells(course, assignment)
        for student in roster(course, assignment):
            result = recorded.get(student)
            status = (
                result.status
                if result
                else (
                    Status.MISSING if not course.path("submitted", student, assignment).is_dir() else Status.NOT_GRADED
                )
            )
            scores = scores_from_gradebook(course, assignment, student) if result else {}
            pending = set(pending_from_gradebook(course, assignment, student)) if result else set()
            row = {
                "student": student,
                "student_as_submitted": (result.original_id if result else "") or student,
                "assignment": assignment,
                "status": status.value,
            }
            for exercise, cells in grouped.items():  # a written answer nobody graded yet is "pending", not 0
                given = sum(scores.get(c, 0.0) for c in cells)
                row[exercise] = "pending" if pending & set(cells) else f"{given:g}"
            row["total"] = f"{sum(scores.get(c, 0.0) for c in maxima):g}"
            row["max_total"] = f"{sum(maxima.values()):g}"
            row["notes"] = "; ".join(result.notes) if result else ""
            rows.append(row)
    header = ["student", "student_as_submitted", "assignment", "status", *columns, "total", "max_total", "notes"]
    rows = [{k: spreadsheet_safe(v) for k, v in row.items()} for row in rows]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=header, restval="", quoting=csv.QUOTE_ALL)  # see spreadsheet_safe
        writer.writeheader()
        writer.writerows(rows)
    return rows


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
