"""The messages of notebook 00's check (start_here) in Russian: every answer of the notebook's catalog, the wrong
ones test_start_here_checks grades and a right one, through check_attention, and every message of start_here.py
that comes out has a translation."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from catalog.nb00_start_here import ANSWERS

from heads_and_masks import i18n
from heads_and_masks.checks import start_here as checks

from test_start_here_checks import _failure

# the module's text with implicitly joined string literals joined, so a long message is found whole
SOURCE = re.sub(r'"\s*\n\s*"', "", Path(checks.__file__).read_text(encoding="utf-8"))
CYRILLIC = re.compile("[а-яё]", re.IGNORECASE)


def test_start_here_checks_speak_russian(capsys):
    before = set(i18n.untranslated("ru"))
    wrong = [a for a in ANSWERS if not a.correct and not a.untouched]
    right = next(a for a in ANSWERS if a.correct)
    namespace = {"np": np}
    exec(right.source("attention"), namespace)
    with i18n.use_language("ru"):
        reports = {answer.name: _failure(answer) for answer in wrong}
        checks.check_attention(namespace["attention"])
        checks.check_attention(namespace["attention"], seed=7919, thorough=True)
    # a message of start_here.py without a translation would fall back to English and be counted here
    missing = {text for text in set(i18n.untranslated("ru")) - before if text in SOURCE}
    assert not missing
    for name, report in reports.items():
        assert report and CYRILLIC.search(report), (name, report)
    assert "Вероятная причина: оценки не поделены на sqrt(d)" in reports["no_sqrt_d"]
    assert "полярность маски перевёрнута" in reports["mask_polarity_inverted_where"]
    printed = capsys.readouterr().out
    assert "✓ внимание с причинной маской совпадает с эталоном" in printed
    assert "✓ внимание совпадает с эталоном на случайных формах и масках" in printed
