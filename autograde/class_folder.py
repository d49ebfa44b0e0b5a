"""The class's folder: everything grading keeps of a class, in one folder of its own at the course root.

    class/                                   0700, ignored by git, the instructor's alone
        submitted/ autograded/ feedback/ solution/    nbgrader's folders, <student>/<assignment>/
        gradebook.db                         the gradebook (unless a database server holds it: docs/instructors.md)
        grading-key                          the secret of the hidden inputs, 0600 (grading_key.py)
        accounts.csv                         the roster of exchange accounts, when there is one (exchange.py)
        results/ reports/ logs/ work/        the pipeline's records, the class reports, the workers' logs, scratch
        grades.csv grades-*.csv              the exports
        lab-workspaces/                      the instructor's lab layout (tools/lab.py --instructor)

Before, the same data lived in ``autograde/``, beside the grader's source. The first command of a course graded
that way moves it here (``move_old_layout``), and never over data already here.
"""

from __future__ import annotations

import os
from pathlib import Path

CLASS_FOLDER = "class"
OLD_FOLDER = "autograde"  # where the class's data lived before it had a folder of its own
# what the old layout kept in autograde/ (everything else there is the grader's source)
OLD_LAYOUT = (
    "submitted",
    "autograded",
    "feedback",
    "solution",
    "gradebook.db",
    "gradebook.db-journal",
    "gradebook.db-wal",
    "gradebook.db-shm",
    "grading-key",
    "accounts.csv",
    "results",
    "reports",
    "logs",
    "work",
    "grades.csv",
    "grades-*.csv",
    "lab-workspaces",
)


class OldLayoutInTheWay(RuntimeError):
    """Class data both in the old place and in the new one: which one to keep is the instructor's to say."""


def old_layout(root: Path) -> list[Path]:
    """What of the class's data is still in the old place, ``autograde/`` of the course root ``root``."""
    old = Path(root) / OLD_FOLDER
    return sorted({path for pattern in OLD_LAYOUT for path in old.glob(pattern)})


def move_old_layout(root: Path) -> str | None:
    """Move the class's data from ``autograde/`` to ``class/`` of the course root ``root``; say what moved in
    one line, or None when nothing was there. Nothing moves when anything would land on data already in
    ``class/``: OldLayoutInTheWay says which, and what to do."""
    root = Path(root)
    found = old_layout(root)
    if not found:
        return None
    new = root / CLASS_FOLDER
    in_the_way = [path.name for path in found if os.path.lexists(new / path.name)]
    if in_the_way:
        raise OldLayoutInTheWay(
            f"the class's data moved from {root / OLD_FOLDER} to {new}, and both hold "
            + ", ".join(in_the_way)
            + f": keep the one you want in {new} (move it there by hand), move the other out of "
            f"{root / OLD_FOLDER}, then run the command again. Nothing was moved."
        )
    names = ", ".join(path.name + ("/" if path.is_dir() else "") for path in found)
    new.mkdir(mode=0o700, exist_ok=True)
    os.chmod(new, 0o700)  # perhaps made before this under another umask: it will hold the gradebook and the key
    for path in found:
        _move_without_overwriting(path, new / path.name)
    return f"moved the class's data from {root / OLD_FOLDER} to {new}: {names}"


def _move_without_overwriting(old: Path, new: Path) -> None:
    """``old`` to ``new``, which must not exist: a file is linked there first (the link fails if something
    appeared there meanwhile), a folder renamed (the rename fails onto a folder that is not empty)."""
    if old.is_dir() and not old.is_symlink():
        os.rename(old, new)
    else:
        os.link(old, new, follow_symlinks=False)
        os.unlink(old)
