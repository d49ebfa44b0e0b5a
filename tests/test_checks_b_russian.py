"""The messages of the checks of notebook 06 (kv_heads) in Russian: the real checks run on the wrong answers
test_kv_heads uses, and every message of kv_heads.py that comes out has a translation."""

from __future__ import annotations

import pytest

from heads_and_masks.checks import kv_heads as checks
from heads_and_masks.checks.core import CheckFailed

from test_kv_heads import _gqa_repeat, _gqa_tile
from russian_checks import in_russian

# wrong answers of kv_cache_bytes, each with a word its Russian report must contain
WRONG_SIZES = [
    (lambda L, g, d, n, batch=1, bytes_per_value=2: L * g * d * n * batch * bytes_per_value, "множителя 2"),
    (lambda L, g, d, n, batch=1, bytes_per_value=2: 2 * L * g * d * n * bytes_per_value, "батч не учтён"),
    (lambda L, g, d, n, batch=1, bytes_per_value=2: 16 * L * g * d * n * batch * bytes_per_value, "бит"),
]


def _report(check, answer) -> str:
    with pytest.raises(CheckFailed) as failure:
        check(answer)
    return str(failure.value)


def test_kv_heads_checks_speak_russian(capsys):
    with in_russian(checks):
        reports = [_report(checks.check_grouped_query_attention, _gqa_tile)]
        reports += [_report(checks.check_kv_cache_bytes, answer) for answer, _word in WRONG_SIZES]
        for check in (checks.check_grouped_query_attention, checks.check_grouped_query_attention_masks):
            check(_gqa_repeat, thorough=True)
    assert "KV-голов" in reports[0]
    for report, (_answer, word) in zip(reports[1:], WRONG_SIZES):
        assert word in report and "Вероятная причина" in report
    assert "совпадает с эталоном" in capsys.readouterr().out
