"""The set-up on the Pythons learners have: `make env` with the default `python3` (here pyenv's 3.11.7), with
Debian 12's own `/usr/bin/python3` (3.11.2: what every other account on such a machine gets), and with one
outside the range, which it refuses in one line before it installs anything.

The course on Debian's Python is checked in a second environment of its own, made as a learner makes it
(``make env PYTHON=/usr/bin/python3 VENV=.venv-debian``, git-ignored, about two minutes the first time;
make's own up-to-date check, against pyproject.toml and requirements.lock, keeps it for later runs): one
notebook's tests run there, and one class is graded there through ``python -m autograde.grade``.
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest
from course import REPO, done_ahead, require_sandbox, student_notebook
from submissions import submission

DEBIAN_PYTHON = Path("/usr/bin/python3")
DEBIAN_VENV = REPO / ".venv-debian"
A = "00_start_here"


def _make(*arguments: str, timeout: float) -> subprocess.CompletedProcess:
    """`make` in the repository as a learner runs it: no conda environment active, make's own output kept."""
    environment = {k: v for k, v in os.environ.items() if k not in ("CONDA_PREFIX", "MAKEFLAGS", "MAKELEVEL")}
    return subprocess.run(
        ["make", "--no-print-directory", "-C", str(REPO), *arguments],
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# A stand-in python3 for `make env`: it runs the check (tools/check_python.py) as the interpreter it pretends
# to be, says it has pip (as the python of a venv does), and writes down anything else it is asked to do (make
# a venv, install) without doing it.
_PRETENDING = """#!{python}
import runpy, sys
if sys.argv[1:] == ["-m", "pip", "--version"]:
    sys.exit(0)
if sys.argv[1:2] != ["tools/check_python.py"]:
    with open({asked!r}, "a") as asked:
        asked.write(" ".join(sys.argv[1:]) + "\\n")
    sys.exit(1)
{pretend}
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""
# what the stand-in pretends, whether it is the python of an environment already made (VENV/bin/python) or the
# PYTHON= that make env would make one with, and what make env's line must say
PRETENCES = {
    # a Python older than the range (Ubuntu 22.04's python3)
    "python 3.10": (
        'sys.version_info = (3, 10, 13, "final", 0)',
        "PYTHON",
        ["3.10.13", "3.11.2", "PYTHON=", "environment.yml"],
    ),
    # Debian's python3 without its python3.11-venv package: no ensurepip, so a venv without pip
    "no ensurepip": ('sys.modules["ensurepip"] = None', "PYTHON", ["apt install python3.11-venv", "environment.yml"]),
    # a .venv made with Python 3.12 when make env allowed any Python from 3.11 on
    "venv of 3.12": (
        'sys.version_info = (3, 12, 1, "final", 0)',
        "VENV",
        ["3.12.1", "rm -r", "PYTHON=", "environment.yml"],
    ),
}


@pytest.mark.parametrize("pretence", PRETENCES)
def test_make_env_stops_first_on_a_python_it_cannot_use(pretence, tmp_path):
    """One line that says what is needed, what was found and the ways out; no environment made, nothing installed."""
    pretend, where, said = PRETENCES[pretence]
    asked = tmp_path / "asked"
    venv = tmp_path / "venv"
    python = venv / "bin" / "python" if where == "VENV" else tmp_path / "python3"
    python.parent.mkdir(parents=True, exist_ok=True)
    python.write_text(_PRETENDING.format(python=sys.executable, asked=str(asked), pretend=pretend))
    python.chmod(0o755)
    made_before = sorted(venv.rglob("*")) if venv.exists() else None
    run = _make("env", f"PYTHON={python}", f"VENV={venv}", timeout=60)
    assert run.returncode != 0, run.stdout + run.stderr
    lines = (run.stdout + run.stderr).strip().splitlines()
    assert len(lines) == 1, f"make env said more than one line: {lines}"
    missing = [words for words in said if words not in lines[0]]
    assert not missing, f"make env's line does not say {missing}: {lines[0]}"
    made_after = sorted(venv.rglob("*")) if venv.exists() else None
    assert made_after == made_before, "make env made or changed an environment with a Python it cannot use"
    assert not asked.exists(), f"make env asked the interpreter for more than the check: {asked.read_text()}"


def test_make_env_names_a_missing_python(tmp_path):
    """A PYTHON= that is not there (a typo, or no python3 at all): one line, no shell error."""
    run = _make("env", f"PYTHON={tmp_path / 'python3.11'}", f"VENV={tmp_path / 'venv'}", timeout=60)
    lines = (run.stdout + run.stderr).strip().splitlines()
    assert run.returncode != 0 and len(lines) == 1, lines
    assert f"There is no {tmp_path / 'python3.11'}" in lines[0] and "PYTHON=" in lines[0], lines[0]
    assert not (tmp_path / "venv").exists()


# A stand-in python3 for `make env` that makes nothing but writes down, for each step it is asked to do, the
# umask it was asked under: `-m venv DIR` (it puts itself in DIR/bin/python, as the venv's python) and the
# venv's `-m pip install`. The check (tools/check_python.py) it runs as the interpreter it is.
_RECORDING = """#!{python}
import os, runpy, shutil, sys
umask = os.umask(0)
os.umask(umask)
if sys.argv[1:2] == ["tools/check_python.py"]:
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")
with open({asked!r}, "a") as asked:
    asked.write("%s %03o\\n" % (" ".join(sys.argv[1:3]), umask))
if sys.argv[1:3] == ["-m", "venv"]:
    os.makedirs(os.path.join(sys.argv[3], "bin"))
    shutil.copy(sys.argv[0], os.path.join(sys.argv[3], "bin", "python"))
"""


def test_make_env_makes_an_environment_others_can_read_under_an_instructors_umask_077(tmp_path):
    """A grading kernel runs as a uid of its own: an environment made under umask 077 is the instructor's alone,
    and every kernel dies before it answers. `make env` makes and fills it under umask 022, whatever the caller's."""
    asked = tmp_path / "asked"
    python = tmp_path / "python3"
    python.write_text(_RECORDING.format(python=sys.executable, asked=str(asked)))
    python.chmod(0o755)
    callers = os.umask(0o077)  # make and its shells inherit it
    try:
        run = _make("env", f"PYTHON={python}", f"VENV={tmp_path / 'venv'}", timeout=60)
    finally:
        os.umask(callers)
    assert run.returncode == 0, run.stdout + run.stderr
    steps = asked.read_text().splitlines()
    assert steps == ["-m venv 022", "-m pip 022"], f"the steps of make env and their umasks: {steps}"


def _debian_environment() -> Path:
    """The second environment, made with Debian's own Python by `make env` (or found up to date)."""
    if not DEBIAN_PYTHON.exists():
        message = f"{DEBIAN_PYTHON} (Debian's own Python) is missing"
        if os.environ.get("CI"):
            pytest.fail(message + ": .ci/run installs python3 and python3-venv")
        pytest.skip(message + " (apt-get install python3 python3-venv; CI installs them)")
    made = _make("env", f"PYTHON={DEBIAN_PYTHON}", f"VENV={DEBIAN_VENV}", timeout=1200)
    assert made.returncode == 0, f"make env with {DEBIAN_PYTHON} failed:\n{made.stdout[-3000:]}\n{made.stderr[-3000:]}"
    python = DEBIAN_VENV / "bin" / "python"
    base = subprocess.run([str(python), "-c", "import sys; print(sys.base_prefix)"], capture_output=True, text=True)
    assert base.stdout.strip() == "/usr", f"{DEBIAN_VENV} is not made from {DEBIAN_PYTHON}: {base.stdout}{base.stderr}"
    return python


@pytest.mark.slow
def test_the_course_runs_on_debians_own_python():
    """In the environment made from /usr/bin/python3: notebook 00's tests pass (its checks, its widget, the
    notebook run top to bottom), and a class of two is graded by the instructor's command, with the scores
    the solution and the untouched notebook earn. Both runs are another interpreter's work the suite only waits
    for: they are done ahead, beside the tests before this one (``course.done_ahead``)."""
    ran = done_ahead("test_pythons:run_on_debians_python", run_on_debians_python)
    tested = ran["tests"]["output"]
    assert ran["tests"]["returncode"] == 0, f"notebook {A}'s tests failed on {DEBIAN_PYTHON}:\n{tested}"
    assert "skipped" not in tested and " passed" in tested, f"not every test ran on {DEBIAN_PYTHON}:\n{tested}"
    assert ran["graded"]["returncode"] == 0, f"grading on {DEBIAN_PYTHON} failed:\n{ran['graded']['output']}"
    # the solution's code earns its 4 points, its written answer (2 points) waits for a person; untouched: 0
    solved, untouched = ran["rows"]["solved"], ran["rows"]["untouched"]
    assert (solved["status"], solved["total"], solved["max_total"]) == ("graded", "4", "6"), solved
    assert "pending" in solved.values() and untouched["total"] == "0", (solved, untouched)


def run_on_debians_python() -> dict:
    """(The work of the test above) notebook 00's tests, then a class of two graded, on Debian's Python: both at
    once (each is mostly one process; the machine has two cores). What each said, and the class's grades."""
    require_sandbox()
    python = _debian_environment()
    selection = [
        "tests/test_start_here_checks.py",
        "tests/test_start_here_widget.py",
        f"tests/test_notebooks.py::test_solution_notebook_runs_top_to_bottom[{A}]",
    ]
    said = tempfile.TemporaryFile("w+", encoding="utf-8")  # (not a pipe: a full pipe would stop it while we grade)
    tests = subprocess.Popen(
        [str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "--durations=0", "-o", "addopts=", *selection],
        cwd=REPO,
        stdout=said,
        stderr=subprocess.STDOUT,
        # not CI: its own check of /tmp would count the grading beside it (this session's check counts both)
        env={k: v for k, v in os.environ.items() if k != "CI"},
    )
    try:
        # a course beside the repository (a sandboxed kernel has a /tmp of its own), graded by Debian's Python
        with tempfile.TemporaryDirectory(prefix=".debian-python-class-", dir=REPO) as scratch:
            root = Path(scratch) / "course"
            for name in ("solutions", "notebooks"):
                shutil.copytree(REPO / name, root / name)
            handed_in = Path(scratch) / "handed-in"
            for student, notebook in {"solved": submission(A, {}), "untouched": student_notebook(A)}.items():
                (handed_in / student / A).mkdir(parents=True)
                nbformat.write(notebook, handed_in / student / A / f"{A}.ipynb")
            grading = [str(python), "-m", "autograde.grade", "--root", str(root), "all", A]
            graded = subprocess.run(
                [*grading, "--folder", str(handed_in), "--workers", "1"],
                cwd=REPO,
                capture_output=True,
                text=True,
                timeout=600,
            )
            rows = {}
            if graded.returncode == 0:
                with open(root / "class" / "grades.csv", newline="", encoding="utf-8") as table:
                    rows = {row["student"]: row for row in csv.DictReader(table)}
        tests.wait(timeout=600)
        said.seek(0)
        tested = said.read()
    finally:
        if tests.poll() is None:
            tests.kill()
            tests.wait()
        said.close()
    return {
        "tests": {"returncode": tests.returncode, "output": tested[-4000:]},
        "graded": {"returncode": graded.returncode, "output": graded.stdout[-3000:] + graded.stderr[-3000:]},
        "rows": rows,
    }
