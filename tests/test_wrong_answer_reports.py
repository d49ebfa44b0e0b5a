"""A wrong answer, in the learner's notebook, is reported as an unwritten exercise is: its message on stderr, and
Run All goes on. In the grader, it is a failure (a test cell that raises) whatever the notebook did.

nbgrader scores a test cell that wrote to stderr 0, as one that raised, so `nbgrader validate` lists a wrong answer
either way. The check reports instead of raising only in a Jupyter kernel (``checks.core.reports_failures``); the
grader runs the test cells in its own process, inside ``failures_raise()`` (autograde/verdicts.py), and an attack of
the catalog (tests/catalog/attacks.py, ``switches_on_the_labs_report``) tries to change that from a submission.
"""

from __future__ import annotations

import types

import IPython
import pytest
from catalog import catalogs
from course import ASSIGNMENTS
from nbclient import NotebookClient
from submissions import submission
from test_not_written_yet import CHECKS, cell

from heads_and_masks.checks import CheckFailed
from heads_and_masks.checks.core import failures_raise, reports_failures

WRONG = """
    def answer(*args, **kwargs):
        return "not an answer"
"""


@pytest.fixture
def in_a_notebook_kernel(monkeypatch):
    """This process as a notebook's kernel looks to the checks: an IPython shell with a kernel."""
    shell = types.SimpleNamespace(kernel=object())
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    assert reports_failures()


@pytest.mark.parametrize(("name", "check"), CHECKS, ids=[name for name, _ in CHECKS])
def test_in_a_notebook_a_wrong_answer_is_reported_on_stderr_without_a_traceback(
    name, check, in_a_notebook_kernel, capfd
):
    assert check(cell(WRONG)["answer"]) is None, f"{name} raised in a notebook"
    out, err = capfd.readouterr()
    assert err.startswith("✗ ") and err.endswith("\n"), f"{name}: {err!r}"
    assert not any(frame in err for frame in ("Traceback", 'File "', "raise KeyError", "CheckFailed")), (
        f"{name}: {err!r}"
    )
    with failures_raise(), pytest.raises(CheckFailed) as raised:  # the grader's judge: the same failure, raised
        check(cell(WRONG)["answer"])
    assert f"✗ {raised.value}\n" in err, f"{name}: the report is not the failure's own message"


@pytest.mark.parametrize(("name", "check"), CHECKS[:3], ids=[name for name, _ in CHECKS[:3]])
def test_outside_a_notebook_a_wrong_answer_raises(name, check):
    assert not reports_failures()
    with pytest.raises(CheckFailed):
        check(cell(WRONG)["answer"])


def _first_mistake(assignment: str):
    return next(answer for answer in catalogs()[assignment] if answer.breaks is not None)


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_run_all_goes_on_past_a_wrong_answer(assignment, tmp_path):
    """Run All, as JupyterLab does it (stop at the first error), on a notebook whose first mistake of the catalog is
    written and the rest untouched: every cell runs, and the broken exercise's test cells say what is wrong."""
    mistake = _first_mistake(assignment)
    notebook = submission(assignment, {k: mistake.source(k) for k in mistake.cells}, keep_stubs=True)
    NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        allow_errors=False,
        resources={"metadata": {"path": str(tmp_path)}},
    ).execute()
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert code[-1].execution_count is not None, "the last cell did not run"
    broken = [
        c for c in code if c.metadata.get("nbgrader", {}).get("grade_id", "").startswith(f"test_{mistake.breaks}")
    ]
    reported = "".join(o.text for c in broken for o in c.outputs if o.get("name") == "stderr")
    assert "✗" in reported and "Traceback" not in reported, reported
    for phrase in mistake.phrases:
        assert phrase.lower() in reported.lower(), f"{mistake.name}: {phrase!r} not in {reported!r}"
