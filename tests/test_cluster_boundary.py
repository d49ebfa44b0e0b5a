"""The grading processes' own boundary: what another user of the instructor's machine can reach of a grading run.

On The Littlest JupyterHub every student has a shell on the host that grades, in the same network namespace.
The instructor runs ``python -m autograde.grade`` (collect, then autograde with two workers); meanwhile a
student (``local_user.py``, as uid 65534 when the tests run as root) finds every socket the run listens
on the way any user can (``/proc/net/tcp``, ``/proc/net/unix``) and tries it: the scheduler, the nannies,
the workers (a Dask client or a plain RPC that runs a function as the instructor: rewrite the gradebook,
read the grading key), the dashboard (HTTP, which lists the tasks named after the students), the fork
server the workers are forked from. After the run, it tries to read what grading left in the course's
runtime folder (the gradebook, logs, submissions, results, the grading key).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from functools import cache
from pathlib import Path

import nbformat
import psutil
import pytest

from course import REPO, _template_course, done_ahead, require_sandbox
from submissions import submission

pytestmark = pytest.mark.slow
ASSIGNMENT = "00_start_here"
ATTACKER = REPO / "tests" / "local_user.py"
NOBODY = 65534


@cache
def _attacker_command() -> list[str]:
    """How to run local_user.py as another user: uid 65534 with an interpreter that user may run (the
    venv's may live under /root), the venv's packages on its path. Not root: as ourselves (a port's
    boundary does not depend on who knocks; the file checks then say nothing and are skipped)."""
    if os.geteuid() != 0:
        return [sys.executable]
    drop = [shutil.which("setpriv"), f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for python in (sys.executable, shutil.which(version), f"/usr/bin/{version}"):
        if python and subprocess.run([*drop, python, "-c", "import distributed"], env=_attacker_env()).returncode == 0:
            return [*drop, python]
    pytest.skip(f"no Python {version} that uid {NOBODY} may run with this environment's packages")


def _attacker_env() -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "PYTHONPATH": sysconfig.get_paths()["purelib"], "HOME": "/nonexistent"}


def _attacker(*arguments: str) -> subprocess.Popen:
    return subprocess.Popen(
        [*_attacker_command(), str(ATTACKER), *arguments],
        env=_attacker_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd="/",
    )


def _report(attacker: subprocess.Popen) -> dict:
    out, err = attacker.communicate(timeout=180)
    assert attacker.returncode == 0, err[-3000:]
    return json.loads(out)


def _attack(*arguments: str) -> dict:
    return _report(_attacker(*arguments))


def _run_sockets(process: psutil.Process) -> tuple[set[int], set[str]]:
    """The TCP ports the grading run (the command and its descendants) listens on, and its fork server's
    unix socket (the kernels' sockets come and go with each submission: tests/test_pipeline.py)."""
    ports, paths = set(), set()
    for member in [process, *process.children(recursive=True)]:
        try:
            for connection in member.net_connections(kind="inet"):
                if connection.status == psutil.CONN_LISTEN:
                    ports.add(connection.laddr.port)
            if "forkserver" in " ".join(member.cmdline()):
                paths |= {c.laddr for c in member.net_connections(kind="unix") if c.laddr}
        except psutil.Error:
            pass
    return ports, paths


def _grade_command(root: Path, *arguments: str) -> list[str]:
    return [sys.executable, "-m", "autograde.grade", "--root", str(root), *arguments]


def test_a_local_user_reaches_nothing_of_a_grading_run():
    """The run is mostly its students' 20 s cells: it is done ahead, beside the tests before it (conftest
    AHEAD_JOBS), and read back here; a run that failed ahead is done again here, where pytest says why."""
    attacked = done_ahead(
        "test_cluster_boundary:a_local_user_attacks_a_grading_run", a_local_user_attacks_a_grading_run
    )
    report, watched, made = attacked["report"], attacked["watched"], attacked["made"]
    assert attacked["returncode"] == 0, attacked["output"]
    assert "4 students, 0 with something to look at" in attacked["output"], attacked["output"]

    holes = []  # every hole found, not only the first
    for port, found in report["tcp"].items():
        where = (found["listed"] or {}).get("address")
        if not found["listed"]:
            holes.append(f"port {port} of the run is not in /proc/net/tcp: the attacker could not find it")
        if where not in ("127.0.0.1", "::1"):
            holes.append(f"port {port} listens on {where}, beyond this machine")
        if "ran_as" in found:
            holes.append(f"port {port} ({found['plain_tcp']}) ran the attacker's code as uid {found['ran_as']}")
        elif "plain_tcp" in found:
            holes.append(f"port {port} ({found['plain_tcp']}) speaks Dask without TLS to anyone")
        if "own_tls" in found:
            holes.append(f"port {port} ({found['own_tls']}) accepts a TLS certificate that is not the run's")
        if "http" in found:
            holes.append(
                f"port {port} serves the dashboard to anyone (a student's name on it: "
                f"{any(name in found['http_text'] for name in ('alice', 'bob', 'carol', 'dave'))})"
            )
    for path, found in report["unix"].items():
        if not found["listed"]:
            holes.append(f"{path} is not in /proc/net/unix: the attacker could not find it")
        if found["connect"] == "connected":
            holes.append(f"a local user connected to {path}")
    holes += [f"the student's module ran in the grading run: {name}" for name in made if name.startswith("ran-as")]
    holes += [f"the run works in the student's scratch folder: made {name}" for name in made if "ran-as" not in name]
    assert report["tcp"] and report["unix"] and watched["seen"], (report, watched)
    assert attacked["alive_after_the_attack"], "the run ended while the attacker knocked: its refusals prove nothing"
    if report["uid"] != os.geteuid():  # (as ourselves: our own kernels' folders)
        holes += [f"a local user created {path} in a booting kernel's socket folder" for path in watched["created"]]
        holes += [
            f"a local user lists the run's folder {folder}"
            for folder in watched["seen"]
            if "/hm-run-" in folder and "/kernel-" not in folder and folder not in watched["unlisted"]
        ]

    if report["uid"] != os.geteuid():  # the files: only another user's view says anything
        assert attacked["left_to_read"], "nothing was left to read: nothing was tested"
        holes += [f"another user reads {path}" for path in attacked["read"]["opened"]]
    assert not holes, f"as uid {report['uid']}:\n" + "\n".join(holes)


def a_local_user_attacks_a_grading_run() -> dict:
    """(The work of the test above, in this process or the one grading ahead) an instructor's run graded while a
    local user knocks on everything it listens on, then reads what it left: what each step saw, as plain data."""
    require_sandbox()
    # An instructor's home that other users may traverse (useradd's default on many systems), with the course
    # in it; the hand-ins as the LMS gave them.
    home = Path(tempfile.mkdtemp(prefix="hm-instructor-"))
    try:
        os.chmod(home, 0o755)
        shutil.copytree(_template_course(), home / "course", symlinks=True)
        solved = submission(ASSIGNMENT, {})
        slow = nbformat.from_dict(json.loads(nbformat.writes(solved)))
        # a cell that keeps the run alive while the attacker knocks (the run ends when it is graded)
        slow.cells.append(nbformat.v4.new_code_cell("import time\ntime.sleep(20)"))
        # two students per worker: while it grades one, a worker starts the next one's kernel
        for student, notebook in {"alice": solved, "bob": slow, "carol": slow, "dave": solved}.items():
            (home / "handed-in" / student / ASSIGNMENT).mkdir(parents=True)
            nbformat.write(notebook, home / "handed-in" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
        course = home / "course"
        # The machine's temporary folder (a copy of /tmp's modes, so that the machine's own is left alone), where
        # the student made Dask's scratch folder before the instructor's first run (Dask uses it when it may
        # write there, and puts it on its processes' module path).
        tmp = home / "tmp"
        tmp.mkdir(mode=0o1777)
        os.chmod(tmp, 0o1777)
        scratch = Path(_attack("--plant", str(tmp))["plant"]["scratch"])
        planted = set(os.listdir(scratch))
        environ = dict(os.environ, TMPDIR=str(tmp))
        subprocess.run(
            _grade_command(course, "collect", ASSIGNMENT, "--folder", str(home / "handed-in")),
            check=True,
            cwd=home,
            env=environ,
        )

        # From the start: every kernel the run starts (its pid is in `ps` for anyone), as it boots. The watcher
        # notes the folders of earlier runs before the run begins (a kernel's folder is made before it boots, as
        # soon as a worker is up: noted later, it would pass for an earlier run's), then takes the run's pid.
        watcher, grading = _attacker("--watch", "90"), None
        try:
            assert watcher.stderr.readline().strip() == "watching", "the watcher did not start"
            grading = subprocess.Popen(
                _grade_command(course, "autograde", ASSIGNMENT, "--workers", "2", "--quiet"),
                cwd=home,
                env=environ,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            watcher.stdin.write(f"{grading.pid}\n")
            watcher.stdin.flush()  # (closed by communicate)
            # Knock once the scheduler and both workers listen (ports known to the test only to scope the attack
            # to this run: the attacker finds each in /proc/net/tcp itself, and the test checks it did).
            process, deadline = psutil.Process(grading.pid), time.monotonic() + 120
            ports, paths = set(), set()
            while time.monotonic() < deadline and grading.poll() is None:
                ports, paths = _run_sockets(process)
                listening = {p.pid for p in process.children(recursive=True) if p.is_running() and _has_listener(p)}
                if len(listening) >= 2:  # both workers (the coordinator holds the scheduler and the nannies)
                    break
                time.sleep(0.3)
            assert grading.poll() is None and ports, "the run ended (or never listened) before the attacker knocked"
            report = _attack("--ports", *map(str, sorted(ports)), "--unix", *sorted(paths))
            alive_after_the_attack = grading.poll() is None
            output, _ = grading.communicate(timeout=600)
            watched = _report(watcher)["watch"]
        finally:
            for process in (grading, watcher):
                if process is not None and process.poll() is None:
                    process.kill()
        runtime = course / "class"  # what the run left, read as the attacker (before the home is removed)
        return {
            "returncode": grading.returncode,
            "output": output[-3000:],
            "report": report,
            "alive_after_the_attack": alive_after_the_attack,
            "watched": watched,
            "made": sorted(set(os.listdir(scratch)) - planted),  # what the run made in the student's scratch folder
            "left_to_read": (runtime / "gradebook.db").is_file() and any((runtime / "logs").rglob("*.log")),
            "read": _attack("--read", str(runtime))["read"] if report["uid"] != os.geteuid() else {"opened": []},
        }
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _has_listener(process: psutil.Process) -> bool:
    try:
        return any(c.status == psutil.CONN_LISTEN for c in process.net_connections(kind="inet"))
    except psutil.Error:
        return False


@pytest.mark.parametrize(
    "address, refusal",
    [
        ("tcp://grading-head.example.org:8786", "is plain TCP: whoever can reach it"),
        ("127.0.0.1:8786", "is plain TCP: whoever can reach it"),  # loopback too: every student of a shared host
        ("tls://grading-head.example.org:8786", "no TLS settings are configured for this client"),
    ],
)
def test_an_existing_cluster_must_speak_tls(tmp_path, address, refusal):
    """``--scheduler`` on a cluster without TLS, or without this client's certificate, is refused with a
    plain message before anything is graded (``--insecure-scheduler`` is the instructor's explicit choice)."""
    refused = subprocess.run(
        _grade_command(tmp_path, "autograde", ASSIGNMENT, "--scheduler", address),
        capture_output=True,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("DASK_")},
    )
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert refusal in refused.stderr and "docs/instructors.md" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr and not (tmp_path / "class").exists(), refused.stderr
