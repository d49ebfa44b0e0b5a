"""One mistake, one misconception, whatever the secret draw.

The class report (autograde/class_report.py) counts the misconception ids the checks name. While grading,
every check draws its inputs from the grading key and the submission's code fingerprint
(``heads_and_masks.checks.core.secret_inputs``), so any edit to a notebook changes the draw: a mistake
named with one id on some draws and another (or passed) on others would make the report's counts noise.

Here every wrong catalog answer runs in-process (no nbgrader) through each call of the test cells of the
exercise it breaks, visible and hidden, one call at a time, under secret inputs drawn as the grader draws
them, and must be named alike on every draw. Notebook 03 has its own sweep
(tests/test_causal_mask_checks.py, ``test_a_mistake_is_named_alike_on_every_draw``).
"""

from __future__ import annotations

import ast
import contextlib
import functools
import io

import numpy as np
import pytest
from build_notebooks import read_source
from catalog import catalogs
from course import REPO
from einops import rearrange

import heads_and_masks as hm
from heads_and_masks.checks.core import CheckFailed, secret_inputs

DRAWS = 24
KEY = b"a grading key for the sweep"
SWEPT = [a for a in catalogs() if a != "03_causal_mask"]  # 03: tests/test_causal_mask_checks.py
# Calls left out, with why: the memory check builds n = 2048 attention several times per draw (seconds each),
# and in-process it measures with the tracer, not the way the graded kernel is measured.
LEFT_OUT = ("check_blocked_causal_attention_memory(",)
# Simulation checks of winning_rate run 20 000 trials per call: fewer draws keep this test fast.
FEWER = {("02_why_heads", "winning_rate"): 6}
# A call at a large n (04's hidden count check runs at n = 16384, which its grading kernel cannot hold whole) takes
# seconds per draw for a wrong answer: 24 draws of it at 8192 were 33-48 s per answer (CI run 11). Fewer draws of it;
# the same answer's calls at the visible size keep every draw.
LARGE_N, LARGE_N_DRAWS = 4096, 4
# And it is swept at n = 8192 at most: in this process no kernel limit is there for the size to meet, a wrong
# answer's id comes from the same comparisons (its count, its output) at either size, and a whole score matrix at
# 16384 would be 2 GiB here (at 16384 the sweep of 04 took 135 s, against 63 s at 8192).
SWEPT_N_AT_MOST = 8192


def _at_sweep_size(call: str) -> str:
    """``call`` with its ``n=`` lowered to SWEPT_N_AT_MOST where it is larger."""
    tree = ast.parse(call)
    for keyword in tree.body[0].value.keywords:
        if keyword.arg == "n" and isinstance(keyword.value, ast.Constant) and keyword.value.value > SWEPT_N_AT_MOST:
            keyword.value = ast.Constant(SWEPT_N_AT_MOST)
    return ast.unparse(tree)


def _draws_of(call: str, draws: int) -> int:
    """How many draws a check call gets: fewer when it passes ``n=`` of at least LARGE_N."""
    node = ast.parse(call).body[0].value
    n = next((k.value.value for k in node.keywords if k.arg == "n" and isinstance(k.value, ast.Constant)), 0)
    return min(draws, LARGE_N_DRAWS) if n >= LARGE_N else draws


@functools.cache
def _cells(assignment: str) -> tuple[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]]:
    """(the cells an answer may replace or builds on, in order; the graded test cells), as (grade id, source)."""
    notebook = read_source(REPO / "authoring" / f"{assignment}.py")
    given, tests = [], []
    for cell in notebook.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and "grade_id" in meta:
            (tests if meta.get("grade") else given).append((meta["grade_id"], cell.source))
    return tuple(given), tuple(tests)


def _calls(assignment: str, answer):
    """(label, namespace, source) for each check call of the test cells of the exercise ``answer`` breaks."""
    given, tests = _cells(assignment)
    namespace = {"np": np, "hm": hm, "rearrange": rearrange}
    for grade_id, source in given:
        exec(answer.source(grade_id) if grade_id in answer.cells else source, namespace)
    for grade_id, source in tests:
        if not grade_id.startswith(f"test_{answer.breaks}"):
            continue
        lines = source.splitlines()
        imports = "\n".join(line for line in lines if not line.startswith("check_"))
        for call in (line for line in lines if line.startswith("check_")):
            if not call.startswith(LEFT_OUT):
                yield f"{grade_id}: {call}", namespace, f"{imports}\n{_at_sweep_size(call)}", call


def _named(namespace: dict, source: str, context: str) -> str:
    with secret_inputs(KEY, context), contextlib.redirect_stdout(io.StringIO()):
        try:
            exec(source, dict(namespace))
        except CheckFailed as failure:
            return failure.misconception or "unrecognised"
    return "passed"


CASES = [(a, answer) for a in SWEPT for answer in catalogs()[a] if answer.breaks and not answer.graded_only]


@pytest.mark.parametrize(("assignment", "answer"), CASES, ids=[f"{a[:2]}-{answer.name}" for a, answer in CASES])
def test_a_mistake_is_named_alike_on_every_draw(assignment, answer, capfd):
    draws = FEWER.get((assignment, answer.breaks), DRAWS)
    varying = {}
    for label, namespace, source, call in _calls(assignment, answer):
        named = {}
        for draw in range(_draws_of(call, draws)):
            found = _named(namespace, source, f"{assignment}/catalog-{answer.name}/{draw}")
            named[found] = named.get(found, 0) + 1
        if len(named) > 1:
            varying[label] = named
    capfd.readouterr()
    assert not varying, f"{answer.name}: named differently depending on the draw (id: draws): {varying}"
