"""The instructor's commands after grading, as ``grade.py`` dispatches them: feedback, the reports (the text
report, the class report, the similarity page), the exports, and the due date they say.

Like ``grade.py``, only the standard library (and the package's ``i18n``) at import: each command imports the step
it runs when it runs.
"""

from __future__ import annotations

from pathlib import Path

from heads_and_masks.i18n import _, ngettext


def give_feedback(course, assignment: str, release_to_students: bool) -> None:
    """``feedback``, and the feedback step of ``all``."""
    from autograde import feedback

    files = feedback.feedback(course, assignment, release_to_students=release_to_students)
    if release_to_students:
        said = ngettext(
            "{n} feedback file, hidden tests removed, released",
            "{n} feedback files, hidden tests removed, released",
            len(files),
        )
    else:
        said = ngettext(
            "{n} feedback file, hidden tests removed", "{n} feedback files, hidden tests removed", len(files)
        )
    print(said.format(n=len(files)))


def feedback_command(course, args) -> None:
    give_feedback(course, args.assignment, args.release)


def print_report(course, assignment: str) -> None:
    """The text report of ``report``, and the last step of ``all``."""
    from autograde import report

    print(report.report(course, assignment), end="")


def report_command(course, args) -> None:
    from autograde import class_report

    print_report(course, args.assignment)
    print(set_and_say_due_date(course, args.assignment, KEEP))
    page, table = class_report.write(course, args.assignment)
    print(_("class report: {page} (open it in a browser), the same numbers in {table}").format(page=page, table=table))


def similarity_command(course, args) -> None:
    from autograde import similarity

    found, paths = similarity.write(course, args.assignment)
    print(similarity.summary(found))
    print(
        _("side by side: {page} (open it in a browser); the pairs in {table}; {picture}").format(
            page=paths["html"], table=paths["csv"], picture=paths["png"]
        )
    )


KEEP = object()  # release without --due: the due date the gradebook has stays


def read_due(text: str | None):
    """``--due`` as a naive UTC time, None for "none", or KEEP when it was not given."""
    from autograde.lateness import DueDateProblem, parse_due

    if text is None:
        return KEEP
    if text.strip().lower() == "none":
        return None
    try:
        return parse_due(text)
    except DueDateProblem as problem:
        raise SystemExit(f"error: {problem}") from None


def set_and_say_due_date(course, assignment: str, due) -> str:
    """Record ``due`` (unless KEEP) and say the assignment's due date and the course's late policy."""
    from autograde.course import due_date, set_due_date
    from autograde.late_policy import describe_policy
    from autograde.lateness import EXAMPLE, shown_time

    if due is not KEEP:
        set_due_date(course, assignment, due)
    recorded = due_date(course, assignment)
    if recorded is None:
        return _("{assignment} has no due date: no submission counts as late ({command} sets one).").format(
            assignment=assignment, command=f'make release ASSIGNMENT={assignment} DUE="{EXAMPLE}"'
        )
    return _("{assignment} is due {due}. The late policy: {policy}").format(
        assignment=assignment, due=shown_time(recorded), policy=describe_policy(course.config())
    )


def export_csv(course, output: Path | None, assignments: list[str] | None) -> None:
    """The course's CSV (``export``, and the export step of ``all``): one column per exercise."""
    from autograde import export

    output = output or course.runtime_root / "grades.csv"
    rows = export.export_grades(course, output, assignments)
    print(
        ngettext("wrote {n} row to {output}", "wrote {n} rows to {output}", len(rows)).format(
            n=len(rows), output=output
        )
    )


def export_command(course, args) -> None:
    """``export``: the course's CSV, or the file an LMS's gradebook import reads (docs/instructors.md, 5)."""
    from autograde import export

    if args.format == "csv":
        if args.per_exercise:
            raise SystemExit(
                "error: the course's CSV always has one column per exercise: --per-exercise is for canvas and moodle"
            )
        export_csv(course, args.output, args.assignments or None)
        return
    name = f"grades-{args.format}" + ("-per-exercise" if args.per_exercise else "") + ".csv"
    output = args.output or course.runtime_root / name
    rows = export.export_for_lms(course, output, args.format, args.assignments or None, args.per_exercise)
    students = len(rows) - (args.format == "canvas")  # Canvas's file starts with its row of points possible
    lms = {"canvas": "Canvas", "moodle": "Moodle"}[args.format]
    print(f"wrote {students} students to {output}, for {lms}'s gradebook import (docs/instructors.md, section 5)")
