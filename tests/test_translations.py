"""The notebooks' text in other languages (tools/translations.py): cut into paragraphs without loss, catalogs in
step with authoring/, and every translation keeps what must not change (code, formulas, links, markup)."""

from __future__ import annotations

import re
import sys

import pytest
from course import REPO, solution_notebook, student_notebook

sys.path[:0] = [str(REPO / "tools")]
import lab  # noqa: E402
import translations  # noqa: E402
from build_notebooks import assignments, read_source  # noqa: E402

NOTEBOOKS = {name: read_source(REPO / "authoring" / f"{name}.py") for name in assignments()}
LANGUAGES = sorted(translations.LANGUAGES)


def markdown_cells():
    return [
        (name, cell) for name, notebook in NOTEBOOKS.items() for cell in notebook.cells if cell.cell_type == "markdown"
    ]


def test_a_markdown_cell_cut_into_paragraphs_and_joined_again_is_unchanged():
    cells = markdown_cells()
    assert len(cells) > 100
    for name, cell in cells:
        units = translations.paragraphs(cell.source)
        assert "\n\n".join(u.joined(u.text) for u in units) == cell.source, f"{name}, cell {cell.id}"


def test_nbgrader_markers_stay_out_of_the_text_a_translator_sees():
    written = "### BEGIN SOLUTION\n**Model answer.** Zero is a score.\n\n**Rubric.** 1 point.\n### END SOLUTION"
    units = translations.paragraphs(written)
    assert [u.text for u in units] == ["**Model answer.** Zero is a score.", "**Rubric.** 1 point."]
    catalog = translations.Catalog(locale="ru")
    catalog.add("**Model answer.** Zero is a score.", "**Образцовый ответ.** Ноль — это оценка.")
    catalog.add("**Rubric.** 1 point.", "**Критерии.** 1 балл.")
    missing = []
    assert translations.translate_markdown(written, catalog, missing) == (
        "### BEGIN SOLUTION\n**Образцовый ответ.** Ноль — это оценка.\n\n**Критерии.** 1 балл.\n### END SOLUTION"
    )
    assert missing == []
    fenced = "Before.\n\n```\nb n (h d) -> b h n d\n\nsecond line\n```\n\nAfter."
    assert [(u.text, u.code) for u in translations.paragraphs(fenced)] == [
        ("Before.", False),
        ("```\nb n (h d) -> b h n d\n\nsecond line\n```", True),
        ("After.", False),
    ]


def test_a_paragraph_without_translation_is_reported_and_the_notebook_refused():
    name, notebook = next(iter(NOTEBOOKS.items()))
    empty = translations.Catalog(locale="ru")
    missing = []
    translations.translate_markdown(notebook.cells[0].source, empty, missing)
    assert missing == [
        u.text for u in translations.paragraphs(notebook.cells[0].source) if translations.translatable(u)
    ]
    fuzzy = translations.Catalog(locale="ru")
    fuzzy.add(missing[0], "Старый перевод", flags=["fuzzy"])  # a translation of an older English text
    assert translations.translation_of(fuzzy, missing[0]) is None


@pytest.mark.parametrize("language", LANGUAGES)
def test_each_catalog_holds_exactly_the_paragraphs_of_its_notebook(language):
    for name, notebook in NOTEBOOKS.items():
        catalog = translations.read_catalog(language, name)
        wanted = {text for text, _ in translations.source_paragraphs(notebook)}
        held = {message.id for message in catalog if message.id}
        assert held == wanted, (
            f"{name}: translations/{language}/{name}.po is not in step with authoring/{name}.py "
            f"({len(wanted - held)} paragraphs missing, {len(held - wanted)} no longer in the notebook): run "
            f"python tools/translations.py update {language}"
        )


# What a translation must carry over as it is: code spans, formulas, links' targets, HTML tags, bold/italic count
KEPT = {
    "code span": re.compile(r"`[^`\n]+`"),
    "formula": re.compile(r"\$\$.+?\$\$|\$[^$\n]+\$", re.S),
    "link target": re.compile(r"\]\(([^)\s]+)\)"),
    "HTML tag": re.compile(r"</?[a-zA-Z][^>]*>"),
}


def kept_parts(text: str) -> dict[str, list[str]]:
    return {what: sorted(pattern.findall(text)) for what, pattern in KEPT.items()}


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_translation_keeps_the_code_formulas_links_and_markup_of_its_paragraph(language):
    problems = []
    for name in NOTEBOOKS:
        for message in translations.read_catalog(language, name):
            if not message.id or not message.string:
                continue
            english, translated = kept_parts(message.id), kept_parts(message.string)
            for what in KEPT:
                if english[what] != translated[what]:
                    lost = sorted(set(english[what]) - set(translated[what]))
                    added = sorted(set(translated[what]) - set(english[what]))
                    problems.append(f"{name}: {what}s differ in {message.id[:60]!r}: lost {lost}, added {added}")
            if message.id.lstrip().startswith(("#", "*", "|", ">", "1.")):  # a heading, list, table or quote
                start = message.id.lstrip()[0]
                if not message.string.lstrip().startswith(start):
                    problems.append(f"{name}: {message.id[:60]!r} starts with {start!r}, its translation does not")
    assert not problems, "\n".join(problems[:20])


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_paragraph_of_every_notebook_has_a_translation(language):
    missing = {}
    for name, notebook in NOTEBOOKS.items():
        catalog = translations.read_catalog(language, name)
        untranslated = [
            t for t, _ in translations.source_paragraphs(notebook) if translations.translation_of(catalog, t) is None
        ]
        if untranslated:
            missing[name] = untranslated
    assert not missing, (
        "paragraphs without a translation (python tools/translations.py check {language}): "
        + "; ".join(f"{name}: {len(texts)}, first {texts[0][:80]!r}" for name, texts in missing.items())
    )


def _graded_shape(notebook) -> list[tuple]:
    """What grading sees of a notebook: each cell's kind, id and nbgrader metadata, and a code cell's source (a
    markdown cell's checksum, of its text, differs between languages; a code cell's must not)."""

    def nbgrader(cell):
        meta = dict(cell.metadata.get("nbgrader", {}))
        if cell.cell_type == "markdown":
            meta.pop("checksum", None)
        return meta

    return [
        (cell.cell_type, cell.id, nbgrader(cell), cell.source if cell.cell_type == "code" else None)
        for cell in notebook.cells
    ]


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("version", [solution_notebook, student_notebook], ids=["solution", "student"])
def test_each_language_has_the_same_code_cells_grade_ids_and_points(language, version):
    for name in NOTEBOOKS:
        english, translated = version(name), version(name, language)
        assert _graded_shape(translated) == _graded_shape(english), f"{name}: {language} differs in what is graded"
        assert translated.metadata.get("heads_and_masks", {}).get("language") == language
        changed = [
            cell.id
            for a, cell in zip(english.cells, translated.cells)
            if cell.cell_type == "markdown" and cell.source != a.source
        ]
        assert changed, f"{name}: no markdown cell is translated"


def test_the_lab_opens_the_languages_of_translations_and_names_them_for_an_unknown_one(monkeypatch):
    """`make lab LANG=...` knows the course's languages from translations.LANGUAGES alone (it had a copy of its
    own), and for a language the course is not built in it says so and lists those there are."""
    assert lab.course_language("ru_RU.UTF-8") == "ru" and lab.course_language("xx") is None
    assert lab.unknown_language_note("en_US.UTF-8") is None and lab.unknown_language_note("C.UTF-8") is None
    assert lab.unknown_language_note("ru") is None
    monkeypatch.setitem(translations.LANGUAGES, "eo", "Esperanto")  # a language added where the build adds it
    note = lab.unknown_language_note("xx")
    assert note is not None and "'xx'" in note and "English" in note
    assert "Russian (LANG=ru)" in note and "Esperanto (LANG=eo)" in note, note
