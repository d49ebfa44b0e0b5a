"""Notebook 01 uses the learner's own attention from notebook 00, brought by one cell, not pasted by hand.

In JupyterLab, a learner who wrote `attention` in notebook 00 runs notebook 01: the cell that calls
``bring_answer`` is replaced by the learner's code (as IPython's ``%load`` does), their multi-head attention
built on it passes its test cells, and the saved notebook carries the code: run on its own, without notebook
00 beside it (as a grader runs one submission), it still passes.
"""

from __future__ import annotations

import shutil

import nbformat
import pytest
from catalog.nb00_start_here import ANSWERS
from labdriver import REPO
from nbclient import NotebookClient

pytestmark = pytest.mark.browser

MHA_ON_THE_LEARNERS_ATTENTION = """
def multi_head_attention(x, w_q, w_k, w_v, w_o, h, mask=None):
    b, n, width = x.shape
    q, k, v = ((x @ w).reshape(b, n, h, width // h).transpose(0, 2, 1, 3) for w in (w_q, w_k, w_v))
    heads = attention(q, k, v, mask)  # the learner's own, brought from notebook 00
    return heads.transpose(0, 2, 1, 3).reshape(b, n, width) @ w_o
"""


def _answer(path, grade_id, source):
    notebook = nbformat.read(path, as_version=4)
    cell = next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    cell.source = source
    nbformat.write(notebook, path)


def test_notebook_01_brings_the_learners_attention(lab, open_notebook, tmp_path):
    learner = lab.root / "learner"
    for name in ("00_start_here", "01_heads"):
        shutil.copytree(REPO / "notebooks" / name, learner / name)
    attention = next(a for a in ANSWERS if a.name == "einsum_dtype_min").source("attention")
    _answer(learner / "00_start_here" / "00_start_here.ipynb", "attention", attention)
    _answer(learner / "01_heads" / "01_heads.ipynb", "multi_head_attention", MHA_ON_THE_LEARNERS_ATTENTION)
    # nothing tagged: Run All goes on past the exercises the learner has not written (they say so)

    session = open_notebook("learner", "01_heads")
    session.run_all()
    saved = session.save_and_read()
    brought = [c for c in saved.cells if c.cell_type == "code" and "brought here by bring_answer" in c.source]
    calls = [(c.source, c.outputs) for c in saved.cells if c.cell_type == "code" and "bring_answer(" in c.source]
    assert len(brought) == 1, f"the bring_answer cell was not replaced by the learner's code: {calls}"
    assert 'np.einsum("...qd,...kd->...qk", q, k)' in brought[0].source and "bring_answer(" not in brought[0].source
    tests = {
        c.metadata["nbgrader"]["grade_id"]: c
        for c in saved.cells
        if c.metadata.get("nbgrader", {}).get("grade") and "multi_head_attention" in c.metadata["nbgrader"]["grade_id"]
    }
    for grade_id, cell in tests.items():
        text = "".join(o.get("text", "") for o in cell.outputs)
        assert "✓" in text and not [o for o in cell.outputs if o.output_type == "error"], f"{grade_id}: {cell.outputs}"

    # Handed in alone, as a grader runs it: the learner's attention travels inside the notebook.
    alone = tmp_path / "submitted" / "01_heads"
    alone.mkdir(parents=True)
    for cell in saved.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    NotebookClient(
        saved, timeout=300, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(alone)}}
    ).execute()
    for grade_id in tests:
        cell = next(c for c in saved.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
        assert not [o for o in cell.outputs if o.output_type == "error"], f"{grade_id} failed without notebook 00"
