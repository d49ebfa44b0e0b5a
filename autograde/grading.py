"""Grade notebooks with the real ``nbgrader autograde`` in a temporary course root.

Used by the test suite (catalogs of answers, the untouched student notebooks, the solutions) and
as the core of the instructor's pipeline. Every call builds its own course root from
``solutions/`` with ``generate_assignment`` (so the gradebook holds the hidden tests), puts the
submissions in ``submitted/<student>/<assignment>/``, runs autograde for all of them in one call
and reads every grade cell's score from the gradebook.
"""
from __future__ import annotations

import dataclasses
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "autograde" / "nbgrader_config.py"
if str(CONFIG.parent) not in sys.path:
    sys.path.insert(0, str(CONFIG.parent))
from tool_env import tool_env  # noqa: E402


@dataclasses.dataclass
class GradedNotebook:
    student: str
    assignment: str
    scores: dict[str, float]  # grade_id -> points earned
    max_scores: dict[str, float]  # grade_id -> points possible
    notebook: nbformat.NotebookNode | None  # the autograded notebook (outputs included), if any

    @property
    def total(self) -> float:
        return sum(self.scores.values())

    @property
    def max_total(self) -> float:
        return sum(self.max_scores.values())

    def error_text(self, grade_id: str) -> str:
        """Everything a test cell printed as an error (ename, evalue, traceback), for messages."""
        if self.notebook is None:
            return ""
        for cell in self.notebook.cells:
            if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id:
                parts = []
                for output in cell.get("outputs", []):
                    if output.get("output_type") == "error":
                        parts += [output.get("ename", ""), output.get("evalue", "")]
                    elif output.get("name") == "stderr":
                        parts.append(output.get("text", ""))
                return "\n".join(parts)
        return ""


def nbgrader(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run an nbgrader command against the course config, with ``root`` as the course root."""
    command = [sys.executable, "-m", "nbgrader", *args, "--log-level=WARN",
               f"--CourseDirectory.root={root}", "--CourseDirectory.source_directory=source",
               "--CourseDirectory.release_directory=release",
               "--CourseDirectory.submitted_directory=submitted",
               "--CourseDirectory.autograded_directory=autograded",
               "--CourseDirectory.feedback_directory=feedback",
               "--CourseDirectory.solution_directory=solution",
               f"--CourseDirectory.db_url=sqlite:///{root}/gradebook.db"]
    return subprocess.run(command, cwd=CONFIG.parent, env=tool_env(), capture_output=True, text=True, check=check)


def prepare_course(root: Path, assignment: str) -> None:
    """A fresh course root whose gradebook knows the assignment and its hidden tests."""
    shutil.copytree(REPO / "solutions" / assignment, root / "source" / assignment,
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    nbgrader(root, "generate_assignment", assignment, "--force")


def read_gradebook(root: Path, assignment: str, students: list[str]) -> dict[str, GradedNotebook]:
    from nbgrader.api import Gradebook, MissingEntry

    results = {}
    with Gradebook(f"sqlite:///{root}/gradebook.db") as gradebook:
        for student in students:
            scores, maxima = {}, {}
            try:
                submission = gradebook.find_submission_notebook(assignment, assignment, student)
            except MissingEntry:
                submission = None
            if submission is not None:
                for grade in submission.grades:
                    scores[grade.name] = float(grade.score)
                    maxima[grade.name] = float(grade.max_score)
            path = root / "autograded" / student / assignment / f"{assignment}.ipynb"
            notebook = nbformat.read(path, as_version=4) if path.exists() else None
            results[student] = GradedNotebook(student, assignment, scores, maxima, notebook)
    return results


def autograde(assignment: str, submissions: dict[str, nbformat.NotebookNode], root: Path | None = None,
              extra_args: tuple[str, ...] = ()) -> dict[str, GradedNotebook]:
    """Grade ``{student: notebook}`` for one assignment; return each student's scores per grade cell."""
    with tempfile.TemporaryDirectory(prefix="hm-grade-") as scratch:
        root = Path(root or scratch)
        prepare_course(root, assignment)
        for student, notebook in submissions.items():
            folder = root / "submitted" / student / assignment
            folder.mkdir(parents=True)
            for extra in (root / "source" / assignment).iterdir():  # data files beside the notebook
                if extra.suffix != ".ipynb" and extra.is_file():
                    shutil.copy(extra, folder / extra.name)
            nbformat.write(notebook, folder / f"{assignment}.ipynb")
        run = nbgrader(root, "autograde", assignment, "--force", *extra_args, check=False)
        results = read_gradebook(root, assignment, list(submissions))
        for result in results.values():
            result.log = run.stdout + run.stderr
        return results
