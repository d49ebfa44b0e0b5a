"""What a student hands in, read as untrusted: the files one submission is made of, from a folder on disk.

Whatever the source (``collect.py``: nbgrader's exchange, an LMS zip, a folder):

* only **regular files** are taken, read without following a symbolic link (``O_NOFOLLOW``), and only
  those grading needs (``wanted``): the assignment's notebooks (top level, ``*.ipynb``), ``timestamp.txt``
  and nbgrader's ``submission_secret.txt``; everything else is left behind and named in a note;
* every file has a **size cap** (``MAX_FILE_MB``);
* a **student id** becomes a safe folder name (``safe_id``), and every name or note shown to a person is
  printable (``printable``);
* what is written into ``submitted/`` is written by us (``write_submission``), with the collection's time.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import shutil
import stat
import time
from pathlib import Path

from heads_and_masks.i18n import ngettext

from .exchange import account_name

MAX_FILE_MB = 20  # a bigger notebook is refused (stored outputs are cleared before grading anyway)
# nbgrader's secret of an exchange submission: its feedback is released under it, to whoever knows it
# (kept from the exchange only, from a folder the submitting account owns). A student's own timestamp.txt is
# never taken: the time of a submission is the collection's (the exchange folder's last change, the zip
# entry's date, the file's time), written by us.
SECRET = "submission_secret.txt"
KEPT = (SECRET,)
SAFE = re.compile(r"[^A-Za-z0-9._@+-]")
# Notes kept per student and collection. A student writes as many folders into the exchange's inbound as their
# quota allows, and each one refused was a note: 20,000 of them made a 4 MB record, which every later step
# (the roster, each run's notes, the report, the CSV, the class report) read and showed in full.
MAX_NOTES = 20


def safe_id(raw: str) -> str:
    """A folder name for a student id: safe characters only, at most 64 of them, never ``.`` or ``..``."""
    text = SAFE.sub("_", str(raw)).lstrip(".")
    if text != raw or len(text) > 64 or not text:
        digest = hashlib.sha256(str(raw).encode("utf-8", "replace")).hexdigest()[:8]
        text = f"{text[:48] or 'student'}-{digest}"
    return text


def printable(text: str) -> str:
    """``text`` with control characters (terminal escapes, newlines) shown as escapes, for reports."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in str(text))


def read_regular(path: Path | str, max_bytes: int, dir_fd: int | None = None) -> bytes:
    """The bytes of a regular file, never through a symbolic link; ValueError when it is not one or too big."""
    return read_regular_file(path, max_bytes, dir_fd)[0]


def read_regular_file(path: Path | str, max_bytes: int, dir_fd: int | None = None) -> tuple[bytes, os.stat_result]:
    """``read_regular``, and the file's status once read (its owner, its last change) from the same descriptor."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError as error:
        raise ValueError(f"cannot be read ({os.strerror(error.errno)})") from None
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise ValueError("is not a regular file")
        data = handle.read(max_bytes + 1)
        info = os.fstat(handle.fileno())
    if len(data) > max_bytes:
        raise ValueError(f"is larger than {max_bytes / 2**20:g} MiB")
    return data, info


def wanted(name: str) -> bool:
    """A file grading needs: a notebook at the top level (any printable name) or one of nbgrader's two files."""
    notebook = (
        name.endswith(".ipynb")
        and "/" not in name
        and "\\" not in name
        and not name.startswith(".")
        and name.isprintable()
        and len(name) <= 200
    )
    return notebook or name in KEPT


def write_submission(target: Path, files: dict[str, bytes], timestamp: float | str | None = None) -> None:
    """Replace ``target`` with exactly ``files`` (names checked), written by us, as regular files, and the
    submission time in nbgrader's ``timestamp.txt`` (a number: seconds since the epoch; a string: as is)."""
    if target.is_symlink():
        target.unlink()
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for name, data in files.items():
        if not wanted(name):
            continue
        (target / name).write_bytes(data)
    if isinstance(timestamp, str):
        (target / "timestamp.txt").write_text(timestamp)
    else:
        moment = dt.datetime.fromtimestamp(timestamp or time.time(), dt.timezone.utc)
        (target / "timestamp.txt").write_text(moment.strftime("%Y-%m-%d %H:%M:%S.%f %Z"))


def take_folder(folder: Path, max_mb: float = MAX_FILE_MB) -> tuple[dict[str, bytes], list[str], float]:
    """The files of one submitted folder that grading needs, safely read; notes on what was left; newest mtime."""
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        files, notes, read = take_open_folder(descriptor, max_mb)
    finally:
        os.close(descriptor)
    return files, notes, max((info.st_mtime for info in read), default=0.0)


def take_open_folder(
    folder: int, max_mb: float = MAX_FILE_MB, owner: int | None = None
) -> tuple[dict[str, bytes], list[str], list[os.stat_result]]:
    """``take_folder`` on an open folder (a descriptor: no name on the way is looked up again), with each file's
    status once read. With ``owner`` (a uid), a file another account owns is left out and noted."""
    files: dict[str, bytes] = {}
    notes: list[str] = []
    read: list[os.stat_result] = []
    left: list[str] = []
    with os.scandir(folder) as entries:
        names = sorted(entry.name for entry in entries)[:1000]
    for name in names:
        if name in (".ipynb_checkpoints", "__pycache__", "timestamp.txt"):  # nbgrader's own: replaced by ours
            continue
        if not wanted(name):
            left.append(name)
            continue
        try:
            data, info = read_regular_file(name, int(max_mb * 2**20), dir_fd=folder)
        except ValueError as error:
            notes.append(f"`{printable(name)}` {error}: left out")
            continue
        if owner is not None and info.st_uid != owner:
            notes.append(
                f"`{printable(name)}` belongs to account `{account_name(info.st_uid)}`, not to the account that "
                f"handed it in (`{account_name(owner)}`): left out"
            )
            continue
        files[name] = data
        read.append(info)
    if left:
        shown = ", ".join(f"`{printable(n)[:40]}`" for n in left[:5]) + (
            f" and {len(left) - 5} more" if len(left) > 5 else ""
        )
        notes.append(f"files not needed for grading were left out: {shown}")
    return files, notes, read


def collected_timestamp(folder: Path) -> str | None:
    """The submission time the collection wrote (``timestamp.txt`` in a ``submitted/`` folder)."""
    try:
        text = read_regular(folder / "timestamp.txt", 200).decode("utf-8").strip()
    except (ValueError, UnicodeDecodeError):
        return None
    return text if text.isprintable() else None


def kept_notes(notes: list[str]) -> list[str]:
    """The notes of one student's collection as they are kept: the first MAX_NOTES, each cut short, and a line
    for how many more there were."""
    kept = [printable(note)[:300] for note in notes[:MAX_NOTES]]
    more = len(notes) - MAX_NOTES
    if more > 0:
        kept.append(
            ngettext(
                "{n:,} more note of this collection was left out",
                "{n:,} more notes of this collection were left out",
                more,
            ).format(n=more)
        )
    return kept
