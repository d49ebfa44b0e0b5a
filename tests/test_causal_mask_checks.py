"""The checks of notebook 03 run directly (no nbgrader) on every answer of its catalog.

A fast companion to test_catalogs.py: each correct answer passes every check, visible and hidden,
without writing to stderr; each wrong answer fails a check of the exercise it breaks, with a
message naming the misconception; the reference solutions pass; the checks are not fooled by an
answer that calls the course's own implementation.
"""

from __future__ import annotations

import re
import textwrap

import numpy as np
import pytest
from catalog.nb03_causal_mask import ANSWERS
from course import REPO
from build_notebooks import read_source

from heads_and_masks.checks import CheckFailed
from heads_and_masks.checks.core import OUTPUT_COLUMNS
from heads_and_masks.checks.causal_mask import (
    check_causal_mask,
    check_causal_mask_bad_n,
    check_masked_softmax,
    check_masked_softmax_empty_rows,
    check_masked_softmax_large_scores,
    check_row_entropy_bits,
)

EXERCISES = ("causal_mask", "masked_softmax", "row_entropy_bits")
CHECKS = {  # every call the test cells of the notebook make, visible and hidden
    "causal_mask": [
        lambda f: check_causal_mask(f),
        lambda f: check_causal_mask(f, thorough=True),
        lambda f: check_causal_mask_bad_n(f),
    ],
    "masked_softmax": [
        lambda f: check_masked_softmax(f),
        lambda f: check_masked_softmax(f, seed=2, thorough=True),
        lambda f: check_masked_softmax_empty_rows(f),
        lambda f: check_masked_softmax_empty_rows(f, seed=5, thorough=True),
        lambda f: check_masked_softmax_large_scores(f),
        lambda f: check_masked_softmax_large_scores(f, seed=11, thorough=True),
    ],
    "row_entropy_bits": [
        lambda f: check_row_entropy_bits(f),
        lambda f: check_row_entropy_bits(f, seed=3, thorough=True),
    ],
}


def _solutions() -> dict[str, str]:
    notebook = read_source(REPO / "authoring" / "03_causal_mask.py")
    found = {}
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("solution"):
            found[meta["grade_id"]] = re.sub(r"\s*### (BEGIN|END) SOLUTION", "", cell.source)
    return found


def _functions(cells: dict[str, str]) -> dict:
    namespace = {"np": np}
    for exercise in EXERCISES:
        exec(textwrap.dedent(cells.get(exercise, _solutions()[exercise])), namespace)
    return {name: namespace[name] for name in EXERCISES}


def test_every_call_of_the_test_cells_is_covered():
    source = (REPO / "authoring" / "03_causal_mask.py").read_text()
    calls = re.findall(r"^(check_\w+\(.*\))$", source, flags=re.M)
    assert len(calls) == sum(len(c) for c in CHECKS.values()), calls


@pytest.mark.parametrize("answer", [a for a in ANSWERS if not a.untouched], ids=lambda a: a.name)
def test_catalog_answer_against_the_checks(answer, capfd):
    functions = _functions({k: answer.source(k) for k in answer.cells})
    failures = {}
    for exercise, checks in CHECKS.items():
        for check in checks:
            try:
                check(functions[exercise])
            except CheckFailed as failure:
                failures.setdefault(exercise, []).append(str(failure))
    assert capfd.readouterr().err == "", "a check wrote to stderr (nbgrader would take the points)"
    if answer.correct:
        assert not failures, failures
    else:
        assert set(failures) == {answer.breaks}, f"expected failures on {answer.breaks} only, got {failures}"
        text = "\n".join(failures[answer.breaks]).lower()
        for phrase in answer.phrases:
            assert phrase.lower() in text, f"no {phrase!r} in:\n{text}"


SEEDS = range(24)  # the graded run draws secret inputs; a mistake must be named alike on any of them
SEEDED = {  # the checks that draw their inputs (check_causal_mask's are fixed)
    "masked_softmax": [check_masked_softmax, check_masked_softmax_empty_rows, check_masked_softmax_large_scores],
    "row_entropy_bits": [check_row_entropy_bits],
}


@pytest.mark.parametrize("answer", [a for a in ANSWERS if a.breaks in SEEDED], ids=lambda a: a.name)
def test_a_mistake_is_named_alike_on_every_draw(answer, capfd):
    """The class report counts misconception ids: one mistake, one id per check, whatever the draw.

    (Masking after softmax was named `softmax.allowed_weights_vanish` on a third of the draws of the
    large-scores check, and a fill of 0 `mask.forbidden_not_zero` on a third.)"""
    function = _functions({k: answer.source(k) for k in answer.cells})[answer.breaks]
    for check in SEEDED[answer.breaks]:
        named = set()
        for seed in SEEDS:
            try:
                check(function, seed=seed, thorough=True)
                named.add("passed")
            except CheckFailed as failure:
                named.add(failure.misconception)
        assert len(named) == 1, f"{check.__name__} names {sorted(named)} depending on the draw"
    capfd.readouterr()


def test_the_reference_solutions_pass_and_the_stubs_are_not_written_yet(capfd):
    functions = _functions({})
    for exercise, checks in CHECKS.items():
        for check in checks:
            check(functions[exercise])
    assert capfd.readouterr().err == ""

    def stub(*args):
        raise NotImplementedError()

    for exercise, checks in CHECKS.items():
        for check in checks:  # one message on stderr (nbgrader: no points), no exception (Run All goes on)
            assert check(stub) is None
            err = capfd.readouterr().err
            assert all(len(line) <= OUTPUT_COLUMNS for line in err.splitlines()), err  # fits the lab's column
            assert " ".join(err.split()) == (
                "✗ `stub` is not written yet: replace `raise NotImplementedError()` with your code"
            )


def test_a_warning_in_a_correct_entropy_is_not_printed(capfd):
    """np.log2(0) warns; the check records it instead of letting it reach stderr (and nbgrader)."""

    def entropy(weights):
        return -np.nansum(weights * np.log2(weights), axis=-1)

    check_row_entropy_bits(entropy)
    assert capfd.readouterr().err == ""
