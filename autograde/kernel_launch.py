"""Start a grading kernel under resource limits: ``python kernel_launch.py [options] -- KERNEL COMMAND...``.

Every kernel that grades a student's notebook is started through this wrapper (see
``sandbox.SandboxedKernelManager``). It sets the limits on its own process and then *replaces
itself* with the kernel command (``os.execvp``), so the kernel keeps the process id, the signals
and the limits, and nothing of the wrapper is left running.

    --memory-mb N    the most memory the kernel may allocate (RLIMIT_DATA: heap and anonymous
                     mappings, which is where numpy arrays live). An allocation beyond it fails
                     with MemoryError inside the student's cell instead of taking the machine down.
    --max-processes  how many processes the grading user may have (RLIMIT_NPROC), 0 = unchanged
    --threads N      BLAS/OpenMP threads of the kernel (parallel grading: one kernel per core)

Core dumps are switched off (a segfaulting submission must not write a core file of the
kernel's memory into the course folder).
"""
from __future__ import annotations

import argparse
import os
import resource
import sys


def limit(which: int, value: int) -> None:
    """Lower both the soft and the hard limit (the kernel cannot raise them again)."""
    soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value))


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memory-mb", type=int, default=0, help="memory limit in MiB (0: none)")
    parser.add_argument("--max-processes", type=int, default=0, help="RLIMIT_NPROC (0: unchanged)")
    parser.add_argument("--threads", type=int, default=1, help="BLAS/OpenMP threads (0: unchanged)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the kernel command")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no kernel command after --")

    if args.memory_mb > 0:
        limit(resource.RLIMIT_DATA, args.memory_mb * 1024 * 1024)
    if args.max_processes > 0:
        limit(resource.RLIMIT_NPROC, args.max_processes)
    limit(resource.RLIMIT_CORE, 0)
    if args.threads > 0:
        for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
            os.environ[name] = str(args.threads)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv[1:])
