"""The descriptions of the misconceptions in Russian: misconceptions.describe(id) gives every registered id's
words in the language of the moment (the id itself stays English), here for the ids real failing checks carry."""

from __future__ import annotations

import numpy as np
from catalog.nb00_start_here import ANSWERS

from heads_and_masks import i18n
from heads_and_masks.checks.core import CheckFailed
from heads_and_masks.checks.misconceptions import MISCONCEPTIONS, describe
from heads_and_masks.checks.start_here import check_attention

from russian_checks import CYRILLIC


def test_every_misconception_is_described_in_russian():
    before = set(i18n.untranslated("ru"))
    with i18n.use_language("ru"):
        described = {misconception: describe(misconception) for misconception in MISCONCEPTIONS}
        unknown = describe("no.such_id")
    # a description without a translation would fall back to English and be counted here
    missing = (set(i18n.untranslated("ru")) - before) & set(MISCONCEPTIONS.values())
    assert not missing
    assert all(CYRILLIC.search(words) for words in described.values())
    assert unknown == ""
    assert described["mask.zero_not_ban"] == "запрещённым оценкам присвоен 0: оценка 0 — это не запрет"
    assert describe("mask.zero_not_ban") == MISCONCEPTIONS["mask.zero_not_ban"]  # English outside the block


def test_a_failing_check_in_russian_carries_an_english_id_described_in_russian():
    answer = next(a for a in ANSWERS if a.name == "zero_fill")
    namespace = {"np": np}
    exec(answer.source("attention"), namespace)
    with i18n.use_language("ru"):
        try:
            check_attention(namespace["attention"])
        except CheckFailed as failure:
            found = failure.misconception
            words = describe(found)
        else:
            raise AssertionError("the zero fill was not caught")
    assert found == "mask.zero_not_ban"
    assert words == "запрещённым оценкам присвоен 0: оценка 0 — это не запрет"
