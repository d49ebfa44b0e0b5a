"""Through the instructor's pipeline (real nbgrader autograde with the judge): untouched student
notebooks score 0 without grading errors; the solutions score full marks."""

from __future__ import annotations

import pytest
from course import ASSIGNMENTS, graded_batch, solution_notebook

pytestmark = pytest.mark.slow


def _grade_cells(notebook):
    return {
        c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]["points"]
        for c in notebook.cells
        if c.metadata.get("nbgrader", {}).get("grade")
    }


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_untouched_scores_zero_and_solution_scores_full(assignment):
    run = graded_batch(assignment)
    expected = _grade_cells(solution_notebook(assignment))
    untouched, solution = run.results["untouched"], run.results["solution"]
    assert set(untouched.max_scores) == set(expected), untouched.line()
    assert untouched.total == 0, f"the untouched notebook earned points: {untouched.scores}"
    assert untouched.status == "graded", untouched.line()  # no grading error: an ordinary zero
    for grade_id in expected:  # each test cell failed because the answer is not written yet
        text = untouched.error_text(grade_id)
        assert "NotImplementedError" in text or "not written yet" in text, text
    assert solution.scores == {k: float(v) for k, v in expected.items()}, (
        f"the solutions lost points: {solution.scores}\n" + "\n".join(solution.error_text(g) for g in expected)
    )
    assert solution.status == "graded", solution.line()
