"""The reference implementation against slow, obvious versions, and the properties of the contract."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import heads_and_masks as hm

RNG = np.random.default_rng(2026)
finite = st.floats(allow_nan=False, allow_infinity=False)  # the whole finite range, extremes included


# ---------------------------------------------------------------- slow obvious versions
def slow_softmax_row(scores, allowed):
    keep = [j for j in range(len(scores)) if allowed[j]]
    out = [0.0] * len(scores)
    if not keep:
        return out
    top = max(scores[j] for j in keep)
    exps = {j: math.exp(scores[j] - top) for j in keep}
    total = math.fsum(exps.values())
    for j in keep:
        out[j] = exps[j] / total
    return out


def slow_attention(q, k, v, mask=None):
    """One query at a time, one key at a time (2-D inputs)."""
    n_q, d = q.shape
    out = np.zeros((n_q, v.shape[1]))
    for i in range(n_q):
        scores = [float(np.dot(q[i], k[j])) / math.sqrt(d) for j in range(k.shape[0])]
        allowed = [True] * k.shape[0] if mask is None else list(mask[i])
        for j, w in enumerate(slow_softmax_row(scores, allowed)):
            out[i] += w * v[j]
    return out


def slow_mha(x, w_q, w_k, w_v, w_o, h, mask=None):
    """Loop over the batch and the heads; head i uses columns i*d:(i+1)*d of each projection."""
    b, n, width = x.shape
    d = width // h
    out = np.zeros_like(x)
    for s in range(b):
        heads = []
        for i in range(h):
            cols = slice(i * d, (i + 1) * d)
            m = None if mask is None else np.broadcast_to(mask, (b, h, n, n))[s, i]
            heads.append(slow_attention((x[s] @ w_q)[:, cols], (x[s] @ w_k)[:, cols], (x[s] @ w_v)[:, cols], m))
        out[s] = np.concatenate(heads, axis=1) @ w_o
    return out


def quiet(function, *args, **kwargs):
    """Call and fail on any warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with np.errstate(all="raise", under="ignore"):
            return function(*args, **kwargs)


# ---------------------------------------------------------------- attention and softmax
@pytest.mark.parametrize("n_q,n_k,d,d_v", [(1, 1, 1, 1), (3, 5, 4, 2), (7, 7, 16, 3)])
def test_attention_matches_slow_version(n_q, n_k, d, d_v):
    q, k, v = RNG.normal(size=(n_q, d)), RNG.normal(size=(n_k, d)), RNG.normal(size=(n_k, d_v))
    mask = RNG.random((n_q, n_k)) < 0.7
    assert np.allclose(quiet(hm.attention, q, k, v), slow_attention(q, k, v))
    assert np.allclose(quiet(hm.attention, q, k, v, mask), slow_attention(q, k, v, mask))


def test_attention_over_leading_axes_equals_looping():
    q, k, v = RNG.normal(size=(2, 3, 4, 5)), RNG.normal(size=(2, 3, 6, 5)), RNG.normal(size=(2, 3, 6, 2))
    mask = RNG.random((4, 6)) < 0.5
    out = hm.attention(q, k, v, mask)
    for i in range(2):
        for j in range(3):
            assert np.allclose(out[i, j], slow_attention(q[i, j], k[i, j], v[i, j], mask))


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=3, max_side=6), elements=finite), st.data())
def test_masked_softmax_contract_on_any_finite_scores(scores, data):
    mask = data.draw(hnp.arrays(bool, scores.shape))
    before = scores.copy()
    weights = quiet(hm.masked_softmax, scores, mask)
    assert np.array_equal(scores, before), "scores modified in place"
    assert not np.isnan(weights).any()
    assert np.all(weights[~mask] == 0.0), "forbidden weights must be exactly 0"
    assert np.all(weights >= 0)
    sums = weights.sum(axis=-1)
    has_allowed = mask.any(axis=-1)
    assert np.allclose(sums[has_allowed], 1.0)
    assert np.all(sums[~has_allowed] == 0.0), "a row with no allowed key is all zeros"


def test_masked_softmax_matches_slow_row_by_row():
    scores = RNG.normal(size=(6, 9)) * 50
    mask = RNG.random((6, 9)) < 0.5
    mask[2] = False
    weights = hm.masked_softmax(scores, mask)
    for i in range(6):
        assert np.allclose(weights[i], slow_softmax_row(list(scores[i]), list(mask[i])))


def test_masked_softmax_broadcasts_mask_and_refuses_bad_masks():
    scores = RNG.normal(size=(2, 3, 4, 4))
    causal = hm.causal_mask(4)
    assert np.array_equal(
        hm.masked_softmax(scores, causal), hm.masked_softmax(scores, np.broadcast_to(causal, scores.shape))
    )
    with pytest.raises(ValueError, match="boolean"):
        hm.masked_softmax(scores, causal.astype(float))
    with pytest.raises(ValueError, match="broadcast"):
        hm.masked_softmax(scores, np.ones((3, 3), bool))


def test_attention_refuses_mismatched_shapes():
    with pytest.raises(ValueError, match="head size"):
        hm.attention(np.ones((2, 3)), np.ones((2, 4)), np.ones((2, 1)))
    with pytest.raises(ValueError, match="keys"):
        hm.attention(np.ones((2, 3)), np.ones((2, 3)), np.ones((5, 1)))


def test_row_entropy_bits():
    assert hm.row_entropy_bits(np.array([1.0, 0.0, 0.0])) == 0.0
    assert np.isclose(hm.row_entropy_bits(np.full(8, 1 / 8)), 3.0)
    assert np.isclose(hm.row_entropy_bits(np.array([0.5, 0.5, 0.0])), 1.0)
    rows = np.array([[0.25] * 4, [0.0] * 4])
    assert np.allclose(quiet(hm.row_entropy_bits, rows), [2.0, 0.0])
    with pytest.raises(ValueError):
        hm.row_entropy_bits(np.array([-0.1, 1.1]))


# ---------------------------------------------------------------- heads
def test_split_heads_head_i_is_the_ith_slice_and_merge_inverts_it():
    x = RNG.normal(size=(2, 5, 12))
    for h in (1, 2, 3, 4, 6, 12):
        d = 12 // h
        heads = hm.split_heads(x, h)
        assert heads.shape == (2, h, 5, d)
        for i in range(h):
            assert np.array_equal(heads[:, i], x[..., i * d : (i + 1) * d])
        assert np.array_equal(hm.merge_heads(heads), x)
    assert np.array_equal(hm.split_heads(hm.merge_heads(heads), 12), heads)


@pytest.mark.parametrize("bad", [5, 0, -1, 2.0, True])
def test_split_heads_refuses_heads_that_do_not_divide_the_width(bad):
    with pytest.raises(ValueError):
        hm.split_heads(np.ones((1, 2, 12)), bad)


def test_mha_matches_loop_over_heads_and_cost_ignores_h():
    b, n, width, h = 2, 5, 12, 3
    x = RNG.normal(size=(b, n, width))
    weights = [RNG.normal(size=(width, width)) / math.sqrt(width) for _ in range(4)]
    for mask in (None, hm.causal_mask(n), RNG.random((b, 1, n, n)) < 0.6):
        assert np.allclose(hm.multi_head_attention(x, *weights, h, mask), slow_mha(x, *weights, h, mask))
    assert hm.mha_cost(128, 768, 12) == 2 * 128**2 * 768 + 4 * 128 * 768**2
    assert hm.mha_cost(100, 768, 24) == hm.mha_cost(100, 768, 12) == hm.mha_cost(100, 768, 1)
    assert type(hm.mha_cost(10, 64, 4)) is int
    with pytest.raises(ValueError):
        hm.mha_cost(10, 768, 7)
    with pytest.raises(ValueError):
        hm.mha_cost(-1, 768, 12)


def test_inputs_are_never_modified():
    x = RNG.normal(size=(2, 4, 8))
    copy = x.copy()
    heads = hm.split_heads(x, 2)
    hm.merge_heads(heads)
    hm.multi_head_attention(x, *(np.eye(8) for _ in range(4)), 2, hm.causal_mask(4))
    assert np.array_equal(x, copy)


# ---------------------------------------------------------------- masks
def test_masks_match_their_definitions():
    n = 7
    causal, window = hm.causal_mask(n), hm.sliding_window_mask(n, 3)
    for q in range(n):
        for k in range(n):
            assert causal[q, k] == (k <= q)
            assert window[q, k] == (q - 3 < k <= q)
    assert window.sum(axis=1).max() == 3, "w = 3 keys: itself and the 2 before it"
    pad = hm.padding_mask(np.array([3, 0, 7]), n)
    assert pad.shape == (3, n) and pad.dtype == bool
    assert pad.sum(axis=1).tolist() == [3, 0, 7] and pad[0, :3].all() and not pad[0, 3:].any()
    for bad in ([8], [-1], [[1, 2]]):
        with pytest.raises(ValueError):
            hm.padding_mask(np.array(bad), n)
    with pytest.raises(ValueError):
        hm.sliding_window_mask(n, 0)
    with pytest.raises(ValueError):
        hm.causal_mask(-1)


def test_attention_mask_is_the_and_of_its_parts_over_keys_only():
    lengths, n = np.array([5, 2]), 5
    full = hm.attention_mask(lengths, n, causal=True, window=2)
    assert full.shape == (2, 1, n, n) and full.dtype == bool
    for s, length in enumerate(lengths):
        for q in range(n):
            for k in range(n):
                assert full[s, 0, q, k] == ((k < length) and k <= q and k > q - 2)
    keys_only = hm.attention_mask(lengths, n, causal=False)
    assert keys_only[1, 0, 4, :2].all(), "a padded query still looks at the real keys"


def test_block_sparse_mask_expands_the_layout():
    layout = np.array([[True, False], [True, True]])
    mask = hm.block_sparse_mask(layout, 3, n=5)
    assert mask.shape == (5, 5)
    assert mask[:3, :3].all() and not mask[:3, 3:].any() and mask[3:, :].all()
    assert np.isclose(hm.kept_fraction(hm.block_sparse_mask(layout, 3)), 3 / 4)


# ---------------------------------------------------------------- the work fraction and the tiled kernel
def test_lesson_table_of_used_entries():
    assert [hm.causal_used_entries(n) for n in (4, 128, 1024)] == [10, 8256, 524800]
    assert [round(100 * hm.causal_used_fraction(n), 2) for n in (4, 128, 1024)] == [62.5, 50.39, 50.05]
    assert hm.causal_used_entries(0) == 0
    with pytest.raises(ValueError):
        hm.causal_used_fraction(0)


@pytest.mark.parametrize("n,block", [(1, 1), (7, 3), (10, 4), (16, 4), (33, 8), (5, 16)])
def test_blocked_causal_attention_equals_the_full_masked_one(n, block):
    q, k, v = RNG.normal(size=(n, 6)) * 3, RNG.normal(size=(n, 6)), RNG.normal(size=(n, 2))
    out, computed = quiet(hm.blocked_causal_attention, q, k, v, block)
    assert np.allclose(out, slow_attention(q, k, v, hm.causal_mask(n)))
    # the count is the size of the tiles that hold at least one allowed entry, nothing more
    slow_count = 0
    for qs in range(0, n, block):
        for ks in range(0, n, block):
            rows, cols = range(qs, min(qs + block, n)), range(ks, min(ks + block, n))
            if any(kk <= qq for qq in rows for kk in cols):
                slow_count += len(rows) * len(cols)
    assert computed == slow_count == hm.tiled_computed_entries(n, block)
    assert hm.causal_used_entries(n) <= computed <= n * n


def test_tiles_approach_the_ideal_fraction_as_they_shrink():
    n = 256
    fractions = [hm.tiled_computed_entries(n, b) / n**2 for b in (256, 64, 16, 4, 1)]
    assert fractions == sorted(fractions, reverse=True)
    assert fractions[0] == 1.0 and np.isclose(fractions[-1], hm.causal_used_fraction(n))
    kinds = hm.tile_kinds(8, 4)
    assert kinds.tolist() == [[1, 0], [2, 1]]


def test_blocked_attention_never_builds_the_full_matrix():
    import tracemalloc

    n = 1024
    q, k, v = (RNG.normal(size=(n, 16)) for _ in range(3))
    tracemalloc.start()
    hm.blocked_causal_attention(q, k, v, 64)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < n * n * 8 / 8, f"peak {peak} bytes: an n×n float64 matrix is {n * n * 8}"


# ---------------------------------------------------------------- grouped heads and the KV cache
def test_grouped_query_attention_equivalences():
    b, h, n, d = 2, 6, 5, 4
    q = RNG.normal(size=(b, h, n, d))
    k_all, v_all = RNG.normal(size=(b, h, n, d)), RNG.normal(size=(b, h, n, d))
    causal = hm.causal_mask(n)
    # g = h is multi-head attention
    assert np.allclose(hm.grouped_query_attention(q, k_all, v_all, causal), hm.attention(q, k_all, v_all, causal))
    # g = 1 is multi-query attention: every head uses the one KV head
    k1, v1 = k_all[:, :1], v_all[:, :1]
    assert np.allclose(hm.grouped_query_attention(q, k1, v1, causal), hm.attention(q, k1, v1, causal))
    # 1 < g < h: query head i uses KV head i // (h // g)
    g = 3
    kg, vg = k_all[:, :g], v_all[:, :g]
    out = hm.grouped_query_attention(q, kg, vg, causal)
    for i in range(h):
        j = i // (h // g)
        for s in range(b):
            assert np.allclose(out[s, i], slow_attention(q[s, i], kg[s, j], vg[s, j], causal))
    with pytest.raises(ValueError):
        hm.grouped_query_attention(q, k_all[:, :4], v_all[:, :4])


def test_kv_cache_bytes():
    # Llama-2-7B: 32 layers, 32 KV heads, head size 128, fp16: 512 KiB per token
    assert hm.kv_cache_bytes(32, 32, 128, 1) == 2 * 32 * 32 * 128 * 2 == 524288
    assert hm.kv_cache_bytes(32, 8, 128, 4096, batch=2, bytes_per_value=1) == 2 * 32 * 8 * 128 * 4096 * 2
    assert type(hm.kv_cache_bytes(1, 1, 1, 1)) is int
    for bad in ((-1, 1, 1, 1), (1, 1, 1, 1.5)):
        with pytest.raises(ValueError):
            hm.kv_cache_bytes(*bad)
