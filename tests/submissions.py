"""Build submission notebooks from the released student notebook and a catalog answer."""

from __future__ import annotations

import copy
import re

import nbformat
from course import solution_notebook, student_notebook


def grade_id(cell) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def solution_sources(assignment: str) -> dict[str, str]:
    return {
        grade_id(c): c.source
        for c in solution_notebook(assignment).cells
        if c.get("metadata", {}).get("nbgrader", {}).get("solution")
    }


def submission(assignment: str, replacements: dict[str, str], *, keep_stubs: bool = False) -> nbformat.NotebookNode:
    """The student notebook with each solution cell filled: from ``replacements`` where given,
    else with the reference solution (or left as the released stub with ``keep_stubs``)."""
    notebook = copy.deepcopy(student_notebook(assignment))
    solutions = solution_sources(assignment)
    unknown = set(replacements) - set(solutions)
    if unknown:
        raise KeyError(f"{assignment} has no solution cells {sorted(unknown)}")
    for cell in notebook.cells:
        gid = grade_id(cell)
        if gid in replacements:
            cell.source = replacements[gid]
        elif gid in solutions and not keep_stubs:
            cell.source = re.sub(r"(?m)^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n?", "", solutions[gid])
    return notebook


def in_language(english: nbformat.NotebookNode, assignment: str, language: str) -> nbformat.NotebookNode:
    """The released notebook of ``language`` with every answer cell of ``english`` (the same sources, by grade id):
    the same answer, handed in by a student of the other language."""
    answers = {
        grade_id(c): c.source for c in english.cells if c.get("metadata", {}).get("nbgrader", {}).get("solution")
    }
    notebook = copy.deepcopy(student_notebook(assignment, language))
    for cell in notebook.cells:
        if grade_id(cell) in answers:
            cell.source = answers[grade_id(cell)]
    return notebook
