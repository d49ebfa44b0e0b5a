"""Reference implementations of notebook 07 (heads_and_masks.generation) against slow obvious versions."""

from __future__ import annotations

import csv

import numpy as np
import pytest

import heads_and_masks as hm
from heads_and_masks import generation as gen
from heads_and_masks.model_configs import data_dir, load_models


def _slow_attention_row(q_row, keys, values, allowed):
    """One query against a list of allowed keys, by the definition (a loop, Python floats)."""
    scores = [float(q_row @ keys[j]) / np.sqrt(len(q_row)) if allowed[j] else None for j in range(len(keys))]
    if all(s is None for s in scores):
        return np.zeros(values.shape[1])
    top = max(s for s in scores if s is not None)
    weights = [np.exp(s - top) if s is not None else 0.0 for s in scores]
    return sum(w * values[j] for j, w in enumerate(weights)) / sum(weights)


@pytest.mark.parametrize("prompt,chunk", [(0, 1), (3, 1), (4, 3), (9, 2)])
def test_generation_with_cache_equals_full_causal_attention(prompt, chunk):
    rng = np.random.default_rng(prompt * 10 + chunk)
    q, k, v = rng.normal(size=(3, 2, 3, 9, 4))
    generated = gen.generate_with_cache(q, k, v, prompt, chunk)
    full = hm.attention(q, k, v, hm.causal_mask(9))
    assert np.abs(generated - full).max() < 1e-12
    slow = np.array(
        [
            [[_slow_attention_row(q[b, h, i], k[b, h], v[b, h], np.arange(9) <= i) for i in range(9)] for h in range(3)]
            for b in range(2)
        ]
    )
    assert np.abs(generated - slow).max() < 1e-12


def test_decode_step_appends_the_new_token_and_copies():
    rng = np.random.default_rng(1)
    k_cache, v_cache = rng.normal(size=(2, 1, 2, 5, 3))
    q, k, v = rng.normal(size=(3, 1, 2, 1, 3))
    before = k_cache.copy()
    out, k_all, v_all = gen.decode_step(q, k, v, k_cache, v_cache)
    assert k_all.shape == (1, 2, 6, 3) and np.array_equal(k_all[:, :, -1:], k) and np.array_equal(k_cache, before)
    # from an empty cache, one token attends to itself alone: its output is its value
    out, _, _ = gen.decode_step(q, k, v, k_cache[:, :, :0], v_cache[:, :, :0])
    assert np.allclose(out, v)


@pytest.mark.parametrize("n_new,n_keys", [(1, 1), (1, 7), (3, 7), (5, 5), (0, 4)])
def test_bottom_right_mask_by_positions(n_new, n_keys):
    mask = gen.bottom_right_causal_mask(n_new, n_keys)
    expected = np.array([[key <= n_keys - n_new + i for key in range(n_keys)] for i in range(n_new)], bool)
    assert mask.shape == (n_new, n_keys) and np.array_equal(mask, expected.reshape(n_new, n_keys))
    if n_new:
        assert mask[-1].all()  # the last query sees every key
    if n_new == n_keys:
        assert np.array_equal(mask, hm.causal_mask(n_keys))
    with pytest.raises(ValueError):
        gen.bottom_right_causal_mask(n_keys + 1, n_keys)


def test_top_left_differs_from_bottom_right_only_when_rectangular():
    assert np.array_equal(gen.top_left_causal_mask(4, 4), gen.bottom_right_causal_mask(4, 4))
    assert not np.array_equal(gen.top_left_causal_mask(2, 6), gen.bottom_right_causal_mask(2, 6))
    assert gen.top_left_causal_mask(1, 6).sum() == 1  # one new token sees only key 0: wrong


def test_rolling_cache_write_slot_by_slot():
    rng = np.random.default_rng(2)
    w = 4
    cache = np.zeros((1, 2, w, 3))
    slow = [np.zeros((1, 2, 3))] * w  # empty slots stay zero
    tokens = rng.normal(size=(1, 2, 11, 3))
    position = 0
    for t in (3, 1, 1, 6):  # a prefill, two steps, a chunk longer than the buffer
        new = tokens[:, :, position : position + t]
        before = cache.copy()
        written = gen.rolling_cache_write(cache, new, position)
        assert np.array_equal(cache, before) and written is not cache  # the input is left as it was
        cache = written
        for p in range(position, position + t):  # the obvious way: one token at a time
            slow[p % w] = tokens[:, :, p]
        position += t
        assert np.array_equal(cache, np.stack(slow, axis=2))
    assert list(gen.slot_positions(w, position)) == [8, 9, 10, 7]


@pytest.mark.parametrize("window,chunk", [(1, 1), (3, 1), (4, 2), (5, 3)])
def test_rolling_buffer_equals_sliding_window_attention(window, chunk):
    rng = np.random.default_rng(window)
    q, k, v = rng.normal(size=(3, 2, 2, 12, 4))
    rolled = gen.rolling_window_attention(q, k, v, window, chunk)
    full = hm.attention(q, k, v, hm.sliding_window_mask(12, window))
    assert np.abs(rolled - full).max() < 1e-12


def test_cached_positions_follow_the_policies():
    assert list(gen.cached_positions("full", 5)) == [0, 1, 2, 3, 4]
    assert list(gen.cached_positions("window", 6, 4)) == [4, 5, 2, 3]
    assert list(gen.cached_positions("sinks", 9, 3, 2)) == [0, 1, 8, 6, 7]
    assert list(gen.cached_positions("sinks", 1, 3, 2)) == [0, -1, -1, -1, -1]
    for policy in ("full", "window", "sinks"):
        for written in range(12):
            held = gen.cached_positions(policy, written, 3, 2)
            assert (held >= 0).sum() == gen.cache_tokens(policy, written, 3, 2)


def test_sinks_window_and_prefix_masks_by_definition():
    n, w, s = 9, 3, 2
    mask = gen.sinks_window_mask(n, w, s)
    expected = np.array([[key <= query and (query - key < w or key < s) for key in range(n)] for query in range(n)])
    assert np.array_equal(mask, expected)
    prefix = gen.prefix_lm_mask(n, 4)
    assert np.array_equal(prefix, np.array([[key <= query or key < 4 for key in range(n)] for query in range(n)]))


def test_document_mask_by_definition_and_batches():
    ids = np.array([[0, 0, 0, 1, 1, 2, 2, 2], [5, 5, 3, 3, 3, 3, 9, 9]])
    mask = gen.document_mask(ids)
    expected = np.array([[[key <= q and row[key] == row[q] for key in range(8)] for q in range(8)] for row in ids])
    assert np.array_equal(mask, expected)
    assert np.array_equal(gen.document_mask(ids[0]), expected[0])
    with pytest.raises(ValueError):
        gen.document_mask(np.array([0.5, 1.0]))


def test_packed_documents_are_independent_only_with_the_mask():
    rng = np.random.default_rng(4)
    ids = np.array([0, 0, 0, 1, 1, 1, 1])
    q, k, v = rng.normal(size=(3, 1, 1, 7, 4))
    alone = hm.attention(q[..., 3:, :], k[..., 3:, :], v[..., 3:, :], hm.causal_mask(4))
    masked = gen.packed_attention(q, k, v, ids)
    assert np.abs(masked[..., 3:, :] - alone).max() < 1e-12
    assert np.abs(gen.packed_attention(q, k, v, ids, mask_documents=False)[..., 3:, :] - alone).max() > 1e-3


def test_packing_and_padding_counts():
    lengths = np.array([5, 1, 3, 8, 2])
    assert gen.padding_waste(lengths, 2) == {"real tokens": 19, "slots": 5 * 2 + 8 * 2 + 2, "wasted": 9}
    rows = gen.pack_rows(lengths, 8)
    assert sorted(x for r in rows for x in r) == sorted(lengths.tolist()) and all(sum(r) <= 8 for r in rows)
    assert gen.packing_waste(lengths, 8)["wasted"] == len(rows) * 8 - 19
    assert gen.pack_rows([20], 8) == [[8], [8], [4]]
    drawn = gen.document_lengths(500, seed=1)
    assert np.array_equal(drawn, gen.document_lengths(500, seed=1)) and drawn.min() >= 1


def test_mixed_cache_bytes_layer_by_layer():
    for n_local, n_global, window, heads, dim, seq in [
        (21, 21, 4096, 8, 256, 8192),
        (52, 10, 1024, 16, 128, 500),
        (0, 5, 7, 2, 3, 9),
        (3, 0, 7, 2, 3, 9),
    ]:
        slow = sum(
            2 * heads * dim * (min(seq, window) if layer < n_local else seq) * 2 for layer in range(n_local + n_global)
        )
        assert gen.mixed_cache_bytes(n_local, n_global, window, heads, dim, seq) == slow
    assert gen.mixed_cache_bytes(1, 1, 4, 1, 1, 10, batch=3, bytes_per_value=1) == 3 * 2 * (4 + 10)
    with pytest.raises(ValueError):
        gen.mixed_cache_bytes(1, 1, 0, 1, 1, 10)


def test_layouts_agree_with_both_data_files_and_published_numbers():
    layouts = gen.cache_layouts()
    with open(data_dir() / "layered_models.csv", newline="", encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    assert {r["model"] for r in rows} <= set(layouts)
    for row in rows:
        assert row["config_source"].startswith("https://") and row["layer_pattern_source"] and row["second_source"]
    # every model of notebook 06 without a window: the same bytes per token as its calculator

    for name, config in load_models().items():
        if config.sliding_window is None:
            assert layouts[name].cache_bytes(1000) == config.kv_bytes_per_token() * 1000
    # DeepSeek-V2 paper, Table 1: MLA caches (d_c + d_h^R) · l = 9/2 · d_h · l elements per token
    v2 = layouts["DeepSeek-V2"]
    assert v2.cache_bytes(1, bytes_per_value=1) == 9 * v2.head_dim // 2 * v2.layers
    # Gemma 3: 5 local layers for each global one
    g3 = layouts["Gemma-3-27B"]
    assert g3.layers == 62 and g3.local_layers == sum(1 for i in range(62) if (i + 1) % 6)


def test_step_work_counts():
    work = gen.step_work(99, 64)
    assert work["with cache"] == 2 * 100 * 64
    assert work["without cache"] == 2 * sum(range(1, 101)) * 64


def test_layer_step_work_adds_the_projections_and_the_mlp():
    """A whole layer's step: 4·D² projections + 8·D² MLP per token processed, plus attention; without the
    cache every earlier token is processed again. Attention is half the cached step exactly at t = 6·D."""
    width, t = 64, 100
    work = gen.layer_step_work(t - 1, width)
    assert work["with cache"] == 12 * width**2 + 2 * t * width
    assert work["without cache"] == t * 12 * width**2 + 2 * sum(range(1, t + 1)) * width
    assert work["attention with cache"] == gen.step_work(t - 1, width)["with cache"]
    at_six_d = gen.layer_step_work(6 * width - 1, width)
    assert 2 * at_six_d["attention with cache"] == at_six_d["with cache"]
    # at short contexts the whole layer's saving is about twice attention's alone
    attention_only = gen.step_work(t - 1, width)
    assert (
        work["without cache"] / work["with cache"]
        > 1.5 * attention_only["without cache"] / attention_only["with cache"]
    )


def test_pictures_draw_legibly_within_a_laptop_notebook(artifacts):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from heads_and_masks.pictures import NOTEBOOK_WIDTH_PX
    from heads_and_masks.pictures.generation import (
        bytes_per_token_figure,
        composed_masks_figure,
        decode_masks_figure,
        picture,
    )

    figures = {
        "decode_masks": decode_masks_figure(3, 8),
        "composed_masks": composed_masks_figure(
            {
                "sinks": gen.sinks_window_mask(12, 4, 2),
                "prefix": gen.prefix_lm_mask(12, 5),
                "documents": gen.document_mask(np.repeat([0, 1, 2], 4)),
            }
        ),
        "bytes_per_token": bytes_per_token_figure(gen.cache_layouts()),
    }
    for name, figure in figures.items():
        FigureCanvasAgg(figure).draw()
        assert figure.bbox.width <= NOTEBOOK_WIDTH_PX, f"{name} is {figure.bbox.width:.0f} px wide"
        (artifacts / f"nb07_{name}.png").write_bytes(picture(figure).data)
    # one bar label per model of both data files
    labels = [t.get_text() for t in figures["bytes_per_token"].axes[0].get_yticklabels()]
    assert len(labels) == len(gen.cache_layouts()) and any("DeepSeek-V3 (MLA)" in t for t in labels)
