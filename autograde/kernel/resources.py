"""A grading kernel's resources, held and measured from outside it: its cgroups and the meter of its memory.

As root, each kernel runs in a memory and a pids cgroup of its own (:class:`Cgroups`), which count every process
of the kernel, its shared memory and its tmpfs pages, and give it one CPU share however many processes it starts.
What one call of the judge made the kernel's memory grow is read from outside the kernel (:class:`MemoryMeter`):
from the cgroup, or without root from the kernel's processes in ``/proc``. The limits a kernel sets on itself
(RLIMIT_DATA, CPU time, file size) are ``inside/kernel_launch.py``'s and ``inside/zygote_server.py``'s.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


class Cgroups:
    """A memory and a pids cgroup (v1 or v2) for one kernel, when root may create them here."""

    def __init__(self, name: str, memory_bytes: int, max_pids: int):
        self.folders: list[Path] = []
        self.procs: list[Path] = []
        self.caps_processes = False  # a pids.max was set: the pids cgroup caps the processes, not RLIMIT_NPROC
        if os.geteuid() != 0:
            return
        v2 = (CGROUP_ROOT / "cgroup.controllers").exists()
        wanted = (
            [("", {"memory.max": memory_bytes, "pids.max": max_pids, "memory.swap.max": 0})]
            if v2
            else [
                ("memory", {"memory.limit_in_bytes": memory_bytes}),
                ("pids", {"pids.max": max_pids}),
                ("cpu", {"cpu.shares": 1024}),  # one share per kernel, however many processes it starts
            ]
        )
        for controller, limits in wanted:
            folder = CGROUP_ROOT / controller / "heads-and-masks" / name
            try:
                folder.parent.mkdir(parents=True, exist_ok=True)
                if v2:  # a v2 cgroup has only the controllers its parent enables for its children
                    for parent in (CGROUP_ROOT, folder.parent):
                        for enable in ("+memory", "+pids", "+cpu"):  # cpu: one share per kernel
                            with contextlib.suppress(OSError):
                                (parent / "cgroup.subtree_control").write_text(enable)
                folder.mkdir(exist_ok=True)
                if controller == "cpu":  # the kernels together weigh one core each, as when each was on its own
                    with contextlib.suppress(OSError):
                        (folder.parent / "cpu.shares").write_text(str(1024 * (os.cpu_count() or 1)))
                for key, value in limits.items():
                    with contextlib.suppress(OSError):
                        (folder / key).write_text(str(value))
                        self.caps_processes |= key == "pids.max"
            except OSError:
                continue
            self.folders.append(folder)
            self.procs.append(folder / "cgroup.procs")

    def _memory_file(self, *names: str) -> Path | None:
        for folder in self.folders:
            for name in names:
                if (folder / name).exists():
                    return folder / name
        return None

    def memory_files(self) -> tuple[Path, Path] | None:
        """The files of the memory cgroup that say the memory in use now and its peak, if there is one."""
        usage = self._memory_file("memory.usage_in_bytes", "memory.current")
        peak = self._memory_file("memory.max_usage_in_bytes", "memory.peak")
        return (usage, peak) if usage is not None and peak is not None else None

    def enter_command(self) -> list[str]:
        """A prefix that moves the starting process into the cgroups before it execs the rest."""
        if not self.procs:
            return []
        script = 'for f in "$@"; do [ "$f" = -- ] && break; echo $$ > "$f" || exit 97; shift; done; shift; exec "$@"'
        return ["/bin/sh", "-c", script, "sh", *map(str, self.procs), "--"]

    def remove(self) -> None:
        for folder in self.folders:
            for _ in range(20):
                with contextlib.suppress(OSError):
                    for pid in (folder / "cgroup.procs").read_text().split():
                        with contextlib.suppress(OSError):
                            os.kill(int(pid), signal.SIGKILL)
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)


class MemoryMeter:
    """How far a kernel's memory grows during one call, read by the grader from outside the kernel.

    Nothing of it runs in the kernel's process, so code there cannot tell whether (or when) it is measured,
    nor stop or reset the measurement (a kernel's /proc is read-only to it). With a memory cgroup: its usage
    when the call starts and its peak since (every process of the kernel, its shared memory and tmpfs pages
    included). Without one (a
    grader that is not root): the peak resident set of each of the kernel's processes (``VmHWM``, reset
    through ``/proc/<pid>/clear_refs``) against its resident set when the call starts. What it cannot see
    (memory already held before the call began, or given back as it starts) is in docs/security.md.
    """

    def __init__(self, cgroups: Cgroups | None, pid: int | None):
        self.files = cgroups.memory_files() if cgroups is not None else None
        self.pid = pid
        self.start_usage: int | None = None
        self.peak_file = None  # cgroup v2: a reset holds for reads through the same open file only
        self.start_resident: dict[int, int] = {}

    def start(self) -> None:
        """The call begins now: from here on, the peak counts."""
        self.start_usage = None
        if self.files is not None:
            usage, peak = self.files
            with contextlib.suppress(OSError, ValueError):
                if peak.name == "memory.peak":
                    if self.peak_file is None:
                        self.peak_file = open(peak, "r+")  # kept open: v2 resets the peak per open file
                    self.peak_file.seek(0)
                    self.peak_file.write("reset\n")
                    self.peak_file.flush()
                else:
                    peak.write_text("0")  # cgroup v1: the peak starts again from the usage now
                self.start_usage = int(usage.read_text())
                return
        self.start_resident = {}
        for pid in self._processes():
            with contextlib.suppress(OSError):
                Path(f"/proc/{pid}/clear_refs").write_text("5")  # the peak resident set starts again here
                self.start_resident[pid] = _resident_kib(pid, "VmRSS") * 1024

    def growth(self) -> int | None:
        """The most memory the kernel held beyond what it held at :meth:`start` (bytes), or None if unknown."""
        if self.start_usage is not None:
            try:
                if self.peak_file is not None:
                    self.peak_file.seek(0)
                    peak = int(self.peak_file.read())
                else:
                    peak = int(self.files[1].read_text())
            except (OSError, ValueError):
                return None
            return max(0, peak - self.start_usage)
        if not self.start_resident:
            return None
        grown = 0
        for pid in self._processes():  # a process started during the call held nothing at its start
            try:
                grown += max(0, _resident_kib(pid, "VmHWM") * 1024 - self.start_resident.get(pid, 0))
            except (OSError, ValueError):
                return None  # a process of the kernel hid its memory (made itself unreadable): not measured
        return grown

    def _processes(self) -> list[int]:
        """The kernel's process and every process under it (through ``/proc/<pid>/task/<tid>/children``)."""
        found, todo = [], [self.pid] if self.pid else []
        while todo:
            pid = todo.pop()
            found.append(pid)
            for children in Path(f"/proc/{pid}/task").glob("*/children"):
                with contextlib.suppress(OSError, ValueError):
                    todo.extend(int(child) for child in children.read_text().split())
        return found

    def close(self) -> None:
        if self.peak_file is not None:
            with contextlib.suppress(OSError):
                self.peak_file.close()
            self.peak_file = None


def _resident_kib(pid: int, field: str) -> int:
    """A memory field of ``/proc/<pid>/status`` in KiB. A process that has ended but is not yet reaped (a zombie)
    has no memory fields: it holds no memory, so 0. A process that cannot be read raises OSError."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0
