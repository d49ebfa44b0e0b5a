"""The one temporary folder of a grading run, and how it goes when the run ends, however it ends.

A run makes temporary files in several processes: each worker grades in a private course root (a copy of
the gradebook, hidden tests included, and each submission as it is graded), Dask keeps its scratch files,
a worker may make the stub package. They all live in one folder that the coordinating process owns:

    <temporary folder>/hm-run-<the coordinator's pid>-<random>/      0700, the grader's alone
        dask/             Dask's scratch folder
        <anything>        what the local workers make: their temporary folder (TMPDIR) is this one

The coordinator removes it in a ``finally`` when the run ends: at its normal end, on an exception, on
Ctrl-C, and on SIGTERM or SIGHUP (turned into an exit for the run's duration). A worker that is killed runs
nothing as it dies, and need not: its files are in the folder. A coordinator that is killed (SIGKILL, a
power cut) leaves its folder behind: the next run's start removes every run folder whose coordinator is
gone. Only ours: folders (never links) owned by this user whose coordinator's pid no longer exists; the
folder of a run still going on (another course's, another grader's on this machine) is left alone.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import tempfile
import threading
from pathlib import Path

PREFIX = "hm-run-"
STOPPING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)  # Ctrl-C (SIGINT) is already an exception


class GradingStopped(SystemExit):
    """The run was stopped by a signal: it ends like Ctrl-C, cleaning up, and says so."""


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


@contextlib.contextmanager
def run_folder():
    """A new run folder (after the stale ones are swept), removed when the ``with`` block ends, however it ends.

    Enter it before starting the processes that write into it: it is removed after they are stopped."""
    base = Path(tempfile.gettempdir())
    sweep_stale(base)
    folder = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=base))  # 0700
    try:
        with _stopped_by_signals():
            yield folder
    finally:
        # a second Ctrl-C (or SIGTERM) waits until the folder is gone, then takes effect
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, *STOPPING_SIGNALS})
        try:
            shutil.rmtree(folder, ignore_errors=True)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


@contextlib.contextmanager
def _stopped_by_signals():
    """SIGTERM and SIGHUP end the run the way Ctrl-C does (their default would end the process at once,
    running no ``finally``). Only the main thread can handle signals: elsewhere nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise GradingStopped(
            f"grading was stopped ({signal.Signals(signum).name}): what was graded is kept; "
            "run the same command again to grade the rest."
        )

    previous = {number: signal.signal(number, stop) for number in STOPPING_SIGNALS}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
