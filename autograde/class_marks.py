"""What the class got right and wrong, read from what grading recorded: the data of the class report.

One ``Mark`` per student and exercise (passed, failed, not answered, not graded; a written answer graded by hand or
pending), with the misconception ids the checks named; one ``Assignment`` gathers them with the statuses, the due
date and the late submissions. From them: the counts, the misconception table (most common first), the score
distribution, the families that persist across assignments, and the CSV's rows. What they say in words, and the
page, are the class report's (``class_report.py``).

What it reads is the grader's own: the verdict the judge wrote into each graded test cell's metadata
(``verdicts.VERDICT_KEY``: passed, answered, misconception id), the result records, and the gradebook.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict

import nbformat

from heads_and_masks.checks import misconceptions
from heads_and_masks.checks.misconceptions import MISCONCEPTIONS, family
from heads_and_masks.i18n import N_, _, number

from .course import Course, due_date, gradebook, roster
from .export import exercises, spreadsheet_safe
from .lateness import Lateness, how_late, shown_time
from .report import sandbox_state
from .results import Status, lateness_from_gradebook, read_results, read_verdicts

UNRECOGNISED = "unrecognised"  # a failure no check names
# failures that are not about the answer's meaning: the judge stopped the code (status section says why)
STOPPED = {"Timeout": "(timed out)", "KernelDied": "(kernel died)", "OutputLimit": "(output limit)"}
# An outcome is a value of the CSV (in English, for the scripts that read it) and, translated, a label of the page
PASSED, FAILED, NOT_ANSWERED, NOT_GRADED = N_("passed"), N_("failed"), N_("not answered"), N_("not graded")
OUTCOMES = (PASSED, FAILED, NOT_ANSWERED, NOT_GRADED)
GRADED_BY_HAND, PENDING = N_("graded by hand"), N_("pending")


@dataclasses.dataclass
class Mark:
    """One student's outcome on one exercise."""

    student: str
    exercise: str
    outcome: str  # one of OUTCOMES (autograded) or GRADED_BY_HAND / PENDING (a written answer)
    score: float
    max_score: float
    misconceptions: tuple[str, ...] = ()  # ids (or UNRECOGNISED) of the failing test cells, in cell order
    written: bool = False  # a written answer, graded by a person


@dataclasses.dataclass
class Assignment:
    """Everything the report says about one assignment."""

    name: str
    students: list[str]
    exercises: list[str]
    marks: list[Mark]
    statuses: dict[str, tuple[str, list[str]]]  # student -> (status, notes) for every student not simply graded
    sandboxed: bool = True
    why_unsandboxed: str = ""
    due: object = None  # the due date (naive UTC), or None: nothing is late
    policy: str = ""  # the course's late policy, in words
    late: dict[str, Lateness] = dataclasses.field(default_factory=dict)  # student -> a submission after the due date

    def marks_of(self, exercise: str) -> list[Mark]:
        return [m for m in self.marks if m.exercise == exercise]


# ---------------------------------------------------------------------------------------------
# Reading what grading recorded
# ---------------------------------------------------------------------------------------------


def _grades(course: Course, assignment: str, student: str) -> dict[str, dict]:
    """grade_id -> score, max score, manual or not, and whether it still needs a person (from the gradebook)."""
    from nbgrader.api import MissingEntry

    with gradebook(course) as gb:
        try:
            submission = gb.find_submission(assignment, student)
        except MissingEntry:
            return {}
        return {
            g.name: {
                "score": float(g.score or 0.0),
                "max": float(g.max_score or 0.0),
                "manual": g.cell_type == "markdown",  # a written answer (a markdown grade cell)
                "pending": bool(g.needs_manual_grade) and g.manual_score is None,
                # nbgrader gives an answer left as released 0 points itself: not answered
                "blank": g.manual_score is None and g.auto_score is not None and not g.needs_manual_grade,
            }
            for nb in submission.notebooks
            for g in nb.grades
        }


def mark(student: str, exercise: str, cells: list[str], verdicts: dict[str, dict], grades: dict[str, dict]) -> Mark:
    """A student's outcome on one exercise from its cells' verdicts (autograded) or grades (written)."""
    score = sum(grades.get(c, {}).get("score", 0.0) for c in cells)
    maximum = sum(grades.get(c, {}).get("max", 0.0) for c in cells)
    if cells and all(c not in verdicts and grades.get(c, {}).get("manual") for c in cells):  # a written answer
        if any(grades[c]["pending"] for c in cells):
            return Mark(student, exercise, PENDING, score, maximum, written=True)
        if all(grades[c]["blank"] for c in cells):
            return Mark(student, exercise, NOT_ANSWERED, score, maximum, written=True)
        return Mark(student, exercise, GRADED_BY_HAND, score, maximum, written=True)
    judged = [verdicts[c] for c in cells if c in verdicts]
    if not judged:
        return Mark(student, exercise, NOT_GRADED, score, maximum)
    failing = [v for v in judged if not v.get("passed")]
    if not failing:
        return Mark(student, exercise, PASSED, score, maximum)
    if all(v.get("answered") is False for v in failing):
        return Mark(student, exercise, NOT_ANSWERED, score, maximum)
    named = []
    for verdict in failing:
        if verdict.get("answered") is False:
            continue
        found = verdict.get("misconception")
        if not (isinstance(found, str) and found in MISCONCEPTIONS):
            found = STOPPED.get(verdict.get("failure"), UNRECOGNISED)
        if found not in named:
            named.append(found)
    return Mark(student, exercise, FAILED, score, maximum, tuple(named))


def read_assignment(course: Course, assignment: str) -> Assignment:
    """What grading recorded for ``assignment``: results, graded notebooks, gradebook."""
    results = read_results(course, assignment)
    students = roster(course, assignment)
    grouped = exercises(course, assignment)
    sandboxed, why = sandbox_state()
    marks, statuses, late = [], {}, {}
    for student in students:
        result = results.get(student)
        if result is None:
            submitted = course.path("submitted", student, assignment).is_dir()
            statuses[student] = (
                (str(Status.MISSING), [_("nothing was submitted")])
                if not submitted
                else (str(Status.NOT_GRADED), [_("run the grading again")])
            )
            continue
        if result.status != Status.GRADED:
            statuses[student] = (str(result.status), list(result.notes))
        verdicts: dict[str, dict] = {}
        folder = course.path("autograded", student, assignment)
        for path in sorted(folder.glob("*.ipynb")) if folder.is_dir() else []:
            try:
                verdicts.update(read_verdicts(nbformat.read(path, as_version=4)))
            except Exception:  # noqa: BLE001 - an unreadable graded notebook: its exercises are "not graded"
                continue
        grades = _grades(course, assignment, student)
        for exercise, cells in grouped.items():
            marks.append(mark(student, exercise, cells, verdicts, grades))
        lateness = lateness_from_gradebook(course, assignment, student)
        if lateness.late:
            late[student] = lateness
    due = due_date(course, assignment)
    policy = ""
    if due is not None:
        from .late_policy import describe_policy  # (nbgrader's plug-in: imported only where there is a due date)

        policy = describe_policy(course.config())
    return Assignment(assignment, students, list(grouped), marks, statuses, sandboxed, why, due, policy, late)


# ---------------------------------------------------------------------------------------------
# The numbers
# ---------------------------------------------------------------------------------------------


def outcome_counts(marks: list[Mark]) -> dict[str, int]:
    counts = Counter(m.outcome for m in marks)
    keys = (GRADED_BY_HAND, PENDING, NOT_ANSWERED) if any(m.written for m in marks) else OUTCOMES
    return {k: counts.get(k, 0) for k in keys}


def misconception_table(marks: list[Mark]) -> list[tuple[str, list[str]]]:
    """(id, students) for one exercise, most common first; UNRECOGNISED last among equals."""
    students: dict[str, list[str]] = defaultdict(list)
    for m in marks:
        for found in m.misconceptions:
            students[found].append(m.student)
    return sorted(students.items(), key=lambda item: (-len(item[1]), item[0] not in MISCONCEPTIONS, item[0]))


def score_distribution(marks: list[Mark]) -> list[tuple[float, int]]:
    """(score, number of students) over the students who have a mark, lowest score first."""
    counts = Counter(m.score for m in marks if m.outcome != NOT_GRADED)
    return sorted(counts.items())


def persistence(assignments: list[Assignment]) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(student, family, [(assignment, id), ...]) for each misconception family a student shows in two or
    more assignments: the same idea misunderstood again, notebook after notebook."""
    seen: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for assignment in assignments:
        for m in assignment.marks:
            for found in m.misconceptions:
                if found in MISCONCEPTIONS and (assignment.name, found) not in seen[(m.student, family(found))]:
                    seen[(m.student, family(found))].append((assignment.name, found))
    return sorted(
        ((student, fam, found) for (student, fam), found in seen.items() if len({a for a, _b in found}) > 1),
        key=lambda row: (-len(row[2]), row[0], row[1]),
    )


def describe(misconception: str) -> str:
    """What a row of a misconception table means, in the report's language."""
    if misconception == UNRECOGNISED:
        return _("failed in a way no check names yet")
    if misconception in STOPPED.values():
        return _("the code was stopped before the check could judge it (see the statuses)")
    return misconceptions.describe(misconception)  # in the report's language


# ---------------------------------------------------------------------------------------------
# The CSV: one row per number, long format (assignment, exercise, what, which, count, students)
# ---------------------------------------------------------------------------------------------

CSV_HEADER = ["assignment", "exercise", "measure", "value", "count", "students", "description"]


def csv_rows(assignment: Assignment, others: list[Assignment]) -> list[dict]:
    rows = []

    def add(exercise, measure, value, students, description=""):
        rows.append(
            {
                "assignment": assignment.name,
                "exercise": exercise,
                "measure": measure,
                "value": value,
                "count": len(students),
                "students": ";".join(students),
                "description": description,
            }
        )

    for exercise in assignment.exercises:
        marks = assignment.marks_of(exercise)
        for outcome in outcome_counts(marks):
            add(exercise, "outcome", outcome, [m.student for m in marks if m.outcome == outcome])
        for score, _count in score_distribution(marks):
            add(
                exercise,
                "score",
                f"{score:g}",
                [m.student for m in marks if m.score == score and m.outcome != NOT_GRADED],
            )
        for found, students in misconception_table(marks):
            add(exercise, "misconception", found, students, describe(found))
    by_status: dict[str, list[str]] = defaultdict(list)
    for student, (status, _why) in assignment.statuses.items():
        by_status[status].append(student)
    for status, students in by_status.items():
        add(
            "", "status", status, students, "; ".join(f"{s}: {' / '.join(assignment.statuses[s][1])}" for s in students)
        )
    if not assignment.sandboxed:
        add("", "status", "unsandboxed", assignment.students, assignment.why_unsandboxed)
    for student, lateness in sorted(assignment.late.items(), key=lambda item: -item[1].seconds):
        add(
            "",
            "hours late",
            f"{lateness.hours:.2f}",
            [student],
            _("{late} after the due date ({due}): {points} points off").format(
                late=how_late(lateness.seconds), due=shown_time(assignment.due), points=number(lateness.penalty)
            ),
        )
    for student, fam, found in persistence(others):
        rows.append(
            {
                "assignment": " ".join(a for a, _b in found),
                "exercise": "",
                "measure": "persists",
                "value": fam,
                "count": len(found),
                "students": student,
                "description": "; ".join(f"{a}: {i}" for a, i in found),
            }
        )
    return [{k: spreadsheet_safe(v) for k, v in row.items()} for row in rows]


def graded_assignments(course: Course) -> list[str]:
    """The assignments with at least one result record, in course order."""
    return [a for a in course.assignments() if read_results(course, a)]
