"""The package's tiled causal kernel as it really runs: tiles grouped into large products, float types kept.

``blocked_causal_attention`` takes a strip of about ``QUERY_STRIP`` queries (whole tiles), multiplies it by up
to ``KEY_CHUNK`` keys left of it at once, then each of its query tiles by the strip's own keys up to the
diagonal, and updates its online softmax once per such group. These tests shrink ``QUERY_STRIP`` and
``KEY_CHUNK`` so that small inputs go through many strips and groups (and the rescaling between them), and
check the float type of every attention version the benchmark compares: float32 inputs are worked on and
answered in float32.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import heads_and_masks as hm
from heads_and_masks import tiled

RNG = np.random.default_rng(404)


def causal_by_hand(q, k, v):
    """Row by row in float64: softmax of q_i·k_j/√d over j ≤ i, then the weighted values."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    n, d = q.shape
    out = np.zeros((n, v.shape[1]))
    for i in range(n):
        scores = k[: i + 1] @ q[i] / np.sqrt(d)
        weights = np.exp(scores - scores.max())
        out[i] = weights @ v[: i + 1] / weights.sum()
    return out


def strict(function, *args):
    """Call with every floating-point warning turned into an error (underflow to 0 is expected)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise", under="ignore"):
            return function(*args)


@pytest.mark.parametrize("query_strip", [1, 4, 9, 512])
@pytest.mark.parametrize("key_chunk", [1, 4, 6, 1024])
@pytest.mark.parametrize("n,block", [(1, 1), (9, 2), (23, 3), (33, 5), (40, 8), (17, 40), (64, 7)])
def test_grouped_tiles_give_causal_attention_and_the_tile_count(monkeypatch, query_strip, key_chunk, n, block):
    monkeypatch.setattr(tiled, "QUERY_STRIP", query_strip)
    monkeypatch.setattr(tiled, "KEY_CHUNK", key_chunk)
    q, k, v = RNG.normal(size=(n, 5)) * 2, RNG.normal(size=(n, 5)), RNG.normal(size=(n, 3))
    out, computed = strict(hm.blocked_causal_attention, q, k, v, block)
    assert np.allclose(out, causal_by_hand(q, k, v), rtol=1e-12, atol=1e-12)
    assert computed == hm.tiled_computed_entries(n, block)  # the same tiles, however they are grouped


@pytest.mark.parametrize("query_strip", [2, 8])
@pytest.mark.parametrize("key_chunk", [3, 1024])
def test_a_later_group_with_a_far_larger_maximum_is_rescaled(monkeypatch, query_strip, key_chunk):
    """The scores grow along the keys by hundreds: each group's maximum dwarfs the last one's."""
    monkeypatch.setattr(tiled, "QUERY_STRIP", query_strip)
    monkeypatch.setattr(tiled, "KEY_CHUNK", key_chunk)
    n = 30
    q = np.ones((n, 1))
    k = np.arange(n, dtype=float)[:, None] * 300.0  # score of key j: 300 j (d = 1)
    v = RNG.normal(size=(n, 2))
    out, _ = strict(hm.blocked_causal_attention, q, k, v, 2)
    assert np.allclose(out, v)  # each query puts all its weight on its own key, the largest it may see
    assert np.allclose(out, causal_by_hand(q, k, v))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_version_keeps_the_float_type(dtype):
    n = 300
    q, k, v = (RNG.normal(size=(n, 16)).astype(dtype) for _ in range(3))
    expected = causal_by_hand(q, k, v)
    tolerance = 2e-5 if dtype == np.float32 else 1e-12
    tiled_out, _ = hm.blocked_causal_attention(q, k, v, 64)
    full_out, _ = hm.full_causal_attention(q, k, v)
    assert tiled_out.dtype == dtype and full_out.dtype == dtype
    assert np.allclose(tiled_out, expected, atol=tolerance) and np.allclose(full_out, expected, atol=tolerance)
    unmasked = tiled.unmasked_full_attention(q, k, v)
    assert unmasked.dtype == dtype
    assert np.allclose(
        unmasked, hm.attention(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64)), atol=tolerance
    )


def test_unmasked_full_attention_sees_every_key():
    n = 12
    q, k, v = RNG.normal(size=(n, 4)), RNG.normal(size=(n, 4)), RNG.normal(size=(n, 2))
    unmasked = strict(tiled.unmasked_full_attention, q, k, v)
    assert np.allclose(unmasked, hm.attention(q, k, v))
    assert not np.allclose(unmasked, causal_by_hand(q, k, v))  # it is the yardstick, not causal attention
    assert np.allclose(unmasked[-1], causal_by_hand(q, k, v)[-1])  # the last query sees every key either way


@pytest.mark.parametrize("way", list(tiled.UNMASKED_WAYS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_way_of_the_yardstick_is_plain_attention(way, dtype):
    """Each way the benchmark may pick as its yardstick computes the same attention (n not a multiple of
    the strip: the last strip is short)."""
    n = 2 * tiled.unmasked_strip_rows(700) + 5
    q, k, v = (RNG.normal(size=(n, 16)).astype(dtype) for _ in range(3))
    expected = hm.attention(*(x.astype(np.float64) for x in (q, k, v)))
    out = tiled.unmasked_way(way, n)(q, k, v)
    assert out.dtype == dtype
    assert np.allclose(out, expected, atol=2e-5 if dtype == np.float32 else 1e-12), way


def test_the_yardstick_refuses_an_unknown_exponent():
    q = RNG.normal(size=(4, 2))
    with pytest.raises(ValueError, match="exp2"):
        tiled.unmasked_full_attention(q, q, q, exponent="expm1")


@pytest.mark.parametrize("exponent", ["exp", "exp2"])
def test_the_tiled_kernel_agrees_whichever_exponent_is_faster_here(exponent, monkeypatch):
    asked = []
    monkeypatch.setattr(tiled, "fastest_exponent", lambda dtype: asked.append(dtype) or exponent)
    q, k, v = (RNG.normal(size=(150, 8)).astype(np.float32) for _ in range(3))
    out, _ = hm.blocked_causal_attention(q, k, v, 32)
    assert asked == [np.float32]  # the kernel took the exponent from here
    assert np.allclose(out, causal_by_hand(q, k, v), atol=2e-5)


def test_mixed_and_integer_inputs_use_their_common_float_type():
    n = 10
    q32, k64, v = RNG.normal(size=(n, 4)).astype(np.float32), RNG.normal(size=(n, 4)), RNG.normal(size=(n, 2))
    out, _ = hm.blocked_causal_attention(q32, k64, v, 4)
    assert out.dtype == np.float64
    ints = np.arange(n * 4).reshape(n, 4) % 3
    out, _ = hm.blocked_causal_attention(ints, ints, ints[:, :2], 3)
    assert out.dtype == np.float64 and np.allclose(out, causal_by_hand(ints, ints, ints[:, :2]))


def test_inputs_are_not_modified():
    q, k, v = (RNG.normal(size=(20, 4)).astype(np.float32) for _ in range(3))
    before = [x.copy() for x in (q, k, v)]
    hm.blocked_causal_attention(q, k, v, 6)
    tiled.unmasked_full_attention(q, k, v)
    assert all(np.array_equal(x, y) for x, y in zip((q, k, v), before))


def test_memory_stays_a_strip_of_scores_at_large_n():
    """Peak extra memory at n = 4096 in float32: at most one row of tiles' worth of scores (block × n), however
    they are arranged into products, nothing n × n."""
    import tracemalloc

    n, d, block = 4096, 16, 128
    q, k, v = (RNG.normal(size=(n, d)).astype(np.float32) for _ in range(3))
    tracemalloc.start()
    hm.blocked_causal_attention(q, k, v, block)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    scores = block * n * 4  # one row of tiles of the score matrix, float32
    output = n * d * 4
    assert peak < 1.5 * scores + output, f"peak {peak} bytes; a row of tiles of scores is {scores}, the output {output}"
