"""A trusted re-check of every graded answer, with the student's code in another process.

nbgrader runs the tests in the same kernel as the student's code, so that code can tamper with the
tests (patch numpy or the checks, install IPython transformers that rewrite later cells, return
objects that claim to equal anything). This module grades the same test cells again with the
roles separated:

* the student's notebook (every cell except the test cells) runs in a **sandboxed kernel** in which
  the course package is replaced by a copy without the reference implementations of the graded
  functions (so an answer cannot call or copy them from there);
* the test cells of the instructor's notebook (hidden tests included) run **here, in the grader's
  own process**, with the real checks; every name they use from the student's notebook is a proxy:
  a student function is called remotely on inputs sent as plain data, and whatever it returns comes
  back as plain data (numbers, strings, numpy arrays of numbers, lists, tuples, dicts). Nothing the
  student wrote runs in this process, and nothing the tests send gives away their verdicts.

A test cell counts only if it passes both in nbgrader and here. Tampering with the kernel can only
break the student's own answers.
"""
from __future__ import annotations

import ast
import atexit
import base64
import builtins
import contextlib
import dataclasses
import functools
import importlib
import io
import json
import os
import queue
import shutil
import tempfile
import textwrap
import warnings
from pathlib import Path

import nbformat
import numpy as np

from sandbox import REPO, SandboxedSyncKernelManager

REPLY_MARK = "__HM_REPLY__"
CELL_TIMEOUT = 60
CALL_TIMEOUT = 60


# ------------------------------------------------------------------ plain data on the wire
def encode(value, depth: int = 0):
    """Plain data only: numbers, strings, None, numpy arrays of numbers/bools, lists, tuples, dicts."""
    if depth > 20:
        raise ValueError("nested too deep")
    if value is None or type(value) in (bool, int, float, str):
        return value
    if isinstance(value, np.generic) and type(value).__module__ == "numpy":
        return {"__scalar__": value.dtype.str, "v": value.item()}
    if type(value) is np.ndarray:
        if value.dtype.kind not in "biufc":
            return {"__unsupported__": f"numpy array of dtype {value.dtype}"}
        buffer = io.BytesIO()
        np.save(buffer, value, allow_pickle=False)
        return {"__nd__": base64.b64encode(buffer.getvalue()).decode("ascii")}
    if type(value) in (list, tuple):
        return {"__seq__": type(value).__name__, "items": [encode(v, depth + 1) for v in value]}
    if type(value) is dict and all(type(k) is str for k in value):
        return {"__dict__": {k: encode(v, depth + 1) for k, v in value.items()}}
    return {"__unsupported__": type(value).__name__}


class Unsupported:
    """Stands for a value that cannot travel as plain data (an object of the student's own class...)."""

    def __init__(self, type_name: str):
        self.type_name = type_name

    def __repr__(self) -> str:
        return f"<a {self.type_name} object>"


def decode(value):
    if not isinstance(value, dict):
        return value
    if "__nd__" in value:
        array = np.load(io.BytesIO(base64.b64decode(value["__nd__"])), allow_pickle=False)
        return np.array(array, copy=True)
    if "__scalar__" in value:
        return np.dtype(value["__scalar__"]).type(value["v"])
    if "__seq__" in value:
        items = [decode(v) for v in value["items"]]
        return tuple(items) if value["__seq__"] == "tuple" else items
    if "__dict__" in value:
        return {k: decode(v) for k, v in value["__dict__"].items()}
    if "__unsupported__" in value:
        return Unsupported(str(value["__unsupported__"]))
    raise ValueError("malformed value")


# ------------------------------------------------------------------ the harness inside the student's kernel
# Defined after the student's cells ran. Tampering with it only breaks the student's own answers:
# whatever it sends back is checked here as plain data.
HARNESS = textwrap.dedent('''
    def __hm_rpc(request_json):
        import base64 as _b64, io as _io, json as _json, warnings as _warnings, tracemalloc as _tm
        import numpy as _np

        def _encode(value, depth=0):
            if depth > 20:
                return {"__unsupported__": "deeply nested data"}
            if value is None or type(value) in (bool, int, float, str):
                return value
            if isinstance(value, _np.generic) and type(value).__module__ == "numpy":
                return {"__scalar__": value.dtype.str, "v": value.item()}
            if type(value) is _np.ndarray:
                if value.dtype.kind not in "biufc":
                    return {"__unsupported__": "numpy array of dtype %s" % value.dtype}
                buffer = _io.BytesIO()
                _np.save(buffer, value, allow_pickle=False)
                return {"__nd__": _b64.b64encode(buffer.getvalue()).decode("ascii")}
            if type(value) in (list, tuple):
                return {"__seq__": type(value).__name__, "items": [_encode(v, depth + 1) for v in value]}
            if type(value) is dict and all(type(k) is str for k in value):
                return {"__dict__": {k: _encode(v, depth + 1) for k, v in value.items()}}
            return {"__unsupported__": type(value).__name__}

        def _decode(value):
            if not isinstance(value, dict):
                return value
            if "__nd__" in value:
                return _np.load(_io.BytesIO(_b64.b64decode(value["__nd__"])), allow_pickle=False)
            if "__scalar__" in value:
                return _np.dtype(value["__scalar__"]).type(value["v"])
            if "__seq__" in value:
                items = [_decode(v) for v in value["items"]]
                return tuple(items) if value["__seq__"] == "tuple" else items
            if "__dict__" in value:
                return {k: _decode(v) for k, v in value["__dict__"].items()}
            return None

        request = _json.loads(request_json)
        reply = {}
        namespace = globals()
        if request["op"] == "describe":
            name = request["name"]
            if name not in namespace:
                reply["kind"] = "missing"
            else:
                obj = namespace[name]
                if type(obj).__name__ == "module":
                    reply.update(kind="module", module=getattr(obj, "__name__", ""))
                elif callable(obj):
                    reply["kind"] = "callable"
                else:
                    reply.update(kind="value", value=_encode(obj))
        elif request["op"] == "call":
            args = [_decode(a) for a in request["args"]]
            kwargs = {k: _decode(v) for k, v in request["kwargs"].items()}
            before = [a.copy() if type(a) is _np.ndarray else None for a in args]
            with _warnings.catch_warnings(record=True) as caught:
                _warnings.simplefilter("always")
                if request.get("trace_memory"):
                    _tm.start()
                try:
                    with _np.errstate(divide="warn", over="warn", invalid="warn", under="ignore"):
                        result = namespace[request["name"]](*args, **kwargs)
                    reply["result"] = _encode(result)
                except BaseException as error:
                    reply["error"] = [type(error).__name__, str(error)[:2000]]
                finally:
                    if request.get("trace_memory"):
                        reply["peak_bytes"] = _tm.get_traced_memory()[1]
                        _tm.stop()
            reply["warnings"] = [[w.category.__name__, str(w.message)[:500]] for w in caught[:20]]
            reply["mutated"] = {str(i): _encode(a) for i, (a, b) in enumerate(zip(args, before))
                                if b is not None and not _np.array_equal(a, b, equal_nan=True)}
        print("__HM_REPLY__" + _json.dumps(reply))
''')


# ------------------------------------------------------------------ the package without its reference implementations
def graded_functions(source: nbformat.NotebookNode) -> set[str]:
    """The functions whose reference implementations the re-check removes: those the assignment's answer
    cells define, except any that the reference solutions themselves build on (an exercise may be
    allowed to call the course's version of an earlier one, e.g. ``hm.attention_mask``)."""
    defined, used = set(), set()
    for cell in source.cells:
        if cell.get("metadata", {}).get("nbgrader", {}).get("solution") and cell.cell_type == "code":
            try:
                tree = ast.parse(cell.source)
            except SyntaxError:
                continue
            defined |= {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
            used |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
            used |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    return defined - _with_dependencies(used)


@functools.lru_cache(maxsize=1)
def _package_calls() -> dict[str, frozenset[str]]:
    """For each function defined in the course package, the names its body uses (read once per process)."""
    calls: dict[str, set[str]] = {}
    for path in (REPO / "heads_and_masks").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                called = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
                called |= {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
                calls.setdefault(node.name, set()).update(called)
    return {name: frozenset(names) for name, names in calls.items()}


def _with_dependencies(names: set[str]) -> set[str]:
    """``names`` and every package function they call, directly or not (by name, from the source)."""
    calls = _package_calls()
    closure, frontier = set(names), list(names)
    while frontier:
        for callee in calls.get(frontier.pop(), ()):
            if callee not in closure:
                closure.add(callee)
                frontier.append(callee)
    return closure


def stub_package(into: Path, removed: set[str]) -> Path:
    """A copy of the course package in which the ``@reference`` functions named in ``removed`` only raise.

    The student's kernel imports this copy during the re-check: widgets, helpers and the reference
    implementations an exercise may build on keep working, but the reference implementations of the
    graded functions (and their source) are not there to be called or copied.
    """
    target = into / "heads_and_masks"
    shutil.copytree(REPO / "heads_and_masks", target, ignore=shutil.ignore_patterns("__pycache__"))
    for path in target.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        changed = False
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in removed and any(
                    (isinstance(d, ast.Name) and d.id == "reference") for d in node.decorator_list):
                message = (f"{node.name}: the course's reference implementation is not available to graded "
                           "answers (write your own code)")
                node.body = [ast.parse(f"raise RuntimeError({message!r})").body[0]]
                changed = True
        if changed:
            path.write_text(ast.unparse(tree) + "\n", encoding="utf-8")
    for path in [into, *into.rglob("*")]:  # readable by the unprivileged kernel user
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    return target


@functools.lru_cache(maxsize=None)
def shared_stub_package(removed: frozenset[str]) -> Path:
    """``stub_package`` made once per process for each set of removed functions, then reused.

    A grading worker re-checks one student after another of the same assignment: building the stub
    once saves its copy for every later student. The kernels bind it read-only and run as another
    user, so no submission can change what the next one imports. Removed when the process exits.
    """
    scratch = Path(tempfile.mkdtemp(prefix="hm-stub-"))
    atexit.register(shutil.rmtree, scratch, True)
    return stub_package(scratch, set(removed))


# ------------------------------------------------------------------ talking to the student's kernel
class StudentKernel:
    """A sandboxed kernel running the student's notebook, and calls into it."""

    def __init__(self, workdir: Path, package_stub: Path):
        self.manager = SandboxedSyncKernelManager(kernel_name="python3")
        self.manager.package_override = str(package_stub)
        self.manager.start_kernel(cwd=str(workdir))
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)

    def run(self, code: str, timeout: float) -> tuple[str, str | None]:
        """Execute code; return (stdout text, error name or None). Interrupt it after ``timeout``."""
        stdout: list[str] = []
        error: list[str] = []

        def on_output(message):
            content = message["content"]
            if message["msg_type"] == "stream" and content.get("name") == "stdout":
                stdout.append(content["text"])
            elif message["msg_type"] == "error":
                error.append(content.get("ename", "Error"))

        try:
            reply = self.client.execute_interactive(code, timeout=timeout, output_hook=on_output,
                                                    store_history=False, allow_stdin=False)
            if reply["content"].get("status") == "error" and not error:
                error.append(reply["content"].get("ename", "Error"))
        except TimeoutError:
            self.manager.interrupt_kernel()
            with contextlib.suppress(Exception):
                self.client.get_shell_msg(timeout=10)
            return "".join(stdout), "Timeout"
        except (RuntimeError, queue.Empty):
            return "".join(stdout), "KernelDied"
        return "".join(stdout), (error[0] if error else None)

    def request(self, payload: dict, timeout: float = CALL_TIMEOUT) -> dict:
        if not self.manager.is_alive():
            raise RuntimeError("the kernel running your notebook has died")
        out, failure = self.run(f"__hm_rpc({json.dumps(json.dumps(payload))})", timeout)
        if failure == "Timeout":
            raise TimeoutError(f"your code did not finish within {timeout:.0f} seconds")
        replies = [line[len(REPLY_MARK):] for line in out.splitlines() if line.startswith(REPLY_MARK)]
        if not replies:
            raise RuntimeError("no answer came back from your notebook's kernel"
                               + (f" ({failure})" if failure else ""))
        reply = json.loads(replies[-1])
        if not isinstance(reply, dict):
            raise RuntimeError("a malformed answer came back from your notebook's kernel")
        return reply

    def shutdown(self) -> None:
        with contextlib.suppress(Exception):
            self.client.stop_channels()
        with contextlib.suppress(Exception):
            self.manager.shutdown_kernel(now=True)


def _exception_class(name: str) -> type[BaseException]:
    candidate = getattr(builtins, name, None)
    if isinstance(candidate, type) and issubclass(candidate, Exception):
        return candidate
    return type(name, (RuntimeError,), {})


def _warning_class(name: str) -> type[Warning]:
    candidate = getattr(builtins, name, None)
    if isinstance(candidate, type) and issubclass(candidate, Warning):
        return candidate
    return UserWarning


class RemoteFunction:
    """Calls the student's function in its own kernel, on plain data, and returns plain data."""

    def __init__(self, kernel: StudentKernel, name: str):
        self.kernel, self.name, self.__name__ = kernel, name, name
        self.last_peak_bytes = None

    def __repr__(self) -> str:
        return f"<your function {self.name}>"

    def __call__(self, *args, **kwargs):
        payload = {"op": "call", "name": self.name, "args": [encode(a) for a in args],
                   "kwargs": {k: encode(v) for k, v in kwargs.items()},
                   "trace_memory": bool(getattr(self, "trace_memory", False))}
        reply = self.kernel.request(payload)
        self.last_peak_bytes = reply.get("peak_bytes")
        for category, message in reply.get("warnings", []) or []:
            warnings.warn(str(message), _warning_class(str(category)), stacklevel=2)
        for index, value in (reply.get("mutated") or {}).items():  # mirror in-place changes on our copies
            index = int(index)
            if index < len(args) and type(args[index]) is np.ndarray:
                new = decode(value)
                if type(new) is np.ndarray and new.shape == args[index].shape:
                    args[index][...] = new
                else:
                    args[index][...] = np.nan
        if "error" in reply:
            name, message = reply["error"]
            raise _exception_class(str(name))(str(message))
        return decode(reply.get("result"))


# ------------------------------------------------------------------ re-checking the test cells here
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


@dataclasses.dataclass
class CellVerdict:
    grade_id: str
    passed: bool
    message: str = ""


def _resolve(kernel: StudentKernel, name: str):
    reply = kernel.request({"op": "describe", "name": name})
    kind = reply.get("kind")
    if kind == "callable":
        return RemoteFunction(kernel, name)
    if kind == "module":
        module = str(reply.get("module", ""))
        return importlib.import_module(module)  # our own copy of the module, not the student's
    if kind == "value":
        return decode(reply.get("value"))
    raise NameError(f"name '{name}' is not defined in your notebook")


def verify_notebook(source: nbformat.NotebookNode, submitted: nbformat.NotebookNode,
                    workdir: Path) -> dict[str, CellVerdict]:
    """Re-check every test cell of ``source`` against the answers in ``submitted``."""
    test_cells = [c for c in source.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade")
                  and c.cell_type == "code"]
    test_ids = {c.metadata["nbgrader"]["grade_id"] for c in test_cells}
    verdicts: dict[str, CellVerdict] = {}
    package = shared_stub_package(frozenset(graded_functions(source)))
    kernel = StudentKernel(workdir, package)
    try:
        for cell in submitted.cells:
            if cell.get("cell_type") != "code":
                continue
            if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") in test_ids:
                continue
            _, failure = kernel.run(cell.source, CELL_TIMEOUT)
            if failure == "KernelDied" or not kernel.manager.is_alive():
                break
        kernel.run(HARNESS, 30)
        for cell in test_cells:
            grade_id = cell.metadata["nbgrader"]["grade_id"]
            verdicts[grade_id] = _check_cell(kernel, grade_id, cell.source)
    finally:
        kernel.shutdown()
    return verdicts


def _check_cell(kernel: StudentKernel, grade_id: str, source: str) -> CellVerdict:
    code = source.replace("### BEGIN HIDDEN TESTS", "").replace("### END HIDDEN TESTS", "")
    try:
        names = _free_names(code)
    except SyntaxError as error:
        return CellVerdict(grade_id, False, f"the test cell does not parse: {error}")
    namespace: dict = {"__name__": "__hm_verify__"}
    printed = io.StringIO()
    try:
        for name in names:
            namespace[name] = _resolve(kernel, name)
        with contextlib.redirect_stdout(printed), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            exec(compile(code, f"<test cell {grade_id}>", "exec"), namespace)  # noqa: S102 (our own test code)
    except Exception as error:  # noqa: BLE001 - every failure is a verdict
        return CellVerdict(grade_id, False, f"{type(error).__name__}: {error}")
    return CellVerdict(grade_id, True, printed.getvalue()[-500:])


def trusted_scores(scores: dict[str, float], verdicts: dict[str, CellVerdict]) -> dict[str, float]:
    """nbgrader's score of each test cell, kept only where the trusted re-check passed too."""
    return {grade_id: (score if verdicts.get(grade_id) and verdicts[grade_id].passed else 0.0)
            for grade_id, score in scores.items()}
