"""The judge: runs a submission's code in a sandboxed kernel and every test cell in the grader's process.

nbgrader's own ``Execute`` runs the test cells (hidden tests included) in the same kernel as the
student's code, which can then read them, rewrite them, or fake what they compare. The judge takes
that step's place in ``Autograde.autograde_preprocessors`` and separates the roles:

1. **The student's code runs in a sandboxed kernel** (``sandbox.py``): every code cell of the
   notebook except the test cells, in order, each under a time limit. Of the course package it has
   only the notebook's allowlist (``kernel_package.py``): no graded function, nothing that computes one.
2. **Every test cell runs here, in the grader's process**, with the real checks. Each name a test
   cell takes from the notebook is a proxy: a student function is called remotely on inputs sent as
   plain data (numbers, strings, numeric arrays, lists, tuples, dicts), and its result comes back as
   plain data. Nothing the student wrote runs in this process; neither the source of the hidden
   tests nor the expected values ever enter the kernel.
3. **Hidden inputs come from the instructor's key**: while a test cell runs, the checks' random
   inputs are drawn from ``HMAC(key, submission | seed)`` (``grading_key.py``).
4. **The outputs are the grader's**: a test cell that passed gets the checks' own lines; one that
   failed gets an error with the checks' message. What the student's code printed while it was being
   tested is dropped. Other cells keep only what the student's own cells printed (plain text, cut
   short); cells the instructor wrote get no outputs at all. Every cell's metadata is the release's
   (``adopt_release``): nothing the submission says about a cell reaches the graded notebook.

nbgrader then does the rest as usual (``SaveAutoGrades`` reads those outputs: an error scores 0).

A cell (or a call) that runs past its limit is interrupted; a function that timed out once is not
called again; the whole submission has a time budget. A kernel that dies is named with the cell that
killed it. Each of these is a note for the report (``JudgeReport``), never an abort of the run.
"""

from __future__ import annotations

import ast
import atexit
import base64
import builtins
import collections
import concurrent.futures
import contextlib
import dataclasses
import functools
import hashlib
import io
import json
import math
import os
import queue
import re
import shutil
import tempfile
import time
import types
import warnings
from pathlib import Path

import nbformat
import numpy as np
import zmq
from nbgrader.preprocessors import NbGraderPreprocessor
from nbgrader.utils import is_grade, is_solution
from traitlets import Bytes, Integer, Unicode

from .inside.harness import MAX_DEPTH, MAX_ERROR, MAX_WARNING, MAX_WARNINGS, REPLY_MARK, REQUEST_KEY, encode
from .sandbox import INSIDE, REPO, MemoryMeter, SandboxedKernelManager, sandbox_available

MAX_TEXT = 4000  # characters of a student cell's printed output kept in the autograded notebook
MAX_NOTEBOOK_TEXT = 2**20  # characters of printed output kept for all the student's cells of a notebook
MAX_MESSAGE = 2000  # characters of a test cell's verdict
MAX_MESSAGE_BYTES = 16 * 2**20  # the largest message a kernel may send the grader
RECEIVE_QUEUE = 8  # messages of a kernel queued in the grader, unread (ZeroMQ's high-water mark; default 1000)
MAX_NOTES = 12  # notes the judge keeps for one notebook
MAX_STDOUT = 8 * 2**20  # characters of a run's stdout the grader keeps (the last ones: a reply is the last line)
# Characters of output a notebook's kernel may send the grader over its whole grading (its cells, and the
# calls of its functions, replies included: bounds.py). An honest notebook of the course sends at most
# 1.2 MB (04, measured); past the limit the kernel is ended, and the notebook's grading with it.
MAX_KERNEL_OUTPUT = 64 * 2**20
TOO_LARGE = f"it sent a message larger than {MAX_MESSAGE_BYTES // 2**20} MiB (one printed line, for example)"


# ------------------------------------------------------------------ plain data on the wire
# What the kernel sends is made by the harness's ``encode`` (inside/harness.py), the one the grader sends with.


class Unsupported:
    """Stands for a value that cannot travel as plain data (an object of the student's own class...)."""

    def __init__(self, type_name: str):
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<a {self.type_name} object>"


def decode(value, depth: int = 0):
    """The inverse of :func:`encode`, for data that came from the student's kernel: checked, never trusted."""
    if depth > MAX_DEPTH:
        raise ValueError("nested too deep")
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, list):
        raise ValueError("malformed value")
    if not isinstance(value, dict):
        raise ValueError("malformed value")
    if "__nd__" in value:
        array = np.load(io.BytesIO(base64.b64decode(str(value["__nd__"]))), allow_pickle=False)
        if array.dtype.kind not in "biufc":
            return Unsupported(f"numpy array of dtype {array.dtype}")
        return np.array(array, copy=True)
    if "__scalar__" in value:
        dtype = np.dtype(str(value["__scalar__"]))
        if dtype.kind not in "biufc":
            return Unsupported(f"numpy scalar of dtype {dtype}")
        return dtype.type(value["v"])
    if "__seq__" in value:
        items = [decode(v, depth + 1) for v in value["items"]]
        return tuple(items) if value["__seq__"] == "tuple" else items
    if "__dict__" in value:
        return {str(k): decode(v, depth + 1) for k, v in value["__dict__"].items()}
    if "__unsupported__" in value:
        return Unsupported(str(value["__unsupported__"])[:100])
    raise ValueError("malformed value")


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


# ------------------------------------------------------------------ the package a grading kernel imports
def reference_functions():
    """Every reference implementation of the course package (its registry: ``heads_and_masks._guard.references``)."""
    from heads_and_masks._guard import references

    return references().values()


def stub_package(into: Path, assignment: str | None) -> Path:
    """The course package as a grading kernel of ``assignment`` sees it (``kernel_package.build``): only what
    that notebook's cells use, each reference a function that only raises, the checks empty shells (checks run
    in the grader, never in a kernel). None: what every notebook's kernel has, for a kernel of no notebook."""
    from .kernel_package import build

    return build(into, assignment)


def _stub_label(assignment: str | None) -> str:
    return assignment or "any-notebook"


STUB_ENV = (
    "HEADS_AND_MASKS_STUB_PACKAGE"  # a stub made by the coordinator for its run's assignment, shared by its workers
)


@functools.cache
def shared_stub_package(assignment: str | None = None) -> Path:
    """:func:`stub_package` of ``assignment`` made once (by the coordinator, for all its workers, or else once
    per process and assignment), then bound read-only into every kernel of that assignment."""
    made = os.environ.get(STUB_ENV)
    if made and (Path(made) / "__init__.py").is_file() and Path(made).parent.name == _stub_label(assignment):
        return Path(made)
    scratch = Path(tempfile.mkdtemp(prefix="hm-stub-"))
    os.chmod(scratch, 0o755)
    atexit.register(shutil.rmtree, scratch, True)
    return stub_package(scratch / _stub_label(assignment), assignment)


def stub_fingerprint() -> str:
    """What the stub packages are made from: every file of the course package, this module and the allowlist
    (``kernel_package.py``), which make them. Equal fingerprints, equal stubs."""
    digest = hashlib.sha256(Path(__file__).read_bytes())
    digest.update(Path(__file__).with_name("kernel_package.py").read_bytes())
    package = REPO / "heads_and_masks"
    for path in sorted(p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(b"\0" + str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:20]


_KEPT_STUBS: dict[tuple[str, str], Path] = {}  # (fingerprint, assignment) -> a stub this process made or kept


def kept_stub_package(folder: Path, assignment: str | None = None) -> Path:
    """:func:`stub_package` of ``assignment``, kept in ``folder`` (the course's own runtime folder) from one
    grading run to the next while the course package is unchanged: a run then spends no time importing the
    course package to make it (about 0.5 s of every grading command). Made under a temporary name and renamed
    into place when complete, so a run killed half way never leaves a partial stub to be used."""
    fingerprint, label = stub_fingerprint(), _stub_label(assignment)
    kept = folder / f"stub-{fingerprint}" / label
    if (kept / "heads_and_masks" / "__init__.py").is_file():
        return kept / "heads_and_masks"
    for old in [*folder.glob("stub-*"), *folder.glob(".stub-*")]:  # older course packages, or a killed run's
        if old.name != f"stub-{fingerprint}":
            shutil.rmtree(old, ignore_errors=True)
    shutil.rmtree(kept, ignore_errors=True)  # an incomplete one: never used as it is
    kept.parent.mkdir(exist_ok=True)
    os.chmod(kept.parent, 0o755)
    building = Path(tempfile.mkdtemp(prefix=f".stub-{label}-", dir=folder))
    made = _KEPT_STUBS.get((fingerprint, label))  # by this process for another course: copied, not made again
    if made is not None and (made / "__init__.py").is_file():
        shutil.copytree(made, building / "heads_and_masks")  # (modes kept: readable by the kernels' uids)
        os.chmod(building, 0o755)
    else:
        stub_package(building, assignment)  # (modes: readable by the kernels' own uids)
    try:
        os.rename(building, kept)
    except OSError:  # made meanwhile by another process: use that one
        shutil.rmtree(building, ignore_errors=True)
    _KEPT_STUBS[(fingerprint, label)] = kept / "heads_and_masks"
    return kept / "heads_and_masks"


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
        self.assignment = assignment  # whose allowlist of the course package it imports (kernel_package.py)
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


def kernel_supply() -> KernelSupply:
    """Where the Judge takes its kernels: the worker's supply, or a kernel started on demand."""
    return _SUPPLY or KernelSupply(prestart=False)


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


# ------------------------------------------------------------------ judging the test cells here
def _free_names(source: str) -> list[str]:
    tree = ast.parse(source)
    bound, loaded = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Store):
                bound.add(node.id)
            elif node.id not in loaded:
                loaded.append(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return [n for n in loaded if n not in bound and not hasattr(builtins, n)]


@functools.cache
def grader_names() -> dict[str, object]:
    """Names a test cell may take from the grader instead of the notebook: the checks and numpy."""
    import importlib
    import pkgutil

    from heads_and_masks import checks as checks_package

    every_check: dict[str, object] = {}
    for module in pkgutil.iter_modules(checks_package.__path__, "heads_and_masks.checks."):
        loaded = importlib.import_module(module.name)
        every_check.update({k: v for k, v in vars(loaded).items() if k.startswith("check_") and callable(v)})
    names: dict[str, object] = dict(every_check)
    names.update(np=np, numpy=np, math=math, checks=types.SimpleNamespace(**every_check))
    return names


@dataclasses.dataclass
class Verdict:
    grade_id: str
    passed: bool
    message: str = ""  # what the checks printed (passed) or the failure (failed)
    ename: str = ""
    misconception: str | None = None  # the stable id a failing check named (CheckFailed.misconception)
    answered: bool = True  # False: the exercise still holds its stub ("not written yet")


VERDICT_KEY = "heads_and_masks"  # cell metadata of every graded test cell: the verdict, for the class report


def verdict_metadata(verdict: Verdict) -> dict:
    """What the class report reads from a graded test cell (written by the judge, never by the student)."""
    return {
        "passed": verdict.passed,
        "answered": verdict.answered,
        "misconception": verdict.misconception,
        "failure": verdict.ename or None,
    }


def _resolve(kernel: StudentKernel, name: str, budget: Budget):
    if name in grader_names():
        return grader_names()[name]
    reply = kernel.request({"op": "describe", "name": name}, budget.next_limit())
    kind = reply.get("kind")
    if kind == "callable":
        return RemoteFunction(kernel, name, budget)
    if kind == "value":
        return decode(reply.get("value"))
    if kind == "module":
        raise NameError(f"`{name}` is a module in your notebook; the tests expected a function or a value")
    raise NameError(f"name '{name}' is not defined in your notebook")


def judge_cell(kernel: StudentKernel, grade_id: str, source: str, budget: Budget) -> Verdict:
    """Run one test cell here, with the student's names as proxies; its verdict."""
    from heads_and_masks.checks.core import CheckFailed, failures_raise, take_unwritten

    take_unwritten()
    code = source.replace("### BEGIN HIDDEN TESTS", "").replace("### END HIDDEN TESTS", "")
    try:
        names = _free_names(code)
    except SyntaxError as error:
        return Verdict(grade_id, False, f"the test cell does not parse: {error}", "SyntaxError")
    namespace: dict = {"__name__": "__heads_and_masks_judge__"}
    printed, complaints = io.StringIO(), io.StringIO()
    try:
        for name in names:
            namespace[name] = _resolve(kernel, name, budget)
        # a failing check raises here whatever process this is (in a learner's notebook it would only report)
        with (
            failures_raise(),
            contextlib.redirect_stdout(printed),
            contextlib.redirect_stderr(complaints),
            warnings.catch_warnings(),
        ):
            warnings.simplefilter("ignore")
            exec(compile(code, f"<test cell {grade_id}>", "exec"), namespace)  # noqa: S102 (the instructor's test code)
    except CheckFailed as error:
        return Verdict(grade_id, False, str(error)[:MAX_MESSAGE], "CheckFailed", error.misconception)
    except OutputLimit as error:
        return Verdict(grade_id, False, str(error)[:MAX_MESSAGE], "OutputLimit")
    except KernelGone as error:
        return Verdict(grade_id, False, str(error), "KernelDied")
    except CallTimedOut as error:
        return Verdict(grade_id, False, str(error)[:MAX_MESSAGE], "Timeout")
    except Exception as error:  # noqa: BLE001 - every failure is a verdict
        return Verdict(grade_id, False, f"{type(error).__name__}: {error}"[:MAX_MESSAGE], type(error).__name__)
    if complaints.getvalue().strip():  # a check that wrote to stderr did not pass (e.g. "not written yet")
        return Verdict(
            grade_id, False, complaints.getvalue().strip()[:MAX_MESSAGE], "NotPassed", answered=not take_unwritten()
        )
    return Verdict(grade_id, True, printed.getvalue()[-MAX_MESSAGE:])


def code_fingerprint(cells: list[str]) -> str:
    """What the hidden inputs of a submission are keyed on: the code the student submitted."""
    digest = hashlib.sha256()
    for source in cells:
        digest.update(source.encode("utf-8", "replace") + b"\0")
    return digest.hexdigest()


@dataclasses.dataclass
class JudgeReport:
    """What the judge saw, for the grading report (one per notebook judged)."""

    notes: list[str] = dataclasses.field(default_factory=list)
    status: str | None = None  # "timed out" / "kernel died" when that happened
    verdicts: dict[str, Verdict] = dataclasses.field(default_factory=dict)
    sandboxed: bool = True
    limits: list[str] = dataclasses.field(default_factory=list)  # the bounds it hit, with its cost (bounds.py)


REPORTS: dict[tuple[str, str, str], JudgeReport] = {}  # (assignment, student, notebook) -> report


def as_text(markdown: str) -> str:
    """Markdown that shows ``markdown`` literally: a fenced block (no HTML, no links, no images)."""
    longest = max((len(run) for run in re.findall(r"`+|~+", markdown)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{markdown}\n{fence}"


def _label(cell, index: int) -> str:
    grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
    first = next((line.strip() for line in cell.source.splitlines() if line.strip() and not line.startswith("#")), "")
    return f"`{grade_id}`" if grade_id else f"cell {index + 1} (`{first[:40]}`)"


def _verdict_outputs(verdict: Verdict) -> list:
    if verdict.passed:
        return [nbformat.v4.new_output("stream", name="stdout", text=verdict.message or "✓ passed\n")]
    return [
        nbformat.v4.new_output(
            "error",
            ename=verdict.ename or "CheckFailed",
            evalue=verdict.message,
            traceback=[f"{verdict.ename or 'CheckFailed'}: {verdict.message}"],
        )
    ]


def instructor_tests(source: nbformat.NotebookNode) -> dict[str, str]:
    """grade_id -> source of every test cell of the instructor's notebook (hidden tests included)."""
    return {
        c.metadata["nbgrader"]["grade_id"]: c.source
        for c in source.cells
        if c.cell_type == "code" and is_grade(c) and not is_solution(c)
    }


@dataclasses.dataclass(frozen=True)
class Release:
    """The released notebook's cells by what names them: nbgrader's grade id, else the cell's id.

    A cell of the submission is the instructor's only by that name, never by what it contains: a source
    equal to a released cell's proves nothing (the student can type it anywhere, in a cell of any type)."""

    by_grade_id: dict[str, nbformat.NotebookNode]
    by_cell_id: dict[str, nbformat.NotebookNode]

    @classmethod
    def of(cls, released: nbformat.NotebookNode | None) -> Release:
        cells = released.cells if released is not None else []
        return cls(
            by_grade_id={c.metadata["nbgrader"]["grade_id"]: c for c in cells if _grade_id(c)},
            # a cell with a grade id is named by it alone: nbgrader keeps one copy of each grade id
            by_cell_id={c["id"]: c for c in cells if c.get("id") and not _grade_id(c)},
        )

    def counterpart(self, cell) -> nbformat.NotebookNode | None:
        """The released cell ``cell`` stands for (its grade id, else its cell id), or None: the student's own."""
        if _grade_id(cell) in self.by_grade_id:
            return self.by_grade_id[_grade_id(cell)]
        released = self.by_cell_id.get(cell.get("id"))
        return released if released is not None and not _grade_id(cell) else None


def _grade_id(cell) -> str | None:
    grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
    return grade_id if isinstance(grade_id, str) else None


def _as_released(cell, released) -> bool:
    """Whether ``cell`` is its released counterpart unchanged: the instructor's content, where the instructor put it."""
    return released is not None and cell.cell_type == released.cell_type and cell.source == released.source


def adopt_release(nb: nbformat.NotebookNode, release: Release) -> list[bool]:
    """Give every cell of ``nb`` the metadata the instructor gave it, and show the student's text as text.

    A cell that stands for a released cell (``Release.counterpart``) gets that cell's metadata, all of it:
    nothing the submission says about a cell (nbgrader's flags and points, ``jupyter.source_hidden``,
    ``collapsed``, ``transient``, tags, a verdict) reaches the graded notebook, where the formgrader, the
    instructor's lab and the feedback page act on it. The student's own cells get none. Returns, for each
    cell, whether it is the instructor's content unchanged (shown as it is, with no outputs)."""
    instructors = []
    for cell in nb.cells:
        released = release.counterpart(cell)
        cell.metadata = nbformat.from_dict(json.loads(json.dumps(released.metadata)) if released else {})
        unchanged = _as_released(cell, released)
        instructors.append(unchanged)
        if unchanged and cell.cell_type != "code":  # its pictures too are the instructor's
            cell.pop("attachments", None)
            if "attachments" in released:
                cell.attachments = nbformat.from_dict(json.loads(json.dumps(released.attachments)))
        elif cell.cell_type in ("markdown", "raw"):  # the student's text is shown as text, never as HTML
            if cell.cell_type == "raw":  # nbconvert would put a raw cell into the page as HTML
                cell.cell_type = "markdown"
                for field in ("raw_mimetype", "format"):
                    cell.metadata.pop(field, None)
            cell.source = as_text(cell.source)
            cell.pop("attachments", None)
    return instructors


def judge_notebook(
    nb: nbformat.NotebookNode,
    *,
    tests_source: dict[str, str],
    key: bytes | None,
    context: str,
    release: Release,
    cell_timeout: float = 60,
    budget_seconds: float = 480,
    memory_mb: int = 2048,
    assignment: str | None = None,
    language: str | None = None,
) -> JudgeReport:
    """Judge ``nb`` (a submitted notebook after nbgrader's sanitizing) in place.

    Which cells are tests, and what they run, comes from the instructor's notebook (``tests_source``),
    never from the submission's metadata: a cell with a test's grade id is judged here with the
    instructor's source; every other code cell is the student's and runs in the kernel, whatever its
    metadata says. Every cell's metadata is the release's (``adopt_release``); a cell that is its released
    counterpart unchanged is the instructor's and gets no outputs in the graded notebook. The tests run in
    ``language`` (``submission_language``): their messages are the student's language, their verdicts the same.
    """
    from heads_and_masks import i18n
    from heads_and_masks.checks.core import secret_inputs

    report = JudgeReport(sandboxed=sandbox_available()[0])
    instructors = adopt_release(nb, release)
    tests = []
    for index, cell in enumerate(nb.cells):
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id in tests_source:
            if cell.cell_type != "code" or cell.source != tests_source[grade_id]:
                cell.cell_type, cell.source = "code", tests_source[grade_id]
                cell.setdefault("outputs", [])
                cell.setdefault("execution_count", None)
            tests.append((index, cell))
    test_indices = {i for i, _ in tests}
    budget = Budget(budget_seconds, cell_timeout)
    shown = 0  # characters of the student's printed output kept so far
    stopped = ""  # why grading stopped at an output bound (the kernel was ended): no test runs after it
    kernel = None
    try:
        memory_mb, cpu_seconds = kernel_limits(memory_mb, budget_seconds, assignment)
        kernel = kernel_supply().take(memory_mb, cpu_seconds, assignment)
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code" or index in test_indices:
                continue
            cell.outputs = []
            try:
                limit = budget.next_limit()
            except CallTimedOut:
                report.status = "timed out"
                report.notes.append(
                    f"the time for this notebook ({budget_seconds:g} s) ran out at {_label(cell, index)}"
                )
                report.limits.append(f"time: the notebook's {budget_seconds:g} s ran out at {_label(cell, index)}")
                break
            run = kernel.run(cell.source, min(limit, cell_timeout))
            if not instructors[index]:  # the student's own code: keep what it printed
                kept = run.outputs[:20]
                size = sum(len(o.get("text", "")) + len(o.get("evalue", "")) for o in kept)
                if shown + size > MAX_NOTEBOOK_TEXT:  # many cells that print: the graded notebook stays small
                    if shown <= MAX_NOTEBOOK_TEXT:
                        report.notes.append(
                            f"the notebook printed more than {MAX_NOTEBOOK_TEXT // 2**20} MiB: what "
                            f"{_label(cell, index)} and the cells after it printed is not kept"
                        )
                    kept, size = [], MAX_NOTEBOOK_TEXT + 1
                shown += size
                cell.outputs = [nbformat.from_dict(o) for o in kept]
            if run.error == "Timeout":
                report.status = "timed out"
                report.notes.append(
                    f"{_label(cell, index)} ran longer than {min(limit, cell_timeout):g} s and was "
                    "stopped; the other cells were graded"
                )
                if not kernel.usable:
                    report.notes.append("the kernel could not be interrupted: the cells after it were not run")
                    break
            elif run.error == "OutputLimit":
                stopped = f"grading stopped at {_label(cell, index)}: {kernel.over_limit}"
                report.notes.append(f"{stopped}, the most the grader takes: the cells after it were not run")
                report.limits.append(f"output: {_label(cell, index)}: {kernel.over_limit}")
                break
            elif run.error == "KernelDied":
                report.status = "kernel died"
                report.notes.append(
                    f"the kernel died while running {_label(cell, index)} (a crash such as os._exit "
                    f"or a segfault, or memory beyond {memory_mb} MiB): the cells after it were not run"
                )
                break
            elif run.error == "MemoryError":
                report.notes.append(f"{_label(cell, index)} ran out of memory (the limit is {memory_mb} MiB)")
        if kernel.usable:
            kernel.run(HARNESS, 30)
        secret = secret_inputs(key, context) if key else contextlib.nullcontext()
        # the checks run here, in the grader's process: their messages in the submission's language
        with secret, i18n.use_language(language):
            for index, cell in tests:
                grade_id = cell.metadata["nbgrader"]["grade_id"]
                if stopped:
                    verdict = Verdict(grade_id, False, f"not tested: {stopped}", "OutputLimit")
                else:
                    verdict = judge_cell(kernel, grade_id, tests_source[grade_id], budget)
                report.verdicts[grade_id] = verdict
                cell.outputs = _verdict_outputs(verdict)
                cell.metadata[VERDICT_KEY] = verdict_metadata(verdict)
                cell.execution_count = None
                if verdict.ename == "OutputLimit" and not stopped:
                    stopped = f"grading stopped at `{grade_id}`: {kernel.over_limit}"
                    report.notes.append(f"{stopped}, the most the grader takes: the tests after it were not run")
                    report.limits.append(f"output: `{grade_id}` (a call of your function): {kernel.over_limit}")
                elif verdict.ename == "Timeout":
                    report.status = report.status or "timed out"
                    report.notes.append(f"`{grade_id}`: {verdict.message}")
                elif verdict.ename == "KernelDied" and report.status != "kernel died":
                    report.status = "kernel died"
                    report.notes.append(
                        f"the kernel died while `{grade_id}` was testing your code: {verdict.message}; "
                        "the tests after it could not run"
                    )
    except (Exception, GradingStopped) as error:  # noqa: BLE001 - the kernel could not even start (or died): every test fails, with why
        report.status = report.status or "kernel died"
        report.notes.append(f"the notebook's kernel could not run ({type(error).__name__}: {str(error)[:200]})")
        for index, cell in tests:
            grade_id = cell.metadata["nbgrader"]["grade_id"]
            verdict = report.verdicts.get(grade_id) or Verdict(
                grade_id, False, "the kernel could not run", "KernelDied"
            )
            report.verdicts[grade_id] = verdict
            cell.outputs = _verdict_outputs(verdict)
            cell.metadata[VERDICT_KEY] = verdict_metadata(verdict)
    finally:
        if kernel is not None:
            kernel_supply().retire(kernel)
    if len(report.notes) > MAX_NOTES:  # e.g. a thousand cells that raise MemoryError: one line in the report
        report.notes[MAX_NOTES - 1 :] = [f"and {len(report.notes) - MAX_NOTES + 1} more notes like these"]
    return report


def _read_once(function):
    """``function(path)`` read once per version of the file (path, size, mtime), not once per submission."""
    cached = functools.lru_cache(maxsize=32)(lambda path, size, mtime: function(Path(path)))

    @functools.wraps(function)
    def read(path: Path):
        stat = Path(path).stat()
        return cached(str(path), stat.st_size, stat.st_mtime_ns)

    return read


def submission_language(metadata) -> str:
    """The language a submission is graded in: the one its notebook's metadata names
    (``heads_and_masks.language``, written by tools/translations.py in another language's build) if the course
    has that language, else English. The student wrote that metadata: it only chooses among the course's
    languages (the package's catalogs), so it can name neither a path nor a file, and it never changes what is
    run or what a test gives: only the language of the messages and the release the submission is compared with."""
    from heads_and_masks import i18n

    chosen = metadata.get("heads_and_masks", {}) if isinstance(metadata, dict) else {}
    named = chosen.get("language") if isinstance(chosen, dict) else None
    return named if isinstance(named, str) and named in i18n.course_languages() else i18n.ENGLISH


def language_release(release_directory: Path, language: str) -> Path:
    """Where a language's student notebooks are released from: ``notebooks/`` for English, ``notebooks-ru/``
    beside it for Russian (tools/build_notebooks.py's layout). ``language`` is one of the course's
    (``submission_language``), never the student's text."""
    from heads_and_masks import i18n

    if language == i18n.ENGLISH:
        return release_directory
    return release_directory.with_name(f"{release_directory.name}-{language}")


@_read_once
def _release(path: Path) -> Release:
    return Release.of(nbformat.read(path, as_version=4))  # only read: adopt_release copies what it takes


@_read_once
def _released_metadata(path: Path) -> dict:
    return json.loads(json.dumps(nbformat.read(path, as_version=4).metadata))  # plain data, copied per use below


@_read_once
def _instructor_tests(path: Path) -> dict[str, str]:
    return instructor_tests(nbformat.read(path, as_version=4))


class Judge(NbGraderPreprocessor):
    """nbgrader's execution step, replaced by the judge (``Autograde.autograde_preprocessors``)."""

    timeout = Integer(60, help="seconds for each cell and each call of a student function").tag(config=True)
    budget = Integer(480, help="seconds for a whole notebook, all cells and tests").tag(config=True)
    memory_mb = Integer(2048, help="memory of a grading kernel, MiB").tag(config=True)
    key_file = Unicode("", help="the grading key (grading_key.py); empty: the course's").tag(config=True)
    key = Bytes(b"", help="the grading key itself (a worker's, in memory); empty: key_file's").tag(config=True)
    release_directory = Unicode("", help="where the released notebooks are (absolute)").tag(config=True)
    source_directory = Unicode("", help="where the instructor's notebooks are (absolute)").tag(config=True)

    def preprocess(self, nb, resources):
        from . import grading_key

        info = resources.get("nbgrader", {})
        assignment, student, name = info.get("assignment", ""), info.get("student", ""), info.get("notebook", "")
        root = Path(self.config.CourseDirectory.get("root", REPO))
        key_file = Path(self.key_file) if self.key_file else grading_key.key_path(root)
        key = self.key or grading_key.load_or_create(key_file)  # a worker's is in memory (grade_worker.py)
        source_dir = Path(
            self.source_directory or Path(root) / self.config.CourseDirectory.get("source_directory", "source")
        )
        source = source_dir / assignment / f"{name}.ipynb"
        tests_source = dict(_instructor_tests(source))
        # the submission's language, read before its metadata is replaced: its messages, and its release
        language = submission_language(nb.metadata)
        released = language_release(Path(self.release_directory or root / "notebooks"), language)
        release = released / assignment / f"{name}.ipynb"
        if not release.exists():  # a language not released in this course: the English release's cells, by grade id
            release = Path(self.release_directory or root / "notebooks") / assignment / f"{name}.ipynb"
        if not release.exists():  # (a course that grades from its source alone): the same cells, by the same names
            release = source
        # The graded notebook's own metadata is the instructor's, never the submission's: tools that open it
        # act on it (Jupytext's "formats" pairs and writes files where it says). So is each cell's (adopt_release).
        nb.metadata = nbformat.from_dict(_released_metadata(release))
        code = [
            c.source
            for c in nb.cells
            if c.cell_type == "code" and c.get("metadata", {}).get("nbgrader", {}).get("grade_id") not in tests_source
        ]
        context = f"{assignment}/{name}/{student}/{code_fingerprint(code)}"
        report = judge_notebook(
            nb,
            tests_source=tests_source,
            key=key,
            context=context,
            release=_release(release),
            cell_timeout=self.timeout,
            budget_seconds=self.budget,
            memory_mb=self.memory_mb,
            assignment=assignment,
            language=language,
        )
        REPORTS[(assignment, student, name)] = report
        return nb, resources
