"""A student's grading kernel as the grader sees it: started in its sandbox, talked to, ended.

:class:`StudentKernel` starts a sandboxed kernel (``kernel_manager.SandboxedKernelManager``) with the stub package of
its assignment, runs cells in it under a time limit and the output bounds (``bounds.py``), and sends it the
judge's requests; the harness that answers them in the kernel is ``inside/harness.py`` (:data:`HARNESS`).
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import queue
import time

import zmq

from ..inside.harness import REPLY_MARK, REQUEST_KEY
from .kernel_manager import SandboxedKernelManager
from .resources import MemoryMeter
from .sandbox import INSIDE
from .stub_package import shared_stub_package

MAX_TEXT = 4000  # characters of a student cell's printed output kept in the autograded notebook
MAX_MESSAGE_BYTES = 16 * 2**20  # the largest message a kernel may send the grader
RECEIVE_QUEUE = 8  # messages of a kernel queued in the grader, unread (ZeroMQ's high-water mark; default 1000)
MAX_STDOUT = 8 * 2**20  # characters of a run's stdout the grader keeps (the last ones: a reply is the last line)
# Characters of output a notebook's kernel may send the grader over its whole grading (its cells, and the
# calls of its functions, replies included: bounds.py). An honest notebook of the course sends at most
# 1.2 MB (04, measured); past the limit the kernel is ended, and the notebook's grading with it.
MAX_KERNEL_OUTPUT = 64 * 2**20
TOO_LARGE = f"it sent a message larger than {MAX_MESSAGE_BYTES // 2**20} MiB (one printed line, for example)"


# ------------------------------------------------------------------ the harness inside the student's kernel
# Defined after the student's cells ran. Tampering with it only breaks the student's own answers:
# whatever it sends back is checked here as plain data.
HARNESS_FILE = INSIDE / "harness.py"
# The code that defines it in a kernel. The harness runs in a namespace of its own, where no name of the
# student's can shadow one of its own (the builtins it uses here are taken from their module for the same
# reason); the notebook gets one name, ``__hm_rpc``, that answers requests about the notebook's names.
_HARNESS_SOURCE = HARNESS_FILE.read_text(encoding="utf-8")
_HARNESS_NAME = str(HARNESS_FILE.relative_to(INSIDE.parents[1]))  # autograde/inside/harness.py, in tracebacks
HARNESS = "\n".join(
    [
        "__hm_harness = {'__name__': 'heads_and_masks_harness'}",
        f"__import__('builtins').exec(__import__('builtins').compile({_HARNESS_SOURCE!r}, {_HARNESS_NAME!r}, 'exec'),"
        " __hm_harness)",
        "__hm_rpc = __hm_harness['answerer'](__import__('builtins').globals())",
        "del __hm_harness",
    ]
)


# ------------------------------------------------------------------ talking to the student's kernel
class GradingStopped(BaseException):
    """The grader stopped the student's code: its time ran out, or its kernel is gone.

    A BaseException on purpose. The checks turn a learner's crash into words by catching Exception
    ("raised TypeError: ..."); a stop is not the learner's exception and must pass through them to
    ``judge_cell``, which records it as a status ("timed out", "kernel died"), never as a misconception
    such as "does not raise ValueError".
    """


class CallTimedOut(GradingStopped):
    """A call into the kernel, or the notebook's whole time, ran out."""


class KernelGone(GradingStopped):
    """The kernel died, or is stuck in code it cannot be interrupted from."""


class OutputLimit(GradingStopped):
    """The kernel sent more output than the grader takes (bounds.py): it was ended."""


@dataclasses.dataclass
class CellRun:
    outputs: list[dict]
    error: str | None = None  # exception name, "Timeout", "KernelDied", or "OutputLimit" (the kernel was ended)
    stdout: str = ""


class _Tail:
    """The last ``limit`` characters (about) of what a kernel printed, in the pieces it came in."""

    def __init__(self, limit: int):
        self.limit, self.size, self.pieces = limit, 0, collections.deque()

    def append(self, text: str) -> None:
        self.pieces.append(text)
        self.size += len(text)
        while self.size > self.limit and len(self.pieces) > 1:
            self.size -= len(self.pieces.popleft())

    def text(self) -> str:
        return "".join(self.pieces)


class StudentKernel:
    """A sandboxed kernel running the student's notebook, and calls into it.

    Made in two steps, so that a kernel can boot while another submission is graded (``KernelSupply``):
    the constructor starts the process (numpy and the stub package are imported in it before the kernel
    listens: ``PRELOAD``), :meth:`connect` waits until it answers and seals its socket folder.
    """

    def __init__(
        self, memory_mb: int = 2048, cpu_seconds: int = 900, *, assignment: str | None = None, connect: bool = True
    ):
        self.limits = (memory_mb, cpu_seconds)
        self.assignment = assignment  # whose allowlist of the course package it imports (allowlist.py)
        self.usable = False
        self.client = None
        self.meter: MemoryMeter | None = None
        self.received = 0  # characters of output the kernel sent the grader so far (MAX_KERNEL_OUTPUT)
        self.over_limit = ""  # which output bound it passed, in words, once it did (the kernel is then ended)
        self.monitors: list = []  # events of the grader's sockets to the kernel (a dropped connection)
        self.manager = SandboxedKernelManager(kernel_name="python3")
        self.manager.package = shared_stub_package(assignment)
        self.manager.memory_mb = memory_mb
        own = kernel_memory(assignment)  # what the assignment's tests rely on a kernel not holding
        self.manager.address_space_mb, self.manager.cgroup_mb = own.address_space_mb, own.cgroup_mb
        self.manager.cpu_seconds = cpu_seconds
        self.manager.preload = PRELOAD
        self.manager.start_kernel()  # returns once the process is spawned; it boots on its own
        if connect:
            self.connect()

    def connect(self) -> "StudentKernel":
        """Wait until the kernel answers (at most a minute), then make its socket folder read-only."""
        # The grader decodes every message the kernel sends: one over MAX_MESSAGE_BYTES drops the
        # connection (the student's own call then times out) instead of filling the grader's memory.
        context = zmq.Context()
        context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
        # What the kernel sends faster than the grader reads waits in the kernel's queue, in the kernel's memory
        # (its cgroup), not in the grader's: at most RECEIVE_QUEUE messages are queued here.
        context.setsockopt(zmq.RCVHWM, RECEIVE_QUEUE)
        self.client = self.manager.client(context=context)
        self.client.start_channels()
        # A message over MAX_MESSAGE_BYTES drops the connection it came on, for good: nothing the kernel sends
        # on it arrives after that (every later cell would wait out its time). Its monitor says so at once.
        self.monitors = [
            channel.socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)
            for channel in (self.client.iopub_channel, self.client.shell_channel)
        ]
        self._wait_until_ready(timeout=60)
        self.manager.seal()
        self.usable = True
        return self

    def _wait_until_ready(self, timeout: float) -> None:
        """Until the kernel's iopub channel has carried its ``idle`` status for one of our ``kernel_info``
        requests (proof that our subscription is live, and the last thing the kernel publishes about that
        request: nothing of its start-up is left queued before it), then its reply on the shell channel.
        A request goes out every 0.05 s until then: one sent before the kernel listened, or published
        before our subscription reached it, is not waited for. (jupyter_client's ``wait_for_ready`` ends
        by waiting for 0.2 s of silence on iopub instead: a fifth of a second idle for every submission.)"""
        deadline = time.monotonic() + timeout
        asked: set[str] = set()
        while True:
            asked.add(self.client.kernel_info())
            if self._next(self.client.get_iopub_msg, asked, "status", min(deadline, time.monotonic() + 0.05)):
                break
            if not self.manager.is_alive():
                raise RuntimeError("the kernel died before it answered")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the kernel did not answer within {timeout:.0f} seconds")
        reply = self._next(self.client.get_shell_msg, asked, "kernel_info_reply", deadline)  # sent before the idle
        if reply is None:
            raise RuntimeError("the kernel published its answer but did not send it")
        self.client._handle_kernel_info_reply(reply)  # the protocol version it speaks

    @staticmethod
    def _next(get, requests: set[str], kind: str, until: float) -> dict | None:
        """The next message ``kind`` answering one of ``requests`` (for a status: ``idle``) from ``get``,
        or None at ``until``; the messages before it are dropped."""
        while (left := until - time.monotonic()) > 0:
            try:
                message = get(timeout=left)
            except queue.Empty:
                return None
            if message.get("parent_header", {}).get("msg_id") not in requests or message["msg_type"] != kind:
                continue
            if kind != "status" or message["content"].get("execution_state") == "idle":
                return message
        return None

    def run(self, code: str, timeout: float, silent: bool = False, request: str | None = None) -> CellRun:
        """Execute ``code``; collect its outputs; interrupt it after ``timeout`` seconds.

        ``silent``: as the judge's own calls run, IPython echoes no input, counts no execution and runs
        none of the cell callbacks a notebook may have registered (what it prints still comes back).
        ``request``: a judge's request, sent in the execute_request's content (``REQUEST_KEY``).
        """
        if not self.usable:
            raise KernelGone("the kernel is no longer usable")
        outputs: list[dict] = []
        if self._message_too_large():  # e.g. a reply too large, on the shell channel
            self._end(TOO_LARGE)
            return CellRun(outputs, "OutputLimit")
        stdout = _Tail(MAX_STDOUT)  # a cell printing without end must not fill the grader's memory
        errors: list[str] = []

        def on_output(message):
            kind, content = message["msg_type"], message["content"]
            self.received += _output_size(content)
            if len(outputs) >= 50:  # a flood of output: the rest is dropped (a reply is always the last line)
                if kind == "stream" and content.get("name") == "stdout" and REPLY_MARK in str(content.get("text", "")):
                    stdout.append(str(content.get("text", ""))[-2 * 2**20 :])
                return
            if kind == "stream":
                if content.get("name") == "stdout":
                    stdout.append(str(content.get("text", ""))[-2 * 2**20 :])
                outputs.append(
                    {
                        "output_type": "stream",
                        "name": content.get("name", "stdout"),
                        "text": str(content.get("text", ""))[:MAX_TEXT],
                    }
                )
            elif kind == "error":
                errors.append(str(content.get("ename", "Error"))[:100])
                outputs.append(
                    {
                        "output_type": "error",
                        "ename": str(content.get("ename", "Error"))[:100],
                        "evalue": str(content.get("evalue", ""))[:MAX_TEXT],
                        "traceback": [],
                    }
                )
            elif kind in ("execute_result", "display_data"):
                text = content.get("data", {}).get("text/plain")
                if isinstance(text, str):
                    outputs.append({"output_type": "stream", "name": "stdout", "text": text[:MAX_TEXT] + "\n"})

        # Our own wait (not execute_interactive's): it notices at once when the kernel dies, instead of
        # waiting out the cell's time limit for a reply that will never come.
        content = dict(  # what client.execute sends, and the judge's request beside the code
            code=code, silent=silent, store_history=False, user_expressions={}, allow_stdin=False, stop_on_error=True
        )
        if request is not None:
            content[REQUEST_KEY] = request
        message = self.client.session.msg("execute_request", content)
        self.client.shell_channel.send(message)
        msg_id = message["header"]["msg_id"]
        deadline = time.monotonic() + timeout
        while True:
            try:
                message = self.client.get_iopub_msg(timeout=0.2)
            except queue.Empty:
                if self._message_too_large():
                    self._end(TOO_LARGE)
                    return CellRun(outputs, "OutputLimit", stdout.text())
                if not self.manager.is_alive():
                    self.usable = False
                    return CellRun(outputs, "KernelDied", stdout.text())
                if time.monotonic() > deadline:
                    self._interrupt()
                    return CellRun(outputs, "Timeout", stdout.text())
                continue
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if message["msg_type"] == "status" and message["content"].get("execution_state") == "idle":
                break
            on_output(message)
            if self.received > MAX_KERNEL_OUTPUT:  # cut as it arrives: neither kept nor waited out
                self._end(f"it sent more than {MAX_KERNEL_OUTPUT // 2**20} MiB of output")
                return CellRun(outputs, "OutputLimit", stdout.text())
            if time.monotonic() > deadline:  # a cell that prints without end
                self._interrupt()
                return CellRun(outputs, "Timeout", stdout.text())
        try:  # the reply on the shell channel (its status), briefly
            while True:
                reply = self.client.get_shell_msg(timeout=5)
                if reply.get("parent_header", {}).get("msg_id") == msg_id:
                    if reply["content"].get("status") == "error" and not errors:
                        errors.append(str(reply["content"].get("ename", "Error"))[:100])
                    break
        except queue.Empty:
            pass
        if not self.manager.is_alive():
            self.usable = False
            return CellRun(outputs, "KernelDied", stdout.text())
        return CellRun(outputs, errors[0] if errors else None, stdout.text())

    def _message_too_large(self) -> bool:
        """Whether a connection to the kernel was dropped for a message over MAX_MESSAGE_BYTES: a connection
        dropped while the kernel still answers its heartbeat at once (a kernel that exits, or is being
        killed for its memory, drops its connections too, but answers nothing)."""
        if not any(monitor.poll(0) for monitor in self.monitors):
            return False
        try:
            heartbeat = self.manager.connect_hb()
        except Exception:  # noqa: BLE001 - no heartbeat to ask: the kernel is taken to be gone
            return False
        try:
            heartbeat.send(b"ping")
            return bool(heartbeat.poll(3000))  # the heartbeat is a ZeroMQ device of its own: answers while code runs
        finally:
            heartbeat.close(linger=0)

    def _end(self, why: str) -> None:
        """End the kernel for passing an output bound (``why``, in words: ``over_limit``)."""
        self.over_limit = self.over_limit or why
        self.kill()

    def _interrupt(self) -> None:
        """Interrupt the running code; a kernel that does not come back within 10 s is given up."""
        try:
            self.manager.interrupt_kernel()
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                try:
                    message = self.client.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if message["msg_type"] == "execute_reply":
                    return
        except Exception:  # noqa: BLE001 - any failure here means the kernel is unusable
            pass
        self.usable = False

    def request(self, payload: dict, timeout: float) -> dict:
        if not self.usable or not self.manager.is_alive():
            self.usable = False
            raise KernelGone("the kernel running your notebook has died or is stuck")
        run = self.run("__hm_rpc()", timeout, silent=True, request=json.dumps(payload))
        if run.error == "OutputLimit":
            raise OutputLimit(
                f"your code was stopped while it was tested: {self.over_limit}, the most the grader takes"
            )
        if run.error == "Timeout":
            raise CallTimedOut(f"your code did not finish within {timeout:.0f} seconds")
        if run.error == "KernelDied":
            raise KernelGone(
                "the kernel running your notebook died during this call (a crash such as "
                "os._exit or a segfault, or memory beyond the limit)"
            )
        replies = [line[len(REPLY_MARK) :] for line in run.stdout.splitlines() if line.startswith(REPLY_MARK)]
        if not replies:
            raise RuntimeError(
                "no answer came back from your notebook's kernel" + (f" ({run.error})" if run.error else "")
            )
        reply = json.loads(replies[-1])
        if not isinstance(reply, dict):
            raise RuntimeError("a malformed answer came back from your notebook's kernel")
        return reply

    def memory_meter(self) -> MemoryMeter:
        """The meter of this kernel's memory (one per kernel, made at its first use)."""
        if self.meter is None:
            self.meter = self.manager.memory_meter()
        return self.meter

    def kill(self) -> None:
        """End the kernel now, without waiting for it to be gone (``shutdown`` waits, and cleans up)."""
        self.usable = False
        process = getattr(self.manager.provisioner, "process", None)
        if process is not None:
            with contextlib.suppress(OSError):
                process.kill()

    def shutdown(self) -> None:
        self.usable = False
        if self.meter is not None:
            self.meter.close()
        for monitor in self.monitors:
            with contextlib.suppress(Exception):
                monitor.close(linger=0)
        if self.client is not None:
            with contextlib.suppress(Exception):
                self.client.stop_channels()
        with contextlib.suppress(Exception):
            self.manager.shutdown_kernel(now=True)


def _output_size(content: dict) -> int:
    """Characters of output in a message's content (its text, error and data), counted without copying them."""
    size = 0
    for field in ("text", "evalue", "ename"):
        value = content.get(field)
        size += len(value) if isinstance(value, str) else 0
    traceback = content.get("traceback")
    if isinstance(traceback, list):
        size += sum(len(line) for line in traceback if isinstance(line, str))
    data = content.get("data")
    if isinstance(data, dict):
        size += sum(len(value) if isinstance(value, str) else len(str(value)) for value in data.values())
    return size


# What every grading kernel imports before it listens (``kernel_launch.py --preload``): what the
# notebooks' first cell imports anyway, paid while the previous submission is graded. Never
# anything of a student's: a kernel is started before it is given a submission.
PRELOAD = ("numpy", "heads_and_masks")


@dataclasses.dataclass(frozen=True)
class KernelMemory:
    """The memory of an assignment's grading kernels, where a test relies on what a kernel *cannot* hold (MiB).

    A measurement of a call sees what the call adds, not what the kernel held before it: memory held by an
    earlier cell and given back as the call starts (a *ballast*) hides whatever the call builds in its place. A
    limit on the kernel's total does not care when the memory was taken: at a size whose whole score matrix is
    larger than the limit, no ballast makes room for it. 0: the usual limit (``memory_mb``), or none.
    """

    data_mb: int = 0  # RLIMIT_DATA: private memory (a MemoryError in the cell)
    address_space_mb: int = 0  # RLIMIT_AS: every mapping, shared ones too (which RLIMIT_DATA does not count)
    cgroup_mb: int = 0  # as root, the memory cgroup: every page the kernel's processes hold (0: data + 256)


# 04's count and memory tests call blocked_causal_attention at n = 16384, whose whole score matrix is 2 GiB in
# float64 (1 GiB in float32, and every causal score packed in float32 still 512 MiB) while a strip of 64 × 16384
# scores is 8 MiB. A kernel of 04 holds about 150 MiB of
# private memory before any call (VmData: Python, numpy, ipykernel) and 206 MiB of address space (one malloc
# arena: confine.one_malloc_arena); the correct answers of the catalog peak about 100 MiB beside that, so the
# whole matrix in private memory (RLIMIT_DATA), in any mapping (RLIMIT_AS) or, as root, in any page the kernel
# holds (its cgroup, above RLIMIT_DATA's reach so that private memory ends in a MemoryError, not a killed
# kernel) does not fit, whatever was held and given back before the call. Measured with tools/memory_budget.py
# (docs/security.md has the figures and what is left).
KERNEL_MEMORY: dict[str, KernelMemory] = {
    "04_work_fraction": KernelMemory(data_mb=384, address_space_mb=448, cgroup_mb=320),
}


def kernel_memory(assignment: str | None) -> KernelMemory:
    """The memory limits an assignment's kernels get beyond the usual ones (none: ``KernelMemory()``)."""
    return KERNEL_MEMORY.get(assignment or "", KernelMemory())


def kernel_limits(memory_mb: int, budget_seconds: float, assignment: str | None = None) -> tuple[int, int]:
    """The limits of a submission's kernel: its memory (MiB: ``memory_mb``, or less where its assignment's
    grading needs less, ``KERNEL_MEMORY``) and CPU seconds (twice the notebook's time)."""
    own = kernel_memory(assignment).data_mb
    return (min(memory_mb, own) if own else memory_mb), int(budget_seconds * 2)
