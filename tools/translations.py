"""The course in other languages: the text of every notebook through gettext message catalogs, one per notebook.

One source, several languages. ``authoring/NN_name.py`` stays the one source of each notebook; its markdown
is cut into paragraphs (the unit a translator works on: a heading, a paragraph, a list item, a table) and each
language keeps one catalog per notebook, ``translations/<language>/NN_name.po`` (gettext's PO format, read and
written with Babel). Code cells are never translated: code, names, grade ids and points are the same in
every language, so an answer is graded alike whichever notebook it was written in.

Why PO catalogs and not a copied notebook or Jupytext's paired cells: a translator's tools (Poedit, Weblate,
Lokalize) read PO; a changed English paragraph becomes a new entry with no translation, so a stale
translation cannot go unnoticed (the build refuses a notebook with one); and the same catalogs format serves
the package's messages.

    python tools/translations.py update ru    add the paragraphs and messages the catalogs lack, drop the ones gone
    python tools/translations.py check ru     list the paragraphs and messages not translated yet; exit 1 if any

The package's own messages (checks, widgets, pictures, feedback, reports) are marked in the code with ``_()``
and ``ngettext()`` (heads_and_masks/i18n.py) and kept in ``heads_and_masks/locale/<language>/<area>.po``.

``tools/build_notebooks.py`` builds ``solutions-<language>/`` and ``notebooks-<language>/`` from these.

When two branches both touch a catalog (one translates, the other changes the English), merge them with
``update``, not line by line: run ``update`` on the translating branch after merging the English in, so that
a changed paragraph is marked fuzzy. A line-based merge of the PO files can pair a changed paragraph's new
English with the translation of its old text, unmarked, and nothing can tell afterwards (seen once, in 04).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po, write_po

REPO = Path(__file__).resolve().parents[1]
TRANSLATIONS = REPO / "translations"
LANGUAGES = {"ru": "Russian"}  # the languages the course is built in besides English
TEXT_STUBS = {"ru": "ВАШ ОТВЕТ ЗДЕСЬ"}  # nbgrader's "YOUR ANSWER HERE" in a written answer's released cell

HEADER_COMMENT = """\
# {language} text of the notebook {notebook} of Heads & Masks: one entry per paragraph of its markdown.
# Made and kept in step by `python tools/translations.py update`; translators write the msgstr lines.
# The terms of the course in this language: translations/glossary.md"""

# nbgrader's markers stay where they are, untranslated: they are instructions to nbgrader, not text
MARKER = re.compile(r"^\s*#{2,3} (BEGIN|END) (SOLUTION|HIDDEN TESTS)\s*$")


@dataclass(frozen=True)
class Paragraph:
    """One unit of a markdown cell: the text a translator sees, and the nbgrader markers around it."""

    before: tuple[str, ...]  # marker lines above the text
    text: str  # what is translated ("" for a paragraph of markers only)
    after: tuple[str, ...]  # marker lines below it
    code: bool = False  # a fenced code block: kept as written, like code cells

    def joined(self, text: str) -> str:
        return "\n".join([*self.before, *([text] if text else []), *self.after])


def paragraphs(markdown: str) -> list[Paragraph]:
    """``markdown`` cut at blank lines (never inside a fenced code block), each piece with its markers apart."""
    pieces, current, fenced = [], [], False
    for line in markdown.split("\n"):
        if line.strip().startswith("```"):
            fenced = not fenced
        if not line.strip() and not fenced:
            if current:
                pieces.append(current)
            current = []
            continue
        current.append(line)
    if current:
        pieces.append(current)
    units = []
    for lines in pieces:
        start, end = 0, len(lines)
        while start < end and MARKER.match(lines[start]):
            start += 1
        while end > start and MARKER.match(lines[end - 1]):
            end -= 1
        text = "\n".join(lines[start:end])
        units.append(Paragraph(tuple(lines[:start]), text, tuple(lines[end:]), code=text.lstrip().startswith("```")))
    return units


def translatable(paragraph: Paragraph) -> bool:
    return bool(paragraph.text.strip()) and not paragraph.code


def catalog_path(language: str, notebook: str) -> Path:
    return TRANSLATIONS / language / f"{notebook}.po"


def new_catalog(language: str, notebook: str) -> Catalog:
    """An empty catalog of ``notebook``'s text in ``language``, with the course's header."""
    return Catalog(
        locale=language,
        domain=notebook,
        header_comment=HEADER_COMMENT.format(language=LANGUAGES[language], notebook=notebook),
        project="Heads & Masks",
        version="1",
        language_team=f"{LANGUAGES[language]} <{language}>",
        fuzzy=False,
    )


def read_catalog(language: str, notebook: str) -> Catalog:
    path = catalog_path(language, notebook)
    if not path.exists():
        return new_catalog(language, notebook)
    with path.open("rb") as file:
        return read_po(file, locale=language, domain=notebook)


class Untranslated(ValueError):
    """A notebook's text has paragraphs its catalog does not translate (new, changed, or marked fuzzy)."""

    def __init__(self, notebook: str, language: str, missing: list[str]):
        self.missing = missing
        shown = "\n".join(f"  - {m[:100]!r}" for m in missing[:10])
        super().__init__(
            f"{notebook}: {len(missing)} paragraph(s) have no {language} translation in "
            f"{catalog_path(language, notebook).relative_to(REPO)} (python tools/translations.py check {language}):\n"
            f"{shown}"
        )


def translation_of(catalog: Catalog, text: str) -> str | None:
    message = catalog.get(text)
    if message is None or not message.string or message.fuzzy:
        return None
    return message.string


def translate_markdown(markdown: str, catalog: Catalog, missing: list[str]) -> str:
    """``markdown`` with each paragraph replaced by its translation; a paragraph without one is added to
    ``missing`` and kept in English (the caller refuses the notebook if anything is missing)."""
    out = []
    for paragraph in paragraphs(markdown):
        if not translatable(paragraph):
            out.append(paragraph.joined(paragraph.text))
            continue
        translated = translation_of(catalog, paragraph.text)
        if translated is None:
            missing.append(paragraph.text)
            translated = paragraph.text
        out.append(paragraph.joined(translated))
    return "\n\n".join(out)


def translate_notebook(notebook, name: str, language: str):
    """A copy of the source notebook ``notebook`` (nbformat) with every markdown cell in ``language``, marked
    with its language in the notebook's metadata; raises ``Untranslated`` if any paragraph has no translation."""
    import copy

    catalog = read_catalog(language, name)
    translated, missing = copy.deepcopy(notebook), []
    for cell in translated.cells:
        if cell.cell_type == "markdown":
            cell.source = translate_markdown(cell.source, catalog, missing)
    if missing:
        raise Untranslated(name, language, missing)
    translated.metadata["heads_and_masks"] = {"language": language}
    return translated


# ---------------------------------------------------------------------------------------------
# Keeping the catalogs in step with the notebooks
# ---------------------------------------------------------------------------------------------


def source_paragraphs(notebook) -> list[tuple[str, str]]:
    """(text, cell id) of every translatable paragraph of a source notebook, in order."""
    return [
        (paragraph.text, cell.id)
        for cell in notebook.cells
        if cell.cell_type == "markdown"
        for paragraph in paragraphs(cell.source)
        if translatable(paragraph)
    ]


def update(language: str, notebook, name: str) -> tuple[int, int]:
    """Bring ``translations/<language>/<name>.po`` in step with the notebook, as gettext's msgmerge does: every
    paragraph is an entry, its translation kept where the text is unchanged; a changed paragraph keeps the
    translation of the text it replaced, marked fuzzy (not used until a translator checks it); entries whose
    text is gone are kept at the end as obsolete (``#~``).
    Returns (entries, entries without a usable translation)."""
    template = Catalog(domain=name)
    for text, cell_id in source_paragraphs(notebook):
        if text in template:
            template[text].locations.append((cell_id, 0))
        else:
            template.add(text, locations=[(cell_id, 0)])
    catalog = read_catalog(language, name)
    entries = write_updated(catalog, template, catalog_path(language, name))
    return len(entries), sum(1 for m in entries if translation_of(catalog, m.id) is None)


def write_updated(catalog: Catalog, template: Catalog, path: Path) -> list:
    """``catalog`` brought in step with ``template`` (msgmerge's way: a changed text keeps its old translation,
    marked fuzzy) and written to ``path``; its entries (the header left out)."""
    catalog.update(template, no_fuzzy_matching=False, update_header_comment=False, update_creation_date=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as file:
        write_po(file, catalog, width=0, include_lineno=False, sort_output=False)
    return [m for m in catalog if m.id]


# ---------------------------------------------------------------------------------------------
# The package's messages (checks, widgets, pictures, feedback, reports): heads_and_masks/i18n.py
# ---------------------------------------------------------------------------------------------

PACKAGE_LOCALE = REPO / "heads_and_masks" / "locale"
KEYWORDS = {"_": None, "N_": None, "ngettext": (1, 2)}  # what marks a message in the code (gettext's own names)

# Each area of the code keeps its own catalog, locale/<language>/<area>.po: a file belongs to the first area whose
# folder holds it
MESSAGE_AREAS = (
    ("checks", "heads_and_masks/checks"),
    ("widgets", "heads_and_masks/widgets"),
    ("pictures", "heads_and_masks/pictures"),
    ("package", "heads_and_masks"),
    ("grading", "autograde"),
    ("explore", "tools"),
)


def area_of(path: Path) -> str:
    relative = path.relative_to(REPO)
    return next(area for area, folder in MESSAGE_AREAS if relative.is_relative_to(folder))


def code_messages() -> dict[str, Catalog]:
    """Every message marked in the code, as a template catalog per area. A message used in several areas
    belongs to the first of them in MESSAGE_AREAS (one translation serves all its uses)."""
    from babel.messages.extract import extract_from_file

    templates = {area: Catalog(domain=area) for area, _pattern in MESSAGE_AREAS}
    seen: dict[object, str] = {}
    order = [area for area, _folder in MESSAGE_AREAS]
    files = {path for _area, folder in MESSAGE_AREAS for path in (REPO / folder).rglob("*.py")}
    for path in sorted(files, key=lambda path: (order.index(area_of(path)), path)):
        area = area_of(path)
        for line, message, comments, _context in extract_from_file(
            "python", str(path), keywords=KEYWORDS, comment_tags=("Translators:",), strip_comment_tags=True
        ):
            key = message[0] if isinstance(message, tuple) else message
            home = seen.setdefault(key, area)
            location = (str(path.relative_to(REPO)), line)
            if key in templates[home]:
                templates[home][key].locations.append(location)
            else:
                templates[home].add(message, locations=[location], auto_comments=comments)
    return {area: template for area, template in templates.items() if len(template)}


def message_catalog_path(language: str, area: str) -> Path:
    return PACKAGE_LOCALE / language / f"{area}.po"


def read_message_catalog(language: str, area: str) -> Catalog:
    path = message_catalog_path(language, area)
    if not path.exists():
        catalog = new_catalog(language, area)
        catalog.header_comment = MESSAGES_HEADER.format(language=LANGUAGES[language], area=area)
        return catalog
    with path.open("rb") as file:
        return read_po(file, locale=language, domain=area)


MESSAGES_HEADER = """\
# {language} messages of Heads & Masks, area "{area}" of the code: one entry per sentence marked with _() or
# ngettext(). Made and kept in step by `python tools/translations.py update`; translators write the msgstr lines.
# Keep every {{placeholder}} as it is (its name says what goes there). The terms: translations/glossary.md"""


def message_translated(message) -> bool:
    if message.fuzzy:
        return False
    return all(message.string) if message.pluralizable else bool(message.string)


def update_messages(language: str) -> list[tuple[str, int, int]]:
    """Bring every area's catalog of ``language`` in step with the code, as :func:`update` does for the
    notebooks. Returns (area, entries, entries without a usable translation) per area."""
    counts = []
    for area, template in code_messages().items():
        catalog = read_message_catalog(language, area)
        entries = write_updated(catalog, template, message_catalog_path(language, area))
        counts.append((area, len(entries), sum(1 for m in entries if not message_translated(m))))
    return counts


def untranslated_messages(language: str) -> dict[str, list[str]]:
    """Per area, the messages of the code that ``language``'s catalogs do not translate (none: all done)."""
    missing = {}
    for area, template in code_messages().items():
        catalog = read_message_catalog(language, area)
        lacking = []
        for message in template:
            if not message.id:
                continue
            found = catalog.get(message.id)
            if found is None or not message_translated(found):
                lacking.append(message.id[0] if isinstance(message.id, tuple) else message.id)
        if lacking:
            missing[area] = lacking
    return missing


def main() -> int:
    sys.path[:0] = [str(REPO / "tools")]
    from build_notebooks import assignments, read_source

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["update", "check"])
    parser.add_argument("language", choices=sorted(LANGUAGES))
    args = parser.parse_args()
    missing_in_all = 0
    for name in assignments():
        notebook = read_source(REPO / "authoring" / f"{name}.py")
        if args.action == "update":
            entries, missing = update(args.language, notebook, name)
        else:
            catalog = read_catalog(args.language, name)
            texts = [text for text, _ in source_paragraphs(notebook)]
            entries, missing = len(set(texts)), len({t for t in texts if translation_of(catalog, t) is None})
        missing_in_all += missing
        print(f"{name}: {entries} paragraphs, {missing} without a {args.language} translation")
    import explore  # the explore pages' descriptions: the widgets' docstrings, a catalog of their own

    if args.action == "update":
        entries, missing = explore.update_translations(args.language)
    else:
        catalog = read_catalog(args.language, explore.PAGE_CATALOG)
        texts = {p for page in explore.pages() for p in explore.docstring_paragraphs(page)}
        entries, missing = len(texts), sum(1 for t in texts if translation_of(catalog, t) is None)
    missing_in_all += missing
    print(f"explore pages: {entries} paragraphs, {missing} without a {args.language} translation")
    if args.action == "update":
        for area, entries, missing in update_messages(args.language):
            missing_in_all += missing
            print(f"messages, {area}: {entries} messages, {missing} without a {args.language} translation")
    else:
        for area, lacking in untranslated_messages(args.language).items():
            missing_in_all += len(lacking)
            print(f"messages, {area}: {len(lacking)} without a {args.language} translation")
            for text in lacking[:20]:
                print(f"  - {text[:100]!r}")
    return 1 if args.action == "check" and missing_in_all else 0


if __name__ == "__main__":
    sys.exit(main())
