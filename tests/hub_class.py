"""A class on this machine's JupyterHub, as `make hub` starts it: real Unix accounts, unique to each run.

Used by browser/test_browser_hub.py and test_hub_lti.py. The instructor is an ordinary account (no root, no sudo) made here; the
students come from a roster CSV through `make hub-roster` (Unix accounts with random passwords, the
students' group, the instructor's gradebook). `make hub` then runs the hub as root on 127.0.0.1, with an
exchange and a state folder of this run's own. ``close`` stops the hub (which stops every server), ends
any process left by the run's accounts, and removes the accounts, their homes, the group and the folders.
With ``lti`` (the LMS's settings, as lti.json holds them) each student of the roster has an LMS user id and
the hub is started with ``make hub LTI=...``: students arrive from the LMS, not with passwords.

Creating Unix accounts needs root: CI runs as root, and without it the test fails there (skips elsewhere).
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from course import IN_CI, REPO
from lab_process import free_port

COURSE = "heads-and-masks"  # the folder of the instructor's course in their home (tools/hub.py)


@dataclass(frozen=True)
class Person:
    name: str
    password: str
    lms_user_id: str = ""  # the person's id in the LMS (the roster's lms_user_id), with lti

    @property
    def account(self) -> pwd.struct_passwd:
        return pwd.getpwnam(self.name)

    @property
    def home(self) -> Path:
        return Path(self.account.pw_dir)


@dataclass
class HubClass:
    """An instructor and ``students`` students on a running hub; ``suffix`` makes every name of the run unique."""

    students: int = 3
    suffix: str = field(default_factory=lambda: secrets.token_hex(3))
    port: int = field(default_factory=free_port)
    folder: Path | None = None
    instructor: Person | None = None
    roster: list[Person] = field(default_factory=list)
    process: subprocess.Popen | None = None
    log: Path | None = None
    lti: dict | None = None

    @property
    def group(self) -> str:
        return f"hmg{self.suffix}"

    @property
    def student_names(self) -> list[str]:
        return [f"hms{self.suffix}{chr(ord('a') + i)}" for i in range(self.students)]

    @property
    def exchange(self) -> Path:
        return self.folder / "exchange"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def env(self) -> Path:
        """The class's environment (`make hub-env`): the Python every server runs."""
        return REPO / "hub" / "env"

    @property
    def course(self) -> Path:
        return self.instructor.home / COURSE

    def make(self, *arguments: str, **kwargs) -> subprocess.CompletedProcess:
        return subprocess.run(["make", "--no-print-directory", *arguments], cwd=REPO, **kwargs)

    def open(self) -> HubClass:
        # beside nothing of anyone's: a folder every account may enter, holding the exchange and the hub's state
        self.folder = Path(tempfile.mkdtemp(prefix=f"hm-hub-{self.suffix}-", dir="/var/tmp"))
        os.chmod(self.folder, 0o755)
        self.instructor = Person(f"hmi{self.suffix}", secrets.token_urlsafe(12))
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", self.instructor.name], check=True)
        subprocess.run(
            ["chpasswd"], input=f"{self.instructor.name}:{self.instructor.password}\n", text=True, check=True
        )
        self._add_roster()
        self._start()
        return self

    def _add_roster(self) -> None:
        names = self.student_names
        roster = self.folder / "roster.csv"
        lms_user_ids = {name: f"lms-{secrets.token_hex(8)}" for name in names} if self.lti else {}
        with open(roster, "w", newline="") as out:
            writer = csv.writer(out)
            writer.writerow(["id", "first_name", "last_name", "email"] + (["lms_user_id"] if self.lti else []))
            for i, name in enumerate(names):
                writer.writerow([name, f"Student{i}", "Tester", ""] + ([lms_user_ids[name]] if self.lti else []))
        passwords = self.folder / "passwords.csv"
        made = self.make(
            "hub-roster",
            f"INSTRUCTOR={self.instructor.name}",
            f"STUDENTS={self.group}",
            f"ROSTER={roster}",
            f"PASSWORDS={passwords}",
            f"HUB_STATE={self.folder / 'state'}",
            capture_output=True,
            text=True,
        )
        assert made.returncode == 0, made.stdout + made.stderr
        with open(passwords, newline="") as given:
            self.roster = [
                Person(row["id"], row["password"], lms_user_ids.get(row["id"], "")) for row in csv.DictReader(given)
            ]
        assert [p.name for p in self.roster] == names

    def _start(self) -> None:
        self.log = self.folder / "hub.log"
        env = dict(os.environ, HUB_API_PORT=str(free_port()), HUB_PROXY_API_PORT=str(free_port()))
        settings = []
        if self.lti:
            (self.folder / "lti.json").write_text(json.dumps(self.lti))
            settings = [f"LTI={self.folder / 'lti.json'}"]
        for name in ("HEADS_AND_MASKS_ENV", "VIRTUAL_ENV", "CONDA_PREFIX"):
            env.pop(name, None)
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(
                [
                    "make",
                    "--no-print-directory",
                    "hub",
                    f"INSTRUCTOR={self.instructor.name}",
                    f"STUDENTS={self.group}",
                    f"EXCHANGE={self.exchange}",
                    f"HUB_STATE={self.folder / 'state'}",
                    f"HUB_PORT={self.port}",
                    *settings,
                ],
                cwd=REPO,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        deadline = time.monotonic() + 120
        while True:
            assert self.process.poll() is None, f"make hub stopped:\n{self.log.read_text()[-4000:]}"
            try:
                with urllib.request.urlopen(f"{self.url}/hub/login", timeout=5) as page:  # noqa: S310 (loopback)
                    if page.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            assert time.monotonic() < deadline, f"the hub did not answer:\n{self.log.read_text()[-4000:]}"
            time.sleep(0.5)

    def people(self) -> list[Person]:
        return [self.instructor, *self.roster]

    def servers(self) -> dict[str, list[int]]:
        """{account: uids of the processes running its single-user server} (read from /proc)."""
        found: dict[str, list[int]] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            with contextlib.suppress(OSError):
                command = open(f"/proc/{entry}/cmdline", "rb").read().split(b"\0")
                if not any(part.endswith(b"jupyterhub-singleuser") for part in command):
                    continue
                environ = dict(
                    line.split(b"=", 1)
                    for line in open(f"/proc/{entry}/environ", "rb").read().split(b"\0")
                    if b"=" in line
                )
                user = environ.get(b"JUPYTERHUB_USER", b"?").decode()
                if self.suffix not in user:  # another class's hub on this machine (a test running beside)
                    continue
                found.setdefault(user, []).append(os.stat(f"/proc/{entry}").st_uid)
        return found

    def server_environment(self, person: Person) -> dict[str, str]:
        """The environment the hub gave ``person``'s server: what a terminal of their lab has."""
        for entry in os.listdir("/proc"):
            with contextlib.suppress(OSError):
                if not entry.isdigit() or os.stat(f"/proc/{entry}").st_uid != person.account.pw_uid:
                    continue
                if not any(
                    p.endswith(b"jupyterhub-singleuser")
                    for p in open(f"/proc/{entry}/cmdline", "rb").read().split(b"\0")
                ):
                    continue
                pairs = open(f"/proc/{entry}/environ", "rb").read().decode().split("\0")
                environment = dict(pair.split("=", 1) for pair in pairs if "=" in pair)
                return {k: v for k, v in environment.items() if not k.startswith(("JUPYTERHUB_", "JPY_"))}
        raise AssertionError(f"{person.name} has no server running")

    def as_person(self, person: Person, command: list[str], **kwargs) -> subprocess.CompletedProcess:
        """``command`` run as ``person`` (setpriv: their uid, gid and groups), in their home."""
        account = person.account
        drop = ["setpriv", f"--reuid={account.pw_uid}", f"--regid={account.pw_gid}", "--init-groups", "--"]
        env = {"HOME": account.pw_dir, "USER": person.name, "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
        env.update(kwargs.pop("env", {}))
        return subprocess.run([*drop, *command], cwd=account.pw_dir, env=env, **kwargs)

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)  # JupyterHub stops every server as it shuts down
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)
        accounts = [p for p in ([self.instructor] if self.instructor else []) + self.roster]
        # a roster that failed half way made accounts it never listed: removed by name
        accounts += [Person(name, "") for name in self.student_names if name not in {p.name for p in self.roster}]
        uids = set()
        for person in accounts:
            with contextlib.suppress(KeyError):
                uids.add(person.account.pw_uid)
        for entry in os.listdir("/proc"):  # whatever the run's accounts left running, by pid
            with contextlib.suppress(OSError, ProcessLookupError):
                if entry.isdigit() and os.stat(f"/proc/{entry}").st_uid in uids:
                    os.kill(int(entry), signal.SIGKILL)
        for person in accounts:
            subprocess.run(["userdel", "--remove", person.name], capture_output=True)
        subprocess.run(["groupdel", self.group], capture_output=True)
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


@contextlib.contextmanager
def running_hub_class(**options):
    """A ``HubClass(**options)`` open for the test and closed after it. Making Unix accounts (useradd) and running
    JupyterHub needs root, which CI has: without it the test fails in CI and is skipped elsewhere."""
    if os.geteuid() != 0:
        why = "The hub's test makes Unix accounts (useradd) and runs JupyterHub as root, which CI does."
        if IN_CI:
            pytest.fail(f"CI is set and this process is not root. {why}", pytrace=False)
        pytest.skip(why)
    hub = HubClass(**options)
    try:
        hub.open()
        yield hub
    finally:
        hub.close()
