"""An OS sandbox for every grading kernel (bubblewrap), plugged into nbgrader as a kernel manager.

Student code runs in the kernel that grades it. In the sandbox the kernel:

* has **no network** (its own empty network namespace) and talks to the grader over unix sockets
  (jupyter's IPC transport) in a private runtime folder;
* sees the file system **read-only**, with the course repository replaced by an empty folder except
  the package it needs (``heads_and_masks/``, ``data/``, the environment), so ``solutions/``,
  ``authoring/``, ``tests/``, the gradebook, the exchange and other submissions are simply not there;
* writes only to its own submission folder and a private ``/tmp``;
* runs as an unprivileged user (when the grader is root) with limits on memory (``kernel_guard``),
  CPU time, processes and file size.

``nbgrader_config.py`` selects it for every grading kernel when bubblewrap works here; where it
does not, :func:`sandbox_available` says why, the configuration prints a loud warning and the
grading report marks every grade "unsandboxed".
"""
from __future__ import annotations

import functools
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from jupyter_client.manager import KernelManager

from kernel_guard import GuardedCommand, GuardedKernelManager
from traitlets import Bool, Int, List, Unicode
from traitlets.config import LoggingConfigurable

REPO = Path(__file__).resolve().parents[1]
UNPRIVILEGED_USER = "nobody"


@functools.cache
def sandbox_available() -> tuple[bool, str]:
    """(True, "") when bubblewrap can run a process without network here; else (False, why)."""
    bwrap = shutil.which("bwrap")
    if not bwrap:
        return False, "bubblewrap is not installed (Debian package `bubblewrap`)"
    try:
        probe = subprocess.run([bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                                "--unshare-net", "--unshare-pid", "--die-with-parent", "true"],
                               capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        return False, f"bubblewrap failed to start: {error}"
    if probe.returncode != 0:
        return False, f"bubblewrap cannot create namespaces here: {probe.stderr.strip()[:200]}"
    return True, ""


def _unprivileged_ids() -> tuple[int, int] | None:
    if os.geteuid() != 0:
        return None  # already unprivileged: run as ourselves
    try:
        entry = pwd.getpwnam(UNPRIVILEGED_USER)
    except KeyError:
        return None
    return entry.pw_uid, entry.pw_gid


class _Sandboxed(LoggingConfigurable):
    """Starts every kernel inside bubblewrap, with IPC transport and limits (mixed into a kernel manager)."""

    cpu_seconds = Int(600, config=True, help="CPU-time limit of the kernel, in seconds")
    max_processes = Int(64, config=True, help="process limit of the unprivileged kernel user")
    max_file_mb = Int(64, config=True, help="largest file the kernel may write, in MiB")
    visible_paths = List(Unicode(), config=True, help="repository paths the kernel may read")
    hidden_paths = List(Unicode(), config=True, help="extra folders to hide (course root, exchange, ...)")
    require = Bool(False, config=True, help="refuse to grade at all when the sandbox is unavailable")
    package_override = Unicode("", help="a folder bound read-only in place of the course package")

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        available, why = sandbox_available()
        self.sandboxed = available
        if not available:
            message = f"GRADING UNSANDBOXED: {why}"
            if self.require:
                raise RuntimeError(message)
            print(message, file=sys.stderr)
            return
        self.runtime = Path(tempfile.mkdtemp(prefix="hm-kernel-"))
        os.chmod(self.runtime, 0o1777)
        self.transport = "ipc"
        self.ip = str(self.runtime / f"kernel-{uuid.uuid4().hex[:8]}")
        self.connection_file = str(self.runtime / "connection.json")

    def _visible(self) -> list[Path]:
        paths = [REPO / "data", REPO / "autograde" / "kernel_launch.py"]
        paths += [] if self.package_override else [REPO / "heads_and_masks"]
        prefix = Path(sys.prefix).resolve()
        if REPO in prefix.parents:
            paths.append(prefix)  # a venv inside the repository
        # the interpreter the venv points to (for example under ~/.pyenv, which is hidden)
        paths += [Path(sys.base_prefix).resolve(), Path(os.path.realpath(sys.executable)).parent.parent]
        return paths + [Path(p) for p in self.visible_paths]

    def _hidden(self) -> list[Path]:
        hidden = [REPO, Path.home(), Path("/work"), Path("/srv"), Path("/var/lib")]
        return hidden + [Path(p) for p in self.hidden_paths]

    def format_kernel_cmd(self, extra_arguments=None):
        command = super().format_kernel_cmd(extra_arguments)
        if not getattr(self, "sandboxed", False):
            return command
        cwd = Path(self._launch_args.get("cwd") or os.getcwd()).resolve()
        ids = _unprivileged_ids()
        if ids:  # the kernel reads its connection file and writes in its own folder, nothing else
            os.chown(self.connection_file, *ids)
            for folder in [cwd, *cwd.rglob("*")]:
                if folder.is_dir():
                    os.chown(folder, *ids)
        wrapper = [shutil.which("bwrap"), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                   "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
                   "--new-session", "--unsetenv", "JPY_PARENT_PID",  # the parent is outside the pid namespace
                   "--perms", "1777", "--tmpfs", "/tmp", "--perms", "1777", "--tmpfs", "/dev/shm"]
        hidden = [p for p in self._hidden() if p.exists()]
        for path in hidden:  # an empty folder in place of each hidden one
            wrapper += ["--perms", "0755", "--tmpfs", str(path)]
        binds = [("--ro-bind", p) for p in self._visible() if p.exists()]
        binds += [("--bind", cwd), ("--bind", self.runtime)]
        if self.package_override:
            binds.append(("--ro-bind", Path(self.package_override), REPO / "heads_and_masks"))
        for option, path, *inside in binds:  # recreate the way down to each folder inside the hidden ones
            where = inside[0] if inside else path
            for ancestor in reversed(where.parents):
                if any(h == ancestor or h in ancestor.parents for h in [*hidden, Path("/tmp")]):
                    wrapper += ["--perms", "0755", "--dir", str(ancestor)]
            wrapper += [option, str(path), str(where)]
        wrapper += ["--chdir", str(cwd), "--setenv", "HOME", "/tmp", "--setenv", "MPLCONFIGDIR", "/tmp",
                    "--setenv", "IPYTHONDIR", "/tmp/.ipython", "--setenv", "JUPYTER_RUNTIME_DIR", str(self.runtime)]
        limits = [shutil.which("prlimit"), f"--cpu={self.cpu_seconds}",
                  f"--fsize={self.max_file_mb * 2**20}", f"--nproc={self.max_processes}", "--core=0", "--"]
        drop = []
        if ids:
            drop = [shutil.which("setpriv"), f"--reuid={ids[0]}", f"--regid={ids[1]}", "--clear-groups",
                    "--inh-caps=-all", "--"]
        return [*wrapper, "--", *limits, *drop, *command]

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart)
        if not restart and getattr(self, "sandboxed", False):
            shutil.rmtree(self.runtime, ignore_errors=True)


class SandboxedKernelManager(_Sandboxed, GuardedKernelManager):
    """What the grading uses (``nbgrader_config.py``): the guarded kernel (memory limit, one BLAS thread,
    no core dumps, see ``kernel_guard.py``) started inside the sandbox."""


class SandboxedSyncKernelManager(_Sandboxed, GuardedCommand, KernelManager):
    """The same sandbox for code that drives a kernel synchronously (the trusted re-check)."""
