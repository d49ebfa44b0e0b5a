"""Feedback that never shows the hidden tests, and that says which written answers wait for a person.

nbgrader's ``generate_feedback`` renders the autograded notebook, in which ``OverwriteCells`` has put
the hidden tests back: by design it shows them verbatim. ``HideHiddenTests`` runs first in
``GenerateFeedback.preprocessors`` (see ``nbgrader_config.py``) and, on a copy in memory:

* replaces each ``### BEGIN HIDDEN TESTS`` ... ``### END HIDDEN TESTS`` block of a test cell with one
  comment line;
* shortens the error of a test cell to its last line (``CheckFailed: what was expected, what came
  back, the likely mistake``): a traceback quotes the source line that failed, which may be a hidden
  test;
* redacts any output line, in any cell, that repeats a line of a hidden test (student code that
  printed the tests while it was graded gets nothing out of it).

The autograded notebooks on disk (the instructor's record) keep everything.

``SayPending`` runs after nbgrader's ``GetGrades``: a written answer that nobody has graded yet has no score,
and nbgrader's page would show it as "Score: 0.0 / 2.0"; it marks those cells (and counts them and their
points) so that the course's feedback template (``templates/feedback``) says "pending" instead, as the
report and the CSV do.

``SayLate`` writes the sentence a late submission's feedback opens with: how long after the due date it came,
the points the late policy took, and the policy in words (late_policy.py), from the gradebook.
"""

from __future__ import annotations

import re

from nbgrader.api import Gradebook
from nbgrader.preprocessors import NbGraderPreprocessor
from nbgrader.utils import is_grade, is_solution
from traitlets import Unicode

from heads_and_masks.i18n import N_, ngettext, number, translated, use_language


BEGIN, END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def split_hidden(source: str) -> tuple[str, list[str]]:
    """The source with each hidden block replaced by a placeholder, and the hidden lines removed."""
    kept, hidden, inside = [], [], False
    for line in source.splitlines():
        stripped = line.strip()
        if stripped.startswith(BEGIN):
            inside = True
            kept.append(line[: len(line) - len(line.lstrip())] + translated(HideHiddenTests.placeholder.default_value))
        elif stripped.startswith(END):
            inside = False
        elif inside:
            hidden.append(line)
        else:
            kept.append(line)
    return "\n".join(kept), hidden


def _text(output) -> str:
    text = output.get("text", "")
    return "".join(text) if isinstance(text, list) else text


def feedback_language(nb) -> str:
    """The language a feedback page is written in: the graded notebook's. Its metadata is its release's (nbgrader's
    sanitize step put it there: adopt_release.AdoptRelease), so this is the language the submission was graded in."""
    from .adopt_release import submission_language

    return submission_language(nb.metadata)


def pending_sentence(answers: int, points: float) -> str:
    """How many written answers wait for a person, and that the score counts them as 0 until then."""
    return ngettext(
        "{n} written answer ({points} points) is not graded yet: your teacher reads it and gives its points "
        "later, so this score counts it as 0 for now.",
        "{n} written answers ({points} points) are not graded yet: your teacher reads them and gives their "
        "points later, so this score counts them as 0 for now.",
        answers,
    ).format(n=answers, points=number(points, ".1f"))  # as the page shows every score: 2.0


# The feedback page's own words (templates/feedback/index.html.j2 shows ``resources.nbgrader.texts.<name>``),
# marked here for the catalogs and said in the submission's language by SayInLanguage.
PAGE_TEXTS = {
    "notebook_score": N_("{notebook} (Score: {score} / {points})"),
    "test_cell": N_("Test cell"),
    "coding_answer": N_("Coding free-response"),
    "written_answer": N_("Written response"),
    "task": N_("Task"),
    "comment": N_("Comment"),
    "late_penalty": N_("Late submission penalty (Score: -{points})"),
    "score": N_("Score: {score} / {points}"),
    "score_pending": N_("Score: pending / {points}, not graded yet"),
    "top": N_("(Top)"),
    "students_answer": N_("Student's answer"),
    "students_task": N_("Student's task"),
    "grade_cell": N_("Grade cell: {grade_id}"),
    "task_cell": N_("Task: {grade_id}"),
    "comments": N_("Comments:"),
}


class SayInLanguage(NbGraderPreprocessor):
    """The feedback page's words in the language of the notebook the student submitted
    (``resources["nbgrader"]["texts"]``, ``["language"]``: the page's ``lang`` attribute, for screen readers)."""

    def preprocess(self, nb, resources):
        language = feedback_language(nb)
        with use_language(language):
            texts = {name: translated(text) for name, text in PAGE_TEXTS.items()}
        resources.setdefault("nbgrader", {}).update(language=language, texts=texts)
        return nb, resources


class HideHiddenTests(NbGraderPreprocessor):
    """Remove the hidden tests (and anything that quotes them) from a notebook before it is rendered."""

    placeholder = Unicode(N_("# (hidden tests ran here when your notebook was graded; they are not shown)")).tag(
        config=True
    )
    redacted = Unicode(N_("[line removed: it repeated a hidden test]")).tag(config=True)

    def preprocess(self, nb, resources):
        with use_language(feedback_language(nb)):  # the placeholder and the redaction note in the student's
            return self._hide(nb, resources)

    def _hide(self, nb, resources):
        hidden: set[str] = set()
        self._test_cells = set()
        for index, cell in enumerate(nb.cells):
            if cell.cell_type == "code" and (is_grade(cell) and not is_solution(cell) or BEGIN in cell.source):
                cell.source, lines = split_hidden(cell.source)
                hidden |= {line.strip() for line in lines if len(line.strip()) >= 8}
                self._test_cells.add(index)
        self._hidden = hidden
        return super().preprocess(nb, resources)

    def _redact(self, text: str) -> str:
        if not self._hidden:
            return text
        lines = text.split("\n")
        return "\n".join(
            translated(self.redacted) if any(h in ANSI.sub("", line) for h in self._hidden) else line for line in lines
        )

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type != "code":
            return cell, resources
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                if index in self._test_cells:
                    output.traceback = [f"{output.ename}: {output.evalue}"]
                output.evalue = self._redact(output.evalue)
                output.traceback = [self._redact(line) for line in output.traceback]
            elif output.output_type == "stream":
                output.text = self._redact(_text(output))
            else:
                data = output.get("data", {})
                for mime in list(data):
                    if mime.startswith("text/") or mime in ("application/json", "application/javascript"):
                        value = data[mime]
                        value = "".join(value) if isinstance(value, list) else value
                        if isinstance(value, str):
                            data[mime] = self._redact(value)
        return cell, resources


class SayPending(NbGraderPreprocessor):
    """Mark the written answers that wait for a person (``cell.metadata.nbgrader.pending``) and count them
    with their points (``resources["nbgrader"]["pending"]``, ``["pending_points"]``) for the template."""

    def preprocess(self, nb, resources):
        from .results import pending_grades

        found = resources["nbgrader"]
        language = feedback_language(nb)
        with Gradebook(found["db_url"]) as gb:
            notebook = gb.find_submission_notebook(found["notebook"], found["assignment"], found["student"])
            waiting = {g.name: g.max_score for g in pending_grades(notebook)}
        for cell in nb.cells:  # every cell's mark from the gradebook: none from the notebook a student handed in
            if "nbgrader" in cell.metadata:
                cell.metadata.nbgrader["pending"] = is_grade(cell) and cell.metadata.nbgrader.get("grade_id") in waiting
        found["pending"] = len(waiting)
        found["pending_points"] = sum(waiting.values())
        with use_language(language):
            found["pending_note"] = pending_sentence(found["pending"], found["pending_points"])
        return nb, resources


class SayLate(NbGraderPreprocessor):
    """For a submission that came after the due date: what it cost and the course's late policy, in whole
    sentences (``resources["nbgrader"]["late_note"]``, empty when it came on time) for the template."""

    def preprocess(self, nb, resources):
        from .late_policy import describe_policy
        from .lateness import Lateness, late_sentence

        found = resources["nbgrader"]
        with Gradebook(found["db_url"]) as gb:
            lateness = Lateness.of(gb.find_submission(found["assignment"], found["student"]))
        with use_language(feedback_language(nb)):
            found["late_note"] = f"{late_sentence(lateness)} {describe_policy(self.config)}" if lateness.late else ""
        return nb, resources
