"""Every catalog of sample answers, graded with the real nbgrader autograde.

Correct answers in any style earn full marks; each realistic mistake loses points on the exercise
it breaks (and only there), with a failure message naming the misconception.
"""

from __future__ import annotations

import pytest
from catalog import catalogs
from course import graded_batch, solution_notebook

pytestmark = pytest.mark.slow
CATALOGS = catalogs()
CASES = [(assignment, answer) for assignment, answers in sorted(CATALOGS.items()) for answer in answers]


def _exercise_cells(assignment, exercise):
    return [
        c.metadata["nbgrader"]["grade_id"]
        for c in solution_notebook(assignment).cells
        if c.metadata.get("nbgrader", {}).get("grade")
        and c.metadata["nbgrader"]["grade_id"].startswith(f"test_{exercise}")
    ]


def test_every_catalog_has_correct_and_wrong_answers():
    for assignment, answers in CATALOGS.items():
        assert sum(a.correct for a in answers) >= 3, f"{assignment}: at least three correct styles"
        assert sum(a.breaks is not None for a in answers) >= 3, f"{assignment}: too few wrong answers"
        names = [a.name for a in answers]
        assert len(set(names)) == len(names), f"{assignment}: answer names must be unique"


@pytest.mark.parametrize("assignment,answer", CASES, ids=[f"{a}:{x.name}" for a, x in CASES])
def test_catalog_answer(assignment, answer):
    result = graded_batch(assignment).results[f"catalog-{answer.name}"]
    assert result.max_scores, f"no grades recorded for {answer.name}: {result.line()}"
    if answer.untouched:
        assert result.total == 0, result.scores
    elif answer.correct:
        # written answers are graded by a person (here the model answers, pending), not by the autograder
        lost = {
            g: (s, result.max_scores[g])
            for g, s in result.scores.items()
            if g not in result.written and s < result.max_scores[g]
        }
        assert not lost, f"a correct answer lost points: {lost}\n" + "\n".join(result.error_text(g) for g in lost)
    else:
        broken = _exercise_cells(assignment, answer.breaks)
        assert broken, f"no test cells for exercise {answer.breaks}"
        earned = sum(result.scores[g] for g in broken)
        possible = sum(result.max_scores[g] for g in broken)
        assert earned < possible, f"the mistake '{answer.name}' was not caught: {earned}/{possible} on {answer.breaks}"
        allowed = broken + [g for e in answer.cascades for g in _exercise_cells(assignment, e)] + result.written
        others = {g: s for g, s in result.scores.items() if g not in allowed and s < result.max_scores[g]}
        assert not others, f"the mistake '{answer.name}' also cost points elsewhere: {others}"
        text = "\n".join(result.error_text(g) for g in broken if result.scores[g] < result.max_scores[g]).lower()
        for phrase in answer.phrases:
            assert phrase.lower() in text, f"the failure message does not name the misconception ({phrase!r}):\n{text}"
