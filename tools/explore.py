"""The explore page (what `make explore` runs): every notebook's widget, served by Voilà, without code.

    python tools/explore.py                 serve on http://127.0.0.1:8866/ (the index of pages)
    python tools/explore.py --port 9000     another port; any further argument goes to Voilà
    python tools/explore.py --build DIR     only write the pages into DIR

One page per notebook, ``NN_slug.ipynb``: the notebook's title, what its widget shows (the widget
module's and class's own docstrings) and the widget itself, made exactly as the notebook makes it
(the same call, found in ``authoring/NN_slug.py``) on the course's reference implementations. Voilà
runs each page in a kernel of this environment and shows only the outputs: no code, no editor.
The index (``/``) lists the pages in the course's order, each by its title with what its widget shows.
Nothing is fetched from the network (the widgets' scripts come with Voilà and ipywidgets), so it
works offline, e.g. projected in a lecture hall.
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


def page_notebook(page: Page) -> nbformat.NotebookNode:
    what = what_it_shows(page)
    widget = getattr(importlib.import_module(page.widget_module), page.widget_class)
    try_this, *more = _paragraphs(widget.__doc__).split("\n\n")
    text = "\n\n".join(
        [
            f"# {page.title}",
            f"*The widget of notebook `{page.assignment}`, which explains it step by step.*",
            what,
            f"**{try_this}**",
            *more,
        ]
    )
    notebook = nbformat.v4.new_notebook()
    notebook.metadata = {"kernelspec": dict(KERNEL), "language_info": {"name": "python"}}
    notebook.cells = [
        nbformat.v4.new_markdown_cell(text),
        nbformat.v4.new_code_cell(f"from {page.widget_module} import {page.widget_class}\n\n{page.call}"),
    ]
    for index, cell in enumerate(notebook.cells):
        cell.id = f"{page.slug}-{index}".replace("_", "-")
    nbformat.validate(notebook)
    return notebook


def build(into: Path) -> list[Path]:
    into.mkdir(parents=True, exist_ok=True)
    written = []
    for page in pages():
        target = into / f"{page.assignment}.ipynb"
        nbformat.write(page_notebook(page), target)
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
    target = into / "voila" / "templates" / "lab" / "index.html.j2"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(kept))
    return into


INDEX_TITLE = "Heads & Masks: the widgets of the course"
INDEX_LEAD = (
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


def index_template(found: list[Page]) -> str:
    """The explore page's index (Voilà's "tree" page, shadowed): each page's title, linked, and what its widget
    shows, in the course's order. A list of file names told a lecture hall nothing, and Voilà's own page asks a
    CDN for icons. A Jinja template: Voilà fills in only ``base_url``; every course text is escaped and kept
    out of Jinja's reach (``raw``), whatever braces it holds."""

    def text(value: str) -> str:
        return "{% raw %}" + html.escape(" ".join(value.split())) + "{% endraw %}"

    items = "\n".join(
        f'    <li>\n      <h2><a href="{{{{ base_url }}}}voila/render/{urllib.parse.quote(page.assignment)}.ipynb">'
        f"{text(page.title)}</a></h2>\n      <p>{text(what_it_shows(page))}</p>\n    </li>"
        for page in found
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n  <meta charset="utf-8">\n'
        '  <meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"  <title>{text(INDEX_TITLE)}</title>\n  <style>{INDEX_STYLE}  </style>\n</head>\n<body>\n<main>\n"
        f"  <h1>{text(INDEX_TITLE)}</h1>\n  <p>{text(INDEX_LEAD)}</p>\n  <ol>\n{items}\n  </ol>\n"
        "</main>\n</body>\n</html>\n"
    )


def voila_environment(scratch: Path) -> dict[str, str]:
    templates = offline_templates(scratch / "jupyter")
    tree = templates / "voila" / "templates" / "lab" / "tree.html"
    tree.write_text(index_template(pages()), encoding="utf-8")
    paths = [str(templates), os.environ.get("JUPYTER_PATH", "")]
    return {**os.environ, "JUPYTER_PATH": os.pathsep.join(p for p in paths if p)}


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
    args, extra = parser.parse_known_args()
    if args.build:
        for path in build(args.build):
            print(path)
        return 0
    # Stopped as a service is (SIGTERM: the tests, a process manager), it leaves as from Ctrl-C: its
    # pages' folder is removed (left in /tmp before, on every run of the browser tests).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with tempfile.TemporaryDirectory(prefix="heads-and-masks-explore-") as scratch:
        written = build(Path(scratch) / "pages")
        print(
            f"The explore page: {len(written)} widgets at http://127.0.0.1:{args.port}/ (Ctrl-C stops it)", flush=True
        )
        try:
            command = voila_command(Path(scratch) / "pages", args.port, extra)
            return subprocess.run(command, cwd=Path(scratch) / "pages", env=voila_environment(Path(scratch))).returncode
        except KeyboardInterrupt:
            return 0


if __name__ == "__main__":
    sys.exit(main())
