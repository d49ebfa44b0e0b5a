"""The grades for the LMS: `make export FORMAT=canvas` and `FORMAT=moodle` (autograde/export.py).

A small class is written straight into a course's gradebook, the way the roster import, grading and the
formgrader write it (``nbgrader db student import``, ``merge_into_gradebook`` and a result record, a manual
score), with no grading run: the files are read back with
``csv.DictReader`` and checked against the layouts docs/instructors.md names (Canvas's and Moodle's gradebook
import), with a written answer nobody graded yet (empty), a student with no submission (empty), and a name
a spreadsheet would run as a formula (text).
"""

from __future__ import annotations

import csv
import re
import subprocess
import sys
from pathlib import Path

import pytest
from course import REPO

from autograde import grade
from autograde.course import gradebook, make_course_copy, setup
from autograde.export import (
    CANVAS_STUDENT_COLUMNS,
    MOODLE_STUDENT_COLUMNS,
    export_for_lms,
    export_grades,
    exercises,
)
from autograde.results import Result, Status, grade_cells, merge_into_gradebook, write_result

A, B = "00_start_here", "01_heads"
# The roster: nbgrader's CSV, which `nbgrader db student import` (make hub-roster) puts in the gradebook.
ROSTER = {
    "ada": {"first_name": "Ada", "last_name": "Lovelace", "email": "ada@example.org", "lms_user_id": "4711"},
    "bob": {"first_name": "Bob", "last_name": "=SUM(A1:A9)", "email": "", "lms_user_id": ""},
    "cy": {"first_name": "Cy", "last_name": "Young", "email": "cy@example.org", "lms_user_id": "4713"},
    "dee": {"first_name": "Dee", "last_name": "Dee", "email": "", "lms_user_id": ""},
}
NUMBER = re.compile(r"\d+(\.\d+)?")  # a plain number: no sign, exponent, thousands mark or text


def _autograde(course, assignment: str, student: str, scores: dict[str, float]) -> None:
    """Record a grading run of ``student``: ``scores`` for the test cells; the written answers wait for a person."""
    cells = grade_cells(course, assignment)
    with gradebook(course) as gb:
        notebooks = [nb.name for nb in gb.find_assignment(assignment).notebooks]
    graded = {
        name: {"auto_score": scores.get(name), "needs_manual_grade": name.startswith("written_")} for name in cells
    }
    merge_into_gradebook(
        course, assignment, student, {"notebooks": {nb: {"grades": graded, "comments": {}} for nb in notebooks}}
    )
    write_result(course, Result(student, assignment, Status.GRADED, {}, cells, []))


def _grade_by_hand(course, assignment: str, student: str, grade_id: str, score: float) -> None:
    """A score typed into the formgrader: the grade's manual score."""
    with gradebook(course) as gb:
        gb.find_grade(grade_id, assignment, assignment, student).manual_score = score
        gb.db.commit()


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """Two assignments; ada graded in both (00's written answer graded by hand, 01's waiting), bob in 00 only
    (his written answer graded 0), cy with no submission, dee's submission collected but not graded yet."""
    course = make_course_copy(tmp_path_factory.mktemp("lms-export"))
    for assignment in (A, B):
        setup(course, assignment)
    roster = course.root / "roster.csv"  # imported as make hub-roster does, with nbgrader's own command
    with open(roster, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, ["id", "first_name", "last_name", "email", "lms_user_id"])
        writer.writeheader()
        writer.writerows({"id": student} | details for student, details in ROSTER.items())
    subprocess.run(
        [Path(sys.executable).parent / "nbgrader", "db", "student", "import", roster, f"--db={course.db_url}"],
        cwd=course.root,
        check=True,
        capture_output=True,
    )
    _autograde(course, A, "ada", {"test_attention": 4.0})
    _grade_by_hand(course, A, "ada", "written_largest_score", 1.5)
    full = {name: points for name, points in grade_cells(course, B).items() if not name.startswith("written_")}
    _autograde(course, B, "ada", full | {"test_split_heads": 2.5, "test_mha_cost_errors": 0.0})
    _autograde(course, A, "bob", {"test_attention": 0.0})
    _grade_by_hand(course, A, "bob", "written_largest_score", 0.0)
    course.path("submitted", "dee", A).mkdir(parents=True)
    return course


def _read(path: Path) -> tuple[list[str], list[dict]]:
    """The header and the rows of a written file, as csv.DictReader reads them, each row whole."""
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        rows = list(reader)
        header = list(reader.fieldnames)
    for row in rows:  # a field too many goes under None, one too few is None
        assert None not in row and None not in row.values(), row
    return header, rows


@pytest.fixture(scope="module")
def files(course) -> dict[tuple[str, bool], tuple[list[str], list[dict]]]:
    """(lms, per exercise) -> what each file holds, read back."""
    read = {}
    for lms in ("canvas", "moodle"):
        for per_exercise in (False, True):
            path = course.root / f"{lms}-{per_exercise}.csv"
            export_for_lms(course, path, lms, per_exercise=per_exercise)
            read[(lms, per_exercise)] = _read(path)
    return read


def _by_student(lms: str, rows: list[dict]) -> dict[str, dict]:
    """Each student's row, by the course's student id (Canvas: SIS Login ID; Moodle: the roster's names)."""
    if lms == "canvas":
        return {row["SIS Login ID"]: row for row in rows if row["Student"] != "Points Possible"}
    first_names = {details["first_name"]: student for student, details in ROSTER.items()}
    return {first_names[row["First name"]]: row for row in rows}


def test_canvas_layout_is_canvas_gradebook_import(files):
    header, rows = files[("canvas", False)]
    assert (
        header == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", A, B] == CANVAS_STUDENT_COLUMNS + [A, B]
    )
    assert rows[0] == {"Student": "Points Possible", "ID": "", "SIS User ID": "", "SIS Login ID": "", "Section": ""} | {
        A: "6",
        B: "15",
    }
    students = _by_student("canvas", rows)
    assert sorted(students) == sorted(ROSTER) and len(rows) == 1 + len(ROSTER)  # one row per student
    ada = students["ada"]
    assert (ada["Student"], ada["ID"], ada["SIS User ID"], ada["Section"]) == ("Lovelace, Ada", "4711", "", "")
    assert ada[A] == "5.5"  # 4 autograded + 1.5 by hand
    assert students["bob"]["ID"] == "" and students["bob"][A] == "0"  # no LMS id: Canvas finds him by his login


def test_text_is_quoted_and_scores_are_bare_numbers(course, files):
    """As written: a spreadsheet that reads every quoted cell as text still reads the scores as numbers."""
    canvas = (course.root / "canvas-False.csv").read_text(encoding="utf-8").splitlines()
    assert canvas[1] == '"Points Possible","","","","",6,15'
    assert '"Lovelace, Ada","4711","","ada","",5.5,""' in canvas
    moodle = (course.root / "moodle-False.csv").read_text(encoding="utf-8").splitlines()
    assert '"Ada","Lovelace","4711","ada@example.org",5.5,""' in moodle


def test_moodle_layout_is_an_identifier_and_one_column_per_grade_item(files):
    header, rows = files[("moodle", False)]
    assert header == ["First name", "Last name", "Identifier", "Email address", A, B] == MOODLE_STUDENT_COLUMNS + [A, B]
    students = _by_student("moodle", rows)
    assert sorted(students) == sorted(ROSTER) and len(rows) == len(ROSTER)  # no row but the students'
    # the identifier: the roster's lms_user_id, else the course's student id
    assert {s: row["Identifier"] for s, row in students.items()} == {
        "ada": "4711",
        "bob": "bob",
        "cy": "4713",
        "dee": "dee",
    }
    assert (students["ada"]["Email address"], students["ada"][A]) == ("ada@example.org", "5.5")


@pytest.mark.parametrize("lms", ["canvas", "moodle"])
def test_scores_are_plain_numbers_and_the_rest_is_empty(files, lms):
    for per_exercise in (False, True):
        header, rows = files[(lms, per_exercise)]
        grade_columns = header[len(CANVAS_STUDENT_COLUMNS if lms == "canvas" else MOODLE_STUDENT_COLUMNS) :]
        cells = [row[c] for row in rows for c in grade_columns]
        assert all(cell == "" or NUMBER.fullmatch(cell) for cell in cells), cells
        assert any(cell == "" for cell in cells) and any(cell not in ("", "0") for cell in cells)


@pytest.mark.parametrize("lms", ["canvas", "moodle"])
def test_a_written_answer_nobody_graded_is_empty(course, files, lms):
    _, rows = files[(lms, False)]
    assert _by_student(lms, rows)["ada"][B] == ""  # not the 11.5 points given so far, not 0
    _, rows = files[(lms, True)]
    ada = _by_student(lms, rows)["ada"]
    assert ada[f"{B}: written_cost_without_h"] == ""
    assert (ada[f"{B}: split_heads"], ada[f"{B}: mha_cost"]) == (
        "3.5",
        "2",
    )  # 2.5 + 1, 2 + 0: the exercises graded are there
    # the course's own CSV, from the same gradebook, says the same in its words
    course_csv = {(r["student"], r["assignment"]): r for r in export_grades(course, course.root / "grades.csv")}
    assert course_csv[("ada", B)]["written_cost_without_h"] == "pending"
    assert course_csv[("ada", A)]["written_largest_score"] == "1.5"
    quoted = (course.root / "grades.csv").read_text(encoding="utf-8")  # and quotes every cell, as before
    assert re.search(r'(^|,)[^",\n]', quoted, re.MULTILINE) is None, quoted


@pytest.mark.parametrize("lms", ["canvas", "moodle"])
def test_per_exercise_columns_sum_to_the_assignment_column(course, files, lms):
    header, rows = files[(lms, True)]
    per_assignment = _by_student(lms, files[(lms, False)][1])
    columns = {a: [f"{a}: {e}" for e in exercises(course, a)] for a in (A, B)}
    assert [c for c in header if ": " in c] == columns[A] + columns[B]  # every exercise, in order, and nothing else
    compared = 0
    for student, row in _by_student(lms, rows).items():
        for assignment, exercise_columns in columns.items():
            whole = per_assignment[student][assignment]
            parts = [row[c] for c in exercise_columns]
            if whole:
                assert sum(float(p) for p in parts) == pytest.approx(float(whole), abs=1e-3), (student, parts, whole)
                compared += 1
            else:  # no grade for the assignment yet: an exercise without one says why
                assert "" in parts, (student, assignment, parts)
    assert compared == 2  # ada's and bob's 00
    if lms == "canvas":
        points = rows[0]
        for assignment, exercise_columns in columns.items():
            assert sum(float(points[c]) for c in exercise_columns) == float(files[(lms, False)][1][0][assignment])


@pytest.mark.parametrize("lms", ["canvas", "moodle"])
def test_a_student_with_no_submission_has_a_row_with_no_grades(files, lms):
    for per_exercise in (False, True):
        header, rows = files[(lms, per_exercise)]
        students = _by_student(lms, rows)
        for student in ("cy", "dee"):  # nothing handed in; handed in, not graded yet
            grades = [students[student][c] for c in header if c.startswith((A, B))]
            assert grades and all(g == "" for g in grades), (student, grades)
        assert students["bob"][A if not per_exercise else f"{A}: attention"] == "0"  # graded 0 is a grade


@pytest.mark.parametrize("lms", ["canvas", "moodle"])
def test_a_name_that_starts_with_equals_stays_text(course, files, lms):
    _, rows = files[(lms, False)]
    bob = _by_student(lms, rows)["bob"]
    name = bob["Student"] if lms == "canvas" else bob["Last name"]
    assert name.startswith("'=SUM(A1:A9)"), name
    text = (course.root / f"{lms}-False.csv").read_text(encoding="utf-8")
    assert '"=' not in text and ",=" not in text  # no cell of the file begins with =


def test_make_export_passes_the_format_to_the_command_line(course):
    """`make export FORMAT=moodle PER_EXERCISE=1` runs the export command with them; the command writes the
    file under autograde/; --per-exercise on the course's CSV is refused in one line."""
    shown = subprocess.run(  # (under `make test`, make's own "Entering directory" lines would come first)
        ["make", "--no-print-directory", "-n", "export", "FORMAT=moodle", "PER_EXERCISE=1"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    exporting = [line for line in shown.stdout.splitlines() if "autograde.grade" in line]
    command = " ".join(exporting[-1].split()) if exporting else ""
    assert "-m autograde.grade export --format moodle --per-exercise" in command, shown.stdout + shown.stderr
    parser = grade.build_parser()
    grade.export_command(course, parser.parse_args(["export", "--format", "canvas", A]))
    header, rows = _read(course.root / "class" / "grades-canvas.csv")
    assert header == CANVAS_STUDENT_COLUMNS + [A] and len(rows) == 1 + len(ROSTER)
    with pytest.raises(SystemExit, match="one column per exercise"):
        grade.export_command(course, parser.parse_args(["export", "--per-exercise"]))
