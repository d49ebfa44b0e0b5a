"""The package's messages in the learner's language: checks, widgets, pictures, feedback and reports.

Every sentence a learner or a teacher reads is written in English in the code, inside ``_()`` (or
``ngettext()`` when it counts something), as one whole sentence with named placeholders::

    fail(_("{what} has shape {actual}, but the expected shape is {expected}.").format(
        what=what, actual=actual.shape, expected=expected))

never built from fragments (a translator must see the whole sentence; word order differs between
languages). The translations live in gettext catalogs beside this module, ``locale/<language>/<area>.po``
(one file per area of the package, so that translators and authors of different areas do not collide),
made and checked by ``python tools/translations.py update|check <language>``.

Which language? The first that says one:

1. :func:`use_language`, a context manager: the grader sets the language of the submission it grades
   (the one in the submitted notebook's metadata), so its feedback is in the student's language;
2. the environment variable ``HEADS_AND_MASKS_LANGUAGE``;
3. the notebook this kernel runs: Jupyter Server tells a kernel its notebook's path in ``JPY_SESSION_NAME``,
   and a notebook built in another language says so in its metadata (``heads_and_masks.language``);
4. English.

A language without a catalog, or a message without a translation, falls back to the English text: a learner
is never left without a message. The tests ask :func:`untranslated` which messages had no translation.
"""

from __future__ import annotations

import contextlib
import gettext
import json
import os
from functools import cache
from pathlib import Path

ENGLISH = "en"
LANGUAGE_VARIABLE = "HEADS_AND_MASKS_LANGUAGE"
SESSION_VARIABLE = "JPY_SESSION_NAME"  # set by jupyter_server for every kernel it starts for a notebook
LOCALE = Path(__file__).resolve().parent / "locale"

_chosen: list[str] = []  # the languages set by use_language, innermost last
_untranslated: dict[str, set[str]] = {}  # language: messages asked for that had no translation


def notebook_language(path: str | os.PathLike) -> str | None:
    """The language a notebook says it is written in (its metadata), or None (English, or not a notebook)."""
    if not isinstance(path, (str, os.PathLike)):  # open(3) would take file descriptor 3, and close it after
        return None
    try:
        with open(path, encoding="utf-8") as file:
            metadata = json.load(file).get("metadata", {})
    except (OSError, ValueError, AttributeError):
        return None
    chosen = metadata.get("heads_and_masks", {}) if isinstance(metadata, dict) else {}
    language = chosen.get("language") if isinstance(chosen, dict) else None
    return language if isinstance(language, str) else None


@cache
def _language_of_this_kernel(session: str) -> str:
    if not session.endswith(".ipynb"):
        return ENGLISH
    return notebook_language(session) or ENGLISH


def language() -> str:
    """The language messages are given in now (see the module's docstring for the order)."""
    if _chosen:
        return _chosen[-1]
    if os.environ.get(LANGUAGE_VARIABLE):
        return os.environ[LANGUAGE_VARIABLE]
    return _language_of_this_kernel(os.environ.get(SESSION_VARIABLE, ""))


@contextlib.contextmanager
def use_language(chosen: str | None):
    """Give messages in ``chosen`` inside the block (None or "" leaves the language as it is)."""
    if not chosen:
        yield
        return
    _chosen.append(chosen)
    try:
        yield
    finally:
        _chosen.pop()


class _Catalog:
    """One language's translations, all areas together: {English: translation} and the plural rule."""

    def __init__(self, language: str):
        from babel.messages.pofile import read_po  # only when a language other than English is used

        self.singular: dict[str, str] = {}
        self.plural: dict[str, tuple[str, ...]] = {}
        self.plural_index = gettext.c2py("n != 1")
        for path in sorted((LOCALE / language).glob("*.po")):
            with path.open("rb") as file:
                catalog = read_po(file, locale=language)
            self.plural_index = gettext.c2py(catalog.plural_expr)
            for message in catalog:
                if not message.id or message.fuzzy:
                    continue
                if message.pluralizable and all(message.string):
                    self.plural[message.id[0]] = tuple(message.string)
                elif not message.pluralizable and message.string:
                    self.singular[message.id] = message.string


@cache
def _catalog(language: str) -> _Catalog | None:
    """The catalogs of ``language``, one of the folders of ``locale/`` by name: the language a grader is given
    comes from the submitted notebook's metadata, and a path there ("/tmp/x", "../..") would make the grader
    open the student's own files (and every message raise, Babel refusing the path as a locale)."""
    return _Catalog(language) if language in _languages() else None


def _languages() -> set[str]:
    """The languages the package has catalogs for: the names of the folders in ``locale/`` (read once a
    language, by the cached ``_catalog``)."""
    return {path.name for path in LOCALE.iterdir() if path.is_dir()} if LOCALE.is_dir() else set()


def course_languages() -> set[str]:
    """The languages the course speaks: English and every language the package has catalogs for."""
    return {ENGLISH} | _languages()


def _(message: str) -> str:
    """``message`` in the current language (the English text where there is no translation)."""
    return _lookup(message)


def _lookup(message: str) -> str:
    current = language()
    if current == ENGLISH:
        return message
    catalog = _catalog(current)
    translated = catalog.singular.get(message) if catalog is not None else None
    if translated is None:
        _untranslated.setdefault(current, set()).add(message)
        return message
    return translated


def N_(message: str) -> str:
    """Mark ``message`` for translation where it is defined (a table built at import), and leave it in
    English there: the code that shows it calls ``_(message)`` then, in the language of that moment."""
    return message


def translated(marked: str) -> str:
    """A text marked with ``N_`` where it was defined, in the current language now. (``_`` takes only a string
    written in place, so that every sentence a translator sees is in the catalog; this is the one way to say a
    marked text held in a variable.)"""
    return _lookup(marked)


def ngettext(singular: str, plural: str, count: int) -> str:
    """The form of a sentence that counts ``count`` things, in the current language (Russian has three)."""
    current = language()
    catalog = _catalog(current) if current != ENGLISH else None
    forms = catalog.plural.get(singular) if catalog is not None else None
    if forms is None:
        if current != ENGLISH:
            _untranslated.setdefault(current, set()).add(singular)
        return singular if count == 1 else plural
    return forms[min(catalog.plural_index(count), len(forms) - 1)]


def number(value: float, spec: str = "g") -> str:
    """``value`` formatted with ``spec`` for a sentence in the current language: in Russian a decimal comma, and a
    thin space between thousands where ``spec`` groups them (``","``: 294 912, which "294,912" would misread as a
    fraction). Code and its printed arrays keep Python's point: this is for prose only."""
    return in_prose(format(value, spec))


def in_prose(digits: str) -> str:
    """A number already written the English way (``"4,096"``, ``"79.6"``) as the current language writes it in
    prose: in Russian 4 096 and 79,6."""
    if language() not in DECIMAL_COMMA:
        return digits
    return "".join({",": THIN_SPACE, ".": ","}.get(character, character) for character in digits)


DECIMAL_COMMA = frozenset({"ru"})
THIN_SPACE = "\u202f"  # narrow no-break space: the thousands are never broken across two lines


def untranslated(language: str) -> set[str]:
    """The messages asked for in ``language`` since the start that had no translation (for the tests)."""
    return set(_untranslated.get(language, set()))
