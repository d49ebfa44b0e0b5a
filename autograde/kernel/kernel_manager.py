"""The kernel manager of every grading kernel: jupyter_client's, with the kernel started in its sandbox.

What a kernel sees and runs as is ``sandbox.py``'s; its cgroups and memory meter are ``resources.py``'s. This
module puts them together each time a kernel starts (:class:`SandboxedKernelManager`): as root with a working
bubblewrap, the kernel is forked from this process's zygote (``zygote.py``); otherwise it starts on its own, in
bubblewrap (``sandbox.bwrap_command``), or, without bubblewrap, unsandboxed with a clean environment and the same
limits, loudly marked by the caller.

It reads the sandbox's settings through the module (``sandbox.forked_kernels()``, not a copy of the name), so that
what a test or a tool sets there (no zygote, another runtime folder) holds for the kernels started here.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from jupyter_client.manager import KernelManager

from . import sandbox
from .resources import Cgroups, MemoryMeter
from .zygote import Zygote

# IPython options of every grading kernel. The judge keeps only an error's name and message (never its
# traceback), so IPython need not build one: a context traceback costs 0.1-0.5 s per failing cell, and
# a graded notebook has many (its demonstrations call the course's reference, absent from the stub).
# No input history either: the judge's calls are not the student's work, and nothing reads it.
# Nor the 0.5 ms ipykernel sleeps before every execute reply, for clients that take the reply as the end
# of a cell's outputs: the judge reads them until the idle status, which the kernel publishes after them
# on the same socket (a notebook's cells and the judge's calls: 30-250 execute requests per submission).
KERNEL_OPTIONS = (
    "--InteractiveShell.xmode=Minimal",
    "--HistoryManager.enabled=False",
    "--Kernel._execute_sleep=0",
)


def zygote_module(command: list[str]) -> str | None:
    """MODULE when ``command`` is ``<this python> -m MODULE ...``, what the zygote can run."""
    if len(command) >= 3 and command[1] == "-m" and os.path.realpath(command[0]) == os.path.realpath(sys.executable):
        return command[2]
    return None


# Run by the grader in a process of its own (``seal``, without root; ``python -c``, arguments: a pid of the kernel's
# sandbox and a folder). bubblewrap made the sandbox's mounts in a user namespace of our uid, then moved the kernel
# into a second one, nested in it, where the kernel holds no capability. This process enters the first (the owner of
# the kernel's mount namespace, in which our uid holds every capability, as its creator) and the mount namespace,
# and makes the folder a read-only mount there: the kernel can then neither write into it, nor chmod it, nor mount it
# again. One thread (as ``setns`` into a user namespace needs); nothing is imported after the switch.
READ_ONLY_IN_ITS_VIEW = """
import ctypes, fcntl, os, sys
libc = ctypes.CDLL(None, use_errno=True)
NS_GET_USERNS, CLONE_NEWUSER, CLONE_NEWNS = 0xB701, 0x10000000, 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND = 1, 2, 4, 32, 4096
mounts = os.open("/proc/%s/ns/mnt" % sys.argv[1], os.O_RDONLY)
for namespace, kind in ((fcntl.ioctl(mounts, NS_GET_USERNS), CLONE_NEWUSER), (mounts, CLONE_NEWNS)):
    if libc.setns(namespace, kind) != 0:
        raise OSError(ctypes.get_errno(), "setns: " + os.strerror(ctypes.get_errno()))
flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV
if libc.mount(None, sys.argv[2].encode(), None, flags, None) != 0:
    raise OSError(ctypes.get_errno(), "remount: " + os.strerror(ctypes.get_errno()))
"""


class SandboxedKernelManager(KernelManager):
    """A kernel manager whose kernel runs in the sandbox of ``sandbox.py`` (or, where bubblewrap is not
    available, unsandboxed with a clean environment and the same limits, loudly marked by the caller).

    Set the limits before ``start_kernel``; ``package`` is the stub package to show as the course's.
    """

    memory_mb = 2048
    address_space_mb = 0  # RLIMIT_AS (0: none): set where grading relies on what a kernel cannot hold
    cgroup_mb = 0  # as root, the memory cgroup's limit (0: memory_mb + 256, room for shared memory and tmpfs)
    cpu_seconds = 900
    max_processes = 64
    max_file_mb = 64
    scratch_mb = 256
    package: Path | None = None
    extra_env: dict[str, str] | None = None
    preload: tuple[str, ...] = ()  # modules the kernel imports before it listens (kernel_launch.py --preload)

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.sandboxed, self.why_not = sandbox.sandbox_available()
        # Root with a working bubblewrap: the kernel is forked from this process's zygote (zygote.py),
        # with numpy, the package and ipykernel imported already; else it starts on its own.
        self.forked = sandbox.forked_kernels()
        if self.forked:  # before anything is made: a kernel forked blind would die as it starts, unexplained
            sandbox.check_kernels_can_see_the_course()
        # Sockets and the connection file live in a folder of their own, made read-only once the
        # kernel is up: the kernel can neither leave files there nor replace a socket. Until then only
        # the grader and the kernel's own uid may write there (root's, its group the kernel's: mode 1770;
        # as ourselves: 0700), never another user: a file of theirs in place of a socket the kernel is
        # about to bind would kill a classmate's kernel.
        self.uid = sandbox.private_uid() if os.geteuid() == 0 else None
        self.runtime = Path(tempfile.mkdtemp(prefix="kernel-", dir=sandbox._runtime_base()))
        if self.uid is not None:
            os.chown(self.runtime, 0, self.uid)
            os.chmod(self.runtime, 0o1770)
        self.transport = "ipc"
        self.ip = str(self.runtime / "kernel")
        self.connection_file = str(self.runtime / "connection.json")
        self.cgroups: Cgroups | None = None
        self.scratch = "/scratch" if self.sandboxed else tempfile.mkdtemp(prefix="hm-scratch-")
        self._request: dict | None = None

    def format_kernel_cmd(self, extra_arguments=None):
        if self.kernel_spec is not None:  # interrupts by message: signals do not cross the sandbox
            self.kernel_spec.interrupt_mode = "message"
        command = [*super().format_kernel_cmd(extra_arguments), *KERNEL_OPTIONS]
        name = f"kernel-{self.uid or os.getpid()}-{os.urandom(3).hex()}"
        self.cgroups = Cgroups(name, (self.cgroup_mb or self.memory_mb + 256) * 2**20, self.max_processes)
        # Without a memory cgroup the meter reads the kernel's processes at the end of a call (remote_calls.py): a
        # child started and ended within it would go unseen, so the kernel may start none (threads only).
        new_processes = self.cgroups.memory_files() is not None
        launcher = sandbox.LAUNCHER_INSIDE if self.sandboxed else sandbox.LAUNCHER
        launch = [
            sys.executable,
            str(launcher),
            f"--memory-mb={self.memory_mb}",
            f"--address-space-mb={self.address_space_mb}",
            "--threads=1",
            *([] if new_processes else ["--no-new-processes"]),
            *([f"--preload={','.join(self.preload)}", "--no-debugger"] if self.preload else []),
            "--",
        ]
        if self.uid is not None:
            os.chown(self.connection_file, self.uid, self.uid)
        os.chmod(self.connection_file, 0o400 if self.uid is not None else 0o600)
        env = sandbox.kernel_environment(self.runtime, self.extra_env)
        if self.forked and zygote_module(command) == "ipykernel_launcher":
            self._request = {
                "uid": self.uid,
                "runtime": str(self.runtime),
                "scratch": self.scratch,
                "scratch_mb": self.scratch_mb,
                "memory_mb": self.memory_mb,
                "address_space_mb": self.address_space_mb,
                "cpu_seconds": self.cpu_seconds,
                "max_file_mb": self.max_file_mb,
                "max_processes": 0 if self.cgroups.caps_processes else self.max_processes,
                "new_processes": new_processes,
                "env": {**env, **sandbox.THREAD_LIMITS},
                "module": command[2],
                "args": command[3:],
            }
            return command
        if not self.sandboxed:
            self._unsandboxed_env = env
            return [
                *self.cgroups.enter_command(),
                shutil.which("prlimit"),
                f"--cpu={self.cpu_seconds}",
                f"--fsize={self.max_file_mb * 2**20}",
                "--core=0",
                "--",
                *launch,
                *command,
            ]
        wrapped = sandbox.bwrap_command(
            [*launch, *command],
            scratch=self.scratch,
            runtime=self.runtime,
            package=self.package,
            env=env,
            uid=self.uid,
            scratch_mb=self.scratch_mb,
            cpu_seconds=self.cpu_seconds,
            max_file_mb=self.max_file_mb,
            max_processes=0 if self.cgroups.caps_processes else self.max_processes,
        )
        return [*self.cgroups.enter_command(), *wrapped]

    async def _async_launch_kernel(self, kernel_cmd, **kw):
        if self._request is not None:
            zygote = Zygote.for_package(self.package, self.runtime.parent)
            process = zygote.spawn(self._request, self.cgroups.procs)
            # What LocalProvisioner.launch_kernel keeps of a Popen: jupyter_client polls, waits for and
            # kills the kernel through it (interrupts go by message).
            self.provisioner.process, self.provisioner.pid, self.provisioner.pgid = process, None, None
            self._reconcile_connection_info(self.provisioner.connection_info)
            return
        # The kernel's environment is the one built above, never the grader's (bubblewrap clears
        # its own; the few processes in front of it get no more than a PATH).
        kw["env"] = getattr(self, "_unsandboxed_env", None) or {"PATH": "/usr/bin:/bin"}
        kw["cwd"] = self.scratch if not self.sandboxed else "/"
        return await super()._async_launch_kernel(kernel_cmd, **kw)

    async def _async_wait(self, pollinterval: float = 0.1) -> None:
        # After its SIGKILL a kernel is gone within milliseconds: poll at 10 ms, not jupyter_client's
        # 100 ms, which every submission would otherwise wait out once.
        await super()._async_wait(pollinterval=min(pollinterval, 0.01))

    def memory_meter(self) -> MemoryMeter:
        """A meter of this kernel's memory, read from outside it (its cgroup, or its processes in /proc)."""
        process = getattr(self.provisioner, "process", None) if self.provisioner is not None else None
        return MemoryMeter(self.cgroups, getattr(process, "pid", None))

    def seal(self) -> None:
        """Once the kernel is connected: its socket folder becomes read-only to it."""
        os.chmod(self.runtime, 0o550 if self.uid is not None else 0o500)
        if self.uid is None and self.sandboxed and not self.forked:
            # Without root the kernel has our uid: it owns the folder and could make it writable again, and the
            # folder is on our disk, not a capped tmpfs (a kernel wrote 720 MiB there). Its mount in the kernel's
            # view is made read-only instead, which the kernel cannot undo.
            self._read_only_in_its_view(self.runtime)

    def _read_only_in_its_view(self, folder: Path) -> None:
        process = getattr(self.provisioner, "process", None)
        try:
            children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()
        except (AttributeError, OSError):
            children = []
        if not children:
            raise RuntimeError("the kernel's sandbox ended before its socket folder could be sealed")
        done = subprocess.run(
            [sys.executable, "-c", READ_ONLY_IN_ITS_VIEW, children[0], str(folder)],
            capture_output=True,
            text=True,
            timeout=30,
        )
        if done.returncode != 0:
            said = (done.stderr.strip().splitlines() or ["(nothing said)"])[-1]
            raise RuntimeError(f"the kernel's socket folder could not be made read-only in its view: {said[:200]}")

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart)
        if restart:
            return
        if self.cgroups is not None:
            self.cgroups.remove()
        with contextlib.suppress(OSError):
            os.chmod(self.runtime, 0o700)
        shutil.rmtree(self.runtime, ignore_errors=True)
        if not self.sandboxed:
            shutil.rmtree(self.scratch, ignore_errors=True)
