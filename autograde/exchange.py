"""nbgrader's exchange, on one machine or a shared filesystem: where it is, its folders' modes, and who is who.

**Where.** One folder for every command (release, collect, release feedback): the one given
(``--exchange``, ``EXCHANGE=``), or else ``Exchange.root`` as nbgrader's own commands find it: nbgrader's
configuration files (``/etc/jupyter``, the environment's ``etc/jupyter``, ``~/.jupyter``: the places
students' ``nbgrader fetch_assignment`` and ``submit`` read too), then the course's ``nbgrader_config.py``,
then nbgrader's default ``/usr/local/share/nbgrader/exchange``. Decided once per command (``Course``).

**Modes.** What nbgrader documents (the exchange root readable and writable by every user) plus the sticky
bit on the root and on ``inbound``, as on ``/tmp``: without it any student may rename the course's folder and
put up an ``outbound`` and ``inbound`` of their own, or rename a classmate's submission away. Folders that
release creates on the way to the root are 0755 (the grading command's umask of 077 would make them 0700,
and no student could reach the exchange).

**Who.** A submitted folder's name (``<student>+<assignment>+<time>+<random>``) and its ``timestamp.txt``
are written by the student and prove nothing: every user can write to ``inbound``. The Unix account that
owns the folder is what the student cannot forge (only root can give a file away). The account is the
student id, as nbgrader assumes, unless the course's roster ``class/accounts.csv`` says otherwise.
"""

from __future__ import annotations

import csv
import dataclasses
import os
import pwd
import stat
from pathlib import Path

ROOT_MODE = 0o1777  # every user reads and writes; only an entry's owner renames or deletes it (sticky)
PARENT_MODE = 0o755  # folders made on the way to the root: every user passes through
INBOUND_MODE = 0o3733  # nbgrader's 2733 (others write and enter, never list; setgid) plus sticky
DEFAULT_ORIGIN = "nbgrader's default"


class ExchangeProblem(Exception):
    """The exchange cannot be used as it is: said in one line, with what to do."""


@dataclasses.dataclass(frozen=True)
class ExchangeLocation:
    root: Path
    origin: str  # where the location was set, for messages: a file, the command line, nbgrader's default

    def describe(self) -> str:
        return f"{self.root} ({self.origin})"


def configured_exchange(course_config: Path) -> ExchangeLocation:
    """``Exchange.root`` as nbgrader's own commands resolve it: its configuration files in Jupyter's config
    path (``NbGrader.load_config_file``, the code nbgrader's commands and its Assignments tab run), then the
    course's ``nbgrader_config.py`` (nbgrader reads it last, from the course root), then nbgrader's default.
    The configuration in the working folder is left out: where a command was started says nothing."""
    from nbgrader.apps.baseapp import NbGrader
    from nbgrader.exchange.default.exchange import Exchange
    from traitlets.config.loader import PyFileConfigLoader

    app = NbGrader(log_level="CRITICAL")  # its warning "No nbgrader_config.py file found" is not news here
    app.load_cwd_config = False
    app.load_config_file()
    config = app.config
    course = PyFileConfigLoader(course_config.name, path=str(course_config.parent)).load_config()
    if "root" in course.get("Exchange", {}):
        origin = f"set in {course_config}"
    elif "root" in config.get("Exchange", {}):
        origin = "set in " + " or ".join(app.loaded_config_files)
    else:
        origin = DEFAULT_ORIGIN
    config.merge(course)
    return ExchangeLocation(Path(os.path.abspath(Exchange(config=config).root)), origin)


# ---------------------------------------------------------------------------------------------
# The folders, before and after a release
# ---------------------------------------------------------------------------------------------


def prepare(location: ExchangeLocation) -> list[str]:
    """Make the exchange root (and the folders on the way) with the modes every student needs, before
    nbgrader releases into it. Returns warnings about folders that are not ours to fix."""
    root = location.root
    missing = [folder for folder in [root, *root.parents] if not os.path.lexists(folder)]
    for folder in reversed(missing):  # outermost first
        try:
            os.mkdir(folder)
            os.chmod(folder, ROOT_MODE if folder == root else PARENT_MODE)  # chmod: the umask is 077 here
        except OSError as error:
            raise ExchangeProblem(
                f"cannot create the exchange folder {root} ({os.strerror(error.errno)} at {folder}); the exchange is "
                f"{location.describe()}: ask an administrator for `sudo mkdir -p {root} && sudo chmod 1777 {root}`, "
                "or name another with EXCHANGE=/path (make) or --exchange /path"
            ) from None
    if not root.is_dir():
        raise ExchangeProblem(f"the exchange {location.describe()} is not a folder")
    warnings = []
    info = root.stat()
    if info.st_mode & ROOT_MODE != ROOT_MODE:
        if info.st_uid == os.geteuid():
            os.chmod(root, ROOT_MODE | stat.S_IMODE(info.st_mode))
        else:
            warnings.append(
                f"the exchange {root} is mode {stat.S_IMODE(info.st_mode):o}, not 1777: without the sticky bit any "
                f"student can rename the course's folder in it and put up their own; ask its owner for `chmod 1777 {root}`"
            )
    for folder in root.parents:
        if not folder.stat().st_mode & stat.S_IXOTH:
            warnings.append(
                f"students cannot reach the exchange {root}: {folder} is mode {stat.S_IMODE(folder.stat().st_mode):o}, "
                f"closed to other users (`chmod o+x {folder}` opens the way without showing what is in it)"
            )
    return warnings


def close_inbound(course_folder: Path) -> None:
    """Add the sticky bit to the course's ``inbound`` (nbgrader makes it 2733): a student who learns the name of
    a classmate's submission still cannot rename or delete it. Only the course's owner can, and only once."""
    inbound = course_folder / "inbound"
    info = inbound.lstat()
    if stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) != INBOUND_MODE:
        os.chmod(inbound, INBOUND_MODE)


def open_inbound(course_folder: Path, location: ExchangeLocation) -> int:
    """A descriptor of the course's ``inbound``, after checking that it is the course's own: a real folder,
    owned by this account (release made it), like the course folder around it. Every submission is then
    opened relative to it, so no name in it is followed elsewhere."""
    inbound = course_folder / "inbound"
    if not inbound.is_dir():
        raise ExchangeProblem(
            f"no submissions folder at {inbound}: nothing was released to the exchange {location.describe()}; "
            "release first (make release ASSIGNMENT=...), or name the exchange your students submit to with "
            "EXCHANGE=/path (make) or --exchange /path"
        )
    for folder in (course_folder, inbound):
        info = folder.lstat()
        if stat.S_ISLNK(info.st_mode) or info.st_uid != os.geteuid():
            raise ExchangeProblem(
                f"{folder} belongs to {account_name(info.st_uid)}, not to you ({account_name(os.geteuid())}), "
                "who released the course there: someone else made it or replaced it; nothing was collected"
            )
    return os.open(inbound, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)


# ---------------------------------------------------------------------------------------------
# Who is who: Unix accounts and student ids
# ---------------------------------------------------------------------------------------------


def account_name(uid: int) -> str:
    """The name of a Unix account, or ``uid-<n>`` for a number no account has."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid-{uid}"


@dataclasses.dataclass
class Accounts:
    """Which Unix account is which student. Without a roster every account is the student of its own name
    (nbgrader's assumption); with one (``class/accounts.csv``, columns ``account`` and ``student_id``, the
    latter empty for the same name) only the accounts listed are students, under the id it gives."""

    students: dict[str, str] | None = None  # account -> student id; None: no roster
    source: str = ""

    @classmethod
    def read(cls, path: Path) -> Accounts:
        if not path.is_file():
            return cls()
        students: dict[str, str] = {}
        with open(path, newline="", encoding="utf-8-sig") as handle:
            rows = csv.DictReader(handle)
            if "account" not in (rows.fieldnames or []):
                raise ExchangeProblem(f"{path} needs a header line with the columns account,student_id")
            for row in rows:
                account = (row.get("account") or "").strip()
                if account:
                    students[account] = (row.get("student_id") or "").strip() or account
        taken: dict[str, str] = {}
        for account, student in students.items():
            if taken.setdefault(student, account) != account:
                raise ExchangeProblem(f"{path} gives the student id {student} to both {taken[student]} and {account}")
        return cls(students, str(path))

    def student(self, account: str) -> str | None:
        """The student id of an account (None: the account is not on the roster)."""
        return account if self.students is None else self.students.get(account)
