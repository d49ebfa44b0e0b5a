"""float32 in, float32 out: the reference implementations and the worked solutions keep the float type of
their inputs, and the checks accept an answer whatever float type it returns (the contract fixes values,
not dtypes)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from course import solution_notebook
from einops import rearrange

import heads_and_masks as hm
from heads_and_masks.checks import heads as heads_checks
from heads_and_masks.checks import kv_heads as kv_checks
from heads_and_masks.checks import start_here as start_checks

R = np.random.default_rng(0)


def _inputs(dtype, *shapes):
    return [R.normal(size=shape).astype(dtype) for shape in shapes]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_references_keep_the_float_type(dtype):
    q, k, v = _inputs(dtype, (2, 3, 5, 8), (2, 3, 5, 8), (2, 3, 5, 4))
    causal = np.tril(np.ones((5, 5), bool))
    assert hm.attention(q, k, v).dtype == dtype
    assert hm.attention(q, k, v, causal).dtype == dtype
    assert hm.attention_weights(q, k, causal, temperature=np.float64(2.0)).dtype == dtype
    assert hm.masked_softmax(q @ np.swapaxes(k, -1, -2), causal).dtype == dtype
    x, *weights = _inputs(dtype, (2, 5, 8), (8, 8), (8, 8), (8, 8), (8, 8))
    assert hm.multi_head_attention(x, *weights, 2).dtype == dtype
    assert hm.multi_head_attention(x, *weights, 4, causal).dtype == dtype
    q, k, v = _inputs(dtype, (1, 6, 5, 8), (1, 2, 5, 8), (1, 2, 5, 8))
    assert hm.grouped_query_attention(q, k, v, causal).dtype == dtype


def _solution_functions(assignment, names, namespace):
    """Define the worked solutions' functions (and any given cell they use) in ``namespace``."""
    for cell in solution_notebook(assignment).cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and (meta.get("solution") or meta.get("grade_id", "").startswith("given_")):
            exec(re.sub(r"(?m)^\s*### (BEGIN|END) SOLUTION\s*$", "", cell.source), namespace)
    return [namespace[name] for name in names]


def test_the_worked_solutions_keep_float32():
    namespace = {"np": np, "rearrange": rearrange, "hm": hm}
    (attention,) = _solution_functions("00_start_here", ["attention"], dict(namespace))
    q, k, v = _inputs(np.float32, (3, 4, 8), (3, 4, 8), (3, 4, 2))
    assert attention(q, k, v).dtype == attention(q, k, v, np.tril(np.ones((4, 4), bool))).dtype == np.float32
    mha, split, merge = _solution_functions(
        "01_heads", ["multi_head_attention", "split_heads", "merge_heads"], dict(namespace)
    )
    x, *weights = _inputs(np.float32, (2, 5, 8), (8, 8), (8, 8), (8, 8), (8, 8))
    assert mha(x, *weights, 2).dtype == np.float32
    assert merge(split(x, 2)).dtype == np.float32
    (gqa,) = _solution_functions("06_kv_heads", ["grouped_query_attention"], dict(namespace))
    q, k, v = _inputs(np.float32, (1, 4, 5, 8), (1, 2, 5, 8), (1, 2, 5, 8))
    assert gqa(q, k, v).dtype == np.float32


def _attention_in(dtype):
    """A correct attention that returns its result in ``dtype``, whatever it was given."""

    def attention(q, k, v, mask=None):
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
        allowed = np.broadcast_to(True if mask is None else mask, scores.shape)
        top = np.where(allowed, scores, -np.inf).max(axis=-1, keepdims=True)
        e = np.where(allowed, np.exp(np.where(allowed, scores - np.where(np.isfinite(top), top, 0.0), 0.0)), 0.0)
        total = e.sum(axis=-1, keepdims=True)
        return (np.divide(e, total, out=np.zeros_like(e), where=total > 0) @ v).astype(dtype)

    return attention


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.longdouble])
def test_checks_accept_any_float_type(dtype, capsys):
    attention = _attention_in(dtype)
    start_checks.check_attention(attention, seed=1, thorough=True)

    def mha(x, w_q, w_k, w_v, w_o, h, mask=None):
        q, k, v = (rearrange(x @ w, "b n (h d) -> b h n d", h=h) for w in (w_q, w_k, w_v))
        return (rearrange(attention(q, k, v, mask), "b h n d -> b n (h d)") @ w_o).astype(dtype)

    heads_checks.check_multi_head_attention(mha, seed=1, thorough=True)
    heads_checks.check_multi_head_attention_masked(mha, seed=1, thorough=True)

    def gqa(q, k, v, mask=None):
        h, g = q.shape[1], k.shape[1]
        if h % g:
            raise ValueError("h must be divisible by g")
        return attention(q, np.repeat(k, h // g, axis=1), np.repeat(v, h // g, axis=1), mask)

    kv_checks.check_grouped_query_attention(gqa, seed=1, thorough=True)
    kv_checks.check_grouped_query_attention_masks(gqa, seed=1, thorough=True)
    assert "✓" in capsys.readouterr().out
