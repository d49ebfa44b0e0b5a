"""The messages of the checks of notebook 08 (learned_heads) in Russian: the real checks run on the wrong answers
test_learned_heads uses and on right ones, and every message of learned_heads.py that comes out has a
translation."""

from __future__ import annotations

import numpy as np
import pytest

from heads_and_masks.checks import learned_heads as checks
from heads_and_masks.checks.core import CheckFailed

from test_learned_heads import _own, _variant
from russian_checks import in_russian

# wrong backward passes of test_learned_heads, each with words its Russian report must contain
WRONG_BACKWARD = [
    ("sqrt", checks.check_attention_backward, "забыт множитель 1/√d"),
    ("diagonal", checks.check_attention_backward, "только диагональ якобиана softmax"),
    ("swapped", checks.check_attention_backward, "перепутано транспонирование"),
    ("forbidden", checks.check_attention_backward, "через запрещённые элементы"),
    ("nan", checks.check_attention_backward_masks, "NaN на полностью замаскированной строке"),
]


def _rule_columns(weights, previous_key):
    """Column 0: the mean weight of query t on key previous_key(t), column 1: on key 0; over the batch and t = 2 … n − 1."""
    t = np.arange(2, weights.shape[-1])
    return np.stack([weights[:, :, t, previous_key(t)].mean(axis=(0, 2)), weights[:, :, t, 0].mean(axis=(0, 2))], -1)


def _right_rules(weights):
    return _rule_columns(weights, lambda t: t - 1)


def _diagonal_for_previous(weights):
    """The misconception rules.diagonal_for_previous: key t taken for the previous token."""
    return _rule_columns(weights, lambda t: t)


def _failure(check, answer) -> CheckFailed:
    with pytest.raises(CheckFailed) as failure:
        check(answer, seed=5)
    return failure.value


def test_learned_heads_checks_speak_russian(capsys):
    with in_russian(checks):
        failures = [_failure(check, _variant(kind)) for kind, check, _words in WRONG_BACKWARD]
        rules_report = str(_failure(checks.check_rule_weights, _diagonal_for_previous))
        none_report = str(_failure(checks.check_attention_backward, lambda *args: None))
        checks.check_attention_backward(_own, seed=3)
        checks.check_attention_backward_masks(_own, seed=3)
        checks.check_rule_weights(_right_rules, seed=3)
    for failure, (kind, _check, words) in zip(failures, WRONG_BACKWARD):
        assert words in str(failure), f"{kind}: {words!r} not in\n{failure}"
    # the NaN of a fully masked row is named whatever the language of core's message about the warning
    assert failures[-1].misconception == "mask.fully_masked_nan", failures[-1].misconception
    assert "ключ t − 1, а не ключ t" in rules_report, rules_report
    assert "ожидалось 3 значения (dq, dk, dv)" in none_report, none_report
    printed = capsys.readouterr().out
    assert "совпадают с эталоном и с конечными разностями" in printed and "для каждой головы" in printed, printed
