"""Every catalog answer handed in the Russian notebook, graded in the same class run as the English one
(tests/course.py ``_graded_batch``: one more student per answer): the same points per grade id, the same
misconception ids, and the messages of its failing checks in Russian (issue 40)."""

from __future__ import annotations

import functools
import re

import pytest
from babel.messages.pofile import read_po
from course import REPO, graded_batch

from autograde.results import read_verdicts

from test_catalogs import CASES

pytestmark = pytest.mark.slow
PLACEHOLDER = re.compile(r"\{[^{}]*\}")


def _words(text: str) -> str:
    return " ".join(text.split())


@functools.cache
def untranslated_english() -> list[str]:
    """The English prose of every message the Russian catalogs translate (the text between its placeholders,
    three words or more, which its translation does not keep as it is, as it keeps code such as an einops
    pattern): one of them in a Russian verdict is a message that fell back to English."""
    fragments = set()
    for path in sorted((REPO / "heads_and_masks" / "locale" / "ru").glob("*.po")):
        with path.open("rb") as po:
            for message in read_po(po):
                ids = message.id if isinstance(message.id, tuple) else (message.id,)
                strings = message.string if isinstance(message.string, tuple) else (message.string,)
                if not message.id or set(ids) & set(strings):  # the header, or a message kept as it is (code)
                    continue
                kept = " ".join(_words(t) for t in strings)  # what the translation keeps as it is: code, names
                for text in ids:
                    fragments |= {
                        _words(f)
                        for f in PLACEHOLDER.split(text)
                        if len(re.findall(r"[A-Za-z]+", f)) >= 3 and _words(f) not in kept
                    }
    return sorted(fragments)


@pytest.mark.parametrize("assignment,answer", CASES, ids=[f"{a}:{x.name}" for a, x in CASES])
def test_a_catalog_answer_in_russian_is_graded_as_in_english(assignment, answer):
    run = graded_batch(assignment)
    english, russian = run.results[f"catalog-{answer.name}"], run.results[f"catalog-ru-{answer.name}"]
    # the same fate (tests/test_catalogs.py holds the English one to what the catalog expects of it)
    assert russian.status == english.status, (russian.line(), english.line())
    assert not russian.status.failed or english.status.failed, (russian.line(), english.line())
    assert russian.scores == english.scores, (russian.line(), english.line())
    said_en, said_ru = read_verdicts(english.notebook), read_verdicts(russian.notebook)
    ids = {gid: verdict["misconception"] for gid, verdict in said_en.items()}
    assert {gid: verdict["misconception"] for gid, verdict in said_ru.items()} == ids
    # what a student of the Russian notebook reads where a check failed: no sentence left in English
    for gid, verdict in said_ru.items():
        if verdict["passed"]:
            continue
        message = _words(verdict["message"])
        english_left = [fragment for fragment in untranslated_english() if fragment in message]
        assert not english_left, f"{gid}: {english_left}\n{message}"
