"""The messages of the checks of notebook 02 (why_heads) in Russian: the test cells of the notebook run on the
catalog's answers (the ones test_misconception_draws sweeps), and every message of checks/why_heads.py that
comes out has a translation."""

from __future__ import annotations

import re

import numpy as np
from catalog.nb02_why_heads import ANSWERS, ASSIGNMENT

import heads_and_masks as hm
from heads_and_masks.checks import why_heads as checks
from heads_and_masks.checks.core import CheckFailed

from test_misconception_draws import _cells
from russian_checks import in_russian

# the hidden calls repeat the visible ones' messages on more inputs (winning_rate's thorough run alone takes a second)
HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS", re.DOTALL)

# wrong answers of the catalog, each with words its Russian report must contain (the rate's other mistakes take
# a fifth of a second each and bring no message of their own: every failing rate builds all the explanations)
SAYS = {
    "heads_next_token": "запрашивает *следующий* токен",
    "heads_current_token": "голова 0 (предыдущий токен) обращает внимание на сам текущий токен",
    "heads_not_sharp": "недостаточно резко",
    "heads_forgot_sqrt_d": "Помните, что перед softmax оценки делятся на sqrt(d)",
    "heads_swapped": "поменялись местами",
    "heads_same_rule_twice": "обе головы следуют правилу «предыдущий токен»",
    "heads_read_the_content": "меняется только содержимое токенов",
    "heads_values_read_positions": "значения читают позиционную часть x",
    "heads_values_keep_position": "w_v[h] должна копировать содержимое",
    "rate_pairwise": "Вероятная причина: совпадение сравнивалось",
    "rate_noise_as_variance": "стандартное отклонение",
    "rate_counts_wins": "вернула 1522,0; доля — это число от 0 до 1",
    "rate_one_key_too_many": "на один ключ больше",
    "rate_ignores_seed": ", а затем 0,",  # two unseeded rates, in prose with a decimal comma
    "rate_no_value_errors": "размер головы d должен быть не меньше 1",
}


def _reports(answer) -> list[str]:
    """The failures of the visible calls of the test cells of the exercise ``answer`` breaks (of every exercise
    for a right answer)."""
    given, tests = _cells(ASSIGNMENT)
    namespace = {"np": np, "hm": hm}
    for grade_id, source in given:
        exec(answer.source(grade_id) if grade_id in answer.cells else source, namespace)
    reports = []
    for grade_id, source in tests:
        if answer.breaks and not grade_id.startswith(f"test_{answer.breaks}"):
            continue
        try:
            exec(HIDDEN.sub("", source), dict(namespace))
        except CheckFailed as failure:
            reports.append(str(failure))
    return reports


def test_why_heads_checks_speak_russian(capsys):
    wrong = [answer for answer in ANSWERS if answer.name in SAYS]
    assert len(wrong) == len(SAYS)
    right = next(answer for answer in ANSWERS if answer.correct)
    with in_russian(checks):
        reports = {answer.name: " ".join(_reports(answer)) for answer in wrong}
        assert not _reports(right)
    for name, words in SAYS.items():
        assert words in reports[name], reports[name]
    printed = capsys.readouterr().out
    assert (
        "голова 0 обращает внимание на предыдущий токен" in printed and "согласуется с точной вероятностью" in printed
    )
