"""The explore page (what `make explore` runs): every notebook's widget, served by Voilà, without code.

    python tools/explore.py                 serve on http://127.0.0.1:8866/ (the index of pages)
    python tools/explore.py --port 9000     another port; any further argument goes to Voilà
    python tools/explore.py --build DIR     only write the pages into DIR
    python tools/explore.py --language ru   the pages in Russian (`make explore LANG=ru`)
    python tools/explore.py --update-translations ru   bring translations/ru/explore.po in step

One page per notebook, ``NN_slug.ipynb``: the notebook's title, what its widget shows (the widget
module's and class's own docstrings) and the widget itself, made exactly as the notebook makes it
(the same call, found in ``authoring/NN_slug.py``) on the course's reference implementations. Voilà
runs each page in a kernel of this environment and shows only the outputs: no code, no editor.
The index (``/``) lists the pages in the course's order, each by its title with what its widget shows.
Nothing is fetched from the network (the widgets' scripts come with Voilà and ipywidgets), so it
works offline, e.g. projected in a lecture hall.

``--language ru`` (``make explore LANG=ru``, as ``make lab LANG=ru``; a locale such as ``ru_RU.UTF-8`` does
too): the same pages in Russian. The title is the Russian notebook's (its catalog,
``translations/ru/NN_slug.po``), the widget's docstrings are translated in ``translations/ru/explore.po``
(a catalog of paragraphs, as a notebook's; ``--update-translations ru`` keeps it in step with the
docstrings), the page's and the index's own sentences are messages of the ``explore`` area
(``heads_and_masks/locale/ru/explore.po``), and the widget speaks Russian through ``heads_and_masks.i18n``
(the page's kernel is told its language: Voilà does not tell a kernel its notebook's path). Voilà's own
frame (its loading line) has no translations (Voilà ships no catalogs), so it stays in English.
"""

from __future__ import annotations

import argparse
import ast
import html
import importlib
import inspect
import os
import signal
import subprocess
import sys
import tempfile
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tools")]
from build_notebooks import KERNEL, read_source  # noqa: E402
from lab import course_language  # noqa: E402
from translations import LANGUAGES, Untranslated, read_catalog, translation_of, write_updated  # noqa: E402

from heads_and_masks.i18n import LANGUAGE_VARIABLE, N_, translated, use_language  # noqa: E402

PORT = 8866
# The only JupyterLab extensions the pages load: the widgets', and anywidget's, which draws the course's
# sliders (the environment's other extensions, e.g. nbgrader's or Jupytext's, are for JupyterLab and fail
# to start in a Voilà page).
EXTENSIONS = ("@voila-dashboards/widgets-manager8", "@jupyter-widgets/jupyterlab-manager", "anywidget")


@dataclass
class Page:
    assignment: str  # NN_slug
    title: str  # the notebook's title, e.g. "01 · Heads are a block structure"
    widget_module: str  # heads_and_masks.widgets.<slug>
    widget_class: str
    call: str  # how the notebook makes its widget, e.g. "TileGridWidget(n=48, block=8)"

    @property
    def slug(self) -> str:
        return self.assignment.split("_", 1)[1]


def _course_widget_classes(module) -> list[type]:
    from heads_and_masks.widgets.base import CourseWidget

    return [
        cls
        for _, cls in inspect.getmembers(module, inspect.isclass)
        if issubclass(cls, CourseWidget) and cls is not CourseWidget and cls.__module__ == module.__name__
    ]


def pages() -> list[Page]:
    """A page for each notebook that has a widget module (``heads_and_masks/widgets/<slug>.py``)."""
    found = []
    for path in sorted((REPO / "authoring").glob("[0-9][0-9]_*.py")):
        slug = path.stem.split("_", 1)[1]
        if not (REPO / "heads_and_masks" / "widgets" / f"{slug}.py").exists():
            continue
        module = importlib.import_module(f"heads_and_masks.widgets.{slug}")
        notebook = read_source(path)
        title = next(c.source for c in notebook.cells if c.cell_type == "markdown").splitlines()[0].lstrip("# ")
        code = "\n".join(c.source for c in notebook.cells if c.cell_type == "code")
        for cls in _course_widget_classes(module):
            calls = [
                node
                for node in ast.walk(ast.parse(code))
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == cls.__name__
            ]
            if calls:  # the notebook shows this widget: the page makes it the same way
                found.append(Page(path.stem, title, module.__name__, cls.__name__, _standalone(calls[0])))
    return found


def _standalone(call: ast.Call) -> str:
    """The notebook's call, without the arguments that name the notebook's own variables.

    ``LearnedHeadsWidget(run)`` passes a run the notebook trained above; the page has no such cell, and
    every course widget makes its own default (the same run, trained by the package) when not given one.
    """

    def free(node) -> bool:
        return any(isinstance(n, ast.Name) for n in ast.walk(node))

    kept = ast.Call(
        func=call.func,
        args=[a for a in call.args if not free(a)],
        keywords=[k for k in call.keywords if not free(k.value)],
    )
    return ast.unparse(kept)


def _paragraphs(docstring: str | None) -> str:
    return inspect.cleandoc(docstring or "").replace("sqrt(d)", "√d")


def what_it_shows(page: Page) -> str:
    """What the page's widget shows: its module's first paragraph, e.g. "Notebook 01's widget: …" without
    the notebook's name (the page says it)."""
    what = _paragraphs(importlib.import_module(page.widget_module).__doc__).split("\n\n")[0]
    what = what.split(": ", 1)[1] if what.startswith("Notebook") and ": " in what else what
    return what[:1].upper() + what[1:]


PAGE_CATALOG = "explore"  # translations/<language>/explore.po: the widgets' docstrings, paragraph by paragraph
PAGE_LEAD = N_("The widget of notebook `{assignment}`, which explains it step by step.")


def docstring_paragraphs(page: Page) -> list[str]:
    """The page's text from the widget's docstrings: what it shows, what to try (in bold), then the rest."""
    widget = getattr(importlib.import_module(page.widget_module), page.widget_class)
    return [what_it_shows(page), *_paragraphs(widget.__doc__).split("\n\n")]


class PageText:
    """A page's sentences in one language (None: English): titles from the notebooks' catalogs, docstring
    paragraphs from ``translations/<language>/explore.po``, the page's own sentences from ``heads_and_masks.i18n``.
    A sentence without a translation is collected in ``missing``, and the pages are refused (``Untranslated``)."""

    def __init__(self, language: str | None):
        self.language = language
        self.missing: list[str] = []
        self.docstrings = read_catalog(language, PAGE_CATALOG) if language else None

    def _found(self, english: str, found: str | None) -> str:
        if found is None:
            self.missing.append(english)
            return english
        return found

    def title(self, page: Page) -> str:
        if not self.language:
            return page.title
        heading = translation_of(read_catalog(self.language, page.assignment), f"# {page.title}")
        return self._found(page.title, heading and heading.removeprefix("# "))

    def paragraph(self, english: str) -> str:
        return self._found(english, translation_of(self.docstrings, english)) if self.language else english

    def message(self, english: str) -> str:
        if not self.language:
            return english
        with use_language(self.language):
            said = translated(english)
        return self._found(english, None if said == english else said)

    def refuse_if_missing(self) -> None:
        if self.missing:
            raise Untranslated(PAGE_CATALOG, self.language, self.missing)


def page_notebook(page: Page, text: PageText | None = None) -> nbformat.NotebookNode:
    text = text or PageText(None)
    what, try_this, *more = [text.paragraph(p) for p in docstring_paragraphs(page)]
    markdown = "\n\n".join(
        [
            f"# {text.title(page)}",
            f"*{text.message(PAGE_LEAD).format(assignment=page.assignment)}*",
            what,
            f"**{try_this}**",
            *more,
        ]
    )
    code = f"from {page.widget_module} import {page.widget_class}\n\n{page.call}"
    if text.language:  # the kernel's language, for the widget's every message (heads_and_masks.i18n)
        code = f"import os\n\nos.environ[{LANGUAGE_VARIABLE!r}] = {text.language!r}\n{code}"
    notebook = nbformat.v4.new_notebook()
    notebook.metadata = {"kernelspec": dict(KERNEL), "language_info": {"name": "python"}}
    if text.language:
        notebook.metadata["heads_and_masks"] = {"language": text.language}
    notebook.cells = [nbformat.v4.new_markdown_cell(markdown), nbformat.v4.new_code_cell(code)]
    for index, cell in enumerate(notebook.cells):
        cell.id = f"{page.slug}-{index}".replace("_", "-")
    nbformat.validate(notebook)
    return notebook


def update_translations(language: str) -> tuple[int, int]:
    """``translations/<language>/explore.po`` in step with the widgets' docstrings (as a notebook's catalog:
    a changed paragraph keeps its old translation, marked fuzzy). Returns (entries, without a translation)."""
    from babel.messages.catalog import Catalog
    from translations import catalog_path

    template = Catalog(domain=PAGE_CATALOG)
    for page in pages():
        for paragraph in docstring_paragraphs(page):
            if paragraph not in template:
                template.add(paragraph, locations=[(page.assignment, 0)])
    catalog = read_catalog(language, PAGE_CATALOG)
    entries = write_updated(catalog, template, catalog_path(language, PAGE_CATALOG))
    return len(entries), sum(1 for m in entries if translation_of(catalog, m.id) is None)


def build(into: Path, language: str | None = None) -> list[Path]:
    """Every page written into ``into``, in ``language`` (None: English); refused if a sentence is untranslated."""
    text = PageText(language)
    notebooks = {page.assignment: page_notebook(page, text) for page in pages()}
    text.refuse_if_missing()
    into.mkdir(parents=True, exist_ok=True)
    written = []
    for assignment, notebook in notebooks.items():
        target = into / f"{assignment}.ipynb"
        nbformat.write(notebook, target)
        written.append(target)
    return written


def offline_templates(into: Path) -> Path:
    """Voilà's "lab" page without the two stylesheets it asks a CDN for; returns a JUPYTER_PATH entry.

    Voilà's page links Font Awesome from cdn.jsdelivr.net (icons the course's widgets do not use);
    offline, the browser waits on them in vain. This folder, put first on JUPYTER_PATH, shadows only
    the page's ``index.html.j2`` (a copy of the installed one without those links): Jinja finds every
    other file of the template, and its static files, where Voilà installed them.
    """
    from jupyter_core.paths import jupyter_path

    for templates in jupyter_path("voila", "templates"):
        page = Path(templates) / "lab" / "index.html.j2"
        if page.exists():
            break
    else:
        raise FileNotFoundError("Voilà's lab template is not installed (pip install voila)")
    kept = [line for line in page.read_text().splitlines(keepends=True) if "cdn.jsdelivr.net" not in line]
    # the page's <html lang> (nbconvert's resources.language_code, "en" for every page) from the notebook's
    # language, so that a screen reader reads a Russian page in Russian
    kept.insert(1, PAGE_LANGUAGE)
    target = into / "voila" / "templates" / "lab" / "index.html.j2"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(kept))
    return into


PAGE_LANGUAGE = (
    "{%- set _language = resources.update(language_code=nb.metadata.get('heads_and_masks', {})"
    ".get('language', 'en')) -%}\n"
)
INDEX_TITLE = N_("Heads & Masks: the widgets of the course")
INDEX_LEAD = N_(
    "Each page shows one notebook's widget, without code, ready to explore: move its sliders and read what "
    "changes. The notebook of the same name explains it step by step."
)


INDEX_STYLE = """
  body { font-family: system-ui, sans-serif; font-size: 16px; line-height: 1.5; color: #1a1a1a;
         background: #ffffff; margin: 0; }
  main { max-width: 46rem; margin: 0 auto; padding: 2rem 1.25rem 3rem; }
  h1 { font-size: 1.75rem; margin: 0 0 0.5rem; }
  ol { list-style: none; padding: 0; margin: 1.5rem 0 0; }
  li { border-top: 1px solid #8a8a8a; padding: 0.9rem 0; }
  h2 { font-size: 1.2rem; margin: 0 0 0.25rem; }
  a { color: #0b4f9c; text-decoration: underline; }
  a:focus-visible { outline: 3px solid #0b4f9c; outline-offset: 2px; }
  p { margin: 0; }
"""


def index_template(found: list[Page], language: str | None = None) -> str:
    """The explore page's index (Voilà's "tree" page, shadowed): each page's title, linked, and what its widget
    shows, in the course's order. A list of file names told a lecture hall nothing, and Voilà's own page asks a
    CDN for icons. A Jinja template: Voilà fills in only ``base_url``; every course text is escaped and kept
    out of Jinja's reach (``raw``), whatever braces it holds."""

    def text(value: str) -> str:
        return "{% raw %}" + html.escape(" ".join(value.split())) + "{% endraw %}"

    words = PageText(language)
    items = "\n".join(
        f'    <li>\n      <h2><a href="{{{{ base_url }}}}voila/render/{page_path(page, language)}">'
        f"{text(words.title(page))}</a></h2>\n      <p>{text(words.paragraph(what_it_shows(page)))}</p>\n    </li>"
        for page in found
    )
    title, lead = words.message(INDEX_TITLE), words.message(INDEX_LEAD)
    words.refuse_if_missing()
    return (
        f'<!DOCTYPE html>\n<html lang="{language or "en"}">\n<head>\n  <meta charset="utf-8">\n'
        '  <meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"  <title>{text(title)}</title>\n  <style>{INDEX_STYLE}  </style>\n</head>\n<body>\n<main>\n"
        f"  <h1>{text(title)}</h1>\n  <p>{text(lead)}</p>\n  <ol>\n{items}\n  </ol>\n"
        "</main>\n</body>\n</html>\n"
    )


def page_path(page: Page, language: str | None = None) -> str:
    """Where a page is served from, below ``voila/render/``: English at the top, another language in its folder."""
    return urllib.parse.quote(f"{language}/" if language else "") + f"{urllib.parse.quote(page.assignment)}.ipynb"


def build_languages(into: Path, language: str | None) -> list[Path]:
    """The pages in English (``into``) and in every language the course is built in (``into/<language>``): one
    server serves them all, so a lecture can switch language, and the tests open both languages at one cost.
    ``language``'s pages are refused if a sentence is untranslated; another language's are left out, said."""
    written = build(into)
    for other in sorted(LANGUAGES):
        try:
            written += build(into / other, other)
        except Untranslated as missing:
            if other == language:
                raise
            print(f"The pages in {LANGUAGES[other]} are left out: {missing}", file=sys.stderr)
    return written


def tree_template(found: list[Page], language: str | None, built: set[str]) -> str:
    """Voilà's index page for every folder (Voilà gives the template the folder, ``notebook_path``): a language's
    folder gets that language's index; the top, ``language``'s (``make explore LANG=ru``: the Russian one)."""
    branches = [
        f'{{% {"if" if not index else "elif"} notebook_path.strip("/") == "{other}" %}}\n{index_template(found, other)}'
        for index, other in enumerate(sorted(built))
    ]
    top = index_template(found, language)
    return "\n".join([*branches, "{% else %}", top, "{% endif %}"]) if branches else top


def voila_environment(scratch: Path, language: str | None = None, built: set[str] = frozenset()) -> dict[str, str]:
    templates = offline_templates(scratch / "jupyter")
    tree = templates / "voila" / "templates" / "lab" / "tree.html"
    tree.write_text(tree_template(pages(), language, built), encoding="utf-8")
    paths = [str(templates), os.environ.get("JUPYTER_PATH", "")]
    # the pages' kernels import this checkout's package, the one the pages were built from (the environment's
    # may be installed from another checkout: a worktree's pages ran the main checkout's widgets and catalogs)
    packages = [str(REPO), os.environ.get("PYTHONPATH", "")]
    return {
        **os.environ,
        "JUPYTER_PATH": os.pathsep.join(p for p in paths if p),
        "PYTHONPATH": os.pathsep.join(p for p in packages if p),
    }


def voila_command(folder: Path, port: int, extra: list[str]) -> list[str]:
    return [
        sys.executable,
        "-m",
        "voila",
        str(folder),
        "--no-browser",
        f"--port={port}",
        "--Voila.ip=127.0.0.1",
        "--theme=light",
        "--VoilaConfiguration.strip_sources=True",
        "--VoilaConfiguration.classic_tree=True",  # the index is a template (index_template), not a script
        "--VoilaConfiguration.show_tracebacks=True",
        *(f"--VoilaConfiguration.extension_allowlist={name}" for name in EXTENSIONS),
        *extra,
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=PORT)
    parser.add_argument("--build", type=Path, help="only write the pages into this folder")
    parser.add_argument("--language", default="", help="ru (or a locale such as ru_RU.UTF-8): the pages in Russian")
    parser.add_argument(
        "--update-translations", metavar="LANGUAGE", help="bring translations/LANGUAGE/explore.po in step"
    )
    args, extra = parser.parse_known_args()
    if args.update_translations:
        entries, missing = update_translations(args.update_translations)
        print(f"explore: {entries} paragraphs, {missing} without a {args.update_translations} translation")
        return 0
    language = course_language(args.language)  # None: English, as `make lab LANG=...`
    if args.build:
        for path in build(args.build, language):
            print(path)
        return 0
    # Stopped as a service is (SIGTERM: the tests, a process manager), it leaves as from Ctrl-C: its
    # pages' folder is removed (left in /tmp before, on every run of the browser tests).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with tempfile.TemporaryDirectory(prefix="heads-and-masks-explore-") as scratch:
        folder = Path(scratch) / "pages"
        written = build_languages(folder, language)
        built = {path.parent.name for path in written if path.parent != folder}
        print(
            f"The explore page: {len(pages())} widgets at http://127.0.0.1:{args.port}/"
            + "".join(
                f", in {LANGUAGES[other]} at http://127.0.0.1:{args.port}/voila/tree/{other}" for other in sorted(built)
            )
            + " (Ctrl-C stops it)",
            flush=True,
        )
        try:
            command = voila_command(Path(scratch) / "pages", args.port, extra)
            return subprocess.run(
                command, cwd=Path(scratch) / "pages", env=voila_environment(Path(scratch), language, built)
            ).returncode
        except KeyboardInterrupt:
            return 0


if __name__ == "__main__":
    sys.exit(main())
