"""Collecting submissions: from nbgrader's exchange, an LMS zip, or a folder, into ``submitted/``.

Everything a student hands in is untrusted, including its names. Whatever the source:

* only **regular files** are taken, read without following a symbolic link (``O_NOFOLLOW``), and only
  those grading needs: the assignment's notebooks (top level, ``*.ipynb``), ``timestamp.txt`` and
  nbgrader's ``submission_secret.txt``; everything else is left behind and named in a note;
* every file has a **size cap**, and a zip has caps on its members' count and unpacked size; a zip
  inside a zip is not unpacked (one level only);
* a **student id** becomes a safe folder name (letters, digits, ``._-@+``, at most 64 characters, never
  ``.`` or ``..``); when it had to change, the original is kept in ``ids.json`` and shown in the CSV;
* one bad submission (a broken archive, a dangling link, an unreadable file) is a note for that
  student; the others are collected all the same.

Step 1 of the pipeline. The low-level functions work on a :class:`Collection`; ``collect_exchange``,
``collect_zip`` and ``collect_folder`` (at the end) do it for a course (``course.py``).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import re
import shutil
import stat
import time
import sys
import zipfile
from pathlib import Path
from typing import Iterable

from .course import Course, expected_notebooks, setup

MAX_FILE_MB = 20  # a bigger notebook is refused (stored outputs are cleared before grading anyway)
MAX_ZIP_MEMBERS = 20_000
MAX_ZIP_TOTAL_MB = 2_000
# nbgrader's secret of an exchange submission (its feedback is released under it). A student's own
# timestamp.txt is never taken: the time of a submission is the collection's (exchange folder name,
# zip entry date, file time), written by us.
KEPT = ("submission_secret.txt",)
SAFE = re.compile(r"[^A-Za-z0-9._@+-]")


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


def read_regular(path: Path, max_bytes: int) -> bytes:
    """The bytes of a regular file, never through a symbolic link; ValueError when it is not one or too big."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        raise ValueError(f"cannot be read ({os.strerror(error.errno)})") from None
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("is not a regular file")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValueError(f"is larger than {max_bytes / 2**20:g} MiB")
    return data


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
    files: dict[str, bytes] = {}
    notes: list[str] = []
    newest = 0.0
    left: list[str] = []
    with os.scandir(folder) as entries:
        for entry in sorted(entries, key=lambda e: e.name)[:1000]:
            name = entry.name
            if name in (".ipynb_checkpoints", "__pycache__", "timestamp.txt"):  # nbgrader's own: replaced by ours
                continue
            if not wanted(name):
                left.append(name)
                continue
            try:
                files[name] = read_regular(folder / name, int(max_mb * 2**20))
                newest = max(newest, entry.stat(follow_symlinks=False).st_mtime)
            except ValueError as error:
                notes.append(f"`{printable(name)}` {error}: left out")
    if left:
        shown = ", ".join(f"`{printable(n)[:40]}`" for n in left[:5]) + (
            f" and {len(left) - 5} more" if len(left) > 5 else ""
        )
        notes.append(f"files not needed for grading were left out: {shown}")
    return files, notes, newest


def collected_timestamp(folder: Path) -> str | None:
    """The submission time the collection wrote (``timestamp.txt`` in a ``submitted/`` folder)."""
    try:
        text = read_regular(folder / "timestamp.txt", 200).decode("utf-8").strip()
    except (ValueError, UnicodeDecodeError):
        return None
    return text if text.isprintable() else None


class Collection:
    """Where collected submissions go, and the record of original student ids and collection notes."""

    def __init__(self, submitted: Path, assignment: str, record: Path):
        self.submitted, self.assignment, self.record = Path(submitted), assignment, Path(record)
        self.data = json.loads(self.record.read_text()) if self.record.exists() else {"ids": {}, "notes": {}}

    def add(self, raw_id: str, files: dict[str, bytes], notes: list[str], timestamp: float | str | None = None) -> str:
        raw_id = str(raw_id)[:500]
        student = safe_id(raw_id)
        owners = self.data.setdefault("owners", {})  # safe id -> the raw id it stands for, every one
        if owners.get(student, raw_id) != raw_id:  # the name is another student's: never overwrite it
            taken = student
            student = f"{safe_id(raw_id)[:48]}-clash-{hashlib.sha256(os.urandom(16)).hexdigest()[:6]}"
            notes = [
                f"the id `{printable(raw_id)[:80]}` gives the folder name `{taken}`, which already belongs to "
                f"`{printable(owners[taken])[:80]}`: stored as `{student}`; check who is who",
                *notes,
            ]
        owners[student] = raw_id
        if student != raw_id:
            self.data["ids"][student] = raw_id
            notes = [f"the student id `{printable(raw_id)[:80]}` was stored as `{student}`", *notes]
        write_submission(self.submitted / student / self.assignment, files, timestamp)
        self.data["notes"].setdefault(self.assignment, {})[student] = [printable(n)[:300] for n in notes]
        return student

    def fail(self, raw_id: str, note: str) -> None:
        self.data["notes"].setdefault(self.assignment, {})[safe_id(raw_id)] = [printable(note)[:300]]

    def save(self) -> None:
        self.record.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.record.with_suffix(".tmp")
        temporary.write_text(json.dumps(self.data, indent=1))
        os.replace(temporary, self.record)


def from_folder(collection: Collection, folder: Path) -> list[str]:
    """``<folder>/<student>/<assignment>/*.ipynb`` (e.g. copied from a shared drive)."""
    students = []
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        try:
            if not entry.is_dir(follow_symlinks=False):
                continue
            source = Path(entry.path) / collection.assignment
            if source.is_symlink() or not source.is_dir():
                continue
            files, notes, newest = take_folder(source)
            students.append(collection.add(entry.name, files, notes, newest or None))
        except Exception as error:  # noqa: BLE001 - one student's problem, never the class's
            collection.fail(entry.name, f"could not be collected ({type(error).__name__}: {error})")
    collection.save()
    return students


def from_exchange(collection: Collection, inbound: Path) -> list[str]:
    """The newest submission of every student in nbgrader's exchange (``<student>+<assignment>+<time>+<random>``)."""
    latest: dict[str, tuple[str, Path]] = {}
    if not inbound.is_dir():
        raise FileNotFoundError(f"no exchange inbound folder at {inbound}")
    for entry in os.scandir(inbound):
        parts = entry.name.rsplit("+", 3)
        if len(parts) < 3 or parts[1] != collection.assignment or not entry.is_dir(follow_symlinks=False):
            continue
        student, stamp = parts[0], parts[2]
        if student not in latest or stamp > latest[student][0]:
            latest[student] = (stamp, Path(entry.path))
    students = []
    for student, (stamp, folder) in sorted(latest.items()):
        try:
            files, notes, _ = take_folder(folder)
            students.append(collection.add(student, files, notes, stamp if stamp.isprintable() else None))
        except Exception as error:  # noqa: BLE001
            collection.fail(student, f"could not be collected ({type(error).__name__}: {error})")
    collection.save()
    return students


def default_zip_regexp(assignment: str) -> str:
    """``<student>_<anything>_<assignment>[suffix].ipynb``: Canvas and Moodle downloads, for example
    ``doejane_12345_678_00_start_here.ipynb`` or ``doejane_00_start_here-1.ipynb``."""
    return rf"(?:.*/)?(?P<student_id>[^/_]+)_(?:[^/]*_)?(?P<file_id>{re.escape(assignment)}[^/]*\.ipynb)$"


def from_zips(
    collection: Collection, archives: Iterable[Path], regexp: str | None = None, notebook_names: list[str] | None = None
) -> tuple[list[str], list[str]]:
    """An LMS download: zip files (one level, capped) or loose notebooks named by student.

    A file whose name says ``<student>_..._<assignment>....ipynb`` is that student's notebook (renamed to
    the assignment's notebook name when there is only one). Returns (students, notes on the archives).
    """
    pattern = re.compile(regexp or default_zip_regexp(collection.assignment))
    found: dict[str, dict[str, bytes]] = {}
    when: dict[str, float] = {}
    general: list[str] = []
    cap = MAX_FILE_MB * 2**20

    def take(name: str, read, moment: float | None = None) -> None:
        match = pattern.match(name)
        if not match:
            return
        student = match.group("student_id")
        file_name = Path(match.group("file_id")).name  # a wrong name is noted and fixed at inspection
        data = read()
        if data is None:
            return
        found.setdefault(student, {})[file_name] = data
        if moment:
            when[student] = max(when.get(student, 0.0), moment)

    for archive in archives:
        archive = Path(archive)
        try:
            if archive.suffix.lower() != ".zip":
                take(archive.name, lambda archive=archive: read_regular(archive, cap), archive.lstat().st_mtime)
                continue
            with zipfile.ZipFile(archive) as bundle:
                members = bundle.infolist()
                if len(members) > MAX_ZIP_MEMBERS:
                    general.append(
                        f"{archive.name}: {len(members)} files, over the limit of {MAX_ZIP_MEMBERS}: not read"
                    )
                    continue
                total = 0
                for member in members:
                    if member.is_dir() or member.filename.lower().endswith(".zip"):
                        continue
                    if member.file_size > cap:
                        general.append(
                            f"{archive.name}: `{printable(member.filename)[:80]}` is larger than "
                            f"{MAX_FILE_MB} MiB: skipped"
                        )
                        continue
                    total += member.file_size
                    if total > MAX_ZIP_TOTAL_MB * 2**20:
                        general.append(
                            f"{archive.name}: more than {MAX_ZIP_TOTAL_MB} MiB unpacked: the rest was skipped"
                        )
                        break

                    def read(member=member, archive=archive, bundle=bundle):
                        try:
                            with bundle.open(member) as handle:
                                data = handle.read(cap + 1)
                        except Exception as error:  # noqa: BLE001 - a damaged member
                            general.append(
                                f"{archive.name}: `{printable(member.filename)[:80]}` could not be "
                                f"unpacked ({type(error).__name__})"
                            )
                            return None
                        return data if len(data) <= cap else None

                    moment = None
                    with contextlib.suppress(ValueError, OverflowError):
                        moment = dt.datetime(*member.date_time, tzinfo=dt.timezone.utc).timestamp()
                    take(member.filename, read, moment)
        except Exception as error:  # noqa: BLE001 - a damaged archive: a note, the other archives still count
            general.append(f"{archive.name} could not be read ({type(error).__name__}: {printable(str(error))[:120]})")
    students = [collection.add(student, files, [], when.get(student)) for student, files in sorted(found.items())]
    collection.save()
    return students, general


# ---------------------------------------------------------------------------------------------
# Into a course's ``submitted/`` folder
# ---------------------------------------------------------------------------------------------


def collection(course: Course, assignment: str) -> Collection:
    return Collection(course.path("submitted"), assignment, course.runtime_dir("results") / "collection.json")


def collect_exchange(course: Course, assignment: str) -> list[str]:
    """The latest submission of every student in the exchange, into ``submitted/``."""
    setup(course, assignment)
    exchange = course.exchange or Path("/srv/nbgrader/exchange")
    return from_exchange(collection(course, assignment), exchange / course.course_id / "inbound")


def collect_zip(course: Course, assignment: str, archives: Iterable[Path], regexp: str | None = None) -> list[str]:
    """An LMS download (zip files, or loose files named by student), one level, with caps."""
    setup(course, assignment)
    students, notes = from_zips(
        collection(course, assignment), archives, regexp, expected_notebooks(course, assignment)
    )
    for note in notes:
        print(f"note: {printable(note)}", file=sys.stderr)
    return students


def collect_folder(course: Course, assignment: str, folder: Path) -> list[str]:
    """Collect ``<folder>/<student>/<assignment>/...`` (e.g. copied from a shared drive)."""
    return from_folder(collection(course, assignment), Path(folder))


def folder_layout_hint(assignment: str, folder: Path) -> str:
    """Why a folder gave nothing to collect: the layout expected, and what is there instead (names only)."""
    folder = Path(folder)
    expected = f"expected {folder}/<student>/{assignment}/*.ipynb"
    if not folder.is_dir():
        return f"{folder} is not a folder; {expected}"
    found = []
    for entry in sorted(os.scandir(folder), key=lambda e: e.name)[:200]:
        if entry.is_dir(follow_symlinks=False):
            inside = sorted(e.name for e in os.scandir(entry.path))[:3]
            found.append(f"{printable(entry.name)[:40]}/{{{', '.join(printable(n)[:40] for n in inside)}}}")
        else:
            found.append(printable(entry.name)[:40])
    shown = "; ".join(found[:4]) + (f"; and {len(found) - 4} more" if len(found) > 4 else "")
    return f"{expected}, found {shown or 'nothing'}"


def collection_notes(course: Course, assignment: str) -> dict[str, list[str]]:
    return collection(course, assignment).data.get("notes", {}).get(assignment, {})


def original_ids(course: Course) -> dict[str, str]:
    record = course.root / course.runtime / "results" / "collection.json"
    return json.loads(record.read_text()).get("ids", {}) if record.exists() else {}
