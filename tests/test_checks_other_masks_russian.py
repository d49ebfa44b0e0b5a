"""The messages of the checks of notebook 05 (other_masks) in Russian: the notebook's own test cells run on the
wrong answers of the catalog test_other_masks uses, and on the reference solutions, and every message of
other_masks.py that comes out has a translation."""

from __future__ import annotations

import numpy as np

import heads_and_masks as hm
from heads_and_masks.checks import other_masks as checks
from heads_and_masks.checks.core import CheckFailed

from catalog.nb05_other_masks import ANSWERS as CATALOG
from test_other_masks import _notebook_cells
from russian_checks import in_russian


def _failures(cells: dict[str, str], solutions: dict[str, str], tests: dict[str, str]) -> dict[str, str]:
    """What the notebook's test cells (visible and hidden) say of an answer's cells, by grade id."""
    namespace = {"np": np, "hm": hm, "checks": checks}
    for grade_id, source in solutions.items():
        exec(cells.get(grade_id, source), namespace)
    failures = {}
    for grade_id, source in tests.items():
        try:
            exec(source, namespace)
        except CheckFailed as failure:
            failures[grade_id] = str(failure)
    return failures


def _report(answer, solutions, tests) -> str:
    """What the test cells of the exercise an answer breaks, and of those that build on it, say of it."""
    affected = tuple(f"test_{exercise}" for exercise in (answer.breaks, *answer.cascades))
    own_tests = {grade_id: source for grade_id, source in tests.items() if grade_id.startswith(affected)}
    return " ".join(_failures({k: answer.source(k) for k in answer.cells}, solutions, own_tests).values())


def test_other_masks_checks_speak_russian(capsys):
    solutions, tests = _notebook_cells()  # read once: reading the notebook is the slow part
    with in_russian(checks):
        reports = {answer.name: _report(answer, solutions, tests) for answer in CATALOG if answer.breaks}
        assert not _failures({}, solutions, tests)
    assert "`<=` вместо `<`" in reports["padding_le_instead_of_lt"]
    assert "неверных элементов" in reports["window_symmetric"]
    assert "Сначала исправьте attention_mask" in reports["mask_padding_on_queries"]
    assert "нет маски заполнения" in reports["batched_forgets_padding"]
    assert "в точности тот же выход" in capsys.readouterr().out
