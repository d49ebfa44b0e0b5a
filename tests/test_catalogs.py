"""Every catalog of sample answers, graded with the real nbgrader autograde.

Correct answers in any style earn full marks; each realistic mistake loses points on the exercise
it breaks (and only there), with a failure message naming the misconception.
"""
from __future__ import annotations

import functools
import tempfile
from pathlib import Path

import pytest
from catalog import catalogs
from course import SANDBOX_ARGS, require_sandbox, solution_notebook
from grading import autograde
from submissions import submission
from verify import verify_notebook

pytestmark = pytest.mark.slow
CATALOGS = catalogs()
CASES = [(assignment, answer) for assignment, answers in sorted(CATALOGS.items()) for answer in answers]


@functools.cache
def graded(assignment: str):
    """Grade the whole catalog of one assignment in a single nbgrader run, in sandboxed kernels."""
    require_sandbox()
    answers = CATALOGS[assignment]
    names = [a.name for a in answers]
    assert len(set(names)) == len(names), "answer names must be unique"
    submissions = {a.name: submission(assignment, {k: a.source(k) for k in a.cells}, keep_stubs=a.untouched)
                   for a in answers}
    return submissions, autograde(assignment, submissions, extra_args=SANDBOX_ARGS)


def _exercise_cells(assignment, exercise):
    return [c.metadata["nbgrader"]["grade_id"] for c in solution_notebook(assignment).cells
            if c.metadata.get("nbgrader", {}).get("grade")
            and c.metadata["nbgrader"]["grade_id"].startswith(f"test_{exercise}")]


def test_every_catalog_has_correct_and_wrong_answers():
    for assignment, answers in CATALOGS.items():
        assert sum(a.correct for a in answers) >= 3, f"{assignment}: at least three correct styles"
        assert sum(a.breaks is not None for a in answers) >= 3, f"{assignment}: too few wrong answers"


@pytest.mark.parametrize("assignment,answer", CASES, ids=[f"{a}:{x.name}" for a, x in CASES])
def test_catalog_answer(assignment, answer):
    submissions, results = graded(assignment)
    result = results[answer.name]
    assert result.max_scores, f"no grades recorded for {answer.name}:\n{result.log[-3000:]}"
    if answer.untouched:
        assert result.total == 0, result.scores
    elif answer.correct:
        lost = {g: (s, result.max_scores[g]) for g, s in result.scores.items() if s < result.max_scores[g]}
        assert not lost, f"a correct answer lost points: {lost}\n" + "\n".join(result.error_text(g) for g in lost)
        # the trusted re-check (answers called from the grader's process) agrees
        with tempfile.TemporaryDirectory() as workdir:
            verdicts = verify_notebook(solution_notebook(assignment), submissions[answer.name], Path(workdir))
        refused = {g: v.message for g, v in verdicts.items() if not v.passed}
        assert not refused, f"the trusted re-check refused a correct answer: {refused}"
    else:
        broken = _exercise_cells(assignment, answer.breaks)
        assert broken, f"no test cells for exercise {answer.breaks}"
        earned = sum(result.scores[g] for g in broken)
        possible = sum(result.max_scores[g] for g in broken)
        assert earned < possible, f"the mistake '{answer.name}' was not caught: {earned}/{possible} on {answer.breaks}"
        others = {g: s for g, s in result.scores.items() if g not in broken and s < result.max_scores[g]}
        assert not others, f"the mistake '{answer.name}' also cost points elsewhere: {others}"
        text = "\n".join(result.error_text(g) for g in broken if result.scores[g] < result.max_scores[g]).lower()
        for phrase in answer.phrases:
            assert phrase.lower() in text, f"the failure message does not name the misconception ({phrase!r}):\n{text}"
