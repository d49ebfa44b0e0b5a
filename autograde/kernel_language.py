"""The copies learners open, told beforehand what their kernel will say of its language.

JupyterLab writes the kernel's ``language_info`` into a notebook's metadata as soon as the kernel is up, and a
notebook whose metadata changes is marked modified: a copy carrying only what the committed notebook says
(``{"name": "python"}``: the repository cannot know which Python each machine has) would open "modified",
untouched, and ask to be saved on close. So every copy made for a learner gets, as it is made, what the kernel
of the environment it will run in replies, word for word:

* ``make lab``: the copies in ``my-work/`` (tools/lab.py ``copy_assignment``);
* a class: the assignment the instructor releases to nbgrader's exchange, which students fetch
  (``course.release``). The release runs in the students' environment (on the course's hub, the Makefile uses
  the environment every server runs in), so its kernel is theirs.

The committed ``notebooks/`` stay machine-neutral. Nothing graded depends on this metadata: nbgrader's checksums
are of cells, and the judge grades every submission under the committed notebook's own metadata.
"""

from __future__ import annotations

import json
from pathlib import Path


def kernel_language_info() -> dict:
    """What this environment's kernel says of its language when JupyterLab connects to it, word for word.

    The kernel is ipykernel on this very Python (the notebooks' kernel ``python3``), so its class attribute is
    what it will reply (tests/test_lab.py and tests/test_exchange.py compare it with a real kernel's reply).
    """
    from ipykernel.ipkernel import IPythonKernel

    return json.loads(json.dumps(IPythonKernel.language_info))  # a plain copy, as it travels in the reply


def tell_notebooks_their_kernel(folder: Path) -> None:
    """Every notebook under ``folder`` given this environment's kernel's ``language_info``."""
    import nbformat

    language_info = kernel_language_info()
    for path in sorted(Path(folder).rglob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        notebook.metadata["language_info"] = language_info
        nbformat.write(notebook, path)
