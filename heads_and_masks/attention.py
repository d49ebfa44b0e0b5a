"""Scaled dot-product attention, its masked softmax, and the entropy of attention rows.

Conventions of the whole course:

* a mask is boolean, **True = may attend**, broadcastable against the scores ``(..., n_q, n_k)``;
* scores are scaled by ``1/sqrt(d)``, ``d`` being the size of one head;
* a query row with no allowed key gets all-zero weights (so a zero output), never NaN;
* inputs are never modified in place;
* the result has the float type of the inputs (float32 in, float32 out).
"""

from __future__ import annotations

import math

import numpy as np

from ._guard import reference
from ._validate import bool_mask, float_array


@reference
def masked_softmax(scores, mask=None):
    """Softmax over the last axis among the allowed keys.

    Forbidden entries get weight exactly 0 (they are left out of the sum, which is what adding
    -inf to them before softmax means); a row with no allowed key is all zeros. No NaN and no
    warning for any finite scores: the largest *allowed* score is subtracted before ``exp``.
    """
    scores = float_array("scores", scores, min_ndim=1)
    if mask is None:
        allowed = np.ones(scores.shape, dtype=bool)
    else:
        mask = bool_mask("mask", mask)
        try:
            shape = np.broadcast_shapes(scores.shape, mask.shape)
        except ValueError:
            raise ValueError(
                f"mask of shape {mask.shape} does not broadcast against scores of shape {scores.shape}"
            ) from None
        scores, allowed = np.broadcast_to(scores, shape), np.broadcast_to(mask, shape)

    # The row maximum over allowed keys only; rows with none allowed use 0 (they are zeroed below).
    row_max = np.max(np.where(allowed, scores, -np.inf), axis=-1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    with np.errstate(over="ignore"):  # a difference of two huge finite scores may round to -inf: exp gives 0
        shifted = np.where(allowed, scores, row_max) - row_max  # forbidden entries -> 0, never used
    exps = np.where(allowed, np.exp(shifted), 0.0)
    totals = exps.sum(axis=-1, keepdims=True)
    return np.divide(exps, totals, out=np.zeros_like(exps), where=totals > 0)


@reference
def attention(q, k, v, mask=None):
    """softmax(q kᵀ / sqrt(d), masked) v over the last two axes.

    q: (..., n_q, d)   k: (..., n_k, d)   v: (..., n_k, d_v)   mask: broadcastable to (..., n_q, n_k)
    returns (..., n_q, d_v)
    """
    q = float_array("q", q, min_ndim=2)
    k = float_array("k", k, min_ndim=2)
    v = float_array("v", v, min_ndim=2)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must share the head size (last axis): got {q.shape} and {k.shape}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must have as many keys (axis -2): got {k.shape} and {v.shape}")
    d = q.shape[-1]
    # a Python float, not np.sqrt's float64 scalar, which would turn float32 scores into float64
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(d)  # (..., n_q, n_k), the dtype of q and k
    weights = masked_softmax(scores, mask)  # (..., n_q, n_k), rows sum to 1 (or 0)
    return weights @ v  # (..., n_q, d_v)


@reference
def attention_weights(q, k, mask=None, *, scale=True, temperature=1.0):
    """The weight matrix of attention alone (for pictures): softmax(q kᵀ / (sqrt(d)·T), masked)."""
    q = float_array("q", q, min_ndim=2)
    k = float_array("k", k, min_ndim=2)
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    scores = q @ np.swapaxes(k, -1, -2)
    if scale:
        scores = scores / math.sqrt(q.shape[-1])  # Python floats keep float32 scores float32
    return masked_softmax(scores / float(temperature), mask)


@reference
def row_entropy_bits(weights):
    """Entropy of each row of attention weights, in bits (log base 2), with 0·log 0 = 0.

    weights: (..., n_k), each row a probability distribution (or all zeros) -> (...)
    """
    weights = float_array("weights", weights, min_ndim=1)
    if np.any(weights < 0):
        raise ValueError("attention weights cannot be negative")
    positive = weights > 0
    logs = np.log2(np.where(positive, weights, 1.0))  # log of 1 = 0 where the weight is 0
    return 0.0 - np.sum(weights * logs, axis=-1)  # 0.0 - 0.0 is +0.0 (a bare minus gives -0.0)
