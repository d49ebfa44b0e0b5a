"""Misconception ids: every diagnosis the checks can make names a registered, stable id.

The class report (autograde/class_report.py) counts students per id, so an id must be carried by the
failure itself (``CheckFailed.misconception``), never read back from the message text.
"""

from __future__ import annotations

import numpy as np
import pytest

from heads_and_masks.checks import (
    causal_mask as causal,
    heads,
    kv_heads,
    learned_heads as learned,
    other_masks,
    start_here as start,
    work_fraction as tiles,
    why_heads,
)
from heads_and_masks.checks.core import CheckFailed, expect_close, fail
from heads_and_masks.checks.misconceptions import MISCONCEPTIONS, family


def _diagnoses():
    """Every generator of known wrong results, on inputs where each of its mistakes is reachable."""
    r = np.random.default_rng(0)
    causal_4 = np.tril(np.ones((4, 4), bool))
    q, k, v = (r.normal(size=(3, 4)) for _ in range(3))
    gq, gk, gv = r.normal(size=(2, 4, 5, 3)), r.normal(size=(2, 2, 5, 3)), r.normal(size=(2, 2, 5, 3))
    bq, bk, bv = (r.normal(size=(2, 5, 3)) for _ in range(3))
    return {
        "split": heads._wrong_splits(r.normal(size=(2, 3, 8)), 2),
        "merge": heads._wrong_merges(r.normal(size=(2, 2, 3, 4))),
        "cost": heads._wrong_costs(16, 64, 4),
        "mha": heads._wrong_mhas(*heads._mha_inputs(r, 2, 5, 8), 2, heads.causal(None, 2, 2, 5)),
        "causal_mask": causal._wrong_masks(4),
        "softmax": causal._wrong_softmaxes(r.normal(size=(4, 4)), causal_4),
        "entropy": causal._wrong_entropies(np.full((4, 4), 0.25)),
        "attention": start._wrong_attentions(q, k, v, np.tril(np.ones((3, 3), bool))),
        "entries": tiles._wrong_entries(5),
        "fractions": tiles._wrong_fractions(5),
        "counts": tiles._wrong_counts(10, 3),
        "tiled": tiles._wrong_outputs(r.normal(size=(7, 3)), r.normal(size=(7, 3)), r.normal(size=(7, 2)), 3),
        "padding": other_masks._padding_mistakes([2, 3], 4),
        "window": other_masks._window_mistakes(5, 2),
        "attention_mask": other_masks._attention_mask_mistakes([2, 3], 4, True, 2),
        "batched": other_masks._batched_mistakes(bq, bk, bv, np.array([3, 5]), True, 2),
        "gqa": kv_heads._wrong_gqa(gq, gk, gv, np.tril(np.ones((5, 5), bool))),
        "kv_cache": kv_heads._wrong_sizes(1000, 2, 2, 2, 5, 2, 2),
        "rates": why_heads._wrong_rates(8, 1.5, 16),
        "backward": learned._wrong_gradients(*_backward_inputs(r)),
        "rules": learned._wrong_rule_weights(r.random((2, 3, 6, 6))),
    }


def _backward_inputs(r):
    """q, k, v, a mask with a row that allows no key (so every mistake of 08's backward is reachable), dout."""
    mask = np.tril(np.ones((4, 4), bool))
    mask[2] = False
    return r.normal(size=(4, 3)), r.normal(size=(4, 3)), r.normal(size=(4, 2)), mask, r.normal(size=(4, 2))


@pytest.mark.parametrize("name,diagnoses", list(_diagnoses().items()))
def test_every_diagnosis_names_a_registered_id(name, diagnoses):
    found = list(diagnoses)
    assert found, name
    for diagnosis in found:
        assert len(diagnosis) == 3, f"{name}: a diagnosis is (wrong result, explanation, id): {diagnosis[1:]}"
        _, explanation, misconception = diagnosis
        assert isinstance(explanation, str) and explanation, name
        assert misconception in MISCONCEPTIONS, f"{name}: {misconception!r} is not registered"


def test_ids_are_family_dot_name_and_described():
    for misconception, words in MISCONCEPTIONS.items():
        assert misconception.count(".") == 1 and misconception == misconception.lower(), misconception
        assert family(misconception) and words.strip(), misconception


def test_a_finalizers_resource_warning_is_not_the_answers_warning():
    """A ResourceWarning is a finalizer's (an unclosed event loop collected during the call, as it happened once
    in 60 gradings of a correct answer): it never fails an answer; a numerics warning still does."""
    import warnings

    from heads_and_masks.checks.core import call

    def collected_mid_call(x):
        warnings.warn("unclosed event loop", ResourceWarning)
        return x

    assert call(collected_mid_call, 1.0, what="f(1.0)", allow_warnings=False) == 1.0

    def overflows(x):
        return np.exp(np.array([x]))

    with pytest.raises(CheckFailed, match="warning"):
        call(overflows, 1000.0, what="f(1000.0)", allow_warnings=False)


def test_a_failure_carries_the_id_of_the_diagnosis_it_matched():
    expected = np.array([0.5, 0.5])
    with pytest.raises(CheckFailed) as named:
        expect_close(
            np.array([1.0, 0.0]),
            expected,
            what="w",
            diagnoses=[
                (np.array([0.0, 1.0]), "flipped", "mask.polarity_flipped"),
                (np.array([1.0, 0.0]), "no softmax", "softmax.missing"),
            ],
        )
    assert named.value.misconception == "softmax.missing" and "no softmax" in str(named.value)
    with pytest.raises(CheckFailed) as unnamed:
        expect_close(
            np.array([0.9, 0.1]),
            expected,
            what="w",
            diagnoses=[(np.array([0.0, 1.0]), "flipped", "mask.polarity_flipped")],
        )
    assert unnamed.value.misconception is None  # wrong in a way no check names: "unrecognised" in the report
    with pytest.raises(KeyError):
        fail("a message", "mask.no_such_idea")  # an id must be registered before a check may use it
