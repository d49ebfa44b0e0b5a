"""The messages of notebook 00's check (start_here) in Russian: every answer of the notebook's catalog, the wrong
ones test_start_here_checks grades and a right one, through check_attention, and every message of start_here.py
that comes out has a translation."""

from __future__ import annotations

import numpy as np
from catalog.nb00_start_here import ANSWERS

from heads_and_masks.checks import start_here as checks

from test_start_here_checks import _failure
from russian_checks import CYRILLIC, in_russian


def test_start_here_checks_speak_russian(capsys):
    wrong = [a for a in ANSWERS if not a.correct and not a.untouched]
    right = next(a for a in ANSWERS if a.correct)
    namespace = {"np": np}
    exec(right.source("attention"), namespace)
    with in_russian(checks):
        reports = {answer.name: _failure(answer) for answer in wrong}
        checks.check_attention(namespace["attention"])
        checks.check_attention(namespace["attention"], seed=7919, thorough=True)
    for name, report in reports.items():
        assert report and CYRILLIC.search(report), (name, report)
    assert "Вероятная причина: оценки не поделены на sqrt(d)" in reports["no_sqrt_d"]
    assert "полярность маски перевёрнута" in reports["mask_polarity_inverted_where"]
    printed = capsys.readouterr().out
    assert "✓ внимание с причинной маской совпадает с эталоном" in printed
    assert "✓ внимание совпадает с эталоном на случайных формах и масках" in printed
