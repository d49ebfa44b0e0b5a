"""The grader's side of the kernel zygote (``zygote_server.py``): start it, ask it for kernels, watch them.

    zygote = Zygote.for_package(stub)          # one per worker process and stub package, started once
    kernel = zygote.spawn(request, cgroups)    # a fresh kernel forked in its own sandbox, at once
    kernel.poll(); kernel.kill()               # what jupyter_client does with a Popen

Used when the grader is root and bubblewrap works: only root can give each kernel a uid of its own and
mount its private folders. Otherwise every kernel is started on its own (``sandbox.bwrap_command``),
with the same view of the files.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

from . import sandbox

SERVER = sandbox.INSIDE / "zygote_server.py"
SERVER_INSIDE = Path("/opt/heads-and-masks/zygote_server.py")
STAGE = "/opt/heads-and-masks/stage"  # zygote_server.STAGE

# What the zygote imports once, so that no kernel imports it again: what every grading kernel imports
# (kernel_client.PRELOAD), ipykernel and the modules a kernel imports as it starts. Nothing here may start a
# thread (a fork copies only the thread that forks: the zygote checks).
PRELOAD = (
    "numpy",
    "numpy.random",  # imported on first use (numpy 2), and every kernel reseeds it (zygote_server.kernel)
    "secrets",
    "heads_and_masks",
    "ipykernel.kernelapp",
    "ipykernel.ipkernel",
    "ipykernel.zmqshell",
    "IPython.core.completerlib",
    "IPython.core.debugger",
    "IPython.core.oinspect",
    "IPython.extensions.storemagic",
    "tornado.platform.asyncio",
    "tornado.queues",
    "IPython.core.logger",  # what a kernel still imported as it started (measured: sys.modules at its first cell)
    "ipykernel.debugger",
    "unicodedata",
    "faulthandler",
)


def zygote_command(package: Path | None, base: Path, control_fd: int, env: dict[str, str]) -> list[str]:
    """The zygote in bubblewrap: a kernel's view of the files (``sandbox.kernel_view``), all the socket
    folders under ``base`` (each keeper hides all but its own), and root (each keeper drops it)."""
    view = sandbox.kernel_view(
        scratch="/scratch",
        scratch_mb=1,
        package=package,
        env=env,
        binds=[("--ro-bind", SERVER, SERVER_INSIDE), ("--bind", base, base)],
    )
    return [
        *view,
        "--perms",
        "0700",
        "--dir",
        STAGE,
        "--",
        _which("prlimit"),
        "--core=0",
        "--",
        sys.executable,
        str(SERVER_INSIDE),
        str(control_fd),
        ",".join(PRELOAD),
    ]


def _which(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise FileNotFoundError(f"{name} is not installed")
    return found


class ForkedKernel:
    """A kernel forked by the zygote, seen through its keeper's socket as a ``subprocess.Popen``.

    jupyter_client polls, waits for and kills the kernel through this object; interrupts go by message
    (``kernel_manager.SandboxedKernelManager``), so no other signal is needed.
    """

    stdin = stdout = stderr = None

    def __init__(self, channel: socket.socket):
        self.channel = channel
        self.returncode: int | None = None
        self._pid: int | None = None
        self._said = b""

    @property
    def pid(self) -> int | None:
        """The keeper's process id as this process sees it (it arrives with the keeper's first words)."""
        if self._pid is None and self.returncode is None:
            self._read(timeout=60)
        return self._pid

    def _read(self, timeout: float | None) -> None:
        if self.returncode is not None:
            return
        ready, _, _ = select.select([self.channel], [], [], timeout)
        if not ready:
            return
        try:
            data, ancillary, _, _ = self.channel.recvmsg(64, socket.CMSG_SPACE(struct.calcsize("3i")))
        except OSError:
            data, ancillary = b"", []
        for level, kind, value in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS and self._pid is None:
                self._pid = struct.unpack("3i", value[: struct.calcsize("3i")])[0]
        self._said += data
        if not data:  # the keeper is gone without a word: the kernel is gone with it
            self.returncode = self._exit_code() if self._said.count(b"\n") >= 2 else -signal.SIGKILL
            self.channel.close()
        elif self._said.count(b"\n") >= 2:  # "started", then how the kernel ended
            self.returncode = self._exit_code()
            self.channel.close()

    def _exit_code(self) -> int:
        lines = self._said.split(b"\n")
        try:
            return int(lines[1])
        except (IndexError, ValueError):
            return -signal.SIGKILL

    def poll(self) -> int | None:
        while self.returncode is None:
            ready, _, _ = select.select([self.channel], [], [], 0)
            if not ready:
                break
            self._read(timeout=0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.returncode is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired("kernel", timeout)
            self._read(timeout=left)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if signum in (signal.SIGKILL, signal.SIGTERM):
            self.kill()

    def kill(self) -> None:
        if self.returncode is None:
            try:
                self.channel.send(b"kill")
            except OSError:
                pass

    terminate = kill


class Zygote:
    """One zygote process (in its sandbox) and the socket the worker asks it for kernels through."""

    _running: dict[tuple[int, str], "Zygote"] = {}
    _lock = threading.Lock()

    def __init__(self, package: Path | None, base: Path):
        self.control, inside = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = sandbox.kernel_environment(base)
        env.update(sandbox.THREAD_LIMITS)
        self.process = subprocess.Popen(
            zygote_command(package, base, inside.fileno(), env),
            pass_fds=[inside.fileno()],
            stdin=subprocess.DEVNULL,
            env={"PATH": "/usr/bin:/bin"},
            cwd="/",
        )
        inside.close()
        self.lock = threading.Lock()

    @classmethod
    def for_package(cls, package: Path | None, base: Path) -> "Zygote":
        """This process's zygote for ``package`` (started on first use, again if it has died)."""
        key = (os.getpid(), str(package))
        with cls._lock:
            zygote = cls._running.get(key)
            if zygote is None or zygote.process.poll() is not None:
                zygote = cls._running[key] = cls(package, base)
            return zygote

    def spawn(self, request: dict, cgroup_procs: list[Path]) -> ForkedKernel:
        """A kernel, forked now; ``cgroup_procs``: the cgroups it is to run in (their ``cgroup.procs``)."""
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        mine.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)  # the keeper's pid, as we see it
        files = [os.open(path, os.O_WRONLY) for path in cgroup_procs]
        try:
            with self.lock:
                socket.send_fds(self.control, [json.dumps(request).encode()], [theirs.fileno(), *files])
        finally:
            theirs.close()
            for fd in files:
                os.close(fd)
        return ForkedKernel(mine)

    def close(self) -> None:
        self.control.close()  # the zygote reads end-of-file and ends; its kernels end with their keepers
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@atexit.register
def _close_all() -> None:
    for zygote in Zygote._running.values():
        zygote.close()
    Zygote._running.clear()
