"""The course's Validate: nbgrader's checks, in words for a learner.

nbgrader's own Validate says "The following cell failed" above a written answer left blank, and "You did not
provide a response." under it: it names no question and says nothing of what to write. ``CourseValidator``
says which written question is still unanswered, quotes what it asks, and where to write; a failing test cell
is shown as a check that did not pass, with the check's own message (the course's checks print one sentence
after ✗).

nbgrader builds its ``Validator`` by name, in ``nbgrader validate`` and in the Validate button's server handler,
and has no setting for another class: ``use_course_validator()``, called from the nbgrader configuration files
that these two read (tools/lab_config/ for the learner's lab, autograde/ for the instructor's), puts this class
in both places before either builds one.
"""

from __future__ import annotations

import re
import textwrap

from nbformat import NotebookNode
from nbgrader import utils
from nbgrader.validator import Validator

BLANK_ANSWER = "YOUR ANSWER HERE"


def is_blank_written_answer(cell: NotebookNode) -> bool:
    """A written answer (markdown, graded by a person) still as it was handed out."""
    return cell.cell_type == "markdown" and utils.is_solution(cell) and cell.source.strip() == BLANK_ANSWER


def written_question(cells: list[NotebookNode], index: int) -> tuple[str, str]:
    """(title, what it asks) of the question above the answer at ``index``: the nearest markdown cell before it."""
    for cell in reversed(cells[:index]):
        if cell.cell_type != "markdown":
            continue
        lines = cell.source.strip().splitlines()
        heading = next((line for line in lines if line.startswith("#")), "")
        title = heading.lstrip("#").split(":", 1)[-1].strip()
        body = " ".join(line.strip() for line in lines if not line.startswith("#"))
        asked = re.split(r"\s*Answer in\b", body, maxsplit=1)[0].strip()
        return title, asked
    return "", ""


def blank_answer_message(title: str, asked: str) -> str:
    """One whole message per case: a translator and a screen reader get sentences, not fragments."""
    if title:
        return (
            f"Your answer to the written question “{title}” is still blank. The question asks: {asked} "
            f"Write two to four sentences in your own words in the answer cell below it, in place of "
            f"{BLANK_ANSWER}. A person grades this answer: no automatic check can pass it."
        )
    return (
        f"A written answer is still blank. Write two to four sentences in your own words in its cell, in place "
        f"of {BLANK_ANSWER}. A person grades this answer: no automatic check can pass it."
    )


class CourseValidator(Validator):
    """nbgrader's Validator whose failures say, for a learner, what is missing and what to do."""

    def _get_failed_cells(self, nb: NotebookNode) -> list[NotebookNode]:
        # what each blank written answer asks, kept for _extract_error (which sees only the cell)
        self._blank_answers = {
            id(cell): blank_answer_message(*written_question(nb.cells, index))
            for index, cell in enumerate(nb.cells)
            if is_blank_written_answer(cell)
        }
        return super()._get_failed_cells(nb)

    def _extract_error(self, cell: NotebookNode) -> str:
        if id(cell) in getattr(self, "_blank_answers", {}):
            return self._blank_answers[id(cell)]
        return super()._extract_error(cell)

    def _print_error(self, source: str, error: str) -> None:
        self.stream.write("\n" + "=" * self.width + "\n")
        if source.strip() == BLANK_ANSWER:
            # wrapped, not cut: nbgrader's _indent cuts each line at the width
            self.stream.write(self._indent(textwrap.fill(error, self.width - len(self.indent) - 3)) + "\n\n")
            return
        self.stream.write("This check did not pass:\n\n")
        self.stream.write(self._indent(source) + "\n\n")
        self.stream.write("What it found:\n\n")
        self.stream.write(self._indent(error) + "\n\n")


def use_course_validator() -> None:
    """Make ``nbgrader validate`` and the Validate button build a CourseValidator."""
    from nbgrader.apps import validateapp
    from nbgrader.server_extensions.validate_assignment import handlers

    validateapp.Validator = CourseValidator
    handlers.Validator = CourseValidator
