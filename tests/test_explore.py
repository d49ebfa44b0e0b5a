"""tools/explore.py's Russian build (`make explore LANG=ru`), without a browser: the pages and the index in Russian.

The browser test (tests/browser/test_browser_explore.py) opens the pages; these check, in a second, what the
build writes: every sentence a learner reads on a page or the index is the Russian one, and a sentence without
a translation refuses the build rather than showing English.
"""

from __future__ import annotations

import html
import re
import sys

import nbformat
import pytest

from heads_and_masks import i18n
from course import REPO

sys.path.insert(0, str(REPO / "tools"))
import explore  # tools/ is not a package: its folder is put on sys.path above

PAGES = explore.pages()
CYRILLIC = re.compile("[а-яё]", re.IGNORECASE)


@pytest.fixture(scope="module")
def russian_pages(tmp_path_factory) -> dict[str, nbformat.NotebookNode]:
    folder = tmp_path_factory.mktemp("explore-ru")
    written = explore.build(folder, explore.course_language("ru_RU.UTF-8"))
    return {path.stem: nbformat.read(path, as_version=4) for path in written}


def test_every_page_is_built_in_russian(russian_pages):
    """Each page: the Russian notebook's title, the page's sentence and the widget's docstrings in Russian, the
    notebook marked Russian, and its kernel told to speak Russian (Voilà does not tell a kernel its notebook)."""
    assert sorted(russian_pages) == [page.assignment for page in PAGES]
    for page in PAGES:
        notebook = russian_pages[page.assignment]
        text, code = notebook.cells[0].source, notebook.cells[1].source
        russian_title = explore.PageText("ru").title(page)
        assert text.startswith(f"# {russian_title}\n") and russian_title != page.title, text[:200]
        assert f"Виджет блокнота `{page.assignment}`" in text
        for english in explore.docstring_paragraphs(page):
            assert english not in text, f"{page.assignment}: an English paragraph on the Russian page: {english!r}"
        # every paragraph of prose is Russian (a formula or a name alone would have no Cyrillic letter)
        prose = [p for p in text.split("\n\n") if len(p.split()) > 3]
        assert all(CYRILLIC.search(p) for p in prose), prose
        assert notebook.metadata["heads_and_masks"] == {"language": "ru"}
        assert f"os.environ[{i18n.LANGUAGE_VARIABLE!r}] = 'ru'" in code and page.call in code


def test_the_russian_index_speaks_russian():
    index = explore.index_template(PAGES, "ru")
    assert '<html lang="ru">' in index
    assert "Heads &amp; Masks: виджеты курса" in index and "Каждая страница показывает виджет" in index
    english = explore.index_template(PAGES)
    assert '<html lang="en">' in english and html.escape(explore.INDEX_LEAD) in english
    for page in PAGES:
        assert html.escape(explore.PageText("ru").title(page)) in index
        assert html.escape(" ".join(explore.what_it_shows(page).split())) not in index


def test_a_missing_translation_refuses_the_build(tmp_path, monkeypatch):
    """A docstring paragraph without its Russian (a widget's docstring changed, its catalog not updated) stops
    the build, naming the paragraph: the page never shows an English sentence to a Russian lecture hall."""
    original = explore.read_catalog

    def without_one(language, name):
        catalog = original(language, name)
        if name == explore.PAGE_CATALOG:
            catalog[explore.what_it_shows(PAGES[0])].string = ""
        return catalog

    monkeypatch.setattr(explore, "read_catalog", without_one)
    with pytest.raises(explore.Untranslated, match="One query"):
        explore.build(tmp_path, "ru")
    assert not list(tmp_path.iterdir())


def test_a_russian_page_runs_its_widget_in_russian(russian_pages, monkeypatch):
    """The first page's code, run as its Voilà kernel runs it: the widget's readouts are in Russian, and no
    message it gave lacked a translation."""
    monkeypatch.setenv(i18n.LANGUAGE_VARIABLE, "en")  # the page's code sets it, as in its own kernel
    before = i18n.untranslated("ru")
    namespace: dict = {}
    code = russian_pages[PAGES[0].assignment].cells[1].source
    *setup, last = code.strip().splitlines()
    exec("\n".join(setup), namespace)  # the course's own page, as its kernel runs it
    widget = eval(last, namespace)
    shown = widget.readouts_text()
    assert CYRILLIC.search(shown), shown
    assert i18n.untranslated("ru") == before, i18n.untranslated("ru") - before


def test_one_server_serves_both_languages(tmp_path):
    """`make explore` serves the English pages at the top and the Russian ones in ru/ (one server for a lecture
    that switches language, and for the browser test); the top's index is the one of LANG."""
    written = explore.build_languages(tmp_path, None)
    assert sorted(path.relative_to(tmp_path).as_posix() for path in written) == sorted(
        [f"{page.assignment}.ipynb" for page in PAGES] + [f"ru/{page.assignment}.ipynb" for page in PAGES]
    )
    tree = explore.tree_template(PAGES, "ru", {"ru"})
    russian_index = explore.index_template(PAGES, "ru")
    assert tree.startswith('{% if notebook_path.strip("/") == "ru" %}') and tree.count(russian_index) == 2
    assert f'voila/render/ru/{PAGES[0].assignment}.ipynb"' in russian_index
    assert explore.tree_template(PAGES, None, set()) == explore.index_template(PAGES)
