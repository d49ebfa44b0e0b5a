"""The notebooks: generated, not edited; nothing leaks; every solution notebook runs top to bottom.

The runs here use nbclient (no browser). When the browser tests run the same notebook in the same session
(tests/browser/test_browser_notebooks.py: Run All in JupyterLab, with the same checks), the nbclient run of it
is left out (tests/conftest.py, RUN_IN_THE_BROWSER): one run per notebook and version.
"""

from __future__ import annotations

import re
import subprocess
import sys

import nbformat
import pytest
from course import ASSIGNMENTS, REPO, solution_notebook, student_notebook
from nbclient import NotebookClient

sys.path[:0] = [str(REPO / "tools")]
from translations import LANGUAGES, TEXT_STUBS  # noqa: E402

MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")


def test_every_authoring_file_is_an_assignment():
    authored = sorted(p.stem for p in (REPO / "authoring").glob("[0-9][0-9]_*.py"))
    assert authored == ASSIGNMENTS
    for folder in (
        "solutions",
        "notebooks",
        *(f"{k}-{language}" for language in LANGUAGES for k in ("solutions", "notebooks")),
    ):
        held = sorted(p.name for p in (REPO / folder).iterdir() if p.is_dir())
        assert held == ASSIGNMENTS, f"{folder}/ must hold every assignment, and nothing else"
    assert "00_start_here" in ASSIGNMENTS


def test_the_start_notebook_maps_every_notebook_of_the_course():
    """00's "What comes next" names each later notebook once, in order: a learner plans the course from it."""
    start = student_notebook("00_start_here")
    table = next(c.source for c in start.cells if c.cell_type == "markdown" and "## What comes next" in c.source)
    listed = re.findall(r"^\| (\d\d) ", table, flags=re.MULTILINE)
    assert listed == [name[:2] for name in ASSIGNMENTS if name != "00_start_here"], listed


def test_notebooks_match_what_the_build_produces():
    """solutions/ and notebooks/ are exactly what `make notebooks` writes from authoring/."""
    run = subprocess.run(
        [sys.executable, str(REPO / "tools" / "build_notebooks.py"), "--check"], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout + run.stderr


def _hidden_and_solution_lines(notebook) -> set[str]:
    """Lines that appear only between solution or hidden-test markers of the instructor version."""
    secret = set()
    for cell in notebook.cells:
        inside = False
        for line in cell.source.splitlines():
            if re.search(r"### (BEGIN SOLUTION|BEGIN HIDDEN TESTS)", line):
                inside = True
            elif re.search(r"### (END SOLUTION|END HIDDEN TESTS)", line):
                inside = False
            elif inside and len(line.strip()) > 12:
                secret.add(line.strip())
    return secret


@pytest.mark.parametrize("language", [None, *LANGUAGES])
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_student_notebook_leaks_no_solution_or_hidden_test(assignment, language):
    student = student_notebook(assignment, language)
    public = {line.strip() for cell in student.cells for line in cell.source.splitlines()}
    text = "\n".join(cell.source for cell in student.cells)
    assert not [m for m in MARKERS if m in text], "a solution or hidden-test marker survived in the student notebook"
    leaked = _hidden_and_solution_lines(solution_notebook(assignment, language)) & public
    assert not leaked, f"lines of solutions or hidden tests appear in the student notebook: {sorted(leaked)[:5]}"
    stubs = [c for c in student.cells if c.metadata.get("nbgrader", {}).get("solution")]
    assert stubs, "an assignment without an exercise"
    assert all("raise NotImplementedError()" in c.source for c in stubs if c.cell_type == "code")
    written = [c for c in stubs if c.cell_type == "markdown"]  # answers graded by a person (formgrader)
    assert written, "every notebook asks at least one written question"
    stub = "YOUR ANSWER HERE" if language is None else TEXT_STUBS[language]
    assert all(c.source == stub and c.metadata["nbgrader"]["grade"] for c in written)
    assert all(not c.get("outputs") for c in student.cells if c.cell_type == "code"), (
        "student notebooks ship without outputs"
    )


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_solution_notebook_runs_top_to_bottom(assignment, tmp_path):
    """A fresh kernel runs every cell of the instructor version without error and without stderr in tests."""
    notebook = solution_notebook(assignment)
    client = NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        errors = [o for o in cell.outputs if o.output_type == "error"]
        assert not errors, f"cell {cell.id} failed: {errors[0].ename}: {errors[0].evalue}"
        if cell.metadata.get("nbgrader", {}).get("grade"):
            stderr = [o.text for o in cell.outputs if o.get("name") == "stderr"]
            assert not stderr, f"test cell {cell.id} wrote to stderr (nbgrader would take its points): {stderr}"
            assert any("✓" in o.get("text", "") for o in cell.outputs), f"test cell {cell.id} printed no ✓ line"
    nbformat.write(notebook, tmp_path / f"{assignment}.executed.ipynb")


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_untouched_student_notebook_runs_to_the_end(assignment, tmp_path):
    """Run All on the notebook as released, nothing written: like JupyterLab, stop at the first error.

    Every cell runs (the demonstrations after an exercise say it is not written yet instead of failing);
    each test cell says "not written yet" in one message on stderr, which nbgrader counts as a failure (the
    untouched notebook scores 0: test_grading.py), and no other cell writes to stderr.
    """
    notebook = student_notebook(assignment)
    NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        allow_errors=False,
        resources={"metadata": {"path": str(tmp_path)}},
    ).execute()
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert code[-1].execution_count is not None, "the last cell did not run"
    for cell in code:
        stderr = "".join(o.text for o in cell.outputs if o.get("name") == "stderr")
        if cell.metadata.get("nbgrader", {}).get("grade"):
            message = " ".join(stderr.split())  # one message, broken between words (checks/core.py)
            assert (
                message.startswith("✗")
                and message.count("✗") == 1
                and "is not written yet: replace `raise NotImplementedError()` with your code" in message
            ), (
                f"test cell {cell.metadata['nbgrader']['grade_id']} should say in one message that its exercise is not written yet: {stderr!r}"
            )
        else:
            assert not stderr, f"cell {cell.id} wrote to stderr: {stderr!r}"
