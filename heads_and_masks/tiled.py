"""What the causal mask saves, and a tiled causal attention that really saves it.

A naive kernel computes all n² scores and throws the upper triangle away. A FlashAttention-style
kernel walks over tiles of ``block`` queries × ``block`` keys, never computes a tile that lies
entirely above the diagonal, masks inside the diagonal tiles, and keeps a running (online)
softmax, so the n × n matrix never exists: memory is O(n · block).
"""
from __future__ import annotations

import numpy as np

from ._guard import reference
from ._validate import float_array, whole_number
from .attention import masked_softmax
from .masks import causal_mask


@reference
def causal_used_entries(n):
    """Score entries a causal query/key pair may use: 1 + 2 + ... + n = n(n+1)/2."""
    n = whole_number("n", n)
    return n * (n + 1) // 2


@reference
def causal_used_fraction(n):
    """The used share of the n² entries: (n+1)/(2n), which falls to 1/2 from above."""
    n = whole_number("n", n, minimum=1)
    return (n + 1) / (2 * n)


@reference
def tile_kinds(n, block):
    """(n_b, n_b) array of tile kinds: 0 skipped (above the diagonal), 1 diagonal (masked inside), 2 full."""
    n = whole_number("n", n)
    block = whole_number("block", block, minimum=1)
    starts = np.arange(0, n, block)
    ends = np.minimum(starts + block, n)
    q_first, q_last = starts[:, None], ends[:, None] - 1
    k_first, k_last = starts[None, :], ends[None, :] - 1
    computed = k_first <= q_last  # some key in the tile is <= some query in it
    fully_allowed = k_last <= q_first  # every key <= every query: no mask needed inside
    return np.where(fully_allowed, 2, np.where(computed, 1, 0))


@reference
def tiled_computed_entries(n, block) -> int:
    """Score entries a tiled causal kernel computes: the sizes of all non-skipped tiles."""
    kinds = tile_kinds(n, block)
    starts = np.arange(0, n, block)
    sizes = np.minimum(starts + block, n) - starts
    return int(np.sum((kinds > 0) * sizes[:, None] * sizes[None, :]))


def _check_qkv(q, k, v):
    q = float_array("q", q, ndim=2)
    k = float_array("k", k, ndim=2)
    v = float_array("v", v, ndim=2)
    if q.shape != k.shape or v.shape[0] != q.shape[0]:
        raise ValueError(f"q and k must be (n, d) and v (n, d_v) with the same n: got {q.shape}, {k.shape}, {v.shape}")
    return q, k, v


@reference
def full_causal_attention(q, k, v):
    """The naive way: every score computed, the future masked afterwards. Returns (out, computed)."""
    q, k, v = _check_qkv(q, k, v)
    n, d = q.shape
    scores = q @ k.T / np.sqrt(d)  # (n, n): all n² entries
    weights = masked_softmax(scores, causal_mask(n))
    return weights @ v, n * n


@reference
def blocked_causal_attention(q, k, v, block):
    """Causal attention over tiles of ``block`` queries × ``block`` keys with an online softmax.

    q, k: (n, d); v: (n, d_v). Returns ``(out, computed)``: the output (n, d_v) and the number of
    score entries actually computed. Tiles above the diagonal are never computed.
    """
    q, k, v = _check_qkv(q, k, v)
    block = whole_number("block", block, minimum=1)
    n, d = q.shape
    out = np.empty((n, v.shape[1]), dtype=np.result_type(q, k, v))
    computed = 0
    for q_start in range(0, n, block):
        q_end = min(q_start + block, n)
        q_tile = q[q_start:q_end] / np.sqrt(d)  # (B, d)
        query_pos = np.arange(q_start, q_end)[:, None]
        running_max = np.full((q_end - q_start, 1), -np.inf)  # m: the largest score seen so far
        running_sum = np.zeros((q_end - q_start, 1))  # l: the sum of exp(score - m)
        acc = np.zeros((q_end - q_start, v.shape[1]))  # the unnormalised weighted sum of values
        for k_start in range(0, q_end, block):  # key tiles starting after the last query are skipped
            k_end = min(k_start + block, n)
            scores = q_tile @ k[k_start:k_end].T  # (B, B)
            computed += scores.size
            if k_end - 1 > q_start:  # a diagonal tile: some key lies in the future of some query
                scores = np.where(np.arange(k_start, k_end)[None, :] <= query_pos, scores, -np.inf)
            new_max = np.maximum(running_max, scores.max(axis=1, keepdims=True))  # finite: key 0 is in tile 0
            rescale = np.exp(running_max - new_max)  # shrink what was summed under the old maximum
            probs = np.exp(scores - new_max)  # (B, B), exactly 0 where masked
            running_sum = running_sum * rescale + probs.sum(axis=1, keepdims=True)
            acc = acc * rescale + probs @ v[k_start:k_end]
            running_max = new_max
        out[q_start:q_end] = acc / running_sum
    return out, computed
