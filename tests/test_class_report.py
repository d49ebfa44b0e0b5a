"""The class report: counts from a real class run against the catalog's labels, and the page itself.

The class is the one the catalogs already grade (``graded_batch``: every catalog answer of an
assignment, the untouched notebook, the solution and the attacks, in ONE grading run per assignment):
the report must count, per exercise, exactly the students the catalog says passed, failed with which
misconception, or did not answer.
"""

from __future__ import annotations

import csv
import re

import pytest
from catalog import catalogs
from catalog.misconceptions import LABELS
from course import ASSIGNMENTS, graded_batch

from autograde import class_marks, class_report
from autograde.class_marks import FAILED, NOT_ANSWERED, PASSED, PENDING, UNRECOGNISED, Assignment, Mark
from heads_and_masks.checks.misconceptions import MISCONCEPTIONS


def test_every_wrong_catalog_answer_has_its_label():
    """Every wrong answer of a labelled catalog has its label. (A new notebook's catalog joins LABELS once its
    checks carry misconception ids: until then its report shows its failures as unrecognised.)"""
    for assignment, answers in catalogs().items():
        if assignment not in LABELS:
            continue
        wrong = {a.name for a in answers if a.breaks}
        labelled = set(LABELS.get(assignment, {}))
        assert labelled == wrong, f"{assignment}: unlabelled {wrong - labelled}, unknown {labelled - wrong}"
        for name, ids in LABELS[assignment].items():
            known = set(MISCONCEPTIONS) | {UNRECOGNISED} | set(class_marks.STOPPED.values())
            assert ids and set(ids) <= known, (assignment, name, ids)


def _expected(assignment: str, exercises: list[str]):
    """Per exercise: {outcome: students} and {misconception: students} the catalog's labels imply.

    A student whose failure on an exercise is a cascade (it calls the broken function) is left out of
    that exercise on both sides: the catalog does not say what a cascade looks like."""
    outcomes = {e: {PASSED: set(), FAILED: set(), NOT_ANSWERED: set()} for e in exercises}
    named = {e: {} for e in exercises}
    skip = {e: set() for e in exercises}
    outcomes_all = [("solution", None, ())]
    for answer in catalogs()[assignment]:
        outcomes_all.append((f"catalog-{answer.name}", answer, answer.cascades))
    for student, answer, cascades in outcomes_all:
        for exercise in exercises:
            if answer is not None and answer.untouched:
                outcomes[exercise][NOT_ANSWERED].add(student)
            elif answer is not None and answer.breaks == exercise:
                outcomes[exercise][FAILED].add(student)
                for found in LABELS[assignment][answer.name]:
                    named[exercise].setdefault(found, set()).add(student)
            elif exercise in cascades:
                skip[exercise].add(student)
            else:
                outcomes[exercise][PASSED].add(student)
    return outcomes, named, skip


@pytest.mark.slow
@pytest.mark.parametrize("assignment", [a for a in ASSIGNMENTS if a in LABELS])
def test_report_counts_match_the_catalog_labels(assignment):
    run = graded_batch(assignment)  # the suite's one class run of this assignment
    report = class_marks.read_assignment(run.course, assignment)
    exercises = [e for e in report.exercises if not any(m.written for m in report.marks_of(e))]
    written = [e for e in report.exercises if e not in exercises]
    assert written, "every notebook asks a written question"
    for exercise in written:  # the model answer waits for a person; the answer left as released is no answer
        outcome = {m.student: m.outcome for m in report.marks_of(exercise)}
        assert outcome["solution"] == PENDING and outcome["untouched"] == NOT_ANSWERED, outcome
    outcomes, named, skip = _expected(assignment, exercises)
    catalog_students = {"solution"} | {f"catalog-{a.name}" for a in catalogs()[assignment]}
    for exercise in exercises:
        marks = [m for m in report.marks_of(exercise) if m.student in catalog_students - skip[exercise]]
        got = {o: {m.student for m in marks if m.outcome == o} for o in (PASSED, FAILED, NOT_ANSWERED)}
        assert got == outcomes[exercise], f"{exercise}: outcomes differ from the catalog"
        table = {found: set(students) for found, students in class_marks.misconception_table(marks)}
        assert table == named[exercise], (
            f"{exercise}: the misconceptions differ from the catalog's labels:\n"
            f"report  {sorted((k, sorted(v)) for k, v in table.items())}\n"
            f"catalog {sorted((k, sorted(v)) for k, v in named[exercise].items())}"
        )
    page, table = class_report.write(run.course, assignment)
    rows = list(csv.DictReader(table.open(encoding="utf-8")))
    for exercise in exercises:  # the CSV says the same as the report (here: over the whole class)
        marks = report.marks_of(exercise)
        for found, students in class_marks.misconception_table(marks):
            row = next(
                r for r in rows if r["exercise"] == exercise and r["measure"] == "misconception" and r["value"] == found
            )
            assert int(row["count"]) == len(students) and set(row["students"].split(";")) == set(students)
        passed = next(r for r in rows if r["exercise"] == exercise and r["value"] == PASSED)
        assert int(passed["count"]) == sum(m.outcome == PASSED for m in marks)
    text = page.read_text(encoding="utf-8")
    assert "<script" not in text.lower() and "http://" not in text and "https://" not in text


# ------------------------------------------------------------------ the page and the numbers, on a made-up class
def _class(name: str, marks: list[Mark], statuses=None) -> Assignment:
    students = sorted({m.student for m in marks} | set(statuses or {}))
    return Assignment(name, students, sorted({m.exercise for m in marks}), marks, statuses or {})


HOSTILE = "<script>alert(1)</script>"


def test_most_common_first_unrecognised_grouped_and_persistence():
    first = _class(
        "01_heads",
        [
            Mark("ann", "split_heads", FAILED, 0, 2, ("heads.d_h_split",)),
            Mark("bob", "split_heads", FAILED, 0, 2, ("heads.d_h_split", UNRECOGNISED)),
            Mark("cat", "split_heads", FAILED, 0, 2, (UNRECOGNISED,)),
            Mark("dan", "split_heads", FAILED, 1, 2, ("conventions.in_place",)),
            Mark("eve", "split_heads", PASSED, 2, 2),
        ],
    )
    table = class_marks.misconception_table(first.marks)
    # most common first; among equals a named misconception before the unrecognised group
    assert table == [
        ("heads.d_h_split", ["ann", "bob"]),
        (UNRECOGNISED, ["bob", "cat"]),
        ("conventions.in_place", ["dan"]),
    ]
    assert class_marks.score_distribution(first.marks) == [(0, 3), (1, 1), (2, 1)]
    later = _class(
        "06_kv_heads",
        [
            Mark("ann", "grouped_query_attention", FAILED, 0, 2, ("heads.reshape_without_transpose",)),
            Mark("cat", "grouped_query_attention", FAILED, 0, 2, (UNRECOGNISED,)),
            Mark("dan", "grouped_query_attention", FAILED, 0, 2, ("mask.ignored",)),
        ],
    )
    rows = class_marks.persistence([first, later])
    assert rows == [
        ("ann", "heads", [("01_heads", "heads.d_h_split"), ("06_kv_heads", "heads.reshape_without_transpose")])
    ]


def test_the_page_escapes_every_student_text_and_loads_nothing():
    marks = [Mark(HOSTILE, "attention", FAILED, 0, 3, ("mask.zero_not_ban",)), Mark("ok", "attention", PASSED, 3, 3)]
    assignment = _class(
        "00_start_here", marks, {HOSTILE: ("needs review", [f"note {HOSTILE} <img src=x onerror=alert(2)>"])}
    )
    page = class_report.render_html(assignment, [assignment])
    assert "<script" not in page.lower() and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert not re.search(r"(src|href)=['\"](?!data:image/png;base64,)", page), "only inline PNG pictures"
    rows = class_marks.csv_rows(assignment, [assignment])
    status = next(r for r in rows if r["measure"] == "status")
    assert status["value"] == "needs review" and HOSTILE in status["students"]
    formula = class_marks.csv_rows(_class("x", [Mark("=1+2", "e", PASSED, 1, 1)]), [])
    assert all(not r["students"].startswith("=") for r in formula)  # a spreadsheet shows it as text


def test_mark_from_the_judges_verdicts():
    cells = ["test_a", "test_a_hidden"]
    grades = {c: {"score": 0.0, "max": 1.0, "manual": False, "pending": False, "blank": True} for c in cells}

    def verdicts(*records):
        return dict(zip(cells, records))

    ok, bad = {"passed": True, "answered": True}, {"passed": False, "answered": True, "misconception": "mask.ignored"}
    unwritten = {"passed": False, "answered": False, "misconception": None}
    assert class_marks.mark("s", "a", cells, verdicts(ok, ok), grades).outcome == PASSED
    assert class_marks.mark("s", "a", cells, verdicts(unwritten, unwritten), grades).outcome == NOT_ANSWERED
    failed = class_marks.mark(
        "s", "a", cells, verdicts(bad, {"passed": False, "answered": True, "misconception": "not.an_id"}), grades
    )
    assert failed.outcome == FAILED and failed.misconceptions == ("mask.ignored", UNRECOGNISED)
    stopped = class_marks.mark(
        "s", "a", cells, verdicts(ok, {"passed": False, "answered": True, "failure": "Timeout"}), grades
    )
    assert stopped.misconceptions == ("(timed out)",)
    assert class_marks.mark("s", "a", cells, {}, grades).outcome == class_report.NOT_GRADED


def test_the_benchmark_finds_every_failing_cell_by_its_verdict(tmp_path):
    """The benchmark's list of failing cells (throughput.failing_cells) reads the judge's verdict records, as the
    class report does: every graded test cell that did not pass is listed with the judge's message, whatever
    the message's words; a student's own cell that raised or printed a ✗ is not a graded failure."""
    import nbformat

    from autograde.course import Course
    from autograde.verdicts import VERDICT_KEY, Verdict, verdict_outputs, verdict_metadata
    from autograde.throughput import failing_cells

    def graded(verdict: Verdict):
        cell = nbformat.v4.new_code_cell("check_it(f)", outputs=verdict_outputs(verdict))
        cell.metadata = {
            "nbgrader": {"grade_id": verdict.grade_id, "grade": True},
            VERDICT_KEY: verdict_metadata(verdict),
        }
        return cell

    own = nbformat.v4.new_code_cell("print('✗ my own try'); 1 / 0")
    own.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="✗ my own try\n"),
        nbformat.v4.new_output("error", ename="ZeroDivisionError", evalue="division by zero", traceback=[]),
    ]
    notebook = nbformat.v4.new_notebook(
        cells=[
            own,
            graded(Verdict("test_ok", True, "✓ the weights sum to 1\n")),
            graded(
                Verdict(
                    "test_wrong", False, "the weights are wrong: row 2 differs by 0.5", "CheckFailed", "mask.ignored"
                )
            ),
            graded(Verdict("test_unwritten", False, "`f` is not written yet", "NotPassed", answered=False)),
            graded(Verdict("test_slow", False, "your code did not finish within 60 seconds", "Timeout")),
        ]
    )
    course = Course(root=tmp_path)
    folder = course.path("autograded", "student000", "03_causal_mask")
    folder.mkdir(parents=True)
    nbformat.write(notebook, folder / "03_causal_mask.ipynb")
    assert failing_cells(course, "03_causal_mask", "student000") == (
        "; test_wrong: the weights are wrong: row 2 differs by 0.5"
        "; test_unwritten: `f` is not written yet"
        "; test_slow: your code did not finish within 60 seconds"
    )
    assert failing_cells(course, "03_causal_mask", "student001") == ""  # nothing graded: nothing listed
