"""Judging one test cell here, in the grader's process: its names taken from the notebook as proxies, its
verdict, and what the verdict writes into the graded notebook.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import dataclasses
import functools
import io
import math
import types
import warnings

import nbformat
import numpy as np

from .kernel.kernel_client import CallTimedOut, KernelGone, OutputLimit, StudentKernel
from .kernel.remote_calls import Budget, RemoteFunction
from .kernel.wire import decode

MAX_MESSAGE = 2000  # characters of a test cell's verdict


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


def verdict_outputs(verdict: Verdict) -> list:
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
