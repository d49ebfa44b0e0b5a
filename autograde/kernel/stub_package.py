"""The course package as a grading kernel sees it: made by ``kernel_package.build``, shared by a run's workers,
kept in the course's runtime folder from one run to the next while the course package is unchanged.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from .sandbox import REPO


def reference_functions():
    """Every reference implementation of the course package (its registry: ``heads_and_masks._guard.references``)."""
    from heads_and_masks._guard import references

    return references().values()


def stub_package(into: Path, assignment: str | None) -> Path:
    """The course package as a grading kernel of ``assignment`` sees it (``kernel_package.build``): only what
    that notebook's cells use, each reference a function that only raises, the checks empty shells (checks run
    in the grader, never in a kernel). None: what every notebook's kernel has, for a kernel of no notebook."""
    from .kernel_package import build

    return build(into, assignment)


def _stub_label(assignment: str | None) -> str:
    return assignment or "any-notebook"


STUB_ENV = (
    "HEADS_AND_MASKS_STUB_PACKAGE"  # a stub made by the coordinator for its run's assignment, shared by its workers
)


@functools.cache
def shared_stub_package(assignment: str | None = None) -> Path:
    """:func:`stub_package` of ``assignment`` made once (by the coordinator, for all its workers, or else once
    per process and assignment), then bound read-only into every kernel of that assignment."""
    made = os.environ.get(STUB_ENV)
    if made and (Path(made) / "__init__.py").is_file() and Path(made).parent.name == _stub_label(assignment):
        return Path(made)
    scratch = Path(tempfile.mkdtemp(prefix="hm-stub-"))
    os.chmod(scratch, 0o755)
    atexit.register(shutil.rmtree, scratch, True)
    return stub_package(scratch / _stub_label(assignment), assignment)


def stub_fingerprint() -> str:
    """What the stub packages are made from: every file of the course package, this module, the allowlist
    (``allowlist.py``) and what cuts the package to it (``kernel_package.py``). Equal fingerprints, equal stubs."""
    digest = hashlib.sha256(Path(__file__).read_bytes())
    for maker in ("allowlist.py", "kernel_package.py"):
        digest.update(Path(__file__).with_name(maker).read_bytes())
    package = REPO / "heads_and_masks"
    for path in sorted(p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(b"\0" + str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:20]


_KEPT_STUBS: dict[tuple[str, str], Path] = {}  # (fingerprint, assignment) -> a stub this process made or kept


def kept_stub_package(folder: Path, assignment: str | None = None) -> Path:
    """:func:`stub_package` of ``assignment``, kept in ``folder`` (the course's own runtime folder) from one
    grading run to the next while the course package is unchanged: a run then spends no time importing the
    course package to make it (about 0.5 s of every grading command). Made under a temporary name and renamed
    into place when complete, so a run killed half way never leaves a partial stub to be used."""
    fingerprint, label = stub_fingerprint(), _stub_label(assignment)
    kept = folder / f"stub-{fingerprint}" / label
    if (kept / "heads_and_masks" / "__init__.py").is_file():
        return kept / "heads_and_masks"
    for old in [*folder.glob("stub-*"), *folder.glob(".stub-*")]:  # older course packages, or a killed run's
        if old.name != f"stub-{fingerprint}":
            shutil.rmtree(old, ignore_errors=True)
    shutil.rmtree(kept, ignore_errors=True)  # an incomplete one: never used as it is
    kept.parent.mkdir(exist_ok=True)
    os.chmod(kept.parent, 0o755)
    building = Path(tempfile.mkdtemp(prefix=f".stub-{label}-", dir=folder))
    made = _KEPT_STUBS.get((fingerprint, label))  # by this process for another course: copied, not made again
    if made is not None and (made / "__init__.py").is_file():
        shutil.copytree(made, building / "heads_and_masks")  # (modes kept: readable by the kernels' uids)
        os.chmod(building, 0o755)
    else:
        stub_package(building, assignment)  # (modes: readable by the kernels' own uids)
    try:
        os.rename(building, kept)
    except OSError:  # made meanwhile by another process: use that one
        shutil.rmtree(building, ignore_errors=True)
    _KEPT_STUBS[(fingerprint, label)] = kept / "heads_and_masks"
    return kept / "heads_and_masks"
