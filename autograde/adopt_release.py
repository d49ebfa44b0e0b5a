"""The submitted notebook made the instructor's before anything acts on it: an nbgrader sanitize step.

nbgrader's ``Autograde`` runs two lists of preprocessors on each submitted notebook: ``sanitize_preprocessors``
(nbgrader's own: clear the outputs, deduplicate the ids, put back the kernelspec and the locked cells) and then
``autograde_preprocessors`` (the judge, judge.py, in place of ``Execute``). ``AdoptRelease`` ends the first list
(``nbgrader_config.py``): before the judge starts a kernel, the notebook's metadata and every cell's are the
released notebook's (``adopt_release``), and what the student wrote outside code is shown as text. What it
learns on the way, and the judge needs, stays in this process's memory (``ADOPTED``), never in the notebook
nbgrader writes between the two steps: the submission's language, and which cells are the instructor's unchanged.

It runs in the grader's process, on the submitted notebook as nbgrader read it, before any of the student's code
has run for it (docs/security.md).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from pathlib import Path

import nbformat
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

from .kernel.sandbox import REPO


def as_text(markdown: str) -> str:
    """Markdown that shows ``markdown`` literally: a fenced block (no HTML, no links, no images)."""
    longest = max((len(run) for run in re.findall(r"`+|~+", markdown)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{markdown}\n{fence}"


@dataclasses.dataclass(frozen=True)
class Release:
    """The released notebook's cells by what names them: nbgrader's grade id, else the cell's id.

    A cell of the submission is the instructor's only by that name, never by what it contains: a source
    equal to a released cell's proves nothing (the student can type it anywhere, in a cell of any type)."""

    by_grade_id: dict[str, nbformat.NotebookNode]
    by_cell_id: dict[str, nbformat.NotebookNode]

    @classmethod
    def of(cls, released: nbformat.NotebookNode | None) -> Release:
        cells = released.cells if released is not None else []
        return cls(
            by_grade_id={c.metadata["nbgrader"]["grade_id"]: c for c in cells if _grade_id(c)},
            # a cell with a grade id is named by it alone: nbgrader keeps one copy of each grade id
            by_cell_id={c["id"]: c for c in cells if c.get("id") and not _grade_id(c)},
        )

    def counterpart(self, cell) -> nbformat.NotebookNode | None:
        """The released cell ``cell`` stands for (its grade id, else its cell id), or None: the student's own."""
        if _grade_id(cell) in self.by_grade_id:
            return self.by_grade_id[_grade_id(cell)]
        released = self.by_cell_id.get(cell.get("id"))
        return released if released is not None and not _grade_id(cell) else None


def _grade_id(cell) -> str | None:
    grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
    return grade_id if isinstance(grade_id, str) else None


def _as_released(cell, released) -> bool:
    """Whether ``cell`` is its released counterpart unchanged: the instructor's content, where the instructor put it."""
    return released is not None and cell.cell_type == released.cell_type and cell.source == released.source


def adopt_release(nb: nbformat.NotebookNode, release: Release) -> list[bool]:
    """Give every cell of ``nb`` the metadata the instructor gave it, and show the student's text as text.

    A cell that stands for a released cell (``Release.counterpart``) gets that cell's metadata, all of it:
    nothing the submission says about a cell (nbgrader's flags and points, ``jupyter.source_hidden``,
    ``collapsed``, ``transient``, tags, a verdict) reaches the graded notebook, where the formgrader, the
    instructor's lab and the feedback page act on it. The student's own cells get none. Returns, for each
    cell, whether it is the instructor's content unchanged (shown as it is, with no outputs)."""
    instructors = []
    for cell in nb.cells:
        released = release.counterpart(cell)
        cell.metadata = nbformat.from_dict(json.loads(json.dumps(released.metadata)) if released else {})
        unchanged = _as_released(cell, released)
        instructors.append(unchanged)
        if unchanged and cell.cell_type != "code":  # its pictures too are the instructor's
            cell.pop("attachments", None)
            if "attachments" in released:
                cell.attachments = nbformat.from_dict(json.loads(json.dumps(released.attachments)))
        elif cell.cell_type in ("markdown", "raw"):  # the student's text is shown as text, never as HTML
            if cell.cell_type == "raw":  # nbconvert would put a raw cell into the page as HTML
                cell.cell_type = "markdown"
                for field in ("raw_mimetype", "format"):
                    cell.metadata.pop(field, None)
            cell.source = as_text(cell.source)
            cell.pop("attachments", None)
    return instructors


def read_once(function):
    """``function(path)`` read once per version of the file (path, size, mtime), not once per submission."""
    cached = functools.lru_cache(maxsize=32)(lambda path, size, mtime: function(Path(path)))

    @functools.wraps(function)
    def read(path: Path):
        stat = Path(path).stat()
        return cached(str(path), stat.st_size, stat.st_mtime_ns)

    return read


def submission_language(metadata) -> str:
    """The language a submission is graded in: the one its notebook's metadata names
    (``heads_and_masks.language``, written by tools/translations.py in another language's build) if the course
    has that language, else English. The student wrote that metadata: it only chooses among the course's
    languages (the package's catalogs), so it can name neither a path nor a file, and it never changes what is
    run or what a test gives: only the language of the messages and the release the submission is compared with."""
    from heads_and_masks import i18n

    chosen = metadata.get("heads_and_masks", {}) if isinstance(metadata, dict) else {}
    named = chosen.get("language") if isinstance(chosen, dict) else None
    return named if isinstance(named, str) and named in i18n.course_languages() else i18n.ENGLISH


def language_release(release_directory: Path, language: str) -> Path:
    """Where a language's student notebooks are released from: ``notebooks/`` for English, ``notebooks-ru/``
    beside it for Russian (tools/build_notebooks.py's layout). ``language`` is one of the course's
    (``submission_language``), never the student's text."""
    from heads_and_masks import i18n

    if language == i18n.ENGLISH:
        return release_directory
    return release_directory.with_name(f"{release_directory.name}-{language}")


@read_once
def _release(path: Path) -> Release:
    return Release.of(nbformat.read(path, as_version=4))  # only read: adopt_release copies what it takes


@read_once
def _released_metadata(path: Path) -> dict:
    return json.loads(json.dumps(nbformat.read(path, as_version=4).metadata))  # plain data, copied per use below


class CourseFolders(NbGraderPreprocessor):
    """Where a grading step finds the instructor's notebooks (a worker names its private copies: grade_worker.py)."""

    release_directory = Unicode("", help="where the released notebooks are (absolute)").tag(config=True)
    source_directory = Unicode("", help="where the instructor's notebooks are (absolute)").tag(config=True)

    def source_notebook(self, assignment: str, name: str) -> Path:
        """The instructor's notebook (solutions and hidden tests) of the notebook being graded."""
        root = Path(self.config.CourseDirectory.get("root", REPO))
        folder = self.source_directory or root / self.config.CourseDirectory.get("source_directory", "source")
        return Path(folder) / assignment / f"{name}.ipynb"

    def released_notebook(self, assignment: str, name: str, language: str) -> Path:
        """The notebook the student was given, in ``language`` (``submission_language``)."""
        root = Path(self.config.CourseDirectory.get("root", REPO))
        english = Path(self.release_directory or root / "notebooks")
        release = language_release(english, language) / assignment / f"{name}.ipynb"
        if not release.exists():  # a language not released in this course: the English release's cells, by grade id
            release = english / assignment / f"{name}.ipynb"
        if not release.exists():  # (a course that grades from its source alone): the same cells, by the same names
            release = self.source_notebook(assignment, name)
        return release


@dataclasses.dataclass(frozen=True)
class Adopted:
    """What cleaning a submitted notebook found, for the judge: read before the submission's metadata was replaced."""

    language: str  # the language it is graded in (submission_language)
    instructors: list[bool]  # for each cell, whether it is the instructor's content unchanged (adopt_release)


ADOPTED: dict[tuple[str, str, str], Adopted] = {}  # (assignment, student, notebook) -> what the judge takes


def notebook_key(resources) -> tuple[str, str, str]:
    """The notebook being graded, as nbgrader names it in ``resources``: (assignment, student, notebook)."""
    info = resources.get("nbgrader", {})
    return info.get("assignment", ""), info.get("student", ""), info.get("notebook", "")


class AdoptRelease(CourseFolders):
    """The last of ``Autograde.sanitize_preprocessors``: the submitted notebook's metadata and its cells' are the
    release's, the student's text is shown as text (``adopt_release``), before the judge runs any of its code."""

    def preprocess(self, nb, resources):
        assignment, student, name = notebook_key(resources)
        # the submission's language, read before its metadata is replaced: its messages, and its release
        language = submission_language(nb.metadata)
        release = self.released_notebook(assignment, name, language)
        # The graded notebook's own metadata is the instructor's, never the submission's: tools that open it
        # act on it (Jupytext's "formats" pairs and writes files where it says). So is each cell's (adopt_release).
        nb.metadata = nbformat.from_dict(_released_metadata(release))
        instructors = adopt_release(nb, _release(release))
        ADOPTED[(assignment, student, name)] = Adopted(language=language, instructors=instructors)
        return nb, resources
