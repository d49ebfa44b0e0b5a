"""A notebook opened and left untouched is not marked modified.

A learner who opens a notebook and closes it without typing anything must not be asked to save. JupyterLab
marks a notebook modified (the dot on its tab) when opening it changes its model: for instance when the
kernel's reply rewrites metadata that the copy wrote differently (tests/test_lab.py checks the metadata of
every copy against a kernel's reply; this test checks the tab, on the first and the last notebook).
"""

from __future__ import annotations

import pytest
from labdriver import pause

from course import ASSIGNMENTS

CURRENT_TAB = ".lm-TabBar-tab.jp-mod-current"
DIRTY = ".jp-mod-dirty"


@pytest.mark.parametrize("assignment", [ASSIGNMENTS[0], ASSIGNMENTS[-1]])
def test_an_untouched_notebook_opens_unmodified(open_notebook, assignment):
    notebook = open_notebook("student", assignment)
    pause(notebook.page, 2.0)  # the kernel's info reply has come back by now
    tab = notebook.page.locator(CURRENT_TAB)
    assert tab.count() >= 1, notebook.diagnostics()
    assert notebook.page.locator(CURRENT_TAB + DIRTY).count() == 0, (
        f"{assignment} opens marked modified, untouched:\n{notebook.diagnostics()}"
    )
