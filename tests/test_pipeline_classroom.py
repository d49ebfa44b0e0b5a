"""The instructor's pipeline with real nbgrader in temporary course roots.

* a class full of bad submissions (00_start_here), graded in one parallel run: each kind gets its
  status, its line in the report and its CSV row, and the others are graded all the same;
* re-grading is idempotent; a run killed half way resumes without losing or duplicating grades;
* (the whole classroom flow through the exchange, each student a Unix account: tests/test_exchange.py);
* an LMS zip collected and graded;
* every assignment that exists goes through the pipeline: solutions full marks, untouched 0,
  feedback without hidden tests.
"""

from __future__ import annotations

import contextlib
import copy
import csv
import html as html_module
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import nbformat
import pytest
from course import ASSIGNMENTS, assert_one_submission_each, graded_batch, student_notebook
from submissions import submission

from autograde.collect import collect_zip
from autograde.course import Course, gradebook, is_test, make_course_copy, setup
from autograde.export import exercises, export_grades
from autograde.feedback import feedback, hidden_lines, leaked_lines
from autograde.pool import grade
from autograde.report import report
from autograde.results import grade_cells, read_results

pytestmark = pytest.mark.slow
A = "00_start_here"
WRITTEN = "written_largest_score"  # its written question (2 points, graded by a person)
CELL_TIMEOUT = 20  # seconds; generous for a loaded 2-core machine, and the loop costs exactly this
MEMORY_MB = 1536


def _test_index(notebook) -> int:
    return next(i for i, c in enumerate(notebook.cells) if is_test(c))


def _answer_index(notebook) -> int:
    return next(i for i, c in enumerate(notebook.cells) if c.get("metadata", {}).get("nbgrader", {}).get("solution"))


def _with_cell(source: str, notebook=None, after_answer: bool = True):
    notebook = notebook or submission(A, {})
    notebook.cells.insert(_answer_index(notebook) + 1 if after_answer else 0, nbformat.v4.new_code_cell(source))
    return notebook


def _deleted_tests():
    notebook = submission(A, {})
    notebook.cells = [c for c in notebook.cells if not is_test(c)]
    return notebook


def _edited_tests():
    notebook = submission(A, {"attention": "def attention(q, k, v, mask=None):\n    return q @ k.T @ v\n"})
    notebook.cells[_test_index(notebook)].source = "print('✓ all tests pass')"
    return notebook


def _duplicated_tests():
    notebook = submission(A, {})
    index = _test_index(notebook)
    notebook.cells.insert(index, copy.deepcopy(notebook.cells[index]))
    return notebook


def _markdown_tests():
    notebook = submission(A, {})
    cell = notebook.cells[_test_index(notebook)]
    notebook.cells[_test_index(notebook)] = nbformat.v4.new_markdown_cell(cell.source, metadata=cell.metadata)
    return notebook


def _huge_outputs():
    notebook = _with_cell("for i in range(50):\n    print(('y' * 99 + '\\n') * 1000)  # 5 MB printed while graded")
    stored = notebook.cells[_answer_index(notebook) + 1]
    stored.outputs = [nbformat.v4.new_output("stream", name="stdout", text=("x" * 99 + "\n") * 150_000)]
    return notebook  # 15 MB on disk


# student -> (what is submitted, expected status, expected points (None: not checked), words in the report)
CLASS = {
    "honest": (lambda: submission(A, {}), "graded", 4, None),
    "untouched": (lambda: student_notebook(A), "graded", 0, None),
    "loops": (lambda: _with_cell("while True:\n    pass"), "timed out", 4, f"longer than {CELL_TIMEOUT} s"),
    "exits": (lambda: _with_cell("import os\nos._exit(1)"), "kernel died", 0, "kernel died"),
    "segfault": (lambda: _with_cell("import ctypes\nctypes.string_at(0)"), "kernel died", 0, "segfault"),
    "eats_memory": (
        lambda: _with_cell(
            "import resource\nprint('limit', resource.getrlimit(resource.RLIMIT_DATA))\n"
            "hog = [np.ones(2**26) for _ in range(10_000)]"
        ),
        "needs review",
        4,
        "out of memory",
    ),
    "invalid_json": ('{"cells": [{"cell_type": "code", ', "invalid notebook", 0, "not valid JSON"),
    "not_a_notebook": ('{"answers": [1, 2, 3]}', "invalid notebook", 0, "not a Jupyter notebook"),
    "wrong_name": (lambda: submission(A, {}), "needs review", 4, "was named `00_start_here (1).ipynb`"),
    "no_notebook": (None, "missing", 0, "no `00_start_here.ipynb`"),
    "absent": (None, "missing", 0, "nothing was submitted"),
    "deleted_tests": (_deleted_tests, "needs review", 4, "test cell `test_attention` was deleted"),
    "edited_tests": (_edited_tests, "needs review", 0, "test cell `test_attention` was edited"),
    "duplicated_tests": (_duplicated_tests, "needs review", 4, "appears 2 times"),
    "markdown_tests": (_markdown_tests, "needs review", 4, "changed to markdown"),
    "huge_outputs": (_huge_outputs, "graded", 4, None),
    "warns": (lambda: _with_cell("np.log(np.zeros(3))  # RuntimeWarning: divide by zero"), "graded", 4, None),
}


def _write_class(course: Course) -> None:
    for student, (make, _, _, _) in CLASS.items():
        folder = course.path("submitted", student, A)
        if student == "absent":
            with gradebook(course) as gb:
                gb.update_or_create_student(student)  # on the roster, never submitted
            continue
        folder.mkdir(parents=True)
        name = "00_start_here (1).ipynb" if student == "wrong_name" else f"{A}.ipynb"
        if make is None:
            (folder / "answers.py").write_text("def attention(q, k, v): ...\n")
        elif isinstance(make, str):
            (folder / name).write_text(make)
        else:
            nbformat.write(make(), folder / name)


@pytest.fixture(scope="module")
def bad_class(tmp_path_factory):
    course = make_course_copy(tmp_path_factory.mktemp("bad-class"))
    setup(course, A)
    _write_class(course)
    started = time.monotonic()
    results = grade(course, A, workers=2, cell_timeout=CELL_TIMEOUT, memory_mb=MEMORY_MB)
    seconds = time.monotonic() - started
    export_grades(course, course.root / "grades.csv")
    return course, results, seconds


@pytest.mark.parametrize("student", list(CLASS))
def test_bad_submission_gets_its_status(bad_class, student):
    course, results, _ = bad_class
    _, status, points, words = CLASS[student]
    result = results[student]
    assert result.status == status, result.line()
    if points is not None:
        assert result.total == points, result.line()
    if words:
        assert words in result.line(), result.line()
        assert words in report(course, A)
    row = {r["student"]: r for r in csv.DictReader(open(course.root / "grades.csv"))}[student]
    assert row["status"] == status and float(row["total"]) == result.total and float(row["attention"]) == result.total
    # the written answer: a filled submission's model answer waits for a person ("pending" in the CSV, never
    # a 0 that reads as lost); an answer left as released, or a notebook nbgrader could not read, has nothing
    if status == "graded":
        assert result.pending == ([] if student == "untouched" else [WRITTEN]), result.line()
    if status in ("invalid notebook", "missing"):
        assert result.pending == [], result.line()
    assert row[WRITTEN] == ("pending" if result.pending else "0"), (row, result.line())


def test_bad_class_leaves_the_rest_graded_and_the_csv_complete(bad_class, artifacts):
    course, results, seconds = bad_class
    rows = list(csv.DictReader(open(course.root / "grades.csv")))
    assert sorted(r["student"] for r in rows) == sorted(CLASS)
    assert all(r["assignment"] == A and r["max_total"] == "6" for r in rows)  # 4 autograded, 2 written
    assert list(rows[0]) == [
        "student",
        "student_as_submitted",
        "assignment",
        "status",
        "attention",
        WRITTEN,
        "submitted",
        "due",
        "hours_late",
        "late_penalty",
        "total",
        "max_total",
        "notes",
    ]
    text = report(course, A)
    waiting = [s for s, r in results.items() if r.pending]
    students = "1 student" if len(waiting) == 1 else f"{len(waiting)} students"
    assert waiting and f"written answers pending: {students}, {2 * len(waiting)} points" in text, text
    (artifacts / "pipeline-bad-class-report.txt").write_text(text + f"\n(graded in {seconds:.0f} s)\n")
    for student, result in results.items():
        if result.status != "graded":
            assert f"  {student}: {result.status}" in text
    # the memory limit reached the kernel, and huge outputs were cut
    memory = nbformat.read(course.path("autograded", "eats_memory", A) / f"{A}.ipynb", as_version=4)
    assert f"limit ({MEMORY_MB * 2**20}, {MEMORY_MB * 2**20})" in nbformat.writes(memory)
    huge = course.path("autograded", "huge_outputs", A) / f"{A}.ipynb"
    assert huge.stat().st_size < 2_000_000, huge.stat().st_size


def test_bad_class_feedback_hides_hidden_tests(bad_class):
    course, results, _ = bad_class
    files = feedback(course, A)
    graded = [s for s, r in results.items() if course.path("autograded", s, A).exists()]
    assert sorted(p.parent.parent.name for p in files) == sorted(graded)
    hidden = hidden_lines(course, A)
    assert hidden
    for path in files:
        html = path.read_text(encoding="utf-8")
        assert not leaked_lines(html, hidden), path
        assert "hidden tests ran here" in html


def test_regrading_is_idempotent(bad_class, monkeypatch):
    from autograde import pool

    course, results, _ = bad_class
    before = read_results(course, A)

    def no_cluster(*args, **kwargs):
        raise AssertionError("a run with nothing new to grade started a cluster")

    with monkeypatch.context() as patched:
        patched.setattr(pool, "dask_client", no_cluster)
        again = grade(course, A, workers=2, cell_timeout=CELL_TIMEOUT, memory_mb=MEMORY_MB, progress=False)
    assert {s: (r.status, r.total, r.graded_at) for s, r in again.items()} == {
        s: (r.status, r.total, r.graded_at) for s, r in before.items()
    }, "a second run graded something again"

    # Forced: graded again, and the cluster starts before the submissions are inspected (its workers boot
    # their kernels meanwhile), not after. Files that cannot be read as the run begins are one student's
    # problem, left to inspection, never the class's.
    steps, real_client, real_inspect, real_fingerprint = [], pool.dask_client, pool.inspect, pool.submission_fingerprint

    def fingerprint(course, assignment, student):
        if student == "edited_tests":
            raise PermissionError("cannot read it now")
        return real_fingerprint(course, assignment, student)

    @contextlib.contextmanager
    def cluster(*args, **kwargs):
        steps.append("cluster")
        with real_client(*args, **kwargs) as client:
            yield client

    def inspect(*args, **kwargs):
        steps.append("inspect")
        return real_inspect(*args, **kwargs)

    monkeypatch.setattr(pool, "dask_client", cluster)
    monkeypatch.setattr(pool, "inspect", inspect)
    monkeypatch.setattr(pool, "submission_fingerprint", fingerprint)
    forced = grade(course, A, students=["honest", "edited_tests"], workers=2, force=True, progress=False)
    assert forced["honest"].total == 4 and forced["edited_tests"].total == 0
    assert steps == ["cluster", "inspect", "inspect"], steps
    assert_one_submission_each(course, A, list(CLASS))


def test_a_second_grading_run_on_the_course_is_refused_plainly(tmp_path):
    """Two instructors (or two terminals) grading one course at once: the second run says so and stops, with
    no traceback, and grades nothing."""
    from autograde.pool import exclusive

    course = make_course_copy(tmp_path / "course")
    with exclusive(course):
        second = subprocess.run(
            [sys.executable, "-m", "autograde.grade", "--root", str(course.root), "autograde", A],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert second.returncode == 1, second.stdout + second.stderr
    assert "another grading run is working on this course" in second.stderr, second.stderr
    assert "Traceback" not in second.stderr, second.stderr


def test_an_unknown_assignment_is_refused_plainly(tmp_path):
    """A typo in an assignment's name: one line that names the assignments there are, no traceback."""
    course = make_course_copy(tmp_path / "course")
    for command in (["autograde", "0_start_here"], ["export", A, "nope"]):
        refused = subprocess.run(
            [sys.executable, "-m", "autograde.grade", "--root", str(course.root), *command],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert "the course has no assignment" in refused.stderr and A in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr, refused.stderr


# An LMS download of four submissions, due 2026-11-30 17:00 in Berlin (16:00 UTC): each one's time is its entry's
# date in the download (collect.py reads it as UTC). Late: an hour, so one day counted; a week and a half hour,
# eight days, which the course's policy caps at half the points (6 points: 4 autograded, 2 written).
DUE = "2026-11-30 17:00 Europe/Berlin"
HANDED_IN = {  # student -> (file name in the download, its date, solved?)
    "doejane": (f"doejane_12345_678_{A}.ipynb", (2026, 11, 30, 15, 50, 0), True),
    "roesmith": (f"roesmith_late_23456_789_{A}-1.ipynb", (2026, 11, 30, 15, 59, 0), False),
    "hourlate": (f"hourlate_34567_790_{A}.ipynb", (2026, 11, 30, 17, 0, 0), True),
    "weeklate": (f"weeklate_45678_791_{A}.ipynb", (2026, 12, 7, 16, 30, 0), True),
}
LATE = {"doejane": (0.0, 0.0), "roesmith": (0.0, 0.0), "hourlate": (3600.0, 0.6), "weeklate": (7 * 86400 + 1800.0, 3.0)}


@pytest.fixture(scope="module")
def lms_class(tmp_path_factory):
    """The download collected and graded as `make release DUE=...` and `make grade SOURCE=download.zip` do."""
    from autograde.grade import read_due, set_and_say_due_date

    root = tmp_path_factory.mktemp("lms-class")
    course = make_course_copy(root / "course")
    setup(course, A)
    announced = set_and_say_due_date(course, A, read_due(DUE))  # what the release records and says
    download = root / "submissions.zip"
    with zipfile.ZipFile(download, "w") as archive:
        for name, moment, solved in HANDED_IN.values():
            notebook = submission(A, {}) if solved else student_notebook(A)
            archive.writestr(zipfile.ZipInfo(name, date_time=moment), nbformat.writes(notebook))
        archive.writestr("roesmith_23456_790_notes.txt", "not a notebook")
    collected = collect_zip(course, A, [download])
    results = grade(course, A, workers=2, progress=False)
    with gradebook(course) as gb:  # the solved ones' written answers, graded by hand in the formgrader: 2 of 2
        for student in ("doejane", "hourlate", "weeklate"):
            gb.find_grade(WRITTEN, A, A, student).manual_score = 2.0
        gb.db.commit()
    return course, collected, results, announced


def test_lms_zip_is_collected_and_graded(lms_class):
    course, collected, results, _ = lms_class
    assert collected == sorted(HANDED_IN)
    assert (results["doejane"].status, results["doejane"].total) == ("graded", 4)
    assert results["roesmith"].status == "needs review" and "was named" in results["roesmith"].line()
    assert results["roesmith"].total == 0


def test_late_submissions_lose_what_the_policy_says(lms_class):
    """The time is the download's, the penalty nbgrader's through the course's plug-in, both in the gradebook."""
    from autograde.results import lateness_from_gradebook

    course, _, results, announced = lms_class
    assert "is due 2026-11-30 16:00 UTC" in announced and "10% of the assignment's points" in announced, announced
    for student, (seconds, penalty) in LATE.items():
        recorded = lateness_from_gradebook(course, A, student)
        assert (recorded.seconds, recorded.penalty) == (seconds, penalty), (student, recorded)
        assert (results[student].seconds_late, results[student].late_penalty) == (seconds, penalty), student
    assert "1 hour late, 0.6 points off for it" in results["hourlate"].line(), results["hourlate"].line()
    assert results["hourlate"].total == results["weeklate"].total == 4  # the points earned, before the penalty


def test_a_run_against_the_same_due_date_grades_nothing_again(lms_class):
    """Grading again changes nothing while the due date and the policy stay; a new due date is a change (the
    run would grade the class again: the penalty is nbgrader's, given as it grades)."""
    from autograde.course import due_date, set_due_date
    from autograde.lateness import parse_due
    from autograde.pool import graded_against

    course, _, results, _ = lms_class
    again = grade(course, A, workers=2, progress=False)
    assert {s: r.graded_at for s, r in again.items()} == {s: r.graded_at for s, r in results.items()}
    assert all(r.deadline == graded_against(course, A) != "" for r in again.values())
    try:
        set_due_date(course, A, parse_due("2026-12-01 17:00 Europe/Berlin"))
        assert graded_against(course, A) != results["doejane"].deadline
    finally:
        set_due_date(course, A, parse_due(DUE))
    assert due_date(course, A) == parse_due(DUE)


def test_lateness_in_the_grades_csv(lms_class):
    course = lms_class[0]
    rows = {row["student"]: row for row in export_grades(course, course.root / "grades.csv")}
    shown = {s: (r["submitted"], r["due"], r["hours_late"], r["late_penalty"], r["total"]) for s, r in rows.items()}
    assert shown == {
        "doejane": ("2026-11-30 15:50 UTC", "2026-11-30 16:00 UTC", "0", "0", "6"),
        "roesmith": ("2026-11-30 15:59 UTC", "2026-11-30 16:00 UTC", "0", "0", "0"),
        "hourlate": ("2026-11-30 17:00 UTC", "2026-11-30 16:00 UTC", "1.00", "0.6", "5.4"),
        "weeklate": ("2026-12-07 16:30 UTC", "2026-11-30 16:00 UTC", "168.50", "3", "3"),
    }


@pytest.mark.parametrize("lms", ["canvas", "moodle"])
def test_lateness_in_the_lms_files(lms_class, lms):
    """Canvas: the penalised score alone (any other column would become an assignment); Moodle: the penalised
    score and a column of sentences its import maps to the grade item's feedback."""
    from autograde.export import export_for_lms

    course = lms_class[0]
    scores = {}
    for per_exercise in (False, True):
        path = course.root / f"{lms}-{per_exercise}.csv"
        export_for_lms(course, path, lms, per_exercise=per_exercise)
        with open(path, newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        key = "SIS Login ID" if lms == "canvas" else "Identifier"
        students = [row for row in rows if row.get("Student") != "Points Possible"]
        # per exercise, the penalty is spread over the exercises in proportion to their points (4 of 6 here)
        column = A if not per_exercise else f"{A}: attention"
        scores[per_exercise] = {row[key]: row[column] for row in students}
        late = {row[key]: row.get(f"{A}: late") for row in students}
    assert scores[False] == {"doejane": "6", "roesmith": "0", "hourlate": "5.4", "weeklate": "3"}, scores[False]
    assert scores[True] == {"doejane": "4", "roesmith": "0", "hourlate": "3.6", "weeklate": "2"}, scores[True]
    if lms == "canvas":
        assert set(late.values()) == {None}, late
    else:
        assert late["doejane"] == late["roesmith"] == "", late
        assert late["hourlate"] == (
            "This submission came 1 hour after the due date (2026-11-30 16:00 UTC): the late policy took 0.6 points off."
        ), late
        assert late["weeklate"] == (
            "This submission came 7 days after the due date (2026-11-30 16:00 UTC): the late policy took 3 points off."
        ), late


def test_lateness_in_the_class_report_and_the_feedback(lms_class):
    from autograde import class_report

    course = lms_class[0]
    page, table = class_report.write(course, A)
    text = re.sub(r"\s+", " ", html_module.unescape(re.sub(r"<[^>]+>", " ", page.read_text(encoding="utf-8"))))
    assert "Due 2026-11-30 16:00 UTC. The late policy: A submission up to 15 minutes" in text, text[-3000:]
    assert "2 submissions came after the due date:" in text, text[-3000:]
    assert "weeklate 7 days 3 hourlate 1 hour 0.6" in text, text[-3000:]  # latest first: how late, points off
    with open(table, newline="", encoding="utf-8") as handle:
        late = {row["students"]: row["value"] for row in csv.DictReader(handle) if row["measure"] == "hours late"}
    assert late == {"weeklate": "168.50", "hourlate": "1.00"}, late
    pages = {path.parts[-3]: _page_text(path) for path in feedback(course, A, students=["doejane", "hourlate"])}
    assert "after the due date" not in pages["doejane"], pages["doejane"][:2000]
    assert (
        "This submission came 1 hour after the due date (2026-11-30 16:00 UTC): the late policy took 0.6 points off. "
        "A submission up to 15 minutes after the due date counts as on time." in pages["hourlate"]
    ), pages["hourlate"][:3000]


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_assignment_through_the_pipeline(assignment):
    """In the suite's class run of each assignment: every exercise a CSV column, the solution's points in
    them, and feedback without hidden tests (test_grading.py checks the scores themselves)."""
    run = graded_batch(assignment)
    course = run.course
    rows = export_grades(course, course.root / "grades.csv", [assignment])
    columns = exercises(course, assignment)
    assert set(columns) <= set(rows[0]) and len(columns) >= 1
    solved = run.results["solution"]
    row = next(r for r in rows if r["student"] == "solution")
    written = [e for e in columns if e.startswith("written_")]  # the written answers, graded by a person
    assert written and all(row[e] == "pending" for e in written), row
    assert sum(float(row[e]) for e in columns if e not in written) == solved.autograded_max > 0
    assert (
        float(row["total"]) == solved.total == solved.autograded_total and float(row["max_total"]) == solved.max_total
    )
    hidden = hidden_lines(course, assignment)
    pages = feedback(course, assignment, students=["solution", "untouched"])
    assert len(pages) == 2
    for path in pages:
        assert not leaked_lines(path.read_text(encoding="utf-8"), hidden), path
    # the written answers: the solution's wait for a person, and its feedback says "pending" where nbgrader's
    # said "Score: 0.0 / 2.0"; the untouched notebook's are unanswered, and score 0 (nothing to grade)
    shown = {path.parts[-3]: _page_text(path) for path in pages}
    scores = {student: re.findall(r"[^.]{0,40}Score: [^)]*\)", text) for student, text in shown.items()}
    points = grade_cells(course, assignment)
    waiting = sum(points[e] for e in written)
    for exercise in written:
        assert f"Score: pending / {points[exercise]:.1f}, not graded yet" in shown["solution"], scores["solution"]
        assert f"Score: 0.0 / {points[exercise]:.1f}" in shown["untouched"], scores["untouched"]
    assert f"({waiting:.1f} points) " in shown["solution"] and "not graded yet" in shown["solution"], scores
    assert "Written response (Score: 0.0" not in shown["solution"], scores["solution"]
    # (a word of its own: 07's introduction speaks of "appending K and V")
    assert not re.search(r"\bpending\b", shown["untouched"]), scores["untouched"]
    assert "not graded yet" not in shown["untouched"], scores["untouched"]


def test_feedback_takes_pending_marks_from_the_gradebook_alone():
    """A "pending" mark a student wrote into a cell's metadata counts for nothing: SayPending marks every cell
    from the gradebook (here on the suite's class run of 00: the solution's written answer waits for a person,
    the untouched notebook's has nothing to grade)."""
    from autograde.feedback_filter import SayPending

    run = graded_batch(A)
    for student, waiting in (("solution", True), ("untouched", False)):
        notebook = copy.deepcopy(run.results[student].notebook)
        for cell in notebook.cells:  # forged: every cell of nbgrader's says it is pending
            if "nbgrader" in cell.metadata:
                cell.metadata.nbgrader["pending"] = True
        found = {"db_url": run.course.db_url, "notebook": A, "assignment": A, "student": student}
        notebook, resources = SayPending().preprocess(notebook, {"nbgrader": found})
        marked = sorted(
            c.metadata.nbgrader["grade_id"] for c in notebook.cells if c.metadata.get("nbgrader", {}).get("pending")
        )
        assert marked == (sorted(run.results[student].written) if waiting else []), (student, marked)
        assert resources["nbgrader"]["pending"] == len(marked), resources


def _page_text(path: Path) -> str:
    """A feedback page as a student reads it: its text (no styles, scripts or tags), spaces collapsed."""
    page = re.sub(r"<(style|script)\b.*?</\1>", " ", path.read_text(encoding="utf-8"), flags=re.S)
    return re.sub(r"\s+", " ", html_module.unescape(re.sub(r"<[^>]+>", " ", page)))


def test_grading_without_the_sandbox_still_works_and_says_so(tmp_path, monkeypatch):
    """Where bubblewrap is missing, grading goes on (clean environment, limits) and every grade says so."""
    from course import grade_class

    monkeypatch.setenv("HEADS_AND_MASKS_UNSANDBOXED", "1")  # inherited by the grading workers
    run = grade_class(A, {"solved": submission(A, {}), "blank": student_notebook(A)}, tmp_path, workers=1)
    solved, blank = run.results["solved"], run.results["blank"]
    assert solved.autograded_total == solved.autograded_max > 0 and blank.total == 0, (solved.line(), blank.line())
    assert solved.pending == solved.written != [] and blank.pending == [], (solved.line(), blank.line())
    for result in (solved, blank):
        assert any("unsandboxed" in note for note in result.notes), result.notes
