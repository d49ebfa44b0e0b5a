"""Step 5, feedback: what each student gets back, without the hidden tests.

nbgrader's feedback HTML, made with the hidden tests removed (``feedback_filter.py``), checked line by
line against the hidden tests of the source (a page that shows one is withheld, and the student's
result says so), then released through nbgrader's exchange, or zipped for an LMS.

nbgrader releases a page under a name made from the submission's secret (``submission_secret.txt``) and
the notebook's name, in a folder no student can list: whoever knows the secret fetches the page. The secret
is collected only from the exchange, from a folder the student's own account owns (``collect.py``), so the
page reaches that account; a secret two students share (read from a classmate's files) releases neither page.

Each student's page is made in a process of its own, forked from the grading command's fork server,
with a time and a memory limit (``bounds.FEEDBACK_SECONDS``, ``bounds.FEEDBACK_MEMORY_MB``): a page
that needs more is not made, the student's result says which bound and what it cost, and the next
student's page is made all the same.
"""

from __future__ import annotations

import html as html_module
import multiprocessing
import re
import resource
import shutil
import time
import zipfile
from pathlib import Path

import nbformat

from .worker import fork_server
from .bounds import FEEDBACK_MEMORY_MB, FEEDBACK_SECONDS
from .course import Course, last_error_line
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


class FeedbackLimit(RuntimeError):
    """A student's feedback page needed more time or memory than its bound: ``limit`` says which, with the cost."""

    def __init__(self, note: str, limit: str):
        super().__init__(note)
        self.limit = limit


PAGE_NOT_MADE = "its feedback page was not made"


class PageFailed(RuntimeError):
    """nbgrader could not make a student's feedback page (its message says why)."""


def _make_page(course: Course, assignment: str, student: str, memory_mb: int, answer) -> None:
    """In the page's own process: nbgrader's generate_feedback under the memory limit; what happened, to ``answer``."""
    limit = memory_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        course.nbgrader("generate_feedback", assignment, student)
        answer.send(("made", ""))
    except Exception as error:  # noqa: BLE001 - said by the parent, in the student's result
        # Memory refused surfaces as any error at all, wherever an allocation failed (nbgrader logs a
        # SystemError, a MemoryError...): the process's peak address space says whether it was the limit.
        answer.send(("memory" if _peak_bytes() > 0.9 * limit else "failed", f"{type(error).__name__}: {error}"[:300]))


def _peak_bytes() -> int:
    """The peak address space of this process (``VmPeak``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmPeak:"):
            return int(line.split()[1]) * 1024
    return 0


def make_page(
    course: Course,
    assignment: str,
    student: str,
    seconds: float = FEEDBACK_SECONDS,
    memory_mb: int = FEEDBACK_MEMORY_MB,
) -> float:
    """Make one student's feedback page in a process of its own, within ``seconds`` and ``memory_mb``; the
    seconds it took. FeedbackLimit when it needed more (the process is ended), PageFailed when nbgrader failed."""
    fork_server.start()  # (already running in a grading command: its children start with nbgrader imported)
    context = multiprocessing.get_context("forkserver")
    receive, send = context.Pipe(duplex=False)
    started = time.monotonic()
    process = context.Process(target=_make_page, args=(course, assignment, student, memory_mb, send), daemon=True)
    process.start()
    send.close()
    try:
        if not receive.poll(seconds):
            process.kill()
            took = time.monotonic() - started
            raise FeedbackLimit(
                f"{PAGE_NOT_MADE}: it took longer than {seconds:g} s",
                f"feedback time: stopped after {took:.0f} s (the limit is {seconds:g} s)",
            )
        try:
            outcome, detail = receive.recv()
        except EOFError:  # the process ended without a word: killed (SIGKILL: the system's OOM killer) or crashed
            outcome, detail = "", ""
    finally:
        process.join(5)
        if process.is_alive():
            process.kill()
        receive.close()
    if not outcome:
        outcome = "memory" if process.exitcode == -9 else "failed"
        detail = f"the process that made it ended with code {process.exitcode}"
    took = time.monotonic() - started
    if outcome == "memory":
        raise FeedbackLimit(
            f"{PAGE_NOT_MADE}: it needed more than {memory_mb} MiB of memory",
            f"feedback memory: more than {memory_mb} MiB, after {took:.0f} s",
        )
    if outcome != "made":
        raise PageFailed(detail)
    return took


def feedback(
    course: Course,
    assignment: str,
    release_to_students: bool = False,
    students: list[str] | None = None,
    *,
    seconds: float = FEEDBACK_SECONDS,
    memory_mb: int = FEEDBACK_MEMORY_MB,
) -> list[Path]:
    """Generate each student's feedback (HTML, hidden tests removed), check it, optionally release it.

    One student at a time, each page in a process of its own within ``seconds`` and ``memory_mb``
    (``make_page``): a problem with one submission's feedback, or a page over its bound, is a note in
    that student's result, never the end of the run nor a wait for the others. Released through the
    exchange for students who submitted there; for the others (an LMS zip, a folder) one zip to upload
    back: ``feedback/<assignment>-for-lms.zip``.
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
            make_page(course, assignment, student, seconds, memory_mb)
            made = sorted(folder.glob("*.html"))
            for path in made:
                leaks = leaked_lines(path.read_text(encoding="utf-8", errors="replace"), hidden)
                if leaks:
                    problem = "its feedback showed a line of the hidden tests and was withheld"
            if problem:
                shutil.rmtree(folder, ignore_errors=True)
            else:
                files += made
                if any(line.startswith("feedback ") for line in result.limits):  # over its bound last time, not now
                    result.limits = [line for line in result.limits if not line.startswith("feedback ")]
                    result.notes = [note for note in result.notes if not note.startswith(PAGE_NOT_MADE)]
                    write_result(course, result)
                if (course.path("submitted", student, assignment) / "submission_secret.txt").is_file():
                    through_exchange.append(student)
        except FeedbackLimit as bound:
            problem = str(bound)
            result.limits = [*(line for line in result.limits if not line.startswith("feedback ")), bound.limit]
            shutil.rmtree(folder, ignore_errors=True)
        except Exception as error:  # noqa: BLE001 - one student's page that fails never stops the others'; the report says why
            why = str(error) if isinstance(error, PageFailed) else f"{type(error).__name__}: {str(error)[:200]}"
            problem = f"no feedback could be made ({why})"
            shutil.rmtree(folder, ignore_errors=True)
        if problem and problem not in result.notes:
            result.notes.append(problem)
        if problem:
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
