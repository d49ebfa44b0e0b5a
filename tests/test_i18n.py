"""The package's messages in the learner's language (heads_and_masks/i18n.py, catalogs in heads_and_masks/locale/):
which language is chosen, how a message is looked up and counted, and that the catalogs are in step with the code."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest
from course import REPO

from heads_and_masks import i18n
from heads_and_masks.checks.core import not_written_yet

sys.path[:0] = [str(REPO / "tools")]
import translations  # noqa: E402

LANGUAGES = sorted(translations.LANGUAGES)
PLACEHOLDER = __import__("re").compile(r"\{[^{}]*\}")


@pytest.fixture
def catalogs(tmp_path, monkeypatch):
    """An empty locale folder of our own for i18n to read, its caches cleared before and after."""
    monkeypatch.setattr(i18n, "LOCALE", tmp_path)
    monkeypatch.delenv(i18n.LANGUAGE_VARIABLE, raising=False)
    monkeypatch.delenv(i18n.SESSION_VARIABLE, raising=False)
    i18n._catalog.cache_clear()
    i18n._language_of_this_kernel.cache_clear()
    yield tmp_path
    i18n._catalog.cache_clear()
    i18n._language_of_this_kernel.cache_clear()


def _write_catalog(folder: Path, language: str, entries: str) -> None:
    (folder / language).mkdir(parents=True, exist_ok=True)
    plural = "n % 10 == 1 && n % 100 != 11 ? 0 : n % 10 >= 2 && n % 10 <= 4 && (n % 100 < 12 || n % 100 > 14) ? 1 : 2"
    header = f'msgid ""\nmsgstr ""\n"Language: {language}\\n"\n"Plural-Forms: nplurals=3; plural={plural};\\n"\n\n'
    (folder / language / "test.po").write_text(header + entries, encoding="utf-8")


def test_the_language_is_the_one_of_the_notebook_the_kernel_runs(catalogs, tmp_path, monkeypatch):
    russian, english = tmp_path / "ru.ipynb", tmp_path / "en.ipynb"
    russian.write_text(json.dumps({"metadata": {"heads_and_masks": {"language": "ru"}}, "cells": []}))
    english.write_text(json.dumps({"metadata": {}, "cells": []}))
    assert i18n.language() == "en"  # no notebook: English
    monkeypatch.setenv(i18n.SESSION_VARIABLE, str(russian))
    assert i18n.language() == "ru"
    monkeypatch.setenv(i18n.SESSION_VARIABLE, str(english))
    assert i18n.language() == "en"
    monkeypatch.setenv(i18n.SESSION_VARIABLE, str(tmp_path / "gone.ipynb"))
    assert i18n.language() == "en"  # a notebook that cannot be read says nothing
    monkeypatch.setenv(i18n.SESSION_VARIABLE, str(russian))
    monkeypatch.setenv(i18n.LANGUAGE_VARIABLE, "en")
    assert i18n.language() == "en"  # the variable before the notebook
    with i18n.use_language("ru"):
        assert i18n.language() == "ru"  # the grader's choice before everything
        with i18n.use_language(None):
            assert i18n.language() == "ru"
    assert i18n.language() == "en"


def test_a_message_is_looked_up_whole_and_a_missing_one_stays_english_and_is_reported(catalogs):
    _write_catalog(catalogs, "ru", 'msgid "The mask is ignored."\nmsgstr "Маска не учтена."\n\n')
    with i18n.use_language("ru"):
        assert i18n._("The mask is ignored.") == "Маска не учтена."
        assert i18n._("Not in the catalog.") == "Not in the catalog."
    assert "Not in the catalog." in i18n.untranslated("ru")
    assert "The mask is ignored." not in i18n.untranslated("ru")
    assert i18n._("The mask is ignored.") == "The mask is ignored."  # English: the text itself


def test_russian_counts_take_three_forms(catalogs):
    _write_catalog(
        catalogs,
        "ru",
        'msgid "{n} head"\nmsgid_plural "{n} heads"\nmsgstr[0] "{n} голова"\nmsgstr[1] "{n} головы"\n'
        'msgstr[2] "{n} голов"\n\n',
    )
    with i18n.use_language("ru"):
        said = {n: i18n.ngettext("{n} head", "{n} heads", n).format(n=n) for n in (1, 2, 5, 11, 21, 22, 25, 111)}
    assert said == {
        1: "1 голова",
        2: "2 головы",
        5: "5 голов",
        11: "11 голов",
        21: "21 голова",
        22: "22 головы",
        25: "25 голов",
        111: "111 голов",
    }
    assert [i18n.ngettext("{n} head", "{n} heads", n).format(n=n) for n in (1, 2)] == ["1 head", "2 heads"]


def test_a_decimal_comma_in_russian_prose_only():
    with i18n.use_language("ru"):
        assert i18n.number(0.125, ".2f") == "0,12" or i18n.number(0.125, ".2f") == "0,13"
        assert i18n.number(1.5) == "1,5"
        # thousands apart by a narrow no-break space ("294,912" would read as a fraction), the decimals by a comma
        assert i18n.number(294912, ",") == "294\u202f912" and i18n.number(1234.5, ",.1f") == "1\u202f234,5"
    assert i18n.number(1.5) == "1.5" and i18n.number(294912, ",") == "294,912"


def test_a_stub_is_not_written_yet_in_the_language_of_its_notebook():
    def answer():
        raise NotImplementedError()

    try:
        answer()
    except NotImplementedError as error:
        raised = error
    with i18n.use_language("ru"):
        said = not_written_yet(answer, raised)
    assert said == "✗ Функция `answer` ещё не написана: замените `raise NotImplementedError()` своим кодом"


def _unescaped(text: str) -> str:
    return text.replace("{{", "").replace("}}", "")


def _message_calls():
    """(file, line, call) of every _() and ngettext() call in the code that has catalogs."""
    files = {path for _area, folder in translations.MESSAGE_AREAS for path in (REPO / folder).rglob("*.py")}
    for path in sorted(files):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in translations.KEYWORDS:
                yield path.relative_to(REPO), node.lineno, node


def test_every_message_is_one_whole_sentence_written_as_a_string():
    """A translator sees the whole sentence, placeholders named: `_(f"...")`, `_("a" + b)` or `_(text)` give a
    catalog entry that is never looked up, or none."""
    wrong, seen = [], 0
    for path, line, call in _message_calls():
        texts = call.args[:2] if call.func.id == "ngettext" else call.args[:1]
        seen += 1
        for text in texts:
            if not (isinstance(text, ast.Constant) and isinstance(text.value, str)):
                wrong.append(f"{path}:{line}: {ast.unparse(text)[:80]}")
            else:
                fields = [p[1:-1].split(":")[0].split("!")[0] for p in PLACEHOLDER.findall(_unescaped(text.value))]
                if not all(field.isidentifier() for field in fields):
                    wrong.append(f"{path}:{line}: a placeholder without a name in {text.value[:60]!r}")
    assert seen >= 20, f"only {seen} marked messages found: is the scan looking in the right folders?"
    assert not wrong, "messages that are not one string with named placeholders:\n" + "\n".join(wrong)


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_translation_keeps_the_placeholders_of_its_message(language):
    """A translation that drops, renames or adds a {placeholder} breaks .format() or loses a number."""
    from babel.messages.pofile import read_po

    wrong, checked = [], 0
    for path in sorted((translations.PACKAGE_LOCALE / language).glob("*.po")):
        with path.open("rb") as file:
            catalog = read_po(file, locale=language)
        for message in catalog:
            if not message.id or not message.string:
                continue
            ids = message.id if isinstance(message.id, tuple) else (message.id,)
            strings = message.string if isinstance(message.string, tuple) else (message.string,)
            wanted = set(PLACEHOLDER.findall(" ".join(ids)))
            for string in strings:
                if string and set(PLACEHOLDER.findall(string)) != wanted:
                    wrong.append(f"{path.name}: {ids[0][:60]!r}: {sorted(set(PLACEHOLDER.findall(string)) ^ wanted)}")
                checked += 1
    assert checked >= 3
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_message_catalogs_are_in_step_with_the_code(language):
    """Every message marked in the code is an entry of its area's catalog (tools/translations.py update)."""
    lacking = []
    for area, template in translations.code_messages().items():
        catalog = translations.read_message_catalog(language, area)
        lacking += [f"{area}: {m.id!r}"[:120] for m in template if m.id and m.id not in catalog]
    assert not lacking, f"run `python tools/translations.py update {language}`; not in the catalogs:\n" + "\n".join(
        lacking[:20]
    )


def test_a_notebooks_language_is_read_from_a_path_only(tmp_path):
    """notebook_language(fd) is None and the file descriptor stays open: given a number, open() takes it for a file
    descriptor and closes it afterwards, which took a grading kernel's own sockets (the kernel died)."""
    import os

    notebook = tmp_path / "russian.ipynb"
    notebook.write_text('{"metadata": {"heads_and_masks": {"language": "ru"}}}', encoding="utf-8")
    assert i18n.notebook_language(notebook) == "ru" and i18n.notebook_language(str(notebook)) == "ru"
    descriptor = os.open(notebook, os.O_RDONLY)
    try:
        assert i18n.notebook_language(descriptor) is None
        os.fstat(descriptor)  # still open
    finally:
        os.close(descriptor)
