"""Helpers shared by the tests: the repository, its assignments, its notebooks, the grading sandbox.

(Imported as ``course``; ``conftest`` only holds fixtures, since tests/browser has a conftest too.)
"""

from __future__ import annotations

import atexit
import dataclasses
import functools
import os
import shutil
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
for extra in (REPO / "tools", REPO / "tests"):
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
    from autograde.sandbox import sandbox_available

    available, why = sandbox_available()
    if available:
        return
    message = f"the grading sandbox is not available: {why}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message + " (as root: apt-get install bubblewrap; CI installs it)")


# ---------------------------------------------------------------------------------------------
# Grading through the instructor's pipeline (the one path: collect, grade, feedback, export)
# ---------------------------------------------------------------------------------------------
CELL_TIMEOUT = 30  # seconds per cell and per call in the suite's class runs (instructors' default: 60)
TEST_KEY = "a grading key for the test suite only: 7c2f0e9a51d84b6f93a0c1e2d4b5a6f7\n"


@dataclasses.dataclass(frozen=True)
class Symlink:
    """A symbolic link a student leaves in a handed-in folder."""

    target: str


@dataclasses.dataclass
class ClassRun:
    course: object  # autograde.course.Course
    assignment: str
    results: dict[str, object]  # student -> autograde.results.Result, with its autograded notebook loaded


def grade_class(
    assignment: str,
    submissions: dict[str, object],
    root: Path,
    *,
    workers: int = 2,
    key: str = TEST_KEY,
    **grade_options,
) -> ClassRun:
    """Grade ``{student: notebook}`` (or ``{student: {file name: bytes}}``) for one assignment the way an
    instructor does: a course root at ``root``, the submissions collected from a folder, graded in
    parallel by ``pool.grade``. Every test that grades goes through here."""
    from autograde import collect, pool
    from autograde.course import Course

    shutil.copytree(_template_course(), root / "course", symlinks=True)
    course = Course(root=root / "course")
    (course.root / "autograde" / "grading-key").write_text(key)
    folder = root / "handed-in"
    for student, content in submissions.items():
        target = folder / student / assignment
        target.mkdir(parents=True, exist_ok=True)
        if isinstance(content, nbformat.NotebookNode):
            nbformat.write(content, target / f"{assignment}.ipynb")
        else:  # {file name: bytes, or a Symlink}
            for name, data in content.items():
                if isinstance(data, Symlink):
                    os.symlink(data.target, target / name)
                else:
                    (target / name).write_bytes(data if isinstance(data, bytes) else str(data).encode())
    collect.collect_folder(course, assignment, folder)
    results = pool.grade(course, assignment, workers=workers, progress=False, **grade_options)
    for result in results.values():
        result.load_notebook(course)
    return ClassRun(course, assignment, results)


_SCRATCH = Path(tempfile.mkdtemp(prefix="hm-tests-"))
atexit.register(shutil.rmtree, _SCRATCH, True)


@functools.cache
def _template_course() -> Path:
    """A course root with every assignment in its gradebook, made once; each grading test copies it."""
    from autograde.course import make_course_copy, setup

    course = make_course_copy(_SCRATCH / "template")
    (course.root / "autograde").mkdir(parents=True, exist_ok=True)
    for assignment in ASSIGNMENTS:
        setup(course, assignment)
    return course.root


@functools.cache
def graded_batch(assignment: str) -> ClassRun:
    """One grading run per assignment for the whole suite: the untouched notebook, the solutions, every
    catalog answer and every attack on that assignment, graded together (tests read their parts)."""
    require_sandbox()
    from catalog import catalogs
    from catalog.attacks import ATTACKS, PROBE
    from submissions import submission

    submissions: dict[str, object] = {"untouched": student_notebook(assignment), "solution": submission(assignment, {})}
    for answer in catalogs().get(assignment, []):
        submissions[f"catalog-{answer.name}"] = submission(
            assignment, {k: answer.source(k) for k in answer.cells}, keep_stubs=answer.untouched
        )
    for attack in ATTACKS:
        if attack.assignment == assignment:
            submissions[f"attack-{attack.name}"] = attack.submission()
    if assignment == "00_start_here":
        probe = submission(assignment, {})
        probe.cells.insert(1, nbformat.v4.new_code_cell(PROBE))
        submissions["probe"] = probe
    return grade_class(assignment, submissions, _SCRATCH / assignment, cell_timeout=CELL_TIMEOUT)
