"""The messages of the checks of notebook 01 (heads) in Russian: the real checks run on the catalog's wrong answers
that test_heads_checks uses, and every message of checks/heads.py that comes out has a translation."""

from __future__ import annotations

from catalog.nb01_heads import ANSWERS

from heads_and_masks.checks import heads as checks

from test_heads_checks import _failures
from russian_checks import in_russian

# wrong answers of the catalog, each with words its Russian report must contain
SAYS = {
    "split_transpose_forgotten": "нет транспонирования",
    "split_batch_of_one": "батч размера 1",
    "merge_without_transpose_back": "без обратного транспонирования",
    "cost_counts_flops": "Вероятная причина: здесь посчитаны FLOP",
    "cost_attention_times_h": "умножена на h",
    "mha_forgets_w_o": "забыта W^O",
    "mha_ignores_h": "не учитывает h",
}


def _right_split(x, h):
    b, n, width = x.shape
    if width % h:
        raise ValueError("h must divide the width")
    return x.reshape(b, n, h, width // h).transpose(0, 2, 1, 3)


def test_heads_checks_speak_russian(capsys):
    wrong = [answer for answer in ANSWERS if answer.breaks]
    right = next(answer for answer in ANSWERS if answer.correct)
    with in_russian(checks):
        reports = {answer.name: " ".join(_failures(answer).values()) for answer in wrong}
        assert not _failures(right)  # every passing line of every check, printed into _failures' own buffer
        checks.check_split_heads(_right_split)
        checks.check_mha_cost(lambda n, width, h: 4 * n * width**2 + 2 * n * n * width)
    assert all(reports.values()), [name for name, report in reports.items() if not report]
    for name, words in SAYS.items():
        assert words in reports[name], reports[name]
    printed = capsys.readouterr().out
    assert "голова i — это x[..., i*d:(i+1)*d]" in printed and "умножений-сложений при любом h" in printed
