"""What the tests of the checks' messages in Russian share (tests/test_checks_*_russian.py): each runs the real
checks of one module in Russian and asserts that every message of that module which came out has a translation."""

from __future__ import annotations

import re
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

from heads_and_masks import i18n

CYRILLIC = re.compile("[а-яё]", re.IGNORECASE)


def module_text(module: ModuleType) -> str:
    """The module's source with implicitly joined string literals joined, so a long message is found whole."""
    return re.sub(r'"\s*\n\s*"', "", Path(module.__file__).read_text(encoding="utf-8"))


@contextmanager
def in_russian(module: ModuleType):
    """Runs the block in Russian; then fails if a message of ``module`` came out untranslated.

    A message without a translation falls back to English and is counted by ``i18n.untranslated``; only the ones
    new since the block began and written in ``module`` are this module's missing translations."""
    source = module_text(module)
    before = set(i18n.untranslated("ru"))
    with i18n.use_language("ru"):
        yield
    missing = {text for text in set(i18n.untranslated("ru")) - before if text in source}
    assert not missing, missing
