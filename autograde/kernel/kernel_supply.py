"""The grading kernels of one worker: a fresh kernel per submission, the next one booting meanwhile."""

from __future__ import annotations

import concurrent.futures

from .kernel_client import StudentKernel


class KernelSupply:
    """The grading kernels of one worker: a fresh sandboxed kernel per submission, the next one booting
    while the current one is graded.

        with KernelSupply() as kernels:       # once per worker process, around its submissions
            ...                               # the Judge takes each submission's kernel from it
        kernels.take(memory_mb, cpu_seconds)  # (what the Judge calls) a new kernel, ready

    A kernel is never reused: every ``take`` hands out one that has run nothing yet, and starts the
    next one (own uid, own sandbox, own cgroups, the limits asked for) at once, so that its start-up
    and imports overlap the grading of this submission. A spare started with other limits is thrown
    away, never handed out. Outside a ``with`` block the Judge starts each kernel when it needs it.
    """

    def __init__(self, prestart: bool = True):
        self.prestart = prestart
        self.spare: StudentKernel | None = None
        self.no_spare_once = False  # the next take is the worker's last one expected (``last_one``)
        self._outer: KernelSupply | None = None
        self._retiring: concurrent.futures.ThreadPoolExecutor | None = None  # shuts down used kernels

    def take(self, memory_mb: int = 2048, cpu_seconds: int = 900, assignment: str | None = None) -> StudentKernel:
        kernel, self.spare = self.spare, None
        if kernel is not None and (
            kernel.limits != (memory_mb, cpu_seconds)
            or kernel.assignment != assignment
            or not kernel.manager.is_alive()
        ):
            kernel.shutdown()
            kernel = None
        if kernel is None:
            kernel = StudentKernel(memory_mb, cpu_seconds, assignment=assignment, connect=False)
        if self.prestart and not self.no_spare_once:
            try:
                self.spare = StudentKernel(memory_mb, cpu_seconds, assignment=assignment, connect=False)
            except Exception:  # noqa: BLE001 - no spare: the next take starts its own (and says why)
                self.spare = None
        self.no_spare_once = False
        try:
            return kernel.connect()
        except BaseException:
            kernel.shutdown()
            raise

    def prepare(self, memory_mb: int = 2048, cpu_seconds: int = 900, assignment: str | None = None) -> None:
        """Start the spare now, for a worker about to grade: its first ``take`` finds a kernel booting
        since then, not one it must wait for from the start (the limits its submissions will ask for:
        ``kernel_limits``) and the assignment they are of."""
        if self.prestart and self.spare is None:
            try:
                self.spare = StudentKernel(memory_mb, cpu_seconds, assignment=assignment, connect=False)
            except Exception:  # noqa: BLE001 - no spare: the first take starts its own (and says why)
                self.spare = None

    def last_one(self) -> None:
        """The next ``take`` is for the last submission this worker expects: no spare after it (a spare
        nobody takes costs a kernel's start-up, about 0.4 s of CPU, next to the last submissions)."""
        self.no_spare_once = True

    def retire(self, kernel: StudentKernel) -> None:
        """Done with ``kernel``: it is killed at once, and the rest of its shutdown (waiting until its processes
        have ended, removing its socket folder and cgroups: 35-140 ms) goes on in the background while the
        worker grades on. Outside a worker's supply, all of it now."""
        if not self.prestart:
            kernel.shutdown()
            return
        kernel.kill()
        if self._retiring is None:
            self._retiring = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="retire-kernels")
        self._retiring.submit(kernel.shutdown)

    def close(self) -> None:
        spare, self.spare = self.spare, None
        if spare is not None:
            spare.shutdown()
        retiring, self._retiring = self._retiring, None
        if retiring is not None:
            retiring.shutdown(wait=True)  # every kernel it was given is gone

    def __enter__(self) -> "KernelSupply":
        global _SUPPLY
        self._outer, _SUPPLY = _SUPPLY, self
        return self

    def __exit__(self, *exc) -> None:
        global _SUPPLY
        _SUPPLY = self._outer
        self.close()


_SUPPLY: KernelSupply | None = None  # the supply of the ``with KernelSupply()`` block we are in


def kernel_supply() -> KernelSupply:
    """Where the Judge takes its kernels: the worker's supply, or a kernel started on demand."""
    return _SUPPLY or KernelSupply(prestart=False)
