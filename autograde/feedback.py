"""Step 5, feedback: what each student gets back, without the hidden tests.

nbgrader's feedback HTML, made with the hidden tests removed (``feedback_filter.py``), checked line by
line against the hidden tests of the source (a page that shows one is withheld, and the student's
result says so), then released through nbgrader's exchange, or zipped for an LMS.

nbgrader releases a page under a name made from the submission's secret (``submission_secret.txt``) and
the notebook's name, in a folder no student can list: whoever knows the secret fetches the page. The secret
is collected only from the exchange, from a folder the student's own account owns (``collect.py``), so the
page reaches that account; a secret two students share (read from a classmate's files) releases neither page.
"""

from __future__ import annotations

import html as html_module
import re
import shutil
import zipfile
from pathlib import Path

import nbformat

from .course import Course
from .feedback_filter import split_hidden
from .results import read_results, write_result


def hidden_lines(course: Course, assignment: str) -> set[str]:
    """The lines of the assignment's hidden tests (from the source), for checking feedback."""
    lines = set()
    for path in course.path("source", assignment=assignment).glob("*.ipynb"):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                lines |= {line.strip() for line in split_hidden(cell.source)[1] if len(line.strip()) >= 8}
    return lines


def leaked_lines(html: str, hidden: set[str]) -> list[str]:
    text = html_module.unescape(re.sub(r"<[^>]+>", "", html))
    return sorted(line for line in hidden if line in text)


def feedback(
    course: Course, assignment: str, release_to_students: bool = False, students: list[str] | None = None
) -> list[Path]:
    """Generate each student's feedback (HTML, hidden tests removed), check it, optionally release it.

    One student at a time: a problem with one submission's feedback is a note in that student's
    result, never the end of the run. Released through the exchange for students who submitted
    there; for the others (an LMS zip, a folder) one zip to upload back: ``feedback/<assignment>-for-lms.zip``.
    """
    hidden = hidden_lines(course, assignment)
    results = read_results(course, assignment)
    files: list[Path] = []
    through_exchange: list[str] = []
    for student in sorted(results if students is None else set(students) & set(results)):
        result = results[student]
        if not course.path("autograded", student, assignment).is_dir():
            continue
        folder = course.path("feedback", student, assignment)
        problem = None
        try:
            course.nbgrader("generate_feedback", assignment, student)
            made = sorted(folder.glob("*.html"))
            for path in made:
                leaks = leaked_lines(path.read_text(encoding="utf-8", errors="replace"), hidden)
                if leaks:
                    problem = "its feedback showed a line of the hidden tests and was withheld"
            if problem:
                shutil.rmtree(folder, ignore_errors=True)
            else:
                files += made
                if (course.path("submitted", student, assignment) / "submission_secret.txt").is_file():
                    through_exchange.append(student)
        except Exception as error:  # noqa: BLE001
            problem = f"no feedback could be made ({type(error).__name__}: {str(error)[:200]})"
            shutil.rmtree(folder, ignore_errors=True)
        if problem and problem not in result.notes:
            result.notes.append(problem)
            write_result(course, result)
    if release_to_students:
        through_exchange = released_alone(course, assignment, through_exchange, results)
        for student in through_exchange:
            for page in course.path("feedback", student, assignment).glob("*.html"):
                # nbgrader's copy keeps the mode, and grading's umask made it 0600: the student could not read it
                page.chmod(0o644)  # (its folder here stays the instructor's alone)
            answer = course.nbgrader("release_feedback", assignment, student, check=False)
            if not answer["success"]:
                result = results[student]
                result.notes.append(
                    "its feedback could not be released through the exchange: "
                    + last_error_line(answer["log"] + answer["error"])
                )
                write_result(course, result)
        others = [p for p in files if p.parts[-3] not in through_exchange]
        if others:
            bundle = course.path("feedback") / f"{assignment}-for-lms.zip"
            with zipfile.ZipFile(bundle, "w", zipfile.ZIP_DEFLATED) as archive:
                for path in others:
                    archive.write(path, f"{path.parts[-3]}/{path.name}")
    return files


def released_alone(course: Course, assignment: str, students: list[str], results: dict) -> list[str]:
    """The students whose submission secret no other student has: a shared one was copied from a classmate,
    and releasing under it would hand one student's feedback to the other (each student's result says so)."""
    secrets: dict[str, list[str]] = {}
    for student in students:
        try:
            secret = (course.path("submitted", student, assignment) / "submission_secret.txt").read_bytes().strip()
        except OSError:  # gone since: nothing to release under it
            continue
        secrets.setdefault(secret, []).append(student)
    alone = []
    for group in secrets.values():
        if len(group) == 1:
            alone += group
            continue
        for student in group:
            others = ", ".join(other for other in group if other != student)
            note = (
                f"its submission secret is also {others}'s: its feedback was not released through the exchange "
                "(whoever knows the secret could fetch it); it is in the LMS zip"
            )
            if note not in results[student].notes:
                results[student].notes.append(note)
                write_result(course, results[student])
    return sorted(alone)


def last_error_line(log: str) -> str:
    """The line of a log that most likely says what went wrong."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    for line in reversed(lines):
        if "Error" in line or "error" in line:
            return line[:300]
    return lines[-1][:300] if lines else "(no log)"
