"""Regenerate the course notebooks: authoring/*.py -> solutions/ (nbgrader source) -> notebooks/ (release), and
the same in every other language of the course: solutions-<language>/ -> notebooks-<language>/.

``authoring/NN_name.py`` is a notebook in Jupytext's percent format: ``# %% [markdown]`` and ``# %%``
cells, and nbgrader's cell metadata in Jupytext's cell-metadata syntax, e.g.
``# %% nbgrader={"grade_id": "test_split_heads", "grade": true, "points": 3, ...}``. An author opens it
in JupyterLab as a notebook (Jupytext), or edits it as text; ``[tool.jupytext]`` in pyproject.toml keeps
what JupyterLab saves to the cells and their nbgrader metadata.

    python tools/build_notebooks.py           write solutions/ and notebooks/
    python tools/build_notebooks.py 01_heads  only these assignments
    python tools/build_notebooks.py --check   change nothing; exit 1 and list the files that differ

Another language's notebooks are the English ones with every markdown paragraph translated through
``translations/<language>/NN_name.po`` (``tools/translations.py``): the code cells, grade ids and points are
the same, and a paragraph without a translation stops the build. Each language's two folders are a course of
their own for nbgrader (its source and release directories), with the same assignment names.

The release is made by the real ``nbgrader generate_assignment`` (it strips the solutions and the
hidden tests) against a throw-away gradebook. The output is deterministic: running it twice
changes nothing.
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import jupytext
import nbformat

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO)]
from autograde.tool_env import tool_env  # noqa: E402
from translations import LANGUAGES, TEXT_STUBS, translate_notebook  # noqa: E402

KERNEL = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
NBGRADER_FIELDS = {"grade_id", "schema_version", "locked", "solution", "grade", "points"}
JUPYTEXT_LAYOUT = {"lines_to_next_cell", "lines_to_end_of_cell_marker"}  # how Jupytext keeps blank lines

ONLY: list[str] = []  # set from the command line: build only these assignments


def assignments() -> list[str]:
    names = sorted(p.stem for p in (REPO / "authoring").glob("[0-9][0-9]_*.py"))
    return [n for n in names if not ONLY or n in ONLY]


def read_source(path: Path) -> nbformat.NotebookNode:
    """The nbgrader source notebook of an authoring file: its cells and their nbgrader metadata, nothing else.

    Cell ids are stable: a graded cell's is its grade_id, any other's its place in the notebook. Whatever
    else an editor left in the metadata (kernel, jupytext settings, cell display state) is dropped.
    """
    path = Path(path)
    text = jupytext.read(path, fmt="py:percent")
    notebook = nbformat.v4.new_notebook()
    notebook.metadata = {"kernelspec": dict(KERNEL), "language_info": {"name": "python"}}
    for index, cell in enumerate(text.cells):
        if cell.cell_type not in ("markdown", "code"):
            raise ValueError(f"{path}: cell {index} is a {cell.cell_type} cell; the course has markdown and code")
        meta = cell.metadata.get("nbgrader")
        where = f"{path}: cell {index} ({cell.source[:40]!r})"
        unknown = set(cell.metadata) - {"nbgrader", *JUPYTEXT_LAYOUT}
        if unknown:  # e.g. an old-style header "# %% solution id=NAME", read by Jupytext as a title
            raise ValueError(
                f"{where}: the cell header carries {sorted(unknown)}; a graded cell's header is "
                '# %% nbgrader={"grade_id": ..., ...} (README, For authors)'
            )
        if meta is not None:
            if not isinstance(meta.get("grade_id"), str) or set(meta) - NBGRADER_FIELDS:
                raise ValueError(f"{where}: nbgrader metadata needs a grade_id and only {sorted(NBGRADER_FIELDS)}")
            if meta.get("grade") and not meta.get("solution") and not meta["grade_id"].startswith("test_"):
                raise ValueError(f"{where}: test cell ids start with 'test_', got {meta['grade_id']}")
            written = meta.get("grade") and meta.get("solution")  # an answer graded by a person (formgrader)
            if written and (cell.cell_type != "markdown" or not meta["grade_id"].startswith("written_")):
                raise ValueError(f"{where}: a written answer is a markdown cell whose id starts with 'written_'")
        new = nbformat.v4.new_markdown_cell if cell.cell_type == "markdown" else nbformat.v4.new_code_cell
        built = new(cell.source)
        built.id = (meta["grade_id"] if meta else f"{path.stem}-{index:03d}").replace("_", "-")
        built.metadata = {"nbgrader": dict(meta)} if meta else {}
        notebook.cells.append(built)
    nbformat.validate(notebook)
    return notebook


def folders(language: str | None) -> tuple[str, str]:
    """The source and release folders of a language's course (None: English)."""
    return ("solutions", "notebooks") if language is None else (f"solutions-{language}", f"notebooks-{language}")


def write_solutions(into: Path, language: str | None = None) -> None:
    for name in assignments():
        notebook = read_source(REPO / "authoring" / f"{name}.py")
        if language is not None:
            notebook = translate_notebook(notebook, name, language)
        folder = into / name
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, folder / f"{name}.ipynb")


def generate_release(source_root: Path, release_root: Path, language: str | None = None) -> None:
    """Run nbgrader generate_assignment for every assignment, writing into release_root (a written answer's
    cell says "YOUR ANSWER HERE" in the notebook's language)."""
    stub = [f"--ClearSolutions.text_stub={TEXT_STUBS[language]}"] if language is not None else []
    # one nbgrader for every assignment of source_root ("*", all that write_solutions wrote there): each run of its
    # own cost about 2 s of start-up, 18 of them in all (9 assignments, 2 languages)
    with tempfile.TemporaryDirectory() as scratch:
        for name in ONLY or ["*"]:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "nbgrader",
                    "generate_assignment",
                    name,
                    "--force",
                    "--log-level=WARN",
                    f"--CourseDirectory.root={scratch}",
                    f"--CourseDirectory.source_directory={source_root}",
                    f"--CourseDirectory.release_directory={release_root}",
                    f"--CourseDirectory.db_url=sqlite:///{scratch}/gradebook.db",
                    *stub,
                ],
                cwd=REPO / "autograde",
                check=True,
                env=tool_env(),
            )


def build(root: Path) -> list[str]:
    """Every language's solutions and notebooks under ``root``; returns the folders written."""
    written = []
    for language in [None, *LANGUAGES]:
        solutions, notebooks = folders(language)
        write_solutions(root / solutions, language)
        generate_release(root / solutions, root / notebooks, language)
        written += [solutions, notebooks]
    return written


def differing(left: Path, right: Path) -> list[str]:
    names = {str(p.relative_to(left)) for p in left.rglob("*") if p.is_file()}
    names |= {str(p.relative_to(right)) for p in right.rglob("*") if p.is_file()}
    return sorted(
        n
        for n in names
        if "__pycache__" not in n
        and ".ipynb_checkpoints" not in n
        and not ((left / n).is_file() and (right / n).is_file() and filecmp.cmp(left / n, right / n, shallow=False))
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only compare with the committed notebooks")
    parser.add_argument("only", nargs="*", help="assignments to build (default: all)")
    args = parser.parse_args()
    ONLY[:] = args.only
    if not args.check:
        # build aside, then swap each folder in: the tree never lacks a notebook for long
        with tempfile.TemporaryDirectory(dir=REPO / "autograde") as scratch:
            written = build(Path(scratch))
            for folder in written:
                for name in assignments():
                    target = REPO / folder / name
                    shutil.rmtree(target, ignore_errors=True)
                    target.parent.mkdir(exist_ok=True)
                    shutil.move(str(Path(scratch) / folder / name), target)
        print(f"wrote {len(assignments())} assignments into {', '.join(f'{f}/' for f in written)}")
        return 0
    with tempfile.TemporaryDirectory() as scratch:
        written = build(Path(scratch))
        stale = [f"{folder}/{n}" for folder in written for n in differing(Path(scratch) / folder, REPO / folder)]
    if stale:
        print("out of date (run `make notebooks`):\n  " + "\n  ".join(stale))
        return 1
    print(f"{', '.join(f'{f}/' for f in written)} are up to date with authoring/ and translations/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
