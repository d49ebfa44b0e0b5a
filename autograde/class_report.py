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

The numbers come from ``class_marks.py`` (what grading recorded, read as marks per student and exercise); this
module says them in the report's language, draws them, and lays out the page through its template.
"""

from __future__ import annotations

import base64
import csv
import io
from collections import Counter
from pathlib import Path

from markupsafe import Markup

from heads_and_masks.checks.misconceptions import MISCONCEPTIONS
from heads_and_masks.i18n import _, ngettext, number, translated

from .class_marks import (
    CSV_HEADER,
    FAILED,
    GRADED_BY_HAND,
    NOT_ANSWERED,
    NOT_GRADED,
    OUTCOMES,
    PASSED,
    PENDING,
    UNRECOGNISED,
    Assignment,
    Mark,
    csv_rows,
    describe,
    graded_assignments,
    misconception_table,
    outcome_counts,
    persistence,
    read_assignment,
    score_distribution,
)
from .class_folder import CLASS_FOLDER
from .course import Course
from .lateness import how_late, shown_time
from .pages import page_template, written_in
from .results import Status

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
    outcomes.barh([translated(k) for k in labels], [counts[k] for k in labels], color=[COLOURS[k] for k in labels])
    outcomes.invert_yaxis()
    outcomes.set_title(_("students"), fontsize=10)
    distribution = score_distribution(marks)
    maximum = max((m.max_score for m in marks), default=0)
    scores.bar([number(s) for s, _n in distribution], [n for _s, n in distribution], color="#577590")
    scores.set_title(_("score (out of {points})").format(points=number(maximum)), fontsize=10)
    if table:
        names = [found for found, _who in table][:8][::-1]
        named.barh(
            names,
            [len(dict(table)[n]) for n in names],
            color=["#c8553d" if n in MISCONCEPTIONS else "#b0b0b0" for n in names],
        )
        named.set_title(_("misconceptions named by the checks"), fontsize=10)
    else:
        named.text(0.5, 0.5, _("no failure"), ha="center", va="center", transform=named.transAxes)
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
@media (max-width: 700px) { td, th { padding: 0.2em 0.35em; } } /* narrow: the headers' longer words (Russian) fit whole */
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
        return _("Every submission came before the due date, or within the grace the policy allows.")
    return ngettext(
        "{n} submission came after the due date:", "{n} submissions came after the due date:", n_late
    ).format(n=n_late)


def _students(names: list[str], limit: int = 30) -> str:
    """The first ``limit`` names, and how many more there are."""
    shown = ", ".join(names[:limit])
    if len(names) <= limit:
        return shown
    more = len(names) - limit
    return ngettext("{names} and {n} more", "{names} and {n} more", more).format(names=shown, n=more)


def _html(sentence: str, **values) -> Markup:
    """A translated sentence for the page with markup the code made (``<code>``) in its placeholders: the sentence's
    own text is escaped, and so is every value that is not Markup (a name, a path)."""
    return Markup.escape(sentence).format(**values)


def _code(text: str) -> Markup:
    return Markup("<code>{}</code>").format(text)


def page_texts(assignment: Assignment, others: list[Assignment], similar: int | None, similarity_page: str) -> dict:
    """Every sentence, heading and label of the page, in the report's language (the template lays them out)."""
    graded_names = ", ".join(a.name for a in others)
    texts = {
        "title": _("Class report: {assignment}").format(assignment=assignment.name),
        "unsandboxed_title": _("Graded unsandboxed."),
        "unsandboxed": _("Every grade here came from student code that ran without the sandbox ({why}).").format(
            why=assignment.why_unsandboxed
        ),
        "explained": _(
            "Each exercise: how many passed, failed or did not answer, the scores, and the misconceptions the checks "
            "named (by a stable id: the same id means the same mistake in every year and every language)."
        ),
        "unrecognised": _html(
            _("{unrecognised} groups the failures no check names yet."),
            unrecognised=Markup("<i>{}</i>").format(UNRECOGNISED),
        ),
        "exercises": _("Exercises"),
        "exercise": _("exercise"),
        "most_common": _("most common misconception"),
        "written_answer": _("A written answer, graded by a person in the formgrader."),
        "misconception": _("misconception"),
        "what_it_means": _("what it means"),
        "students": _("students"),
        "who": _("who"),
        "deadline": _("Due date and late submissions"),
        "no_due_date": _("This assignment has no due date, so no submission counts as late."),
        "late_caption": _("Late submissions, latest first"),
        "student": _("student"),
        "how_late": _("how late"),
        "points_off": _("points taken off"),
        "statuses": _("Statuses"),
        "status": _("status"),
        "why": _("why"),
        "no_trouble": _("Every submission was graded without trouble."),
        "similar": _("Similar submissions"),
        "persist": _("Across assignments: misconceptions that persist"),
        "family": _("family"),
        "where": _("where"),
        "persisting": _(
            "Students who show the same family of misconception in more than one of the graded assignments "
            "({assignments})."
        ).format(assignments=graded_names),
        "none_persist": _(
            "No misconception family appears in more than one assignment for the same student "
            "(graded assignments: {assignments})."
        ).format(assignments=graded_names),
    }
    if assignment.due is not None:
        texts["due"] = _("Due {due}. The late policy: {policy}").format(
            due=shown_time(assignment.due), policy=assignment.policy
        )
    if similar is None:
        texts["similarity"] = _html(
            _(
                "Not compared yet: {command} compares every pair of submissions, exercise by exercise, and writes {page}."
            ),
            command=_code(f"make similarity ASSIGNMENT={assignment.name}"),
            page=_code(similarity_page),
        )
    else:
        texts["similarity"] = _html(
            ngettext(
                "The last comparison flagged {n} pair of answers above their threshold, shown side by side in {page} "
                "(a reason to read them, not a finding; docs/instructors.md, section 7).",
                "The last comparison flagged {n} pairs of answers above their threshold, shown side by side in {page} "
                "(a reason to read them, not a finding; docs/instructors.md, section 7).",
                similar,
            ),
            n=similar,
            page=_code(similarity_page),
        )
    return texts


def exercise_texts(exercise: str, marks: list[Mark]) -> dict:
    """The sentences of one exercise's section and row, in the report's language."""
    counts = Counter(m.outcome for m in marks)
    pending = [m.student for m in marks if m.outcome == PENDING]
    not_answered = [m.student for m in marks if m.outcome == NOT_ANSWERED]
    return {
        "written_counts": _(
            "written answer: {graded} graded by hand, {pending} pending, {not_answered} not answered"
        ).format(graded=counts.get(GRADED_BY_HAND, 0), pending=len(pending), not_answered=len(not_answered)),
        "pending_sentence": (
            ngettext("{n} answer is pending: {students}.", "{n} answers are pending: {students}.", len(pending)).format(
                n=len(pending), students=_students(pending)
            )
            if pending
            else _("No answer is pending.")
        ),
        "not_answered_sentence": _("Not answered (the stub is still there): {students}").format(
            students=_students(not_answered)
        ),
        "alt": _("outcomes, scores and misconceptions of {exercise}").format(exercise=exercise),
    }


def render_html(assignment: Assignment, others: list[Assignment], similar_pairs: int | None = None) -> str:
    """The whole report as one self-contained HTML page (no script, no external resource), in the current language
    (``i18n.use_language``: the instructor's, whatever languages the students wrote in; misconceptions are counted
    by id). ``similar_pairs``: the pairs the last ``make similarity`` flagged (None: it has not run). What the page
    says is gathered here, already translated; how it is laid out, in ``templates/class_report/report.html.j2``,
    which escapes every value."""
    graded = len(assignment.students) - sum(
        s in (Status.MISSING, Status.NOT_GRADED) for s, _why in assignment.statuses.values()
    )
    exercises = []
    for exercise in assignment.exercises:
        marks = assignment.marks_of(exercise)
        counts = Counter(m.outcome for m in marks)
        written = any(m.written for m in marks)
        exercises.append(
            {
                "name": exercise,
                "written": written,
                "counts": [counts.get(o, 0) for o in OUTCOMES],
                "not_answered": [m.student for m in marks if m.outcome == NOT_ANSWERED],
                "table": misconception_table(marks),
                "picture": "" if written else exercise_picture(exercise, marks),
                **exercise_texts(exercise, marks),
            }
        )
    late = [
        (student, how_late(lateness.seconds), number(lateness.penalty))
        for student, lateness in sorted(assignment.late.items(), key=lambda item: -item[1].seconds)
    ]
    order = {str(s): i for i, s in enumerate(Status)}
    statuses = [
        (student, translated(status), "; ".join(notes))
        for student, (status, notes) in sorted(
            assignment.statuses.items(), key=lambda i: (order.get(i[1][0], 99), i[0])
        )
    ]
    similarity_page = f"{CLASS_FOLDER}/reports/{assignment.name}-similarity.html"
    return (
        page_template("class_report", "report.html.j2").render(
            language=written_in(),
            a=assignment,
            t=page_texts(assignment, others, similar_pairs, similarity_page),
            style=STYLE,
            class_size=class_size(len(assignment.students), graded),
            outcomes=[translated(o) for o in OUTCOMES],
            exercises=exercises,
            students=_students,
            describe=describe,
            late_count=late_count(len(assignment.late)),
            late=late,
            statuses=statuses,
            similar_pairs=similar_pairs,
            persisting=persistence(others),
        )
        + "\n"
    )


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
