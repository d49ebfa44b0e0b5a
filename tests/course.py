"""Helpers shared by the tests: the repository, its assignments, its notebooks, the grading sandbox.

(Imported as ``course``; ``conftest`` only holds fixtures, since tests/browser has a conftest too.)
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
for extra in (REPO / "autograde", REPO / "tools", REPO / "tests"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

# Make sure the venv's own tools (alembic, jupyter, nbgrader) are found by subprocesses.
os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
os.environ.setdefault("MPLBACKEND", "Agg")

ASSIGNMENTS = sorted(p.name for p in (REPO / "solutions").iterdir() if p.is_dir() and p.name[:2].isdigit())


def solution_notebook(assignment: str) -> nbformat.NotebookNode:
    return nbformat.read(REPO / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)


def student_notebook(assignment: str) -> nbformat.NotebookNode:
    return nbformat.read(REPO / "notebooks" / assignment / f"{assignment}.ipynb", as_version=4)


def require_sandbox() -> None:
    """Sandboxed grading needs bubblewrap: fail in CI without it, skip (saying how to get it) elsewhere."""
    from sandbox import sandbox_available

    available, why = sandbox_available()
    if available:
        return
    message = f"the grading sandbox is not available: {why}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message + " (as root: apt-get install bubblewrap; CI installs it)")


# The course configuration sandboxes every grading kernel when it can; say so explicitly here.
SANDBOX_ARGS = ("--GuardedExecute.kernel_manager_class=sandbox.SandboxedKernelManager",)
