"""Students as real Unix accounts, for the tests of nbgrader's exchange (run as root).

Each test makes accounts of unique names (a random suffix: two test runs at once never share one) and
removes them, homes included, afterwards. A student runs nbgrader's own commands as itself, with its own
HOME (so its own ``Exchange.cache``) and a Python it may run: the machine's, with this environment's
packages on its path (the environment's own interpreter may live under /root, closed to other users).
"""

from __future__ import annotations

import contextlib
import functools
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest


def require_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("making Unix accounts for students needs root")


@contextlib.contextmanager
def accounts(*roles: str):
    """``{role: account name}``, each account made with a home, all removed afterwards."""
    require_root()
    suffix = secrets.token_hex(3)
    made: dict[str, str] = {}
    try:
        for role in roles:
            name = f"hm{role[:10]}{suffix}"
            subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", name], check=True, capture_output=True)
            made[role] = name
        yield made
    finally:
        for name in made.values():
            subprocess.run(["userdel", "--remove", name], capture_output=True)


@functools.cache
def student_python(user: str) -> str:
    """A Python interpreter ``user`` may run that imports nbgrader (with ``packages_path()`` on its path)."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for python in (sys.executable, shutil.which(version), f"/usr/bin/{version}"):
        if python and run_as(user, [python, "-c", "import nbgrader"], check=False).returncode == 0:
            return python
    pytest.skip(f"no Python {version} that another account may run with this environment's packages")


def packages_path() -> str:
    return sysconfig.get_paths()["purelib"]


def run_as(
    user: str, command: list[str], *, env: dict[str, str] | None = None, check: bool = True, cwd: str | None = None
) -> subprocess.CompletedProcess:
    """Run ``command`` as ``user`` (its own uid, gids and HOME; an environment of nothing else but ``env``)."""
    account = pwd.getpwnam(user)
    environ = {"HOME": account.pw_dir, "USER": user, "LOGNAME": user, "PATH": "/usr/bin:/bin"}
    environ["PYTHONPATH"] = packages_path()
    environ.update(env or {})
    drop = [shutil.which("setpriv"), f"--reuid={account.pw_uid}", f"--regid={account.pw_gid}", "--init-groups", "--"]
    answer = subprocess.run(
        [*drop, "env", "-i", *(f"{k}={v}" for k, v in environ.items()), *command],
        cwd=cwd or account.pw_dir,
        capture_output=True,
        text=True,
    )
    if check and answer.returncode != 0:
        raise AssertionError(f"{' '.join(command)} as {user} failed:\n{answer.stdout[-2000:]}\n{answer.stderr[-3000:]}")
    return answer


def nbgrader_as(user: str, *arguments: str, env: dict[str, str] | None = None, check: bool = True):
    """nbgrader's own command line, as ``user`` in its home (``--course`` and the rest are the caller's)."""
    return run_as(user, [student_python(user), "-m", "nbgrader", *arguments], env=env, check=check)


def home(user: str) -> Path:
    return Path(pwd.getpwnam(user).pw_dir)
