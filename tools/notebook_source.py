"""Authoring format of the course notebooks: a plain Python file in "percent" cells.

``authoring/<assignment>.py`` is what authors edit; ``make notebooks`` turns it into the nbgrader
source ``solutions/<assignment>/<assignment>.ipynb`` and then, through nbgrader, into the student
version ``notebooks/<assignment>/<assignment>.ipynb``. Cell headers:

    # %% [markdown]                     a text cell; each line starts with "# " (or is "#")
    # %%                                an ordinary code cell
    # %% solution id=NAME               the learner's answer (### BEGIN/END SOLUTION inside)
    # %% tests id=test_NAME points=P    an autograded test cell (### BEGIN/END HIDDEN TESTS inside)
    # %% locked id=NAME                 a read-only code cell that grading restores if edited
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat

_HEADER = re.compile(r"^# %%(?P<markdown> \[markdown\])?(?P<rest>.*)$")
KERNEL = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def _options(text: str) -> tuple[str | None, dict[str, str]]:
    words = text.split()
    kind = words[0] if words and "=" not in words[0] else None
    options = dict(word.split("=", 1) for word in words[1 if kind else 0 :])
    return kind, options


def _nbgrader(kind: str | None, options: dict[str, str], where: str) -> dict | None:
    if kind is None:
        return None
    if "id" not in options:
        raise ValueError(f"{where}: a '{kind}' cell needs id=...")
    meta = {"grade_id": options["id"], "schema_version": 3, "locked": False, "solution": False, "grade": False}
    if kind == "solution":
        meta["solution"] = True
    elif kind == "tests":
        meta.update(grade=True, locked=True, points=int(options.get("points", 1)))
        if not options["id"].startswith("test_"):
            raise ValueError(f"{where}: test cell ids start with 'test_', got {options['id']}")
    elif kind == "locked":
        meta["locked"] = True
    else:
        raise ValueError(f"{where}: unknown cell kind {kind!r}")
    return meta


def read_source(path: Path) -> nbformat.NotebookNode:
    """Parse an authoring file into a notebook (solutions and hidden tests included)."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    cells: list[tuple[str, str, list[str]]] = []
    for number, line in enumerate(lines, 1):
        match = _HEADER.match(line)
        if match:
            cells.append(("markdown" if match["markdown"] else "code", match["rest"].strip(), [], number))
        elif cells:
            cells[-1][2].append(line)
        elif line.strip():
            raise ValueError(f"{path}:{number}: text before the first '# %%' header")
    notebook = nbformat.v4.new_notebook()
    notebook.metadata = {"kernelspec": dict(KERNEL), "language_info": {"name": "python"}}
    stem = Path(path).stem
    for index, (cell_type, header, body, number) in enumerate(cells):
        while body and not body[-1].strip():
            body.pop()
        while body and not body[0].strip():
            body.pop(0)
        kind, options = _options(header)
        meta = _nbgrader(kind, options, f"{path}:{number}")
        if cell_type == "markdown":
            text = "\n".join(l[2:] if l.startswith("# ") else l.lstrip("#") for l in body)
            cell = nbformat.v4.new_markdown_cell(text)
        else:
            cell = nbformat.v4.new_code_cell("\n".join(body))
        cell.id = options.get("id", f"{stem}-{index:03d}").replace("_", "-")
        cell.metadata = {"nbgrader": meta} if meta else {}
        notebook.cells.append(cell)
    nbformat.validate(notebook)
    return notebook
