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


@pytest.mark.parametrize(
    "source, codes",
    [
        ("import os\n\n\ndef f(x=[]):\n    return x\n", ("F401", "B006")),  # an unused import, a mutable default
        ("try:\n    pass\nexcept Exception:\n    pass\nx = 1  # noqa: F401\n", ("BLE001", "RUF100")),
    ],
    ids=["unused-import-and-mutable-default", "broad-except-and-stale-noqa"],
)
def test_ruff_lint_can_fail(tmp_path, source, codes):
    """The configuration is the project's and it does catch these: an unused import and a mutable default; a broad
    except, and a noqa that silences nothing."""
    bad = tmp_path / "bad.py"
    bad.write_text(source)
    run = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--config", str(REPO / "pyproject.toml"), str(bad)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1
    assert all(code in run.stdout for code in codes), run.stdout


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
