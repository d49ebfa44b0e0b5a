"""The messages of the checks of notebook 03 (causal_mask) in Russian: the real checks run on the wrong answers
of the catalog test_causal_mask_checks uses, and on the reference solutions, and every message of
causal_mask.py that comes out has a translation."""

from __future__ import annotations

import textwrap

import numpy as np

from catalog.nb03_causal_mask import ANSWERS

from heads_and_masks.checks import causal_mask as checks
from heads_and_masks.checks.core import CheckFailed

from test_causal_mask_checks import EXERCISES, _solutions
from russian_checks import in_russian

# the checks of each exercise, as the visible and the hidden test cells call them
CHECKS = {
    "causal_mask": [checks.check_causal_mask, checks.check_causal_mask_bad_n],
    "masked_softmax": [
        checks.check_masked_softmax,
        checks.check_masked_softmax_empty_rows,
        checks.check_masked_softmax_large_scores,
    ],
    "row_entropy_bits": [checks.check_row_entropy_bits],
}
TAKES_NO_THOROUGH = {checks.check_causal_mask_bad_n}


def _functions(cells: dict[str, str], solutions: dict[str, str]) -> dict:
    """The answer's functions, the reference solutions where it wrote none (read once: reading is the slow part)."""
    namespace = {"np": np}
    for exercise in EXERCISES:
        exec(textwrap.dedent(cells.get(exercise, solutions[exercise])), namespace)
    return {name: namespace[name] for name in EXERCISES}


def _reports(functions, exercise, thorough=False) -> list[str]:
    """The failures of the checks of one exercise (an empty list: every check passed)."""
    found = []
    for check in CHECKS[exercise]:
        options = {"thorough": True} if thorough and check not in TAKES_NO_THOROUGH else {}
        try:
            check(functions[exercise], **options)
        except CheckFailed as failure:
            found.append(str(failure))
    return found


def test_causal_mask_checks_speak_russian(capsys):
    solutions = _solutions()
    wrong = [answer for answer in ANSWERS if answer.breaks]
    with in_russian(checks):
        reports = {a.name: _reports(_functions({k: a.source(k) for k in a.cells}, solutions), a.breaks) for a in wrong}
        right = _functions({}, solutions)
        for exercise in CHECKS:
            assert not _reports(right, exercise, thorough=True)
    assert "ключ 1 лежит в будущем запроса 0" in reports["mask_triu"][0]
    assert "маску на оценки *до* softmax" in reports["softmax_mask_after"][0]
    assert "в натах" in reports["entropy_in_nats"][0]
    assert "совпадает с эталоном" in capsys.readouterr().out
