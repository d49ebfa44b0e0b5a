"""What a grading kernel can import of the course package computes no graded answer (a capability, not a list).

For every assignment, a real sandboxed grading kernel of that assignment (the grading path's own
``kernel_client.StudentKernel``, with the package ``kernel_package.build`` made for it) walks everything it can
reach in the course package: every module it can import, every attribute of those modules, of the classes,
functions (their globals, closures, defaults, wrapped functions), objects and containers found there. It
calls every callable on random valid inputs of every graded function (the registry of references,
``heads_and_masks._guard.references``), and on inputs one simple step away (an argument dropped or added,
the last one repeated, an integer off by one, an array with its last two axes swapped), and reports each callable whose output
reproduces the graded function's reference output on every draw. None may.

Also here: the allowlist is what the notebooks' own cells use (allowlist.NOTEBOOK_NAMES), and a helper
that answers a graded exercise, once a kernel can reach it, is found (the walk is not blind).
"""

from __future__ import annotations

import ast
import base64
import json
import pickle

import numpy as np
import pytest
from course import require_sandbox, student_notebook

from autograde.kernel import allowlist, kernel_package
from heads_and_masks._guard import references

DRAWS = 3  # a callable answers a graded function when it reproduces it on every draw


def _causal(n):
    return np.tril(np.ones((n, n), bool))


def _cases(rng) -> dict[str, list[tuple]]:
    """Valid inputs of every graded function, drawn from ``rng``: {name: [positional arguments of each case]}
    (with and without a mask where the mask is optional, batched and not where both are valid)."""
    n, d = int(rng.integers(4, 9)), int(rng.integers(2, 6))
    b, h = int(rng.integers(1, 3)), 2
    width = h * d

    def a(*shape):
        return rng.normal(size=shape)

    lengths = rng.integers(1, n + 1, size=b)
    probabilities = rng.random((b, h, n, n))
    probabilities /= probabilities.sum(axis=-1, keepdims=True)
    mha = (a(b, n, width), *(a(width, width) for _ in range(4)), h)
    gqa = (a(b, 4, n, d), a(b, 2, n, d), a(b, 2, n, d))
    return {
        "attention": [(a(b, n, d), a(b, n, d), a(b, n, d), _causal(n)), (a(n, d), a(n, d), a(n, d))],
        "attention_weights": [(a(b, n, d), a(b, n, d), _causal(n)), (a(n, d), a(n, d))],
        "masked_softmax": [(a(b, n, n), _causal(n)), (a(n, n), _causal(n))],
        "row_entropy_bits": [(probabilities,)],
        "split_heads": [(a(b, n, width), h)],
        "merge_heads": [(a(b, h, n, d),)],
        "mha_cost": [(n, width * 8, h)],
        "multi_head_attention": [(*mha, _causal(n)), mha],
        "grouped_query_attention": [(*gqa, _causal(n)), gqa],
        "kv_cache_bytes": [tuple(int(x) for x in rng.integers(2, 40, size=6))],
        "causal_mask": [(n,)],
        "padding_mask": [(lengths, n)],
        "sliding_window_mask": [(n, int(rng.integers(2, n)))],
        "attention_mask": [(lengths, n, True, int(rng.integers(2, n)))],
        "causal_used_entries": [(n,)],
        "causal_used_fraction": [(n,)],
        "tile_kinds": [(n * 3, int(rng.integers(2, 5)))],
        "tiled_computed_entries": [(n * 3, int(rng.integers(2, 5)))],
        "full_causal_attention": [(a(n, d), a(n, d), a(n, d))],
        "blocked_causal_attention": [(a(n, d), a(n, d), a(n, d), int(rng.integers(2, 4)))],
        "batched_attention": [(a(b, n, d), a(b, n, d), a(b, n, d), lengths, True, None)],
        "retrieval_heads": [(n, int(rng.integers(2, 5)))],
        "winning_rate": [(int(rng.integers(4, 32)), float(rng.uniform(0.5, 2)), 8, 200, int(rng.integers(100)))],
        "win_probability": [(int(rng.integers(4, 32)), float(rng.uniform(0.5, 2)), float(rng.uniform(0.5, 2)), 7)],
        "exact_winning_rate": [(int(rng.integers(4, 32)), float(rng.uniform(0.5, 2)), 8)],
        "bank_partial_sums": [(np.array([4, 8]), 4, 20, int(rng.integers(100)))],
        "decode_step": [(a(b, h, 2, d), a(b, h, 2, d), a(b, h, 2, d), a(b, h, n, d), a(b, h, n, d))],
        "bottom_right_causal_mask": [(int(rng.integers(1, n)), n)],
        "rolling_cache_write": [(a(b, 4, d), a(b, 2, d), int(rng.integers(0, 20)))],
        "sinks_window_mask": [(n, int(rng.integers(2, n)), int(rng.integers(1, 3)))],
        "document_mask": [(np.sort(rng.integers(0, 3, size=(b, n)), axis=-1),)],
        "mixed_cache_bytes": [tuple(int(x) for x in rng.integers(2, 40, size=8))],
        "attention_backward": [
            (a(n, d), a(n, d), a(n, d), _causal(n), a(n, d)),
            (a(n, d), a(n, d), a(n, d), None, a(n, d)),
        ],
        "rule_weights": [(probabilities,)],
    }


def graded_cases(draws: int = DRAWS, seed: int = 36) -> list[tuple[str, list[tuple], list]]:
    """[(graded name, [arguments of each draw], [its reference output of each draw])], one entry per case."""
    import importlib

    registry = references()
    drawn = [_cases(np.random.default_rng([seed, i])) for i in range(draws)]
    cases = []
    for name, ref in sorted(registry.items()):
        function = getattr(importlib.import_module(ref.module), name)
        for case in range(len(drawn[0][name])):
            arguments = [draw[name][case] for draw in drawn]
            cases.append((name, arguments, [function(*args) for args in arguments]))
    return cases


# The probe, run in the kernel: walks the course package it can import, calls what it finds.
PROBE = r"""
def __hm_probe(blob):
    import base64, builtins, contextlib, functools, importlib, io, json, pickle, pkgutil, signal, sys, types
    import warnings
    import numpy as np
    import heads_and_masks

    cases = pickle.loads(base64.b64decode(blob))
    ours = lambda obj: (getattr(obj, "__module__", None) or type(obj).__module__ or "").startswith("heads_and_masks")
    modules = [heads_and_masks]
    for info in pkgutil.walk_packages(heads_and_masks.__path__, "heads_and_masks.", onerror=lambda name: None):
        try:
            modules.append(importlib.import_module(info.name))
        except BaseException:
            pass
    seen, found, queue = set(), {}, [(m.__name__, m) for m in modules]
    while queue:
        path, obj = queue.pop()
        if id(obj) in seen or len(seen) > 50000:
            continue
        seen.add(id(obj))
        children = []
        if isinstance(obj, types.ModuleType):
            if obj.__name__.startswith("heads_and_masks"):
                children = list(vars(obj).items())
        elif isinstance(obj, dict):
            children = [(repr(k)[:40], v) for k, v in list(obj.items())[:500]]
        elif isinstance(obj, (list, tuple, set, frozenset)):
            children = [(str(i), v) for i, v in enumerate(list(obj)[:500])]
        elif isinstance(obj, (staticmethod, classmethod)):
            children = [("__func__", obj.__func__)]
        elif isinstance(obj, property):
            children = [(k, getattr(obj, k)) for k in ("fget", "fset", "fdel") if getattr(obj, k)]
        elif isinstance(obj, functools.partial):
            children = [("func", obj.func), ("args", obj.args), ("keywords", obj.keywords)]
        elif isinstance(obj, types.MethodType):
            children = [("__func__", obj.__func__), ("__self__", obj.__self__)]
        elif ours(obj):
            if callable(obj):
                found.setdefault(id(obj), (path, obj))
            if isinstance(obj, type):
                children = list(vars(obj).items())
            else:
                for attribute in ("__globals__", "__closure__", "__defaults__", "__kwdefaults__", "__wrapped__"):
                    value = getattr(obj, attribute, None)
                    if attribute == "__closure__" and value:
                        value = [c.cell_contents for c in value if c.cell_contents is not None]
                    if value is not None:
                        children.append((attribute, value))
                if not isinstance(obj, types.FunctionType):
                    children.append(("__class__", type(obj)))
                    children += list(getattr(obj, "__dict__", {}).items())
        queue += [(f"{path}.{name}", child) for name, child in children]

    def same(out, expected):
        if isinstance(expected, tuple):
            return isinstance(out, tuple) and len(out) == len(expected) and all(map(same, out, expected))
        if isinstance(expected, np.ndarray) or isinstance(out, np.ndarray):
            try:
                out = np.asarray(out)
                return out.shape == np.shape(expected) and out.dtype.kind in "biuf" and np.allclose(
                    out, expected, equal_nan=True)
            except Exception:
                return False
        return type(out) in (int, float, bool, np.int64, np.float64) and bool(np.isclose(out, expected))

    def matches(out, expected):
        swapped = lambda x: np.swapaxes(x, -1, -2) if isinstance(x, np.ndarray) and x.ndim >= 2 else x
        return (same(out, expected) or same(swapped(out), expected)
                or (isinstance(out, tuple) and len(out) > 0 and same(out[0], expected)))

    def variants(args):
        yield "as given", args
        yield "last argument dropped", args[:-1]
        for extra in (None, True, False, 0, 1):
            yield f"with {extra!r} added", args + (extra,)
        if args:
            yield "last argument repeated", args + args[-1:]
        for i, value in enumerate(args):
            if type(value) is int:
                for step in (-1, 1):
                    yield f"argument {i} {step:+d}", args[:i] + (value + step,) + args[i + 1:]
            if isinstance(value, np.ndarray) and value.ndim >= 2:
                yield f"argument {i} transposed", args[:i] + (np.swapaxes(value, -1, -2),) + args[i + 1:]

    class Slow(BaseException):
        pass

    def alarm(*_):
        raise Slow()

    signal.signal(signal.SIGALRM, alarm)

    def call(function, args):
        signal.setitimer(signal.ITIMER_REAL, 2.0)
        try:
            with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                return function(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    answers = []
    for path, function in sorted(found.values(), key=lambda item: item[0]):
        for name, draws, expected in cases:
            for label, _ in variants(draws[0]):
                try:
                    hits = all(matches(call(function, dict(variants(args))[label]), want)
                               for args, want in zip(draws, expected))
                except BaseException:
                    hits = False
                if hits:
                    answers.append([path, name, label])
                    break
    names = sorted({path for path, _ in found.values()})
    builtins.print("__HM_PROBE__" + json.dumps({"callables": names, "answers": answers}), flush=True)
"""


def probe(kernel, cases) -> dict:
    """Run the probe in ``kernel`` (a kernel_client.StudentKernel) on ``cases``; what it found."""
    blob = base64.b64encode(pickle.dumps(cases)).decode("ascii")
    run = kernel.run(PROBE + f"\n__hm_probe({blob!r})\n", timeout=600)
    lines = [line for line in run.stdout.splitlines() if line.startswith("__HM_PROBE__")]
    assert lines, f"the probe reported nothing ({run.error}): {run.outputs[-3:]}"
    return json.loads(lines[-1][len("__HM_PROBE__") :])


@pytest.fixture(scope="module")
def cases():
    return graded_cases()


def _kernel(assignment):
    from autograde.kernel.kernel_client import StudentKernel

    require_sandbox()
    return StudentKernel(1024, 900, assignment=assignment)


@pytest.mark.slow
@pytest.mark.parametrize("assignment", [None, *allowlist.assignments()])
def test_nothing_a_grading_kernel_can_reach_answers_a_graded_exercise(assignment, cases):
    kernel = _kernel(assignment)
    try:
        found = probe(kernel, cases)
    finally:
        kernel.shutdown()
    assert len(found["callables"]) >= 15, f"the walk found too little to prove anything: {found['callables']}"
    assert not found["answers"], (
        f"callables of the {assignment} kernel that answer graded exercises: {found['answers']}"
    )


def test_every_graded_function_has_inputs():
    assert set(_cases(np.random.default_rng(0))) == set(references()), "a graded function has no inputs here"


@pytest.mark.slow
def test_a_helper_that_answers_is_found_once_a_kernel_can_reach_it(cases, monkeypatch, tmp_path):
    """The same walk, on a kernel whose allowlist was given helpers that answer (one named, one only needed by a
    named function, one a default argument): each is found (before issue 36 these were in every kernel)."""
    from autograde.kernel import kernel_client, stub_package

    names = {module: dict(table) for module, table in allowlist.NOTEBOOK_NAMES.items()}
    names["00_start_here"]["heads_and_masks.training"] = ("attention_backward_slow",)
    names["00_start_here"]["heads_and_masks.generation"] = ("top_left_causal_mask",)
    monkeypatch.setattr(allowlist, "NOTEBOOK_NAMES", names)
    monkeypatch.setattr(allowlist, "WITHHELD", {})
    package = stub_package.stub_package(tmp_path / "00_start_here", "00_start_here")
    monkeypatch.setattr(kernel_client, "shared_stub_package", lambda assignment=None: package)
    kernel = _kernel("00_start_here")
    try:
        found = probe(kernel, cases)
    finally:
        kernel.shutdown()
    answered = {(path.rsplit(".", 1)[-1].strip("'"), name) for path, name, _ in found["answers"]}
    assert ("attention_backward_slow", "attention_backward") in answered, found["answers"]
    assert ("top_left_causal_mask", "causal_mask") in answered, found["answers"]


# ------------------------------------------------------------------ the allowlist is what the notebooks use
def _used_by_cells(assignment: str) -> set[str]:
    """``module.name`` of every name of the course package the notebook's non-test code cells import or read."""
    used, aliases = set(), {}
    for cell in student_notebook(assignment).cells:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell.cell_type != "code" or (meta.get("grade") and not meta.get("solution")):
            continue  # test cells run in the grader
        tree = ast.parse(cell.source)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("heads_and_masks"):
                        aliases[alias.asname or alias.name] = alias.name
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("heads_and_masks"):
                for alias in node.names:
                    used.add(f"{node.module}.{alias.name}")
                    aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
                used.add(f"{aliases[node.value.id]}.{node.attr}")
    return used


@pytest.mark.parametrize("assignment", allowlist.assignments())
def test_the_allowlist_is_what_the_notebooks_cells_use(assignment):
    listed = {f"{m}.{n}" for m, names in allowlist.NOTEBOOK_NAMES[assignment].items() for n in names}
    common = {f"{m}.{n}" for m, names in allowlist.EVERY_KERNEL.items() for n in names}
    graded = {f"{ref.module}.{name}" for name, ref in references().items()} | {
        f"heads_and_masks.{name}" for name in references()
    }
    used = _used_by_cells(assignment)
    assert listed <= used, f"listed for {assignment} but used by none of its cells: {sorted(listed - used)}"
    left = used - listed - common - graded - set(allowlist.WITHHELD)
    assert not left, f"{assignment}'s cells use names its kernel does not have: {sorted(left)}"


def test_an_assignment_without_an_allowlist_is_refused(tmp_path):
    with pytest.raises(ValueError, match="no allowlist of the course package for the assignment '99_new'"):
        kernel_package.build(tmp_path, "99_new")
