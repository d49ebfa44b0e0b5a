"""Collecting submissions: from nbgrader's exchange, an LMS zip, or a folder, into ``submitted/``.

Everything a student hands in is untrusted, including its names. Whatever the source (the files of one
submission are read by ``submission_files.py``):

* only **regular files** are taken, read without following a symbolic link (``O_NOFOLLOW``), and only
  those grading needs: the assignment's notebooks (top level, ``*.ipynb``), ``timestamp.txt`` and
  nbgrader's ``submission_secret.txt``; everything else is left behind and named in a note;
* every file has a **size cap**, and a zip has caps on its members' count and unpacked size; a zip
  inside a zip is not unpacked (one level only);
* a **student id** becomes a safe folder name (letters, digits, ``._-@+``, at most 64 characters, never
  ``.`` or ``..``); when it had to change, the original is kept in ``ids.json`` and shown in the CSV;
* one bad submission (a broken archive, a dangling link, an unreadable file) is a note for that
  student; the others are collected all the same.

From nbgrader's exchange, who handed in and when come from what the student cannot write, never from the
folder's name or its ``timestamp.txt`` (``from_exchange``, ``exchange.py``): the student is the Unix account
that owns the folder, and the time is the folder's last change on the exchange's disk. Only there is
nbgrader's ``submission_secret.txt`` kept, so feedback goes back through the exchange to that account alone.

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
import stat
import sys
import zipfile
from pathlib import Path
from typing import Iterable

from .course import Course, expected_notebooks, setup
from .exchange import Accounts, account_name, open_inbound
from .submission_files import (
    MAX_FILE_MB,
    SECRET,
    kept_notes,
    printable,
    read_regular,
    safe_id,
    take_folder,
    take_open_folder,
    write_submission,
)

MAX_ZIP_MEMBERS = 20_000
MAX_ZIP_TOTAL_MB = 2_000


class Collection:
    """Where collected submissions go, and the record of original student ids and collection notes."""

    def __init__(self, submitted: Path, assignment: str, record: Path):
        self.submitted, self.assignment, self.record = Path(submitted), assignment, Path(record)
        self.data = json.loads(self.record.read_text()) if self.record.exists() else {"ids": {}, "notes": {}}

    def add(
        self,
        raw_id: str,
        files: dict[str, bytes],
        notes: list[str],
        timestamp: float | str | None = None,
        keep_secret: bool = False,
    ) -> str:
        """Store one student's submission (``keep_secret``: nbgrader's submission secret too, from the exchange)."""
        raw_id = str(raw_id)[:500]
        if not keep_secret:
            files = {name: data for name, data in files.items() if name != SECRET}
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
        self.data["notes"].setdefault(self.assignment, {})[student] = kept_notes(notes)
        return student

    def fail(self, raw_id: str, *notes: str) -> None:
        """Notes for a student of whom nothing was collected (an earlier collection's files stay)."""
        self.data["notes"].setdefault(self.assignment, {})[safe_id(raw_id)] = kept_notes(notes)

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


def from_exchange(collection: Collection, inbound: int, accounts: Accounts | None = None) -> list[str]:
    """The latest submission of every student in nbgrader's exchange, each known by the account that owns it.

    ``inbound``: a descriptor of the course's inbound folder (``exchange.open_inbound``). A submission there is
    a folder ``<student>+<assignment>+<time>+<random>``, named, timed and filled by the student. So:

    * **who**: the Unix account that owns the folder (``accounts`` maps it to a student id: by default the
      account's name). A folder whose name is not its owner's, or whose owner is not on the roster, is refused
      with a note in its owner's record: it never takes a classmate's place. A file in it that another account
      owns (a hard link to someone else's work) is left out, with a note;
    * **when**: the folder's last change on the exchange's disk, its own or that of a file in it (``st_ctime``):
      the kernel sets it to the clock at every write, rename or change of mode, and no call takes it back, so a
      student can only move it later (``utime`` sets the modification time, which is not read here);
    * **which**: an account's folder changed last.
    """
    accounts = accounts or Accounts()
    candidates: dict[str, list[tuple[float, str, int]]] = {}  # student -> (last change, folder name, owner uid)
    refused: dict[str, list[str]] = {}  # student id, or account off the roster -> notes on folders not collected
    for name in sorted(os.listdir(inbound)):
        parts = name.rsplit("+", 3)
        if len(parts) < 3 or parts[1] != collection.assignment:
            continue
        try:
            info = os.stat(name, dir_fd=inbound, follow_symlinks=False)
            account = account_name(info.st_uid)
            student = accounts.student(account)
            shown = f"`{printable(name)[:120]}`"
            if student is None:
                refused.setdefault(account, []).append(
                    f"the exchange folder {shown} belongs to account `{account}`, which is not on the course's "
                    f"roster ({accounts.source}): not collected; add the account there and collect again"
                )
            elif parts[0] not in (account, student):
                refused.setdefault(student, []).append(
                    f"the exchange folder {shown} names `{printable(parts[0])[:80]}` but belongs to account "
                    f"`{account}`: not collected (a submission counts only from its owner's own folder)"
                )
            elif not stat.S_ISDIR(info.st_mode):
                refused.setdefault(student, []).append(f"the exchange entry {shown} is not a folder: not collected")
            else:
                candidates.setdefault(student, []).append((last_change(inbound, name, info.st_uid), name, info.st_uid))
        except (OSError, ValueError):  # taken away, or changed owner, while it was looked at: not collected
            continue
    students = []
    for student in sorted(set(candidates) | set(refused)):
        notes = refused.get(student, [])
        try:
            if student not in candidates:
                collection.fail(student, *notes)
                continue
            changed, name, owner = max(candidates[student])
            files, taken, changed = take_submission(inbound, name, owner, changed)
            students.append(collection.add(student, files, notes + taken, changed, keep_secret=True))
        except Exception as error:  # noqa: BLE001 - one student's problem, never the class's
            collection.fail(student, *notes, f"could not be collected ({type(error).__name__}: {error})")
    collection.save()
    return students


def open_submission(inbound: int, name: str, owner: int) -> int:
    """A descriptor of the submitted folder ``name``, never through a link, still owned by ``owner``."""
    folder = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=inbound)
    if os.fstat(folder).st_uid != owner:
        os.close(folder)
        raise ValueError("the folder changed owner while it was collected")
    return folder


def last_change(inbound: int, name: str, owner: int) -> float:
    """The last change (ctime) of a submitted folder or of anything in it."""
    folder = open_submission(inbound, name, owner)
    try:
        with os.scandir(folder) as entries:
            inside = [entry.stat(follow_symlinks=False).st_ctime for entry in entries]
        return max([os.fstat(folder).st_ctime, *inside])
    finally:
        os.close(folder)


def take_submission(inbound: int, name: str, owner: int, changed: float) -> tuple[dict[str, bytes], list[str], float]:
    """The files grading needs from one submitted folder, each owned by ``owner``; notes; its last change,
    ``changed`` or later if the folder or a file changed while it was read."""
    folder = open_submission(inbound, name, owner)
    try:
        files, notes, read = take_open_folder(folder, owner=owner)
        return files, notes, max([changed, os.fstat(folder).st_ctime, *(info.st_ctime for info in read)])
    finally:
        os.close(folder)


def default_zip_regexp(assignment: str) -> str:
    """``<student>_<anything>_<assignment>[suffix].ipynb``: Canvas and Moodle downloads, for example
    ``doejane_12345_678_00_start_here.ipynb`` or ``doejane_00_start_here-1.ipynb``; or the same start as a
    folder, the file named ``<assignment>[suffix].ipynb`` in it or below (Moodle's download in folders, its
    default: ``Jane Doe_4711_assignsubmission_file/00_start_here.ipynb``).

    The student is the start of the path, the part the LMS writes; never a name further down, which the
    student chose when uploading (a file ``alice_00_start_here.ipynb`` in Mallory's folder is not Alice's)."""
    in_folder = r"[^/]*/(?:[^/]+/)*"  # the rest of the LMS's folder name, then the student's own subfolders
    in_name = r"(?:[^/]*_)?"  # the rest of the LMS's part of the file name
    return rf"(?P<student_id>[^/_]+)_(?:{in_folder}|{in_name})(?P<file_id>{re.escape(assignment)}[^/]*\.ipynb)$"


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
    # Two entries that give one student the same notebook may be two people: Canvas names a student by their
    # name (two John Smiths are both "smithjohn"; a student may be allowed to rename themselves like a
    # classmate). Neither is collected: the later one would replace the other's work, and its date hers.
    entry_of: dict[tuple[str, str], str] = {}  # (student, notebook) -> the entry it came from
    ambiguous: dict[str, list[str]] = {}  # student -> notes

    def take(name: str, entry: str, read, moment: float | None = None) -> None:
        """``name``: what the rule reads (a path in the zip, a file's name); ``entry``: where it is, to say so."""
        match = pattern.match(name)
        if not match:
            return
        student = match.group("student_id")
        file_name = Path(match.group("file_id")).name  # a wrong name is noted and fixed at inspection
        first = entry_of.setdefault((student, file_name), entry)
        if first != entry:
            ambiguous.setdefault(student, []).append(
                f"the download holds two files that give `{printable(student)[:80]}` the notebook `{file_name}`, "
                f"`{printable(first)[:120]}` and `{printable(entry)[:120]}`: neither was collected, since "
                "they may be two people of one name; collect with a --regexp whose student id includes the LMS's "
                "user id (the number after the name)"
            )
            return
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
                take(
                    archive.name,
                    str(archive),
                    lambda archive=archive: read_regular(archive, cap),
                    archive.lstat().st_mtime,
                )
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
                    take(member.filename, f"{archive.name}/{member.filename}", read, moment)
        except Exception as error:  # noqa: BLE001 - a damaged archive: a note, the other archives still count
            general.append(f"{archive.name} could not be read ({type(error).__name__}: {printable(str(error))[:120]})")
    for student, notes in sorted(ambiguous.items()):
        collection.fail(student, *notes)
    students = [
        collection.add(student, files, [], when.get(student))
        for student, files in sorted(found.items())
        if student not in ambiguous
    ]
    collection.save()
    return students, general


# ---------------------------------------------------------------------------------------------
# Into a course's ``submitted/`` folder
# ---------------------------------------------------------------------------------------------


def collection(course: Course, assignment: str) -> Collection:
    return Collection(course.path("submitted"), assignment, course.runtime_dir("results") / "collection.json")


def collect_exchange(course: Course, assignment: str) -> list[str]:
    """The latest submission of every student in the course's exchange (``course.exchange_location``), into
    ``submitted/``; the roster of accounts is ``class/accounts.csv`` when there is one (``exchange.Accounts``).
    ExchangeProblem (one line, what to do) when there is no inbound folder, or not the course's own."""
    inbound = open_inbound(course.exchange_root / course.course_id, course.exchange_location)
    try:
        accounts = Accounts.read(course.runtime_root / "accounts.csv")
        setup(course, assignment)
        return from_exchange(collection(course, assignment), inbound, accounts)
    finally:
        os.close(inbound)


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
    record = course.runtime_root / "results" / "collection.json"
    return json.loads(record.read_text()).get("ids", {}) if record.exists() else {}
