"""How nbgrader starts the kernels that run students' code: through a command that can be wrapped.

nbgrader executes each submission with its ``Execute`` preprocessor, which asks jupyter_client for a
kernel. ``GuardedExecute`` is that preprocessor with one change: its kernels come from
``GuardedKernelManager``, which puts two things in front of the kernel's command line:

    [*command_prefix, python, kernel_launch.py, --memory-mb N, ..., --, python, -m, ipykernel_launcher, -f, ...]

* ``command_prefix`` is empty by default. It is the hook for a sandbox: a deployment (or the next
  issue of this project) sets it to e.g. ``["bwrap", "--ro-bind", "/", "/", ..., "--"]`` and every
  grading kernel, and only the kernels, runs inside it. The grader itself (nbgrader, the
  gradebook) stays outside.
* ``kernel_launch.py`` sets the per-kernel limits (memory, processes, no core dumps, one BLAS
  thread) on its own process, then ``exec``s the kernel: the limits hold for everything the
  student's code does, and the process id stays the kernel's, so interrupts and kills still work.

``nbgrader_config.py`` selects ``GuardedExecute`` in ``Autograde.autograde_preprocessors``; the
limits are configured there too (``c.GuardedKernelManager.memory_limit_mb = ...``).
"""
from __future__ import annotations

import sys
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from nbgrader.preprocessors import Execute
from traitlets import Integer, List, Unicode
from traitlets.config import LoggingConfigurable

LAUNCHER = Path(__file__).resolve().with_name("kernel_launch.py")


class GuardedCommand(LoggingConfigurable):
    """The kernel command under limits and behind an optional wrapper (mixed into a kernel manager)."""

    memory_limit_mb = Integer(2048, help="memory a grading kernel may allocate, MiB (0: no limit)").tag(config=True)
    max_processes = Integer(0, help="RLIMIT_NPROC of the kernel (0: unchanged)").tag(config=True)
    threads = Integer(1, help="BLAS/OpenMP threads of a grading kernel (0: unchanged)").tag(config=True)
    command_prefix = List(Unicode(), help="a command put in front of every grading kernel (a sandbox)").tag(config=True)
    launcher_python = Unicode(sys.executable, help="the Python that runs kernel_launch.py").tag(config=True)

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        # Interrupt by message on the control channel (the kernel then signals itself): a SIGINT
        # sent from here to the wrapper's process group does not reach a kernel that a sandbox put
        # in its own session, and a cell past its time limit would then fail the whole notebook.
        if self.kernel_spec is not None:
            self.kernel_spec.interrupt_mode = "message"
        kernel_command = super().format_kernel_cmd(extra_arguments)
        launcher = [self.launcher_python, str(LAUNCHER), f"--memory-mb={self.memory_limit_mb}",
                    f"--max-processes={self.max_processes}", f"--threads={self.threads}", "--"]
        return [*self.command_prefix, *launcher, *kernel_command]


class GuardedKernelManager(GuardedCommand, AsyncKernelManager):
    """A kernel manager whose kernels start under limits and behind an optional wrapper command."""


class GuardedExecute(Execute):
    """nbgrader's Execute, with kernels from :class:`GuardedKernelManager` unless configured otherwise.

    nbgrader's own ``Execute.__init__`` passes ``kernel_manager_class=AsyncKernelManager`` as a
    keyword, which silently beats ``c.Execute.kernel_manager_class`` in the configuration. This
    class restores the configuration's say: ``c.Execute.kernel_manager_class = "sandbox.X"`` (or
    ``c.GuardedExecute...``) is honoured; without it the kernels come from GuardedKernelManager.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        configured = None
        for section in ("Execute", "GuardedExecute"):
            if section in self.config and "kernel_manager_class" in self.config[section]:
                configured = self.config[section]["kernel_manager_class"]
        self.kernel_manager_class = configured or GuardedKernelManager
