"""Step 7, the report: what went wrong, per student, in plain words (also written to ``reports/``).

One line per assignment with the count of each status, a line for the written answers that wait for a
person (formgrader), then a line for every student whose submission needs a look (a failure, a note),
a line for every submission that hit a bound of the class run (bounds.py: which bound, and its cost,
whatever its status), and a warning on top when grading ran unsandboxed.
"""

from __future__ import annotations

from heads_and_masks.i18n import _, ngettext, number, translated

from .submission_files import printable
from .course import Course, roster
from .results import Status, pending_from_gradebook, read_results


def sandbox_state() -> tuple[bool, str]:
    """(True, "") when grading kernels run in the bubblewrap sandbox (sandbox.py), else (False, why)."""
    from .kernel.sandbox import sandbox_available

    return sandbox_available()


def headline(assignment: str, n_students: int, summary: str) -> str:
    """The report's first line."""
    template = ngettext("{assignment}: {n} student: {summary}", "{assignment}: {n} students: {summary}", n_students)
    return template.format(assignment=assignment, n=n_students, summary=summary)


def pending_line(n_students: int, points: float) -> str:
    """How many students' written answers wait for a person, and for how many points."""
    template = ngettext(
        "  written answers pending: {n} student, {points} points to grade by hand in the formgrader",
        "  written answers pending: {n} students, {points} points to grade by hand in the formgrader",
        n_students,
    )
    return template.format(n=n_students, points=number(points))


def status_count(status: str, n: int) -> str:
    """One status of the headline's summary and how many students have it ("3 graded")."""
    # Translators: {status} is a status of the report ("graded", "needs review"), already translated
    return _("{n} {status}").format(n=n, status=translated(status))


def not_graded_line(student: str, status: str, submitted: bool) -> str:
    """The line of a student the grader has no result for: nothing submitted, or a grading run to finish."""
    if submitted:
        return _("{student}: {status}: run `grade.py autograde` again").format(
            student=student, status=translated(status)
        )
    return _("{student}: {status}: nothing was submitted").format(student=student, status=translated(status))


def bounded_heading(n_submissions: int) -> str:
    """The line above the submissions that hit a bound of the class run."""
    return ngettext(
        "  {n} submission hit a bound of the class run (docs/instructors.md, Bounds):",
        "  {n} submissions hit a bound of the class run (docs/instructors.md, Bounds):",
        n_submissions,
    ).format(n=n_submissions)


def report(course: Course, assignment: str) -> str:
    """Everything that went wrong, per student, in plain words (also written to reports/)."""
    results = read_results(course, assignment)
    everyone = roster(course, assignment)
    counts = {status: 0 for status in Status}
    lines = []
    bounded = []  # every submission that hit a bound of the class run, whatever its status
    waiting: list = []  # results with written answers (pending ones kept below)
    for student in everyone:
        result = results.get(student)
        if result is None:
            submitted = course.path("submitted", student, assignment).is_dir()
            status = Status.NOT_GRADED if submitted else Status.MISSING
            counts[status] += 1
            lines.append("  " + printable(not_graded_line(student, status, submitted)))
            continue
        counts[result.status] += 1
        if result.written:  # as it is now: a person may have graded some since
            result.pending = pending_from_gradebook(course, assignment, student)
            waiting.append(result)
        if result.status != Status.GRADED:
            lines.append("  " + result.line())
        if result.limits:
            bounded.append(printable(f"  {student}: " + "; ".join(result.limits)))
    summary = ", ".join(status_count(status, n) for status, n in counts.items() if n)
    text = [headline(assignment, len(everyone), summary or _("nobody yet"))]
    waiting = [r for r in waiting if r.pending]
    if waiting:
        text.append(pending_line(len(waiting), sum(r.pending_max for r in waiting)))
    sandboxed, why_not = sandbox_state()
    if not sandboxed:
        text.insert(0, _("WARNING: graded UNSANDBOXED ({why}): every grade below is unsandboxed").format(why=why_not))
    text += lines
    if bounded:
        text.append(bounded_heading(len(bounded)))
        text += ["  " + line for line in bounded]
    if not lines and not bounded:
        text.append("  " + _("every submission was graded without trouble"))
    out = "\n".join(text) + "\n"
    (course.runtime_dir("reports") / f"{assignment}.txt").write_text(out, encoding="utf-8")
    return out
