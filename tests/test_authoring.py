"""Authoring with Jupytext: an authoring file opened in JupyterLab as a notebook, edited, saved, and built.

JupyterLab reads and saves ``authoring/*.py`` through Jupytext's contents manager; this drives that same
manager (no browser): open the file as a notebook, change a cell as an author would (and let the editor
add the metadata JupyterLab adds), save, and build the nbgrader source from what was saved.
"""

from __future__ import annotations

import difflib
import shutil

import nbformat
import pytest
from build_notebooks import read_source
from course import REPO
from jupytext.sync_contentsmanager import build_sync_jupytext_contents_manager_class
from jupyter_server.services.contents.largefilemanager import LargeFileManager

NAME = "01_heads"


@pytest.fixture
def author_copy(tmp_path):
    """A copy of the repository's authoring file and its Jupytext settings (pyproject.toml)."""
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    (tmp_path / "authoring").mkdir()
    shutil.copy(REPO / "authoring" / f"{NAME}.py", tmp_path / "authoring" / f"{NAME}.py")
    manager = build_sync_jupytext_contents_manager_class(LargeFileManager)(root_dir=str(tmp_path))
    return tmp_path / "authoring" / f"{NAME}.py", manager


def test_every_authoring_file_reads_as_the_notebook_it_builds():
    """Jupytext's own reading (what JupyterLab shows) has the cells and nbgrader metadata of the build."""
    import jupytext

    for path in sorted((REPO / "authoring").glob("[0-9][0-9]_*.py")):
        shown, built = jupytext.read(path), read_source(path)
        assert [(c.cell_type, c.source, c.metadata.get("nbgrader")) for c in shown.cells] == [
            (c.cell_type, c.source, c.metadata.get("nbgrader")) for c in built.cells
        ], path.name
        assert any(c.metadata.get("nbgrader", {}).get("grade") for c in built.cells), path.name


def test_open_as_notebook_edit_save_build(author_copy):
    path, manager = author_copy
    before_text = path.read_text(encoding="utf-8")
    before = read_source(path)

    model = manager.get(f"authoring/{NAME}.py", type="notebook", content=True)
    notebook = model["content"]
    assert [c.source for c in notebook.cells] == [c.source for c in before.cells]
    graded = [c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade")]
    tests = [c for c in graded if not c.metadata["nbgrader"]["solution"]]
    written = [c for c in graded if c.metadata["nbgrader"]["solution"]]  # answers graded by a person
    assert tests and all(c.metadata["nbgrader"]["grade_id"].startswith("test_") for c in tests)
    assert all(c.cell_type == "markdown" and c.metadata["nbgrader"]["grade_id"].startswith("written_") for c in written)

    # the author edits the first explanation, adds a cell after it and runs a code cell; JupyterLab adds
    # its own metadata (kernel, execution, collapsed state) and the outputs
    notebook.cells[0].source += "\n\nA sentence the author added."
    notebook.cells.insert(1, nbformat.v4.new_code_cell("print('a new example')"))
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    code = next(c for c in notebook.cells if c.cell_type == "code")
    code.metadata.update(collapsed=False, scrolled=True, execution={"iopub.status.busy": "2026-01-01T00:00:00Z"})
    code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="a new example\n")]
    code.execution_count = 1
    manager.save({"type": "notebook", "format": "json", "content": notebook}, f"authoring/{NAME}.py")

    after_text = path.read_text(encoding="utf-8")
    changes = [
        line
        for line in difflib.unified_diff(before_text.splitlines(), after_text.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]
    assert changes == ["+#", "+# A sentence the author added.", "+", "+# %%", "+print('a new example')"], changes
    assert "kernelspec" not in after_text and "collapsed" not in after_text and "a new example\n" not in after_text
    assert after_text.startswith("# %% [markdown]")  # no header: what the build does not use is not kept

    after = read_source(path)
    assert len(after.cells) == len(before.cells) + 1
    assert after.cells[0].source == before.cells[0].source + "\n\nA sentence the author added."
    assert after.cells[1].source == "print('a new example')" and after.cells[1].metadata == {}
    assert [(c.cell_type, c.source, c.metadata) for c in after.cells[2:]] == [
        (c.cell_type, c.source, c.metadata) for c in before.cells[1:]
    ]
    # graded cells keep their ids and nbgrader metadata exactly; the built notebook has no outputs
    assert {c.id: c.metadata for c in after.cells if c.metadata} == {
        c.id: c.metadata for c in before.cells if c.metadata
    }
    assert all(not c.get("outputs") for c in after.cells)

    # saved again unchanged, the file does not move: the format is a fixed point
    model = manager.get(f"authoring/{NAME}.py", type="notebook", content=True)
    manager.save({"type": "notebook", "format": "json", "content": model["content"]}, f"authoring/{NAME}.py")
    assert path.read_text(encoding="utf-8") == after_text


def test_a_test_cell_without_test_prefix_is_refused(tmp_path):
    bad = tmp_path / "99_bad.py"
    bad.write_text(
        '# %% nbgrader={"grade_id": "oops", "grade": true, "locked": true, "points": 1, '
        '"schema_version": 3, "solution": false}\nassert True\n',
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match="start with 'test_'"):
        read_source(bad)


def test_an_old_style_header_is_refused_not_built_as_a_plain_cell(tmp_path):
    """``# %% solution id=NAME`` (the course's format before Jupytext) would otherwise become a plain cell."""
    old = tmp_path / "99_old.py"
    old.write_text("# %% solution id=answer\ndef answer():\n    return 42\n", encoding="utf-8")
    with pytest.raises(ValueError, match="nbgrader="):
        read_source(old)
