"""The class report: what the class got right, what it got wrong, and which misconceptions persist.

After grading, ``python -m autograde.grade report ASSIGNMENT`` (``make report``) writes, besides the
plain-words status report, one HTML page that opens in a browser without a server (the pictures are
PNG images inside the page; every name and message is escaped) and the same numbers as a CSV:

* per exercise: how many students passed, failed, did not answer (the stub still there), and the
  distribution of their scores;
* per exercise: the misconceptions the checks named, by their stable id
  (``heads_and_masks/checks/misconceptions.py``), with the students concerned, most common first;
  failures no check names are grouped as ``unrecognised`` (what the checks do not recognise yet);
* written answers (manually graded cells): graded, or pending until someone grades them in the formgrader;
* the due date and the late policy, and every submission that came after the due date: how late, and the
  points the policy took (late_policy.py);
* the statuses (timed out, kernel died, needs review, invalid, missing, unsandboxed) with the reason per student;
* across the graded assignments: the misconception families a student shows in more than one.

What it reads is the grader's own: the verdict the judge wrote into each graded test cell's metadata
(``verdicts.VERDICT_KEY``: passed, answered, misconception id), the result records, and the gradebook.
"""

from __future__ import annotations

import base64
import csv
import dataclasses
import functools
import io
from collections import Counter, defaultdict
from heads_and_masks.i18n import ngettext
from pathlib import Path

import jinja2
import nbformat

from heads_and_masks.checks import misconceptions
from heads_and_masks.checks.misconceptions import MISCONCEPTIONS, family

from .course import Course, due_date, gradebook, roster
from .export import exercises, spreadsheet_safe
from .lateness import Lateness, how_late, shown_time
from .report import sandbox_state
from .results import Status, lateness_from_gradebook, read_results, read_verdicts

UNRECOGNISED = "unrecognised"  # a failure no check names
# failures that are not about the answer's meaning: the judge stopped the code (status section says why)
STOPPED = {"Timeout": "(timed out)", "KernelDied": "(kernel died)", "OutputLimit": "(output limit)"}
PASSED, FAILED, NOT_ANSWERED, NOT_GRADED = "passed", "failed", "not answered", "not graded"
OUTCOMES = (PASSED, FAILED, NOT_ANSWERED, NOT_GRADED)
GRADED_BY_HAND, PENDING = "graded by hand", "pending"


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
                (str(Status.MISSING), ["nothing was submitted"])
                if not submitted
                else (str(Status.NOT_GRADED), ["run the grading again"])
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
    if misconception == UNRECOGNISED:
        return "failed in a way no check names yet"
    if misconception in STOPPED.values():
        return "the code was stopped before the check could judge it (see the statuses)"
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
            f"{how_late(lateness.seconds)} after the due date ({shown_time(assignment.due)}): "
            f"{lateness.penalty:g} points off",
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


# ---------------------------------------------------------------------------------------------
# The pictures (PNG inside the page: nothing to fetch, no script, no student text in markup)
# ---------------------------------------------------------------------------------------------

COLOURS = {
    PASSED: "#4c9a2a",
    FAILED: "#c8553d",
    NOT_ANSWERED: "#b0b0b0",
    NOT_GRADED: "#6d6875",
    GRADED_BY_HAND: "#4c9a2a",
    PENDING: "#e0a458",
}


def _png(figure) -> str:
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    plt.close(figure)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def exercise_picture(exercise: str, marks: list[Mark]) -> str:
    """Outcomes, score distribution and misconceptions of one exercise, side by side: a PNG as base64."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = misconception_table(marks)
    figure, (outcomes, scores, named) = plt.subplots(
        1, 3, figsize=(10.2, 2.7), gridspec_kw={"width_ratios": [1, 1, 1.6]}
    )
    counts = outcome_counts(marks)
    labels = list(counts)
    outcomes.barh(labels, [counts[k] for k in labels], color=[COLOURS[k] for k in labels])
    outcomes.invert_yaxis()
    outcomes.set_title("students", fontsize=10)
    distribution = score_distribution(marks)
    maximum = max((m.max_score for m in marks), default=0)
    scores.bar([f"{s:g}" for s, _n in distribution], [n for _s, n in distribution], color="#577590")
    scores.set_title(f"score (out of {maximum:g})", fontsize=10)
    if table:
        names = [found for found, _ in table][:8][::-1]
        named.barh(
            names,
            [len(dict(table)[n]) for n in names],
            color=["#c8553d" if n in MISCONCEPTIONS else "#b0b0b0" for n in names],
        )
        named.set_title("misconceptions named by the checks", fontsize=10)
    else:
        named.text(0.5, 0.5, "no failure", ha="center", va="center", transform=named.transAxes)
        named.set_axis_off()
    for axes in (outcomes, scores, named):
        axes.xaxis.get_major_locator().set_params(integer=True) if axes is not scores else None
        axes.spines[["top", "right"]].set_visible(False)
        axes.tick_params(labelsize=9)
    scores.yaxis.get_major_locator().set_params(integer=True)
    figure.suptitle(exercise, x=0.01, ha="left", fontsize=11, fontweight="bold")
    figure.tight_layout()
    return _png(figure)


# ---------------------------------------------------------------------------------------------
# The page
# ---------------------------------------------------------------------------------------------

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.5em 0 1em; } td, th { padding: 0.2em 0.7em; text-align: left;
 vertical-align: top; border-bottom: 1px solid #eee; } th { background: #f4f4f4; }
td { overflow-wrap: anywhere; } /* a long id breaks, so its table fits a narrow window (200 % zoom) */
td.n { text-align: right; font-variant-numeric: tabular-nums; } code { font-size: 0.95em; }
img { max-width: 100%; } .warning { background: #fde2e1; padding: 0.5em 1em; border-left: 4px solid #c8553d; }
.muted { color: #666; } .students { font-size: 0.9em; color: #444; }
"""


def class_size(n_students: int, graded: int) -> str:
    """The class report's count."""
    return ngettext("{n} student, {graded} graded.", "{n} students, {graded} graded.", n_students).format(
        n=n_students, graded=graded
    )


def late_count(n_late: int) -> str:
    """The class report's count of late submissions."""
    if n_late == 0:
        return "Every submission came before the due date, or within the grace the policy allows."
    return ngettext(
        "{n} submission came after the due date:", "{n} submissions came after the due date:", n_late
    ).format(n=n_late)


def _students(names: list[str], limit: int = 30) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


@functools.cache
def _template() -> jinja2.Template:
    """The page's template, in an environment that escapes every value it writes (autoescape)."""
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates" / "class_report"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,  # a name the template uses and the page does not give: an error, not ""
    )
    return environment.get_template("report.html.j2")


def render_html(assignment: Assignment, others: list[Assignment], similar_pairs: int | None = None) -> str:
    """The whole report as one self-contained HTML page (no script, no external resource). ``similar_pairs``:
    the pairs the last ``make similarity`` flagged (None: it has not run). What the page says is gathered here;
    how it is laid out, in ``templates/class_report/report.html.j2``, which escapes every value."""
    graded = len(assignment.students) - sum(
        s in (Status.MISSING, Status.NOT_GRADED) for s, _why in assignment.statuses.values()
    )
    exercises = []
    for exercise in assignment.exercises:
        marks = assignment.marks_of(exercise)
        counts = Counter(m.outcome for m in marks)
        written = any(m.written for m in marks)
        not_answered = [m.student for m in marks if m.outcome == NOT_ANSWERED]
        exercises.append(
            {
                "name": exercise,
                "written": written,
                "counts": [counts.get(o, 0) for o in OUTCOMES],
                "graded_by_hand": counts.get(GRADED_BY_HAND, 0),
                "pending": [m.student for m in marks if m.outcome == PENDING],
                "not_answered_count": counts.get(NOT_ANSWERED, 0),
                "not_answered": not_answered,
                "table": misconception_table(marks),
                "picture": "" if written else exercise_picture(exercise, marks),
            }
        )
    late = [
        (student, how_late(lateness.seconds), f"{lateness.penalty:g}")
        for student, lateness in sorted(assignment.late.items(), key=lambda item: -item[1].seconds)
    ]
    order = {str(s): i for i, s in enumerate(Status)}
    statuses = [
        (student, status, "; ".join(notes))
        for student, (status, notes) in sorted(
            assignment.statuses.items(), key=lambda i: (order.get(i[1][0], 99), i[0])
        )
    ]
    return (
        _template().render(
            a=assignment,
            style=STYLE,
            class_size=class_size(len(assignment.students), graded),
            outcomes=OUTCOMES,
            exercises=exercises,
            students=_students,
            describe=describe,
            due=shown_time(assignment.due) if assignment.due is not None else "",
            late_count=late_count(len(assignment.late)),
            late=late,
            statuses=statuses,
            similar_pairs=similar_pairs,
            similarity_page=f"class/reports/{assignment.name}-similarity.html",
            persisting=persistence(others),
            graded_names=", ".join(a.name for a in others),
        )
        + "\n"
    )


def graded_assignments(course: Course) -> list[str]:
    """The assignments with at least one result record, in course order."""
    return [a for a in course.assignments() if read_results(course, a)]


def similar_pairs(folder: Path, assignment: str) -> int | None:
    """How many pairs the last ``make similarity`` flagged (its CSV's rows with a score), or None."""
    table = folder / f"{assignment}-similarity.csv"
    if not table.exists():
        return None
    with open(table, newline="", encoding="utf-8") as handle:
        return sum(1 for row in csv.DictReader(handle) if row.get("score"))


def write(course: Course, assignment: str) -> tuple[Path, Path]:
    """Write ``reports/ASSIGNMENT.html`` and ``reports/ASSIGNMENT.csv``; return their paths."""
    this = read_assignment(course, assignment)
    others = [
        this if name == assignment else read_assignment(course, name)
        for name in sorted(set(graded_assignments(course)) | {assignment})
    ]
    folder = course.runtime_dir("reports")
    page, table = folder / f"{assignment}.html", folder / f"{assignment}.csv"
    page.write_text(render_html(this, others, similar_pairs(folder, assignment)), encoding="utf-8")
    with open(table, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_HEADER, quoting=csv.QUOTE_ALL)  # see export.spreadsheet_safe
        writer.writeheader()
        writer.writerows(csv_rows(this, others))
    return page, table
