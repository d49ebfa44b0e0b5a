"""The messages of the checks of notebook 04 (work_fraction) in Russian: the real checks run on wrong answers of
the notebook's catalog (the ones test_work_fraction uses) and on a right one, and every message of
work_fraction.py that comes out has a translation."""

from __future__ import annotations

import pytest
from catalog.nb04_work_fraction import ANSWERS

from heads_and_masks.checks import work_fraction as checks
from heads_and_masks.checks.core import CheckFailed

from test_work_fraction import _function, _unlocked_full
from russian_checks import in_russian

# small sizes: the same messages as the graded ones, in a fraction of the time
CHEAP = {
    "causal_used_entries": [checks.check_causal_used_entries],
    "causal_used_fraction": [checks.check_causal_used_fraction],
    "blocked_causal_attention": [
        lambda f: checks.check_blocked_causal_attention(f, seed=5),
        lambda f: checks.check_blocked_causal_attention_count(f, seed=5, n=128),
        lambda f: checks.check_blocked_causal_attention_memory(f, n=128),
        checks.check_blocked_causal_attention_errors,
    ],
}

# wrong answers of the catalog, each with words its Russian report must contain
WRONG = {
    "entries_without_the_diagonal": "не хватает диагонали",
    "entries_n_squared_over_two": "целым числом",
    "fraction_is_the_limit_one_half": "предел при больших n",
    "fraction_with_integer_division": "целочисленное деление",
    "diagonal_tiles_skipped": "диагональные блоки пропущены",
    "diagonal_tiles_skipped_after_the_first": "Не хватает ровно стольких диагональных блоков",
    "count_reported_as_the_ideal": "идеальный счёт",
    "assumes_block_divides_n": "не кратно block",
    "softmax_per_tile": "свой softmax",
    "block_not_validated": "хотя бы одна строка",
}


def _reports(answer) -> str:
    function = _function(answer, answer.breaks)
    failures = []
    for check in CHEAP[answer.breaks]:
        try:
            check(function)
        except CheckFailed as failure:
            failures.append(str(failure))
    return "\n".join(failures)


def _whole_matrix_at_large_n(q, k, v, block):
    """The whole score matrix built at once: at the graded n = 8192 the learner's kernel runs out of memory."""
    if len(q) >= 8192:
        raise MemoryError("Unable to allocate 512. MiB for an array with shape (8192, 8192) and data type float64")
    return _unlocked_full(q, k, v, block)


def test_work_fraction_checks_speak_russian(capsys):
    answers = {answer.name: answer for answer in ANSWERS}
    right = answers["online_softmax_over_key_tiles"]
    with in_russian(checks):
        reports = {name: _reports(answers[name]) for name in WRONG}
        with pytest.raises(CheckFailed) as full:
            checks.check_blocked_causal_attention_memory(_unlocked_full, n=768, d=4)
        with pytest.raises(CheckFailed) as out_of_memory:
            checks.check_blocked_causal_attention_memory(_whole_matrix_at_large_n, n=8192, d=8, block=80)
        for name, run in CHEAP.items():
            for check in run:
                check(_function(right, name))
    for name, words in WRONG.items():
        assert words in reports[name], f"{name}: {words!r} not in\n{reports[name]}"
    assert "Вероятная причина" in reports["entries_without_the_diagonal"]
    assert "МиБ" in str(full.value) and "в пике понадобилось" in str(full.value), str(full.value)
    assert "512 МиБ" in str(out_of_memory.value) and "5,0 МиБ" in str(out_of_memory.value), str(out_of_memory.value)
    printed = capsys.readouterr().out
    assert "вычисляет причинное внимание" in printed and "в пике заняла" in printed, printed
