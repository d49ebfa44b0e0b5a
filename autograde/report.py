"""Step 7, the report: what went wrong, per student, in plain words (also written to ``reports/``).

One line per assignment with the count of each status, a line for the written answers that wait for a
person (formgrader), then a line for every student whose submission needs a look (a failure, a note),
a line for every submission that hit a bound of the class run (bounds.py: which bound, and its cost,
whatever its status), and a warning on top when grading ran unsandboxed.
"""

from __future__ import annotations

from heads_and_masks.i18n import ngettext

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
        "  written answers pending: {n} student, {points:g} points to grade by hand in the formgrader",
        "  written answers pending: {n} students, {points:g} points to grade by hand in the formgrader",
        n_students,
    )
    return template.format(n=n_students, points=points)


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
            lines.append(
                printable(f"  {student}: {status}")
                + (": run `grade.py autograde` again" if submitted else ": nothing was submitted")
            )
            continue
        counts[result.status] += 1
        if result.written:  # as it is now: a person may have graded some since
            result.pending = pending_from_gradebook(course, assignment, student)
            waiting.append(result)
        if result.status != Status.GRADED:
            lines.append("  " + result.line())
        if result.limits:
            bounded.append(printable(f"  {student}: " + "; ".join(result.limits)))
    summary = ", ".join(f"{n} {status}" for status, n in counts.items() if n)
    text = [headline(assignment, len(everyone), summary or "nobody yet")]
    waiting = [r for r in waiting if r.pending]
    if waiting:
        text.append(pending_line(len(waiting), sum(r.pending_max for r in waiting)))
    sandboxed, why_not = sandbox_state()
    if not sandboxed:
        text.insert(0, f"WARNING: graded UNSANDBOXED ({why_not}): every grade below is unsandboxed")
    text += lines
    if bounded:
        many = "submissions" if len(bounded) > 1 else "submission"
        text.append(f"  {len(bounded)} {many} hit a bound of the class run (docs/instructors.md, Bounds):")
        text += ["  " + line for line in bounded]
    if not lines and not bounded:
        text.append("  every submission was graded without trouble")
    out = "\n".join(text) + "\n"
    (course.runtime_dir("reports") / f"{assignment}.txt").write_text(out, encoding="utf-8")
    return out
