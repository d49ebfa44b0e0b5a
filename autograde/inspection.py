"""Step 2, inspection: whether a submission can be graded at all, and everything unusual about it.

Before any kernel starts, each submission is looked at as data: the expected notebook is there (or
one notebook under another name, graded under the right one), under the size limit, valid JSON and a
valid notebook; what the student did to the test cells (nbgrader puts them back; the instructor
should know); and constructs that can game the grader (``scan.py``, a note, the score unchanged).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from pathlib import Path

import nbformat

from .bounds import notebook_shape, structure_limits
from .collect import collection_notes
from .submission_files import read_regular
from .course import Course, expected_notebooks, grade_id, is_answer, is_test
from .results import Status

MAX_NOTEBOOK_MB = 50  # a bigger .ipynb is refused as invalid (stored outputs are cleared anyway)


@dataclasses.dataclass
class Inspection:
    status: Status | None = None  # set when the submission cannot be graded at all
    notes: list[str] = dataclasses.field(default_factory=list)
    rename: dict[str, str] = dataclasses.field(default_factory=dict)
    fingerprint: str = ""
    limits: list[str] = dataclasses.field(default_factory=list)  # the bounds it passed (bounds.py), with its cost


def submission_fingerprint(course: Course, assignment: str, student: str) -> str:
    """What a student's submission is, as files (``""`` when there is none): equal fingerprints, equal files,
    and a submission already graded from them is not graded again."""
    folder = course.path("submitted", student, assignment)
    return fingerprint(folder) if folder.is_dir() and not folder.is_symlink() else ""


def fingerprint(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and ".ipynb_checkpoints" not in p.parts):
        digest.update(str(path.relative_to(folder)).encode() + b"\0")
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def inspect(
    course: Course,
    assignment: str,
    student: str,
    max_mb: float = MAX_NOTEBOOK_MB,
    collected: dict[str, list[str]] | None = None,
    files_fingerprint: str | None = None,
) -> Inspection:
    """Decide whether a submission can be graded, and note everything unusual about it
    (``files_fingerprint``: its ``submission_fingerprint``, when the caller has it already)."""
    folder = course.path("submitted", student, assignment)
    result = Inspection()
    collected = collection_notes(course, assignment) if collected is None else collected  # read once per run
    result.notes += collected.get(student, [])
    if folder.is_symlink() or not folder.is_dir():
        result.status = Status.MISSING
        result.notes.append("nothing was submitted")
        return result
    result.fingerprint = fingerprint(folder) if files_fingerprint is None else files_fingerprint
    present = sorted(p.name for p in folder.glob("*.ipynb") if not p.is_symlink())
    expected = [f"{name}.ipynb" for name in expected_notebooks(course, assignment)]
    missing = [name for name in expected if name not in present]
    extra = [name for name in present if name not in expected]
    if missing and len(missing) == len(extra) == 1:
        result.rename[extra[0]] = missing[0]
        result.notes.append(
            f"the notebook was named `{extra[0]}` instead of `{missing[0]}`: graded it as `{missing[0]}`"
        )
        missing = []
    if missing:
        found = f" (found: {', '.join(present)})" if present else " (no notebook at all)"
        result.status = Status.MISSING
        result.notes.append(f"no `{missing[0]}` in the submission{found}")
        return result
    release = course.path("release", assignment=assignment)
    for name in expected:
        submitted_name = next((wrong for wrong, right in result.rename.items() if right == name), name)
        path = folder / submitted_name
        size_mb = path.stat().st_size / 1e6
        if size_mb > max_mb:
            result.status = Status.INVALID
            result.notes.append(
                f"`{submitted_name}` is {size_mb:.0f} MB, over the {max_mb:g} MB limit: "
                "clear its outputs and submit again"
            )
            return result
        try:
            raw = json.loads(read_regular(path, int(max_mb * 1e6)).decode("utf-8"))
        except RecursionError:
            result.status = Status.INVALID
            result.notes.append(f"`{submitted_name}` is nested too deeply to be a notebook")
            return result
        except (UnicodeDecodeError, ValueError) as error:
            result.status = Status.INVALID
            result.notes.append(
                f"`{submitted_name}` is not valid JSON ({str(error)[:120]}): the file is damaged or not a notebook"
            )
            return result
        passed = structure_limits(notebook_shape(raw))
        if passed:  # refused before nbformat validates it, the judge runs it or nbconvert renders it
            result.status = Status.INVALID
            result.limits.append(f"notebook structure: `{submitted_name}` has " + "; ".join(passed))
            result.notes.append(
                f"`{submitted_name}` has {'; '.join(passed)}: it was not graded (every step after this one spends "
                "time and memory on each part of it); remove the extra cells, stored outputs or metadata and submit "
                "again"
            )
            return result
        try:
            notebook = nbformat.reads(json.dumps(raw), as_version=4)
        except (Exception, RecursionError) as error:  # noqa: BLE001 - nbformat raises several kinds
            result.status = Status.INVALID
            result.notes.append(
                f"`{submitted_name}` is JSON but not a Jupyter notebook ({type(error).__name__}: {str(error)[:120]})"
            )
            return result
        if (release / name).exists():
            result.notes += compare_with_release(notebook, released_notebook(release / name))
        result.notes += suspicious_code(notebook, assignment)
    return result


def released_notebook(path: Path):
    """The released notebook at ``path``, read once for a whole class (again if the file changed)."""
    status = path.stat()
    return _read_released(str(path), status.st_mtime_ns, status.st_size)


@functools.lru_cache(maxsize=4)
def _read_released(path: str, modified: int, size: int):
    return nbformat.read(path, as_version=4)  # only read: compare_with_release never changes it


def suspicious_code(notebook, assignment: str) -> list[str]:
    """Constructs that can game the grader (``scan.py``): a note each, the score is not changed."""
    try:
        from .scan import scan_notebook
    except ImportError:
        return []
    try:
        findings = scan_notebook(notebook, assignment)
    except Exception as error:  # noqa: BLE001 - a scanner problem must not stop grading
        return [f"the code scan failed ({type(error).__name__}: {error})"]
    if not findings:
        return []
    shown = "; ".join(str(f) for f in findings[:3]) + (f"; and {len(findings) - 3} more" if len(findings) > 3 else "")
    return [f"suspicious code, check it by hand: {shown}"]


def compare_with_release(submitted, released) -> list[str]:
    """What the student did to the test cells (nbgrader puts them back; the instructor should know)."""
    notes = []
    original = {grade_id(c): c for c in released.cells if is_test(c)}
    answers = [grade_id(c) for c in released.cells if is_answer(c)]
    seen: dict[str, list] = {}
    for cell in submitted.cells:
        gid = grade_id(cell)
        if gid is not None:
            seen.setdefault(gid, []).append(cell)
    for gid, cell in original.items():
        copies = seen.get(gid, [])
        if not copies:
            notes.append(f"test cell `{gid}` was deleted: put back and run")
            continue
        if len(copies) > 1:
            notes.append(
                f"test cell `{gid}` appears {len(copies)} times: the last copy was graded, the others ran as ordinary code"
            )
        last = copies[-1]
        if last.cell_type != cell.cell_type:
            notes.append(f"test cell `{gid}` was changed to {last.cell_type}: put back as {cell.cell_type} and run")
        elif last.source.strip() != cell.source.strip():
            notes.append(f"test cell `{gid}` was edited: the original was put back and run")
    for gid in answers:
        if gid not in seen:
            notes.append(f"answer cell `{gid}` is missing (deleted or its metadata removed)")
    return notes
