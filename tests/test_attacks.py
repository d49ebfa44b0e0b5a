"""Grading that cannot be gamed: every attack of the catalog earns nothing on the exercise it
attacks, probes from inside the grading kernel find no network, solutions or gradebook, and an
honest answer still earns full marks in the sandbox."""
from __future__ import annotations

import ast
import functools
import tempfile
from pathlib import Path

import pytest
from catalog.attacks import ATTACKS, PROBE
from course import SANDBOX_ARGS, require_sandbox, solution_notebook
from grading import autograde
from submissions import submission
from verify import trusted_scores, verify_notebook

pytestmark = pytest.mark.slow
ASSIGNMENT = "00_start_here"


def _attacked(attack):
    return submission(attack.assignment, {attack.exercise: attack.source.strip("\n")})


@functools.cache
def graded(assignment=ASSIGNMENT):
    """Every attack on one assignment graded in one nbgrader run (plus, for 00, a probe and an honest answer)."""
    require_sandbox()
    submissions = {a.name: _attacked(a) for a in ATTACKS if a.assignment == assignment}
    if assignment == ASSIGNMENT:
        probe = submission(ASSIGNMENT, {})
        probe.cells.insert(1, __import__("nbformat").v4.new_code_cell(PROBE))
        submissions["probe"] = probe
        submissions["honest"] = submission(ASSIGNMENT, {})
    results = autograde(assignment, submissions, extra_args=SANDBOX_ARGS)
    return submissions, results


def _final(name, assignment=ASSIGNMENT):
    submissions, results = graded(assignment)
    with tempfile.TemporaryDirectory() as workdir:
        verdicts = verify_notebook(solution_notebook(assignment), submissions[name], Path(workdir))
    return results[name], trusted_scores(results[name].scores, verdicts), verdicts


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: f"{a.assignment}:{a.name}")
def test_attack_earns_nothing(attack):
    result, final, verdicts = _final(attack.name, attack.assignment)
    attacked = [g for g in final if g.startswith(f"test_{attack.exercise}")]
    assert attacked
    earned = sum(final[g] for g in attacked)
    assert earned == 0, (f"{attack.why}: earned {earned} after the trusted re-check "
                         f"(nbgrader alone gave {result.scores}; verdicts {verdicts})")


def test_honest_answer_keeps_full_marks_in_the_sandbox():
    result, final, verdicts = _final("honest")
    assert final == result.max_scores, (final, {g: v.message for g, v in verdicts.items()})


def test_probe_finds_no_network_no_solutions_no_gradebook():
    _, results = graded(ASSIGNMENT)
    notebook = results["probe"].notebook
    assert notebook is not None
    text = "".join(o.get("text", "") for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", []))
    line = next((l for l in text.splitlines() if l.startswith("PROBE ")), None)
    assert line, f"the probe did not run: {text[:2000]}"
    found = ast.literal_eval(line[len("PROBE "):])
    assert found == {"internet": False, "solutions": [], "authoring": [], "gradebooks": [],
                     "other_submissions": [], "root_home": []}, found
    assert results["probe"].total == results["probe"].max_total, "the probe's own answers are the solution"
