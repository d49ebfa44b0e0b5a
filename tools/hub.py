"""A class on one machine: the course's JupyterHub (``make hub``) and its roster (``make hub-roster``).

Run as root (JupyterHub starts each person's server as that person's Unix account):

    python tools/hub.py start  --instructor lee [--students GROUP] [--exchange DIR] [--state DIR] [--port 8000]
                               [--lti lti.json]
    python tools/hub.py roster --instructor lee [--students GROUP] [--state DIR] ROSTER.csv [--passwords FILE]

``start`` makes what the class needs, then runs JupyterHub (hub/jupyterhub_config.py) in the foreground:

* nbgrader's exchange folder, writable by everybody with the sticky bit (nbgrader's documented set-up;
  nbgrader itself makes the course's ``inbound`` folder write-only for students when the instructor releases);
* the instructor's course, a copy of this repository in their home (``~/heads-and-masks``), theirs alone
  (home 0700): the gradebook, the grading key and every submission stay there;
* the hub's own state (its database, cookie secret) in a folder only root reads.

With ``--lti lti.json`` (the LMS's settings, hub/lms_login.py) students arrive from the LMS by LTI 1.3
instead of with a password.

``roster`` adds the students of a CSV in nbgrader's format (a column ``id``; ``first_name``, ``last_name``,
``email``, ``lms_user_id`` if present): a Unix account for each new one (home 0700, a random password
written to the passwords file, root's alone), every one in the students' group (who may log in), and the same
CSV into the instructor's gradebook (``nbgrader db student import``, as the instructor). Each
``lms_user_id`` (the person's id in the LMS) is used twice: by the LMS exports (docs/instructors.md), and by
the hub's map of LMS users (``lms_users.csv`` in its state folder), read at every LTI launch: an LMS id keeps
the account it was first given.
"""

from __future__ import annotations

import argparse
import csv
import grp
import os
import pwd
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HUB = REPO / "hub"
sys.path.insert(0, str(HUB))
import lms_users  # noqa: E402 (the hub's own module: lti.json and the map of LMS users)

ENV = Path(sys.prefix)  # the course's environment: every server of the hub runs in it, as it is
COURSE_FOLDER = "heads-and-masks"  # the instructor's course, in their home
DEFAULT_EXCHANGE = Path("/srv/nbgrader/exchange")  # nbgrader's default
DEFAULT_STATE = Path("/var/lib/heads-and-masks-hub")
DEFAULT_STUDENTS = "heads-and-masks-students"
# what Debian's useradd accepts without --badname
ACCOUNT_NAME = re.compile(r"[a-z_][a-z0-9_-]{0,31}")


class HubError(Exception):
    """A set-up the hub cannot run with; the message says what to do."""


def require_root() -> None:
    if os.geteuid() != 0:
        raise HubError(
            "The hub must run as root: it starts each person's server as their own Unix account and checks "
            "passwords against the system's. Run it with sudo (sudo make hub INSTRUCTOR=...)."
        )


def account(name: str) -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        raise HubError(
            f"There is no Unix account named {name!r} on this machine. Create it first (sudo useradd -m {name}), "
            "then set its password (sudo passwd {name})."
        ) from None


def as_user(user: pwd.struct_passwd, command: list[str], **kwargs) -> subprocess.CompletedProcess:
    """``command`` run as ``user`` (their uid, gid and groups, their home), never as root."""

    def become() -> None:
        os.initgroups(user.pw_name, user.pw_gid)
        os.setgid(user.pw_gid)
        os.setuid(user.pw_uid)

    env = {
        "HOME": user.pw_dir,
        "USER": user.pw_name,
        "LOGNAME": user.pw_name,
        "PATH": f"{ENV / 'bin'}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
    }
    kwargs.setdefault("cwd", user.pw_dir)
    return subprocess.run(command, preexec_fn=become, env=env, check=True, **kwargs)


def make_exchange(exchange: Path) -> None:
    """nbgrader's exchange: a folder everybody may write in, where each keeps to their own (sticky bit)."""
    exchange.mkdir(parents=True, exist_ok=True)
    os.chmod(exchange, 0o1777)
    for parent in exchange.parents:  # every user's server must reach it
        if parent.stat().st_mode & 0o001 == 0:
            raise HubError(f"The exchange {exchange} is inside {parent}, which other users cannot enter.")


def private_home(user: pwd.struct_passwd) -> None:
    """A home only its owner enters: another student's work, the instructor's course and key are in homes."""
    os.chmod(user.pw_dir, 0o700)


def tracked_files() -> list[str]:
    listed = subprocess.run(
        ["git", "-c", "safe.directory=*", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout
    return [name for name in listed.decode().split("\0") if name and (REPO / name).is_file()]


def make_course(instructor: pwd.struct_passwd) -> Path:
    """The instructor's course: this repository's files, copied by the instructor into their home (once)."""
    course = Path(instructor.pw_dir) / COURSE_FOLDER
    private_home(instructor)
    if course.exists():
        return course
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as listing:
        listing.write("\n".join(tracked_files()) + "\n")
    try:
        os.chmod(listing.name, 0o644)
        # the instructor reads the repository and writes the copy: nothing in it is root's
        as_user(instructor, ["mkdir", "-p", str(course)])
        copy = 'tar -C "$1" -cf - -T "$2" | tar -C "$3" -xf -'
        as_user(instructor, ["sh", "-c", copy, "sh", str(REPO), listing.name, str(course)])
    finally:
        os.unlink(listing.name)
    return course


def start(args: argparse.Namespace) -> None:
    require_root()
    instructor = account(args.instructor)
    lti = lti_settings(args.lti) if args.lti else None  # before anything is made
    try:
        grp.getgrnam(args.students)
    except KeyError:
        subprocess.run(["groupadd", args.students], check=True)
    make_exchange(args.exchange)
    course = make_course(instructor)
    args.state.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(args.state, 0o700)
    proxy = HUB / "node_modules" / ".bin" / "configurable-http-proxy"
    if not proxy.exists():
        raise HubError(f"The proxy is not installed ({proxy}): run `make hub`, which installs it with npm ci.")
    os.environ.update(
        HUB_INSTRUCTOR=instructor.pw_name,
        HUB_STUDENTS=args.students,
        HUB_EXCHANGE=str(args.exchange),
        HUB_STATE=str(args.state),
        HUB_COURSE=str(course),
        HUB_PORT=str(args.port),
        HUB_PROXY=str(proxy),
    )
    if lti:
        os.environ["HUB_LTI"] = str(lti)
        print(f"Students arrive from the LMS: login initiation URL http://127.0.0.1:{args.port}/hub/lti13/oauth_login")
    print(f"The class's hub: http://127.0.0.1:{args.port} (instructor {instructor.pw_name}, course {course})")
    os.execv(
        str(ENV / "bin" / "jupyterhub"),
        ["jupyterhub", "-f", str(HUB / "jupyterhub_config.py")],
    )


def lti_settings(path: Path) -> Path:
    """lti.json, checked before the hub starts (the hub's configuration reads it again)."""
    try:
        lms_users.read_settings(path)
    except lms_users.SettingsError as error:
        raise HubError(str(error)) from None
    return path.resolve()


def read_roster(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as roster:
        rows = list(csv.DictReader(roster))
    if not rows or "id" not in rows[0]:
        raise HubError(f"{path}: a roster is a CSV with a header line and a column named id (nbgrader's format).")
    bad = [row["id"] for row in rows if not ACCOUNT_NAME.fullmatch(row["id"] or "")]
    if bad:
        raise HubError(
            f"{path}: these ids cannot be Unix account names: {', '.join(repr(b) for b in bad)}. "
            "Use lower-case letters, digits, - and _, starting with a letter, at most 32 characters."
        )
    return rows


def record_lms_users(rows: list[dict[str, str]], state: Path) -> None:
    """The roster's LMS user ids into the hub's map (``state/lms_users.csv``, root's), merged with earlier ones.

    An LMS id already given to one account is never moved to another (hub/lms_users.py).
    """
    path = state / "lms_users.csv"
    try:
        merged = lms_users.merge_lms_users(lms_users.read_lms_users(path), rows)
    except lms_users.SettingsError as error:
        raise HubError(f"{error} Nothing was changed.") from None
    lms_users.write_lms_users(path, merged)


def roster(args: argparse.Namespace) -> None:
    require_root()
    instructor = account(args.instructor)
    rows = read_roster(args.roster)
    # an existing account joins the class (usermod): never the instructor's or the system's
    refused = [
        (row["id"], why) for row in rows if (why := lms_users.not_a_students_account(row["id"], instructor.pw_name))
    ]
    if refused:
        raise HubError(
            f"{args.roster}: these ids cannot be students' accounts: "
            + "; ".join(f"{name!r} ({why})" for name, why in refused)
            + ". Give those students other ids in the roster. Nothing was changed."
        )
    try:
        grp.getgrnam(args.students)
    except KeyError:
        subprocess.run(["groupadd", args.students], check=True)
    if any("lms_user_id" in row for row in rows):
        record_lms_users(rows, args.state)
    new_passwords = []
    for row in rows:
        name = row["id"]
        try:
            pwd.getpwnam(name)
            subprocess.run(["usermod", "--append", "--groups", args.students, name], check=True)
        except KeyError:
            subprocess.run(
                ["useradd", "--create-home", "--shell", "/bin/bash", "--groups", args.students, name], check=True
            )
            password = secrets.token_urlsafe(12)
            subprocess.run(["chpasswd"], input=f"{name}:{password}\n", text=True, check=True)
            new_passwords.append((name, password))
        private_home(pwd.getpwnam(name))
    if new_passwords:
        args.passwords.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fresh = not args.passwords.exists()
        with open(os.open(args.passwords, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "w") as passwords:
            if fresh:
                passwords.write("id,password\n")
            passwords.writelines(f"{name},{password}\n" for name, password in new_passwords)
        os.chmod(args.passwords, 0o600)
    # the gradebook is the instructor's: they import the roster into it themselves
    course = make_course(instructor)
    with tempfile.TemporaryDirectory() as folder:
        os.chmod(folder, 0o755)
        copy = Path(folder) / "roster.csv"
        shutil.copy(args.roster, copy)
        os.chmod(copy, 0o644)
        as_user(
            instructor,
            [str(ENV / "bin" / "nbgrader"), "db", "student", "import", str(copy)],
            cwd=course / "autograde",
            stdout=subprocess.DEVNULL,
        )
    print(
        f"{len(rows)} students in the group {args.students} and in {instructor.pw_name}'s gradebook; "
        + (f"{len(new_passwords)} new accounts, their passwords in {args.passwords}." if new_passwords else "")
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("start", "roster"):
        command = commands.add_parser(name)
        command.add_argument("--instructor", required=True, help="the instructor's Unix account")
        command.add_argument("--students", default=DEFAULT_STUDENTS, help="the Unix group of the students")
    commands.choices["start"].add_argument("--exchange", type=Path, default=DEFAULT_EXCHANGE)
    for name in ("start", "roster"):
        commands.choices[name].add_argument("--state", type=Path, default=DEFAULT_STATE, help="the hub's own folder")
    commands.choices["start"].add_argument("--port", type=int, default=8000)
    commands.choices["start"].add_argument(
        "--lti", type=Path, help="the LMS's LTI 1.3 settings (a JSON file): students arrive from the LMS"
    )
    commands.choices["roster"].add_argument("roster", type=Path, help="CSV with a column id (nbgrader's format)")
    commands.choices["roster"].add_argument(
        "--passwords", type=Path, help="where new accounts' passwords go (default: passwords.csv in the state folder)"
    )
    args = parser.parse_args(argv)
    if args.command == "roster" and args.passwords is None:
        args.passwords = args.state / "passwords.csv"
    try:
        {"start": start, "roster": roster}[args.command](args)
    except HubError as error:
        print(error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
