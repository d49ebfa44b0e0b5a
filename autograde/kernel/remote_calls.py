"""A student's function called from a test cell: remotely, in its kernel, on plain data, under a time budget."""

from __future__ import annotations

import builtins
import time
import warnings

import numpy as np

from ..inside.harness import MAX_ERROR, MAX_WARNING, MAX_WARNINGS, encode
from .kernel_client import CallTimedOut, StudentKernel
from .wire import decode


def _exception_class(name: str) -> type[BaseException]:
    if name == "ReferenceUsedError":  # the stub of a course reference was called (stub_package)
        from heads_and_masks._guard import ReferenceUsedError

        return ReferenceUsedError
    candidate = getattr(builtins, name, None)
    if isinstance(candidate, type) and issubclass(candidate, Exception) and not issubclass(candidate, Warning):
        return candidate
    return type(name if name.isidentifier() else "Error", (RuntimeError,), {})


def _warning_class(name: str) -> type[Warning]:
    candidate = getattr(builtins, name, None)
    if isinstance(candidate, type) and issubclass(candidate, Warning):
        return candidate
    return UserWarning


class Budget:
    """The time a submission may still use, and the functions that already ran out of it."""

    def __init__(self, seconds: float, per_call: float):
        self.deadline = time.monotonic() + seconds
        self.per_call = per_call
        self.hung: set[str] = set()

    def next_limit(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 1:
            raise CallTimedOut("the time for grading this notebook ran out before this test")
        return min(self.per_call, left)


class RemoteFunction:
    """Calls the student's function in its own kernel, on plain data, and returns plain data.

    Every call is made, and measured, the same way: its arguments travel in the request, and the grader
    reads how far the kernel's memory grew during it from outside the kernel (``MemoryMeter``: the
    kernel's cgroup, or its processes in /proc), never from code in the kernel. So nothing in the kernel
    can tell a call whose memory a check grades from any other; ``last_peak_bytes`` holds the growth
    of the last call (None where it could not be measured).
    """

    def __init__(self, kernel: StudentKernel, name: str, budget: Budget):
        self.kernel, self.name, self.__name__, self.budget = kernel, name, name, budget
        self.last_peak_bytes = None

    def __repr__(self) -> str:
        return f"<your function {self.name}>"

    def __call__(self, *args, **kwargs):
        if self.name in self.budget.hung:
            raise CallTimedOut(
                f"`{self.name}` did not finish within {self.budget.per_call:.0f} seconds in an "
                "earlier test, so it was not called again"
            )
        payload = {
            "op": "call",
            "name": self.name,
            "args": [encode(a) for a in args],
            "kwargs": {k: encode(v) for k, v in kwargs.items()},
        }
        self.last_peak_bytes = None
        meter = self.kernel.memory_meter()
        try:
            limit = self.budget.next_limit()
            meter.start()
            reply = self.kernel.request(payload, limit)
            self.last_peak_bytes = meter.growth()
        except CallTimedOut:
            self.budget.hung.add(self.name)
            raise
        for category, message in (reply.get("warnings") or [])[:MAX_WARNINGS]:
            warnings.warn(str(message)[:MAX_WARNING], _warning_class(str(category)), stacklevel=2)
        mutated = reply.get("mutated") or {}
        for index, value in mutated.items() if isinstance(mutated, dict) else []:  # mirror in-place changes
            index = int(index) if str(index).isdigit() else -1
            if 0 <= index < len(args) and type(args[index]) is np.ndarray:
                new = decode(value)
                if type(new) is np.ndarray and new.shape == args[index].shape:
                    args[index][...] = new
                else:
                    args[index][...] = np.nan if args[index].dtype.kind == "f" else 0
        if "error" in reply:
            name, message = (list(reply["error"]) + ["", ""])[:2]
            raise _exception_class(str(name)[:100])(str(message)[:MAX_ERROR])
        return decode(reply.get("result"))
