"""Notebook 01's checks in-process (fast), its cost counting and its column layout.

The real grading of the catalog goes through nbgrader in test_catalogs.py; here every catalog answer is
run against the check functions directly, so a change to a check is tested in seconds: correct answers
pass the visible and the hidden calls, each wrong answer fails only its own exercise, with the message
naming the misconception.
"""

from __future__ import annotations

import contextlib
import io

import nbformat
import numpy as np
import pytest
from catalog.nb01_heads import ANSWERS
from course import REPO
from einops import rearrange

import heads_and_masks as hm
from heads_and_masks.checks import heads as checks
from heads_and_masks.checks.core import CheckFailed
from heads_and_masks.cost import Product, cost_table, counted_multi_head_attention
from heads_and_masks.heads import head_of_column

TEST_CELLS = {
    "split_heads": {
        "test_split_heads": checks.check_split_heads,
        "test_split_heads_errors": checks.check_split_heads_errors,
    },
    "merge_heads": {"test_merge_heads": checks.check_merge_heads},
    "multi_head_attention": {
        "test_multi_head_attention": checks.check_multi_head_attention,
        "test_multi_head_attention_masked": checks.check_multi_head_attention_masked,
    },
    "mha_cost": {"test_mha_cost": checks.check_mha_cost, "test_mha_cost_errors": checks.check_mha_cost_errors},
}


def _solutions() -> dict[str, str]:
    notebook = nbformat.read(REPO / "solutions" / "01_heads" / "01_heads.ipynb", as_version=4)
    return {
        c.metadata["nbgrader"]["grade_id"]: c.source
        for c in notebook.cells
        if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")
    }


def _failures(answer) -> dict[str, str]:
    """{test cell: failure message} for one catalog answer, visible and hidden calls as in the notebook."""
    namespace = {"np": np, "rearrange": rearrange, "hm": hm}
    for grade_id, source in _solutions().items():
        exec(answer.source(grade_id) if grade_id in answer.cells else source, namespace)
    failures = {}
    for exercise, cells in TEST_CELLS.items():
        for cell, check in cells.items():
            hidden = {"thorough": True} if cell.endswith("_errors") else {"seed": 2024, "thorough": True}
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    check(namespace[exercise])
                    check(namespace[exercise], **hidden)
            except CheckFailed as failure:
                failures[cell] = str(failure)
    return failures


@pytest.mark.parametrize("answer", [a for a in ANSWERS if not a.untouched], ids=lambda a: a.name)
def test_catalog_answer_against_the_checks(answer):
    failures = _failures(answer)
    if answer.correct:
        assert not failures, failures
        return
    assert failures, f"the mistake {answer.name} was not caught"
    assert all(cell.startswith(f"test_{answer.breaks}") for cell in failures), failures
    text = " ".join(failures.values()).lower()
    for phrase in answer.phrases:
        assert phrase.lower() in text, f"{phrase!r} not in: {text}"


def test_check_inputs_tell_every_misconception_apart():
    """The first visible probes give a different answer for every diagnosed mistake (else the
    message could name the wrong one and the check could pass a mistake by coincidence)."""
    r = np.random.default_rng(0)
    x = r.normal(size=(2, 3, 8))
    expected = hm.split_heads(x, 2)
    for wrong, _, _ in checks._wrong_splits(x, 2):
        assert wrong.shape != expected.shape or not np.allclose(wrong, expected)
    x, weights = checks._mha_inputs(np.random.default_rng(0), 2, 5, 8)
    for mask in (None, checks.causal(None, 2, 2, 5), checks.padding(None, 2, 2, 5)):
        expected = hm.multi_head_attention(x, *weights, 2, mask)
        wrongs = [w for w, _, _ in checks._wrong_mhas(x, weights, 2, mask)]
        for wrong in wrongs:
            assert np.abs(wrong - expected).max() > 1e-3
    for n, width, h in [(16, 64, 4), (128, 768, 12), (128, 768, 24)]:
        right = hm.mha_cost(n, width, h)
        wrong_values = [w for w, _, _ in checks._wrong_costs(n, width, h)]
        assert right not in wrong_values


def test_counted_forward_pass_matches_the_formula_and_the_reference():
    r = np.random.default_rng(3)
    x = r.normal(size=(1, 7, 12))
    weights = r.normal(size=(4, 12, 12))
    for h in (1, 2, 3, 4, 6, 12):
        output, products = counted_multi_head_attention(x, *weights, h)
        assert np.allclose(output, hm.multi_head_attention(x, *weights, h))
        assert sum(p.multiply_adds for p in products) == hm.mha_cost(7, 12, h) == 4 * 7 * 144 + 2 * 49 * 12
    rows = cost_table(32, 768, 24)
    assert [row["counted"] for row in rows] == [row["formula value"] for row in rows]
    assert Product("p", (2, 3, 4), (4, 5)).multiply_adds == 2 * 3 * 4 * 5
    with pytest.raises(ValueError):
        _ = Product("p", (3, 4), (5, 6)).multiply_adds


def test_head_of_column_for_both_orders():
    assert head_of_column(8, 2, "(h d)").tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert head_of_column(8, 2, "(d h)").tolist() == [0, 1, 0, 1, 0, 1, 0, 1]
    x = np.arange(24.0).reshape(1, 1, 24)
    for h in (1, 2, 3, 4, 6, 8, 12, 24):
        owners = head_of_column(24, h)
        heads = hm.split_heads(x, h)
        for i in range(h):
            assert np.array_equal(heads[0, i, 0], x[0, 0, owners == i])
        dh = rearrange(x, "b n (d h) -> b h n d", h=h)
        for i in range(h):
            assert np.array_equal(dh[0, i, 0], x[0, 0, head_of_column(24, h, "(d h)") == i])
    with pytest.raises(ValueError):
        head_of_column(10, 4)
