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


def test_a_broad_except_and_a_stale_noqa_are_reported(tmp_path):
    """A broad except is reported (BLE001) and so is a noqa that silences nothing (RUF100)."""
    bad = tmp_path / "bad.py"
    bad.write_text("try:\n    pass\nexcept Exception:\n    pass\nx = 1  # noqa: F401\n")
    run = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--config", str(REPO / "pyproject.toml"), str(bad)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1
    assert "BLE001" in run.stdout and "RUF100" in run.stdout, run.stdout


SILENCED = "# noqa: " + "BLE001"  # (spelled in two, or this line would be found)


def test_every_silenced_broad_except_says_why():
    """``# noqa: BLE001`` must be followed by its reason: what the code does with whatever it catches."""
    bare = []
    for path in sorted(REPO.glob("*/**/*.py")):
        if path.parts[len(REPO.parts)] in {".venv", ".venv-debian", "hub", "build", "notebooks", "notebooks-ru"}:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            _, noqa, after = line.partition(SILENCED)
            if noqa and len(after.strip(" -,:()").split()) < 3:
                bare.append(f"{path.relative_to(REPO)}:{number}")
    assert not bare, "a broad except silenced without its reason: " + ", ".join(bare)
