"""What the causal mask saves, and a tiled causal attention that really saves it.

A naive kernel computes all n² scores and throws the upper triangle away. A FlashAttention-style
kernel walks over tiles of ``block`` queries × ``block`` keys, never computes a tile that lies
entirely above the diagonal, masks inside the diagonal tiles, and keeps a running (online)
softmax, so the n × n matrix never exists: memory is O(n · block).
"""

from __future__ import annotations

import functools
import time

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


def _common_float(*arrays) -> np.dtype:
    """The float type the inputs share (float32 stays float32; at least float32, never float16)."""
    return np.result_type(*arrays, np.float32)


@reference
def full_causal_attention(q, k, v):
    """The naive way: every score computed, the future masked afterwards. Returns (out, computed).

    It works in the inputs' float type (float32 stays float32) and holds several n × n arrays at once.
    """
    q, k, v = _check_qkv(q, k, v)
    n, d = q.shape
    dtype = _common_float(q, k, v)
    scores = (q @ k.T).astype(dtype, copy=False) * dtype.type(1 / np.sqrt(d))  # (n, n): all n² entries
    weights = masked_softmax(scores, causal_mask(n))
    return (weights @ v).astype(dtype, copy=False), n * n


def unmasked_full_attention(q, k, v, exponent="exp", strip=None):
    """Plain attention with no mask, as fast as numpy does it: the yardstick a causal kernel must beat.

    Every query sees every key, so this is *not* causal attention; it is what a causal kernel saves
    work against, and it gets every trick the tiled kernel has. The scale 1/√d is folded into q (n × d
    products, not a pass over n² scores); ``exponent="exp2"`` folds log2 e in as well and takes exp2,
    as the tiled kernel does; ``strip`` (a number of queries) works on one strip of queries × all keys at
    a time in one reused buffer, so the scores stay in the processor's cache, as the tiled kernel's
    products do (None: the whole n × n matrix at once). Scores are worked on in place (row maximum,
    exponent) and normalised on the (n, d_v) output, not on n². Which combination is fastest depends
    on the processor (numpy's float32 exp is vectorised on some, its exp2 on others): the benchmark times
    each (``UNMASKED_WAYS``) and compares the tiled kernel with the fastest.
    """
    q, k, v = _check_qkv(q, k, v)
    n, d = q.shape
    dtype = _common_float(q, k, v)
    k, v = (x.astype(dtype, copy=False) for x in (k, v))
    if exponent not in ("exp", "exp2"):
        raise ValueError(f"exponent must be 'exp' or 'exp2', got {exponent!r}")
    base_change = LOG2_E if exponent == "exp2" else 1.0  # exp(x) = 2 ** (x · log2 e)
    q_scaled = q.astype(dtype, copy=False) * dtype.type(base_change / np.sqrt(d))  # (n, d)
    power = np.exp2 if exponent == "exp2" else np.exp
    rows = n if strip is None else whole_number("strip", strip, minimum=1)
    out = np.empty((n, v.shape[1]), dtype=dtype)
    scores_memory = np.empty(min(rows, n) * n, dtype=dtype)  # one strip of scores, reused
    for start in range(0, n, rows):
        end = min(start + rows, n)
        scores = scores_memory[: (end - start) * n].reshape(end - start, n)  # (R, n)
        np.matmul(q_scaled[start:end], k.T, out=scores)
        scores -= scores.max(axis=1, keepdims=True)
        power(scores, out=scores)  # unnormalised weights
        row_sum = scores.sum(axis=1, keepdims=True)  # (R, 1)
        np.matmul(scores, v, out=out[start:end])  # (R, d_v)
        out[start:end] /= row_sum
    return out


# The ways the yardstick can be written, all timed by the benchmark: (exponent, in strips of queries). The
# fastest is the yardstick on that machine, for that float type and n.
UNMASKED_WAYS = {
    "exp": ("exp", False),
    "exp2": ("exp2", False),
    "exp, strips": ("exp", True),
    "exp2, strips": ("exp2", True),
}


def unmasked_strip_rows(n: int) -> int:
    """Queries per strip for the yardstick in strips: as many scores as the tiled kernel's largest product
    at B = 128 (a strip of its queries × a group of keys), so both keep about the same amount of scores in cache."""
    n = max(n, 1)
    return max(1, _strip_rows(n, 128) * _keys_per_product(n, 128) // n)


def unmasked_way(name: str, n: int):
    """The function that computes unmasked attention the way called ``name`` (of UNMASKED_WAYS) at length n."""
    exponent, in_strips = UNMASKED_WAYS[name]
    strip = unmasked_strip_rows(n) if in_strips else None
    return lambda q, k, v: unmasked_full_attention(q, k, v, exponent=exponent, strip=strip)


# The kernel multiplies a strip of about QUERY_STRIP queries (whole tiles) by several key tiles at once, up
# to about KEY_CHUNK keys: large matrix products run faster than many small ones (with d = 64, products of
# 512 queries × 1024 keys ran about 10% faster per operation than products of 128 queries on one machine,
# and each numpy call costs microseconds of Python), while QUERY_STRIP × KEY_CHUNK scores (2 MiB in
# float32) still stay in the processor's cache.
QUERY_STRIP = 512
KEY_CHUNK = 1024
LOG2_E = 1.4426950408889634  # exp(x) = 2 ** (x · log2 e)


@functools.cache
def fastest_exponent(dtype) -> str:
    """ "exp" or "exp2": whichever numpy computes faster here for ``dtype``, timed once on a block of scores.

    Which wins depends on the processor and the float type (numpy vectorises each with the instructions
    it finds): float32 exp2 was 1.4-1.8× faster than exp on one machine, and exp 1.2× faster than exp2 on
    another. The kernel takes the faster, as the yardstick does (``UNMASKED_WAYS``).
    """
    scores = -np.abs(np.random.default_rng(0).standard_normal((128, KEY_CHUNK))).astype(dtype)
    work = np.empty_like(scores)
    seconds = {}
    for name, power in (("exp", np.exp), ("exp2", np.exp2)):
        runs = []
        for _ in range(5):
            start = time.perf_counter()
            power(scores, out=work)
            runs.append(time.perf_counter() - start)
        seconds[name] = min(runs)
    return min(seconds, key=seconds.get)


def _strip_rows(n: int, block: int) -> int:
    """Queries per strip: whole tiles, up to about QUERY_STRIP, and never more scores per product than one
    row of tiles of the whole matrix holds (block × n), so that memory stays O(n · block) at any n."""
    keys = _keys_per_product(n, block)
    tiles = max(1, min(QUERY_STRIP // block, n // keys))
    return block * tiles


def _keys_per_product(n: int, block: int) -> int:
    """Keys per matrix product for the tiles left of a strip: whole tiles, about KEY_CHUNK, at most n."""
    return min(block * max(1, KEY_CHUNK // block), max(n, 1))


def _online_softmax_step(scores, values, running_max, running_sum, acc, power):
    """Fold a block of scores (R, K) and their values (K, d_v) into R queries' running softmax, in place.

    ``running_max``, ``running_sum`` (R, 1) and ``acc`` (R, d_v) are updated where they lie (they may be rows
    of a larger strip's arrays); ``scores`` is overwritten by its weights. ``power`` is exp, or exp2 for
    scores already in base 2.
    """
    new_max = np.maximum(running_max, scores.max(axis=1, keepdims=True))  # (R, 1); finite: every row has a key
    rescale = power(running_max - new_max)  # shrink what was summed under the old maximum
    scores -= new_max
    weights = power(scores, out=scores)  # in place; exactly 0 where masked
    running_sum *= rescale
    running_sum += weights.sum(axis=1, keepdims=True)
    acc *= rescale
    acc += weights @ values  # (R, d_v)
    running_max[...] = new_max  # in place: the caller's array (or its rows) holds the new maximum


@reference
def blocked_causal_attention(q, k, v, block):
    """Causal attention over tiles of ``block`` queries × ``block`` keys with an online softmax.

    q, k: (n, d); v: (n, d_v). Returns ``(out, computed)``: the output (n, d_v), in the inputs'
    float type, and the number of score entries actually computed. Tiles above the diagonal are
    never computed.

    For speed the tiles are arranged into large matrix products (numpy is fast at those and slow at many
    small steps): a strip of several query tiles (about ``QUERY_STRIP`` queries) takes the key tiles left
    of it, all of them full, about ``KEY_CHUNK`` keys per product; then each of its query tiles takes the
    strip's own keys up to its diagonal tile, masked inside that tile. The tiles computed, and so
    ``computed``, are exactly those of a tile-by-tile loop.
    """
    q, k, v = _check_qkv(q, k, v)
    block = whole_number("block", block, minimum=1)
    n, d = q.shape
    d_v = v.shape[1]
    dtype = _common_float(q, k, v)
    q, k, v = (x.astype(dtype, copy=False) for x in (q, k, v))
    out = np.empty((n, d_v), dtype=dtype)
    strip_rows = _strip_rows(n, block)
    keys_per_product = _keys_per_product(n, block)
    exponent = fastest_exponent(dtype)
    power = np.exp2 if exponent == "exp2" else np.exp
    # the scale folded into q; for exp2 the scores are in base 2 (exp2 of them is exp of the usual ones)
    scale = dtype.type((LOG2_E if exponent == "exp2" else 1.0) / np.sqrt(d))
    future = np.triu(np.ones((block, block), dtype=bool), k=1)  # inside a diagonal tile: key after query
    scores_memory = np.empty(min(strip_rows, n) * max(keys_per_product, strip_rows), dtype=dtype)  # reused

    def scores_for(rows, keys):  # a (rows, keys) view of the one buffer every product writes into
        return scores_memory[: rows * keys].reshape(rows, keys)

    computed = 0
    for strip_start in range(0, n, strip_rows):
        strip_end = min(strip_start + strip_rows, n)
        q_strip = q[strip_start:strip_end] * scale  # (S, d)
        strip_size = strip_end - strip_start
        running_max = np.full((strip_size, 1), -np.inf, dtype=dtype)  # m: the largest score seen so far
        running_sum = np.zeros((strip_size, 1), dtype=dtype)  # l: the sum of exp(score - m)
        acc = np.zeros((strip_size, d_v), dtype=dtype)  # the unnormalised weighted sum of values

        # 1. The key tiles left of the strip are full for every query in it: many tiles per product, no mask.
        for k_start in range(0, strip_start, keys_per_product):
            k_end = min(k_start + keys_per_product, strip_start)
            scores = scores_for(strip_size, k_end - k_start)  # (S, K)
            np.matmul(q_strip, k[k_start:k_end].T, out=scores)
            computed += scores.size
            _online_softmax_step(scores, v[k_start:k_end], running_max, running_sum, acc, power)

        # 2. The strip's own keys: each query tile takes them up to the end of its diagonal tile (the tiles
        # right of it are skipped) and hides, inside the diagonal tile, the keys after each query.
        for tile_start in range(strip_start, strip_end, block):
            tile_end = min(tile_start + block, strip_end)
            tile_size = tile_end - tile_start
            rows = slice(tile_start - strip_start, tile_end - strip_start)  # this tile's rows of the strip
            keys = slice(strip_start, tile_end)  # the strip's keys up to the end of the diagonal tile
            scores = scores_for(tile_size, tile_end - strip_start)  # (B, keys)
            np.matmul(q_strip[rows], k[keys].T, out=scores)
            computed += scores.size
            diagonal_tile = scores[:, tile_start - strip_start :]  # (B, B): the last tile of these keys
            np.copyto(diagonal_tile, -np.inf, where=future[:tile_size, :tile_size])
            _online_softmax_step(scores, v[keys], running_max[rows], running_sum[rows], acc[rows], power)

        np.divide(acc, running_sum, out=out[strip_start:strip_end])
    return out, computed


# What happens to each score entry of the n × n matrix in a tiled causal kernel.
SKIPPED, MASKED, USED_ON_DIAGONAL, USED = 0, 1, 2, 3


def entry_kinds(n: int, block: int) -> np.ndarray:
    """(n, n) array saying, for each score entry [query, key], which of the four things happens to it."""
    tiles = tile_kinds(n, block)  # (n_b, n_b): 0 skipped, 1 diagonal, 2 full
    tile_of = np.arange(n) // block  # the tile each position falls in
    per_entry = tiles[tile_of[:, None], tile_of[None, :]]  # (n, n): the kind of the tile the entry sits in
    allowed = np.arange(n)[None, :] <= np.arange(n)[:, None]  # key <= query
    return np.select([per_entry == 0, per_entry == 2, allowed], [SKIPPED, USED, USED_ON_DIAGONAL], default=MASKED)


def computed_fraction_by_tile_size(n: int, blocks) -> np.ndarray:
    """The share of the n² entries a tiled kernel computes, for each tile size in ``blocks``."""
    return np.array([tiled_computed_entries(n, int(b)) / n**2 for b in blocks])
