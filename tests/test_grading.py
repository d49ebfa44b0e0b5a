"""Through the instructor's pipeline (real nbgrader autograde with the judge): untouched student
notebooks score 0 without grading errors; the solutions score full marks."""

from __future__ import annotations

import pytest
from course import ASSIGNMENTS, graded_batch, solution_notebook

pytestmark = pytest.mark.slow


def _grade_cells(notebook, *, written: bool):
    """grade_id -> points of the test cells (written=False) or of the written answers (written=True)."""
    return {
        c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]["points"]
        for c in notebook.cells
        if c.metadata.get("nbgrader", {}).get("grade") and bool(c.metadata["nbgrader"].get("solution")) == written
    }


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_untouched_scores_zero_and_solution_scores_full(assignment):
    run = graded_batch(assignment)
    expected = _grade_cells(solution_notebook(assignment), written=False)
    written = _grade_cells(solution_notebook(assignment), written=True)
    untouched, solution = run.results["untouched"], run.results["solution"]
    assert written, "every notebook asks a written question"
    assert set(untouched.max_scores) == set(expected) | set(written), untouched.line()
    assert sorted(untouched.written) == sorted(written) == sorted(solution.written)
    assert untouched.total == 0, f"the untouched notebook earned points: {untouched.scores}"
    assert untouched.status == "graded", untouched.line()  # no grading error: an ordinary zero
    # a written answer left as released: nbgrader gives it 0 itself, nothing waits for a person
    assert untouched.pending == [] and "pending" not in untouched.line(), untouched.line()
    for grade_id in expected:  # each test cell failed because the answer is not written yet
        text = untouched.error_text(grade_id)
        assert "NotImplementedError" in text or "not written yet" in text, text
    autograded = {g: s for g, s in solution.scores.items() if g not in written}
    assert autograded == {k: float(v) for k, v in expected.items()}, (
        f"the solutions lost points: {solution.scores}\n" + "\n".join(solution.error_text(g) for g in expected)
    )
    assert solution.autograded_total == solution.autograded_max == sum(expected.values())
    assert solution.status == "graded", solution.line()
    # the model answers wait for a person: their points are pending, not given and not lost
    assert sorted(solution.pending) == sorted(written), solution.line()
    assert solution.pending_max == sum(written.values()) and solution.total == solution.autograded_total
    assert f"{solution.pending_max:g} points of written answers pending" in solution.line()
