"""The one temporary folder of a grading run, and how it goes when the run ends, however it ends.

A run makes temporary files in several processes: each worker grades in a private course root (a copy of
the gradebook, hidden tests included, and each submission as it is graded), Dask keeps its scratch files,
a worker may make the stub package. They all live in one folder that the coordinating process owns:

    <temporary folder>/hm-run-<the coordinator's pid>-<random>/      0700, the grader's alone
        dask/             Dask's scratch folder
        <anything>        what the local workers make: their temporary folder (TMPDIR) is this one

and, for a root grader, the kernels' socket folders (``sandbox.py``) go in a folder of the run's too:
``/run/heads-and-masks/hm-run-<the coordinator's pid>-<random>/kernel-*`` (the run's folder 0711: other users
pass through it but cannot list it, so they never learn a kernel's folder's name; each kernel's is sealed too).

The coordinator removes it in a ``finally`` when the run ends: at its normal end, on an exception, on
Ctrl-C, and on SIGTERM or SIGHUP (turned into an exit for the run's duration). A worker that is killed runs
nothing as it dies, and need not: its files are in the folder. A coordinator that is killed (SIGKILL, a
power cut) leaves its folder behind: the next run's start removes every run folder whose coordinator is
gone. Only ours: folders (never links) owned by this user whose coordinator's pid no longer exists; the
folder of a run still going on (another course's, another grader's on this machine) is left alone.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import functools
import os
import shutil
import signal
import stat
import tempfile
import threading
from pathlib import Path

from .kernel.sandbox import RUN_SOCKETS_ENV, _runtime_base

PREFIX = "hm-run-"
STOPPING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)  # Ctrl-C (SIGINT) is already an exception


class GradingStopped(SystemExit):
    """The run was stopped by a signal: it ends like Ctrl-C, cleaning up, and says so."""


def stopped(how: str) -> str:
    """What the instructor reads when a run is stopped (by Ctrl-C, SIGTERM...)."""
    return f"grading was stopped ({how}): what was graded is kept; run the same command again to grade the rest."


def coordinator_of(name: str) -> int | None:
    """The pid of the process that made the run folder called ``name`` (None: not a run folder's name)."""
    if not name.startswith(PREFIX):
        return None
    pid = name[len(PREFIX) :].split("-", 1)[0]
    return int(pid) if pid.isdigit() else None


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, as another user's process
        return True
    return True


def sweep_stale(base: Path) -> list[str]:
    """Remove the run folders in ``base`` whose coordinator is gone; return their names.

    A pid reused since by another process keeps its folder until that process ends too (a folder is
    never taken from a live process)."""
    removed = []
    descriptor = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in os.listdir(descriptor):
            pid = coordinator_of(name)
            if pid is None or alive(pid):
                continue
            try:
                found = os.stat(name, dir_fd=descriptor, follow_symlinks=False)
            except FileNotFoundError:  # removed meanwhile by another run's sweep
                continue
            if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.geteuid():
                continue  # a link, a file, or someone else's: not ours to remove
            shutil.rmtree(name, dir_fd=descriptor, ignore_errors=True)  # never follows a link inside
            removed.append(name)
    finally:
        os.close(descriptor)
    return removed


@dataclasses.dataclass(frozen=True)
class RunFolders:
    files: Path  # every temporary file of the run
    sockets: Path | None  # the kernels' socket folders (a root grader's), else None: they go in ``files``

    def environ(self) -> dict[str, str]:
        """What a local worker's environment needs to put its files in the run's folders."""
        return {"TMPDIR": str(self.files), **({RUN_SOCKETS_ENV: str(self.sockets)} if self.sockets else {})}


@contextlib.contextmanager
def run_folder():
    """The run's folders (made after the stale ones are swept), removed when the ``with`` block ends, however it
    ends. Enter it before starting the processes that write into it: it is removed after they are stopped."""
    made = []
    try:
        with _stopped_by_signals():
            made.append(_new_folder(Path(tempfile.gettempdir()), 0o700))
            sockets = _runtime_base()  # (a root grader's: None otherwise)
            if sockets is not None:
                # traversable, not listable: no other user learns its kernels' folders' names (each is sealed as well)
                made.append(_new_folder(Path(sockets), 0o711))
            yield RunFolders(made[0], made[1] if sockets is not None else None)
    finally:
        # a second Ctrl-C (or SIGTERM) waits until the folders are gone, then takes effect
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, *STOPPING_SIGNALS})
        try:
            for folder in made:
                shutil.rmtree(folder, ignore_errors=True)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


@functools.cache
def worker_folders() -> RunFolders | None:
    """A worker of an existing cluster (``--scheduler``: started by the instructor, not by a run) has no run folder
    around it: it makes folders of its own, named after itself, for its lifetime, and makes them its temporary
    folder and its kernels' socket folder. Removed at its normal exit; if it is killed, by the next run folder made
    on its machine (its replacement's, as its nanny restarts it). None for a local worker: it is in its run's."""
    tempfile.tempdir = None  # read again from the environment it was given (a fork may hold its server's choice)
    if coordinator_of(Path(tempfile.gettempdir()).name) is not None:
        return None
    files = _new_folder(Path(tempfile.gettempdir()), 0o700)
    sockets = _runtime_base()
    sockets = _new_folder(Path(sockets), 0o711) if sockets is not None else None
    tempfile.tempdir = str(files)  # this process's own temporary files (private course roots, stub package)
    os.environ.update(RunFolders(files, sockets).environ())  # what it starts, and its kernels' socket folders
    for folder in (files, sockets):
        if folder is not None:
            atexit.register(shutil.rmtree, folder, True)
    return RunFolders(files, sockets)


def _new_folder(base: Path, mode: int) -> Path:
    sweep_stale(base)
    folder = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=base))  # 0700, a name no one can guess
    os.chmod(folder, mode)
    return folder


@contextlib.contextmanager
def _stopped_by_signals():
    """SIGTERM and SIGHUP end the run the way Ctrl-C does (their default would end the process at once,
    running no ``finally``). Only the main thread can handle signals: elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise GradingStopped(stopped(signal.Signals(signum).name))

    previous = {number: signal.signal(number, stop) for number in STOPPING_SIGNALS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
