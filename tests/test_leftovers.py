"""Nothing of a grading run is left in the temporary folder when it ends, however it ends.

Each worker grades in a private course root (the class's submissions, a copy of the gradebook with the
hidden tests) made in the temporary folder; Dask keeps its scratch there. A tiny class (two submissions of
00_start_here) goes through the instructor's command (``python -m autograde.grade ... all``) with a
temporary folder of the test's own (TMPDIR), so that other grading runs on the machine cannot disturb the
check: at a normal end, after Ctrl-C, with a worker killed, and when the coordinating process crashes.
The stale-run sweep that removes what a killed coordinator left is tested on its own, without grading.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import psutil
import pytest
from course import require_sandbox
from submissions import submission

from autograde.run_folder import PREFIX, run_folder, sweep_stale

A = "00_start_here"
STUDENTS = ("ann", "ben")


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A course with 00_start_here in its gradebook and two submissions handed in, made once."""
    from autograde.course import make_course_copy, setup

    root = tmp_path_factory.mktemp("leftovers")
    course = make_course_copy(root / "course")
    setup(course, A)
    for student in STUDENTS:
        folder = root / "handed-in" / student / A
        folder.mkdir(parents=True)
        nbformat.write(submission(A, {}), folder / f"{A}.ipynb")
    return root


def _start(template: Path, tmp_path: Path) -> tuple[subprocess.Popen, Path, Path]:
    """The grading command on a copy of the course, in a session of its own, with ``tmp_path/tmp`` as TMPDIR."""
    shutil.copytree(template, tmp_path / "class", symlinks=True)
    course, temporary = tmp_path / "class" / "course", tmp_path / "tmp"
    temporary.mkdir()
    command = [sys.executable, "-m", "autograde.grade", "--root", str(course), "all", A]
    command += ["--folder", str(tmp_path / "class" / "handed-in"), "--workers=2", "--quiet"]
    process = subprocess.Popen(
        command,
        env=dict(os.environ, TMPDIR=str(temporary)),
        start_new_session=True,  # its own process group: what Ctrl-C in its terminal reaches
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return process, course, temporary


def _grading_started(process: subprocess.Popen, temporary: Path) -> None:
    """Wait until a worker has made its private course root (the run is grading)."""
    deadline = time.monotonic() + 300
    while not any(temporary.rglob("hm-grading-*")):
        assert process.poll() is None, f"the run ended before it graded anything:\n{process.stderr.read()}"
        assert time.monotonic() < deadline, "no worker started grading in 300 s"
        time.sleep(0.05)


def _finish(process: subprocess.Popen) -> tuple[int, str]:
    try:
        _, stderr = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return process.returncode, stderr


def _left_in(temporary: Path) -> list[str]:
    """What is left in ``temporary``, two levels deep (enough to name every process's folder)."""
    return sorted(str(p.relative_to(temporary)) for p in [*temporary.glob("*"), *temporary.glob("*/*")])


def _sockets_of(process: subprocess.Popen) -> list[Path]:
    """The run's folder of kernel socket folders (a root grader's, beside other runs' in the machine's folder)."""
    return list(Path("/run/heads-and-masks").glob(f"{PREFIX}{process.pid}-*"))


def _graded(course: Path) -> list[str]:
    return sorted(p.stem for p in (course / "class" / "results" / A).glob("*.json"))


@pytest.mark.slow
def test_a_run_leaves_nothing_in_the_temporary_folder(template, tmp_path):
    require_sandbox()
    process, course, temporary = _start(template, tmp_path)
    code, stderr = _finish(process)
    assert code == 0, stderr
    assert _graded(course) == list(STUDENTS)
    assert _left_in(temporary) == [] and _sockets_of(process) == []


@pytest.mark.slow
def test_a_run_starts_no_dashboard_and_warns_of_no_busy_port(template, tmp_path):
    """No dashboard (its pages name the students): with Dask's default port 8787 taken, as by another run or
    a notebook's cluster, a run that started one would print "Port 8787 is already in use" (issue 43)."""
    require_sandbox()
    with socket.socket() as taken:
        try:
            taken.bind(("127.0.0.1", 8787))
            taken.listen()
        except OSError:  # someone else holds it already: the same situation
            pass
        process, course, _ = _start(template, tmp_path)
        stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    assert _graded(course) == list(STUDENTS)
    output = stdout + stderr
    assert "already in use" not in output and "Port 8787" not in output, output


@pytest.mark.slow
def test_ctrl_c_leaves_nothing_in_the_temporary_folder(template, tmp_path):
    require_sandbox()
    process, course, temporary = _start(template, tmp_path)
    _grading_started(process, temporary)
    # while it grades: one folder of the run's, the grader's alone, and no copy of the grading key on disk
    # (beside it: the fork server's socket folder, Python's own, removed as the command exits)
    (run,) = temporary.glob(f"{PREFIX}*")
    assert run.name.startswith(PREFIX) and run.stat().st_mode & 0o777 == 0o700
    assert not list(temporary.rglob("*grading-key*")), "a worker wrote the grading key on its disk"
    os.killpg(process.pid, signal.SIGINT)  # Ctrl-C in a terminal: every process of the foreground group
    code, stderr = _finish(process)
    assert code != 0, "the run was not interrupted: nothing was tested"
    assert "grading was stopped (Ctrl-C)" in stderr and "Traceback" not in stderr, stderr
    assert _left_in(temporary) == [] and _sockets_of(process) == []


@pytest.mark.slow
def test_a_killed_worker_leaves_nothing_in_the_temporary_folder(template, tmp_path):
    """A worker killed while it grades (the kernel's OOM killer, an administrator) runs nothing as it dies."""
    require_sandbox()
    process, course, temporary = _start(template, tmp_path)
    _grading_started(process, temporary)
    # the workers are forked from the command's fork server: the server's children
    server = next(p for p in psutil.Process(process.pid).children() if "forkserver" in " ".join(p.cmdline()))
    workers = server.children()
    assert workers, "no worker process found: nothing was tested"
    if os.geteuid() == 0:  # its kernels' socket folders are in the run's folder too
        assert [folder.name for folder in _sockets_of(process)[0].glob("kernel-*")], "no kernel socket folder"
    workers[0].send_signal(signal.SIGKILL)
    code, stderr = _finish(process)
    assert code == 0, stderr  # its submission is graded again on a new worker
    assert _graded(course) == list(STUDENTS)
    assert _left_in(temporary) == [] and _sockets_of(process) == []


@pytest.mark.slow
def test_a_crashed_command_leaves_nothing_in_the_temporary_folder(template, tmp_path):
    """The coordinating process fails half way (here: a student's record cannot be written, its folder is a file)."""
    require_sandbox()
    process, course, temporary = _start(template, tmp_path)
    records = course / "class" / "results" / A
    records.parent.mkdir(parents=True, exist_ok=True)
    records.write_text("not a folder")
    code, stderr = _finish(process)
    assert code != 0 and "Traceback" in stderr, f"the command did not crash: nothing was tested\n{stderr}"
    assert _left_in(temporary) == [] and _sockets_of(process) == []


# ------------------------------------------------------------------ what a killed coordinator leaves
def _dead_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", ""])
    child.wait()
    return child.pid


def test_the_next_run_sweeps_only_folders_of_runs_whose_coordinator_is_gone(tmp_path):
    dead, live = _dead_pid(), os.getpid()
    stale = tmp_path / f"{PREFIX}{dead}-abc"
    (stale / "hm-grading-x").mkdir(parents=True)
    (stale / "hm-grading-x" / "gradebook.db").write_bytes(b"hidden tests")
    running = tmp_path / f"{PREFIX}{live}-def"  # another run, still going on
    running.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious").write_text("not ours")
    link = tmp_path / f"{PREFIX}{dead}-link"  # a link named like a stale run: never followed
    link.symlink_to(elsewhere)
    theirs = tmp_path / f"{PREFIX}{dead}-theirs"  # another user's stale run: not ours to remove
    if os.geteuid() == 0:
        theirs.mkdir()
        os.chown(theirs, 65534, 65534)
    unrelated = tmp_path / "hm-run-notapid"
    unrelated.mkdir()

    removed = sweep_stale(tmp_path)

    assert not stale.exists()
    assert running.is_dir() and unrelated.is_dir()
    assert link.is_symlink() and (elsewhere / "precious").read_text() == "not ours"
    assert theirs.is_dir() or os.geteuid() != 0
    assert removed == [stale.name]


def test_a_run_folder_is_private_and_removed_on_an_exception(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    with pytest.raises(RuntimeError), run_folder() as run:
        folder = run.files
        assert folder.parent == tmp_path and folder.name.startswith(f"{PREFIX}{os.getpid()}-")
        assert folder.stat().st_mode & 0o777 == 0o700
        (folder / "hm-grading-x").mkdir()
        raise RuntimeError("the coordinator crashed")
    assert list(tmp_path.iterdir()) == []
    assert run.sockets is None or not run.sockets.exists()


def test_sigterm_ends_a_run_like_ctrl_c(tmp_path, monkeypatch):
    """SIGTERM (a service manager, `kill`) would end the process at once, running no clean-up: during a run it
    ends it the way Ctrl-C does, saying what to do next."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    with pytest.raises(SystemExit, match="run the same command again"), run_folder():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # (the signal's handler raises here)
    assert list(tmp_path.iterdir()) == []
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_a_killed_worker_of_an_existing_cluster_is_swept_by_its_replacement(tmp_path):
    """A worker of a cluster the instructor started (``--scheduler``) has folders of its own: killed, it leaves
    them; the next worker started on the machine (its nanny restarts it) removes them, and its own at its exit."""
    program = (
        "import os, sys\n"
        "from autograde.run_folder import worker_folders\n"
        "run = worker_folders()\n"
        "(run.files / 'hm-grading-x').mkdir()\n"
        "print(run.files, run.sockets, flush=True)\n"
        "if sys.argv[1] == 'killed':\n"
        "    os.kill(os.getpid(), 9)\n"
    )
    env = dict(os.environ, TMPDIR=str(tmp_path))

    def worker(how: str) -> list[Path | None]:
        done = subprocess.run([sys.executable, "-c", program, how], env=env, capture_output=True, text=True)
        return [None if word == "None" else Path(word) for word in done.stdout.split()]

    killed = worker("killed")
    assert killed and all(folder is None or folder.is_dir() for folder in killed), "nothing to sweep was left"
    replacement = worker("normal")
    assert all(folder is None or not folder.exists() for folder in killed + replacement)
    assert list(tmp_path.iterdir()) == []


def test_a_local_worker_makes_no_folder_of_its_own(tmp_path, monkeypatch):
    """A worker of the local cluster is in its run's folder already (its TMPDIR)."""
    from autograde.run_folder import worker_folders

    inside = tmp_path / f"{PREFIX}{os.getpid()}-abc"
    inside.mkdir()
    monkeypatch.setenv("TMPDIR", str(inside))  # what the coordinator gives its local workers
    monkeypatch.setattr("tempfile.tempdir", None)
    worker_folders.cache_clear()
    assert worker_folders() is None
    worker_folders.cache_clear()
