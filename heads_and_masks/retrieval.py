"""Two rules need two heads: fetch the previous token's content and the first token's content.

The toy task of notebook 02. A sequence of n tokens; token t is the vector

    x_t = [ content_t  |  one-hot(t) ]        c content numbers, then n position numbers

and at every position t ≥ 1 we want both ``content_{t-1}`` (rule "previous token") and ``content_0``
(rule "first token"). A head's output is one weighted average of its values, so a single head can only
hand back a *mix* of the two; two heads, one per rule, hand back both, each intact.
"""

from __future__ import annotations

import math

import numpy as np

from ._guard import reference
from ._validate import float_array, whole_number
from .attention import attention_weights, masked_softmax
from .grading import grading_mode
from .masks import causal_mask

SCORE_GAP = 20.0  # how far the wanted key's score leads the others after the 1/sqrt(d) scaling


def token_vectors(contents) -> np.ndarray:
    """(n, c) contents -> (n, c + n) token vectors [content_t | one-hot(t)]."""
    contents = float_array("contents", contents, ndim=2)
    n = contents.shape[0]
    return np.concatenate([contents, np.eye(n)], axis=1)  # (n, c + n)


@reference
def retrieval_heads(n, c):
    """Weights of two heads over x_t = [content_t | one-hot(t)] (used as x @ w), with a causal mask:

    head 0 attends to the previous token, head 1 to the first token, and both hand back the content.
    Returns ``(w_q, w_k, w_v)`` with shapes (2, c + n, n), (2, c + n, n) and (2, c + n, c).
    """
    n = whole_number("sequence length n", n, minimum=1)
    c = whole_number("content size c", c, minimum=1)
    width, d = c + n, n  # queries and keys are one-hot positions: head size d = n
    position = slice(c, c + n)  # the rows of w that read the one-hot position
    lead = SCORE_GAP * math.sqrt(d)  # after the division by sqrt(d) the wanted key leads by SCORE_GAP
    w_q, w_k, w_v = np.zeros((2, width, d)), np.zeros((2, width, d)), np.zeros((2, width, c))

    # keys: every token announces its position, in both heads
    w_k[:, position, :] = np.eye(n)
    # head 0, "previous token": the query of token t asks for position t - 1 (row t, column t - 1)
    w_q[0, position, :] = lead * np.eye(n, k=-1)
    # head 1, "first token": every query asks for position 0
    w_q[1, position, 0] = lead
    # values: both heads hand back the content and ignore the position
    w_v[:, :c, :] = np.eye(c)
    return w_q, w_k, w_v


def head_weights(x, w_q, w_k, causal=True) -> np.ndarray:
    """Attention weights of every head: x (n, D), w_q and w_k (h, D, d) -> (h, n, n), scaled by 1/sqrt(d)."""
    q = np.einsum("nD,hDd->hnd", x, w_q)  # (h, n, d)
    k = np.einsum("nD,hDd->hnd", x, w_k)  # (h, n, d)
    mask = causal_mask(x.shape[0]) if causal else None
    return attention_weights(q, k, mask)  # (h, n, n)


def heads_output(x, w_q, w_k, w_v) -> np.ndarray:
    """The heads' outputs side by side: (n, h * d_v), head 0's columns first (a concatenation)."""
    weights = head_weights(x, w_q, w_k)  # (h, n, n)
    values = np.einsum("nD,hDv->hnv", x, w_v)  # (h, n, d_v)
    out = weights @ values  # (h, n, d_v)
    return np.concatenate(list(out), axis=-1)  # (n, h * d_v)


def wanted_output(contents) -> np.ndarray:
    """What the task asks for at each position t ≥ 1: [content_{t-1} | content_0], shape (n - 1, 2c)."""
    contents = np.asarray(contents, dtype=float)
    return np.concatenate([contents[:-1], np.broadcast_to(contents[0], contents[:-1].shape)], axis=1)


def one_head_mix(previous, first, weight_on_previous):
    """The best a single head can give: one weighted average of the two contents."""
    return weight_on_previous * previous + (1 - weight_on_previous) * first


def linear_recovery(mixed, wanted) -> np.ndarray:
    """Fraction of the variance of each column of ``wanted`` that the best linear readout of ``mixed``
    recovers (least squares with an intercept, the R² of each column): 1 = perfect, 0 = nothing."""
    design = np.concatenate([mixed, np.ones((mixed.shape[0], 1))], axis=1)
    coefficients, *_ = np.linalg.lstsq(design, wanted, rcond=None)
    residual = wanted - design @ coefficients
    return 1 - residual.var(axis=0) / wanted.var(axis=0)


def one_head_recovery(weights_on_previous, c: int = 4, pairs: int = 5000, seed: int = 0):
    """The experiment of notebook 02's section 2: how much of the two wanted contents survives one head.

    ``pairs`` random (previous, first) contents of ``c`` numbers each (``np.random.default_rng(seed)``);
    for each weight ``a`` in ``weights_on_previous`` one head outputs the blend ``a·previous + (1 − a)·first``
    and the best linear readout recovers a fraction of each wanted number's variance (:func:`linear_recovery`).
    Returns ``(previous, first, two_heads)``: per ``a``, the mean fraction recovered of the previous token's
    content and of the first token's; and the mean fraction that two heads (both contents intact) give.

    In grading mode (``heads_and_masks.grading``) nothing is computed: every number is NaN ("not computed",
    as a widget's readouts), since only a picture and a printed line use it.
    """
    weights_on_previous = np.asarray(weights_on_previous, dtype=float)
    if grading_mode():
        nothing = np.full(weights_on_previous.shape, np.nan)
        return nothing, nothing.copy(), math.nan
    previous, first = np.random.default_rng(seed).normal(size=(2, pairs, c))  # (pairs, c) each
    wanted = np.concatenate([previous, first], axis=1)  # (pairs, 2c): what the task asks for
    recovered = np.array([linear_recovery(one_head_mix(previous, first, a), wanted) for a in weights_on_previous])
    two_heads = linear_recovery(wanted, wanted)  # two heads hand back both contents side by side
    return recovered[:, :c].mean(axis=1), recovered[:, c:].mean(axis=1), float(two_heads.mean())


def convex_hull(points) -> np.ndarray:
    """Vertices of the convex hull of 2-D points, counter-clockwise (Andrew's monotone chain)."""
    points = sorted(map(tuple, np.asarray(points, dtype=float)))

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower, upper = [], []
    for p in points:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    for p in reversed(points):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    return np.array(lower[:-1] + upper[:-1])


def inside_hull(points, hull, tolerance=1e-9) -> np.ndarray:
    """For each 2-D point: is it inside (or on) the convex polygon ``hull`` (counter-clockwise)?"""
    points = np.asarray(points, dtype=float)
    edges = np.roll(hull, -1, axis=0) - hull  # (m, 2)
    to_points = points[:, None, :] - hull[None, :, :]  # (p, m, 2)
    cross = edges[None, :, 0] * to_points[..., 1] - edges[None, :, 1] * to_points[..., 0]
    return np.all(cross >= -tolerance, axis=1)


def reachable_outputs(values, samples=3000, seed=0) -> np.ndarray:
    """Outputs of one head for many random weight vectors (softmax of random scores of many sizes)."""
    rng = np.random.default_rng(seed)
    n = values.shape[0]
    scores = rng.normal(size=(samples, n)) * rng.uniform(0.0, 6.0, size=(samples, 1))
    return masked_softmax(scores) @ values  # (samples, 2): every row a convex combination
