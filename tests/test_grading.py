"""Through the real `nbgrader autograde`: untouched student notebooks score 0 without grading
errors; the solutions score full marks."""
from __future__ import annotations

import pytest
from course import ASSIGNMENTS, solution_notebook, student_notebook
from grading import autograde

pytestmark = pytest.mark.slow


def _grade_cells(notebook):
    return {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]["points"]
            for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade")}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_untouched_scores_zero_and_solution_scores_full(assignment):
    results = autograde(assignment, {"untouched": student_notebook(assignment),
                                     "solution": solution_notebook(assignment)})
    expected = _grade_cells(solution_notebook(assignment))
    untouched, solution = results["untouched"], results["solution"]
    assert set(untouched.max_scores) == set(expected), untouched.log
    assert untouched.total == 0, f"the untouched notebook earned points: {untouched.scores}"
    for grade_id in expected:  # each test cell failed on NotImplementedError, not on a grading error
        assert "NotImplementedError" in untouched.error_text(grade_id), untouched.error_text(grade_id)
    assert solution.scores == {k: float(v) for k, v in expected.items()}, (
        f"the solutions lost points: {solution.scores}\n" + "\n".join(solution.error_text(g) for g in expected))
