"""Grading that cannot be gamed: every attack of the catalog earns nothing on the exercise it
attacks, a probe from inside the grading kernel finds no network, solutions or gradebook, and the
honest answers graded in the same runs keep full marks (tests/test_grading.py)."""

from __future__ import annotations

import ast

import pytest
from catalog.attacks import ATTACKS
from course import graded_batch

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: f"{a.assignment}:{a.name}")
def test_attack_earns_nothing(attack):
    result = graded_batch(attack.assignment).results[f"attack-{attack.name}"]
    attacked = [g for g in result.scores if g.startswith(f"test_{attack.exercise}")]
    if attack.tests:
        attacked = [g for g in attacked if g in attack.tests]
    assert attacked, result.line()
    earned = sum(result.scores[g] for g in attacked)
    assert earned == 0, f"{attack.why}: earned {earned} ({result.scores}; {result.line()})"


def test_probe_finds_nothing_from_inside_the_grading_kernel():
    result = graded_batch("00_start_here").results["probe"]
    printed = [
        o.get("text", "")
        for c in result.notebook.cells
        for o in c.get("outputs", [])
        if o.get("output_type") == "stream" and "PROBE" in o.get("text", "")
    ]
    assert printed, "the probe printed nothing"
    found = ast.literal_eval(printed[0].split("PROBE", 1)[1].strip())
    assert found["internet"] is False, found
    for what in (
        "solutions",
        "authoring",
        "gradebooks",
        "other_submissions",
        "root_home",
        "course_root",
        "environment",
    ):
        assert not found[what], f"the grading kernel could see {what}: {found[what]}"
    assert result.autograded_total == result.autograded_max > 0, "the probe's own answers are the solution"
    assert result.pending == result.written != [], "the model written answers wait for a person"
