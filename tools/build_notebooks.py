"""Regenerate the course notebooks: authoring/*.py -> solutions/ (nbgrader source) -> notebooks/ (release).

    python tools/build_notebooks.py           write solutions/ and notebooks/
    python tools/build_notebooks.py 01_heads  only these assignments
    python tools/build_notebooks.py --check   change nothing; exit 1 and list the files that differ

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

import nbformat

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tools")]
from notebook_source import read_source  # noqa: E402
from autograde.tool_env import tool_env  # noqa: E402


ONLY: list[str] = []  # set from the command line: build only these assignments


def assignments() -> list[str]:
    names = sorted(p.stem for p in (REPO / "authoring").glob("[0-9][0-9]_*.py"))
    return [n for n in names if not ONLY or n in ONLY]


def write_solutions(into: Path) -> None:
    for name in assignments():
        notebook = read_source(REPO / "authoring" / f"{name}.py")
        folder = into / name
        folder.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebook, folder / f"{name}.ipynb")


def generate_release(source_root: Path, release_root: Path) -> None:
    """Run nbgrader generate_assignment for every assignment, writing into release_root."""
    with tempfile.TemporaryDirectory() as scratch:
        for name in assignments():
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
                ],
                cwd=REPO / "autograde",
                check=True,
                env=tool_env(),
            )


def build(solutions: Path, notebooks: Path) -> None:
    write_solutions(solutions)
    generate_release(solutions, notebooks)


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
            build(Path(scratch) / "solutions", Path(scratch) / "notebooks")
            for folder in ("solutions", "notebooks"):
                for name in assignments():
                    target = REPO / folder / name
                    shutil.rmtree(target, ignore_errors=True)
                    shutil.move(str(Path(scratch) / folder / name), target)
        print(f"wrote {len(assignments())} assignments into solutions/ and notebooks/")
        return 0
    with tempfile.TemporaryDirectory() as scratch:
        build(Path(scratch) / "solutions", Path(scratch) / "notebooks")
        stale = [
            f"{folder}/{n}"
            for folder in ("solutions", "notebooks")
            for n in differing(Path(scratch) / folder, REPO / folder)
        ]
    if stale:
        print("out of date (run `make notebooks`):\n  " + "\n  ".join(stale))
        return 1
    print("solutions/ and notebooks/ are up to date with authoring/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
