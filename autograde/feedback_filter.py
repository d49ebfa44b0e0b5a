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

BEGIN, END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def split_hidden(source: str) -> tuple[str, list[str]]:
    """The source with each hidden block replaced by a placeholder, and the hidden lines removed."""
    kept, hidden, inside = [], [], False
    for line in source.splitlines():
        stripped = line.strip()
        if stripped.startswith(BEGIN):
            inside = True
            kept.append(line[: len(line) - len(line.lstrip())] + HideHiddenTests.placeholder.default_value)
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


class HideHiddenTests(NbGraderPreprocessor):
    """Remove the hidden tests (and anything that quotes them) from a notebook before it is rendered."""

    placeholder = Unicode("# (hidden tests ran here when your notebook was graded; they are not shown)").tag(
        config=True
    )
    redacted = Unicode("[line removed: it repeated a hidden test]").tag(config=True)

    def preprocess(self, nb, resources):
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
            self.redacted if any(h in ANSI.sub("", line) for h in self._hidden) else line for line in lines
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
        with Gradebook(found["db_url"]) as gb:
            notebook = gb.find_submission_notebook(found["notebook"], found["assignment"], found["student"])
            waiting = {g.name: g.max_score for g in pending_grades(notebook)}
        for cell in nb.cells:  # every cell's mark from the gradebook: none from the notebook a student handed in
            if "nbgrader" in cell.metadata:
                cell.metadata.nbgrader["pending"] = is_grade(cell) and cell.metadata.nbgrader.get("grade_id") in waiting
        found["pending"] = len(waiting)
        found["pending_points"] = sum(waiting.values())
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
        found["late_note"] = f"{late_sentence(lateness)} {describe_policy(self.config)}" if lateness.late else ""
        return nb, resources
