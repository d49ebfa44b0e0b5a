"""Ruff, with the configuration of pyproject.toml: the lint rules that catch real mistakes, and the format."""

from __future__ import annotations

import subprocess
import sys

import pytest

from course import REPO


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["lint", "format"])
def test_ruff_finds_nothing(command):
    run = subprocess.run(
        [sys.executable, "-m", "ruff", *command, "--no-cache", "."], cwd=REPO, capture_output=True, text=True
    )
    assert run.returncode == 0, f"ruff {' '.join(command)}:\n{run.stdout}{run.stderr}"


def test_ruff_lint_can_fail(tmp_path):
    """The configuration is the project's and it does catch an unused import and a mutable default."""
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n\n\ndef f(x=[]):\n    return x\n")
    run = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--config", str(REPO / "pyproject.toml"), str(bad)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1
    assert "F401" in run.stdout and "B006" in run.stdout, run.stdout
