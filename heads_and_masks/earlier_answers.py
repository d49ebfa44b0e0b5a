"""Bring a function the learner wrote in an earlier notebook into the current one.

An exercise that builds on an earlier one uses the learner's own earlier function, never the course's
reference. Rather than asking for a copy and paste, a notebook calls::

    bring_answer("attention", from_notebook="00_start_here")

which reads the learner's earlier notebook (the folder beside this notebook's, as ``make lab`` and
nbgrader lay them out), runs the answer cell that defines the function here, and, in JupyterLab,
replaces the calling cell's text by that code (as IPython's ``%load`` does). From then on the code is
part of this notebook: it is saved and handed in with it, graded with it, and can be edited here.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HEADER = (
    "# Your `{name}` from notebook {notebook}, brought here by bring_answer: it is part of this notebook now\n"
    "# (edit it here, or type the bring_answer line again to bring a newer version from {notebook}).\n"
)


class NotBroughtError(NotImplementedError):
    """Raised by the stand-in of a function that could not be brought (not written yet, or not found)."""


def _candidates(notebook: str, here: Path) -> list[Path]:
    name = f"{notebook}.ipynb"
    return [here.parent / notebook / name, here / name, here.parent / name]


def answer_source(name: str, notebook_path: Path) -> str | None:
    """The source of the answer cell that defines ``name`` in a notebook file, or None if it has none."""
    cells = json.loads(Path(notebook_path).read_text(encoding="utf-8")).get("cells", [])
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        source = "".join(cell.get("source", []))
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id == name or (grade_id is None and f"def {name}(" in source):
            return source
    return None


def _stand_in(name: str, why: str):
    def not_brought(*args, **kwargs):
        raise NotBroughtError(why)

    not_brought.__name__ = name
    return not_brought


def bring_answer(name: str, from_notebook: str, *, here: Path | None = None, namespace: dict | None = None):
    """Define the learner's ``name`` from their notebook ``from_notebook`` in this notebook; return it.

    If the earlier answer is not written yet, or the notebook is not found, ``name`` becomes a stand-in
    that raises :class:`NotBroughtError` saying so (and the cell is left as it is, to be run again).
    """
    here = Path.cwd() if here is None else Path(here)
    shell = _shell()
    if namespace is None:
        namespace = shell.user_ns if shell is not None else sys._getframe(1).f_globals
    found = next((path for path in _candidates(from_notebook, here) if path.is_file()), None)
    if found is None:
        why = (
            f"your {name} from notebook {from_notebook} was not brought into this notebook: "
            f"{from_notebook}/{from_notebook}.ipynb is not beside this notebook's folder. Open this notebook "
            f"in JupyterLab next to {from_notebook} and run the cell that calls bring_answer, or write {name} here."
        )
        print(why)
        namespace[name] = _stand_in(name, why)
        return namespace[name]
    source = answer_source(name, found)
    if source is None or "raise NotImplementedError" in source:
        why = (
            f"your {name} in notebook {from_notebook} is not written yet: write it there, save that notebook, "
            f"and run this cell again."
        )
        print(why)
        namespace[name] = _stand_in(name, why)
        return namespace[name]
    source = re.sub(r"(?m)^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n", "", source).rstrip() + "\n"  # instructor copies
    exec(compile(source, f"<your {name} from {from_notebook}>", "exec"), namespace)  # noqa: S102
    if shell is not None:  # the cell becomes the code itself (IPython's %load does the same)
        shell.set_next_input(HEADER.format(name=name, notebook=from_notebook) + source, replace=True)
    print(
        f"your {name} from notebook {from_notebook} is defined here"
        + ("; this cell now holds its code" if shell is not None else "")
    )
    return namespace[name]


def _shell():
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()
