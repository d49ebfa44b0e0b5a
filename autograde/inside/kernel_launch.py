"""Start a grading kernel under resource limits: ``python kernel_launch.py [options] -- KERNEL COMMAND...``.

Every kernel that grades a student's notebook is started through this wrapper (see
``kernel_manager.SandboxedKernelManager``). It sets the limits on its own process and then *replaces
itself* with the kernel command (``os.execvp``), so the kernel keeps the process id, the signals
and the limits, and nothing of the wrapper is left running. With ``--preload`` it imports those
modules under the same limits and then runs the kernel in this same process (``python -m MODULE``
commands only; ``runpy``, as ``-m`` would), so that a kernel started ahead of time is ready with
them imported when its submission comes (``kernel_supply.KernelSupply``).

    --memory-mb N    the most memory the kernel may allocate (RLIMIT_DATA: heap and anonymous
                     mappings, which is where numpy arrays live). An allocation beyond it fails
                     with MemoryError inside the student's cell instead of taking the machine down.
    --address-space-mb N
                     the most address space the kernel may map (RLIMIT_AS: every mapping, private or
                     shared, anonymous or a file's; 0: no limit). RLIMIT_DATA does not count shared
                     mappings, which a memory cgroup does, and a grader that is not root has no cgroup
    --max-processes  how many processes the grading user may have (RLIMIT_NPROC), 0 = unchanged
    --no-new-processes  the kernel may start threads but no process (``confine.py``): given when no
                     memory cgroup counts the kernel's children, whose memory the meter would not see
    --threads N      BLAS/OpenMP threads of the kernel (parallel grading: one kernel per core)
    --preload A,B    modules to import before the kernel starts (e.g. numpy,heads_and_masks)
    --no-debugger    the kernel finds no debugpy, so ipykernel starts no debugger: a grading kernel
                     is never debugged, and debugpy's import and its threads cost about 0.1 s of CPU
                     per kernel (with --preload only: it is set in this process before the kernel runs)

Core dumps are switched off (a segfaulting submission must not write a core file of the
kernel's memory into the course folder). The kernel leaves the grader's session keyring and may make
no user namespace (``confine.py``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import resource
import runpy
import sys

import confine  # next to this file, inside the sandbox and out (standard library only)


def limit(which: int, value: int) -> None:
    """Lower both the soft and the hard limit (the kernel cannot raise them again)."""
    soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value))


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memory-mb", type=int, default=0, help="memory limit in MiB (0: none)")
    parser.add_argument("--address-space-mb", type=int, default=0, help="address space limit in MiB (0: none)")
    parser.add_argument("--max-processes", type=int, default=0, help="RLIMIT_NPROC (0: unchanged)")
    parser.add_argument("--no-new-processes", action="store_true", help="threads only, no child process")
    parser.add_argument("--threads", type=int, default=1, help="BLAS/OpenMP threads (0: unchanged)")
    parser.add_argument("--preload", default="", help="modules to import first, comma-separated")
    parser.add_argument("--no-debugger", action="store_true", help="hide debugpy from the kernel")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the kernel command")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no kernel command after --")

    if args.memory_mb > 0:
        limit(resource.RLIMIT_DATA, args.memory_mb * 1024 * 1024)
    if args.address_space_mb > 0:
        limit(resource.RLIMIT_AS, args.address_space_mb * 1024 * 1024)
    if args.max_processes > 0:
        limit(resource.RLIMIT_NPROC, args.max_processes)
    limit(resource.RLIMIT_CORE, 0)
    confine.join_new_session_keyring()  # the grader's (its login's: Kerberos tickets...) is out of reach
    confine.forbid_new_user_namespaces(new_processes=not args.no_new_processes)  # for the kernel and its processes
    confine.fixed_mmap_threshold()  # a call's memory, measured from outside, sees its large arrays
    confine.one_malloc_arena()  # threads reserve no memory of their own (limits measure what the kernel uses)
    if args.threads > 0:
        for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
            os.environ[name] = str(args.threads)
    module = python_module(command)
    if not args.preload or module is None:
        os.execvp(command[0], command)
    if args.no_debugger:
        sys.modules["debugpy"] = None  # `import debugpy` now fails: ipykernel's debugger is not available
    for name in filter(None, args.preload.split(",")):
        importlib.import_module(name)
    if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
        sys.path[0] = os.getcwd()  # what `python -m` puts first, not this wrapper's folder
    sys.argv = [command[0], *command[3:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


def python_module(command: list[str]) -> str | None:
    """MODULE when ``command`` is ``<this python> -m MODULE ...`` (what a kernel spec runs), else None."""
    if len(command) >= 3 and command[1] == "-m" and os.path.realpath(command[0]) == os.path.realpath(sys.executable):
        return command[2]
    return None


if __name__ == "__main__":
    main(sys.argv[1:])
