"""Sliding windows and block-sparse layouts: what they keep, and what that saves.

A sliding window keeps, for each query, itself and the w - 1 tokens before it: n·w - w(w-1)/2 score
entries instead of the causal n(n+1)/2, and a KV cache that never holds more than w tokens.
A block-sparse mask is decided per tile of ``block`` × ``block`` entries: a small boolean *layout*
says which (query block, key block) tiles are computed, and a kernel's work is the kept tiles.
"""

from __future__ import annotations

import numpy as np

from ._validate import whole_number
from .i18n import N_
from .masks import block_sparse_mask, causal_mask, sliding_window_mask

# Mistral 7B (Jiang et al. 2023, arXiv:2310.06825, table 1; and the config.json of
# huggingface.co/mistralai/Mistral-7B-v0.1): the numbers the notebook's cache example uses.
MISTRAL_7B = {
    "name": "Mistral-7B-v0.1",
    "n_layers": 32,
    "n_kv_heads": 8,
    "head_dim": 128,
    "sliding_window": 4096,
    "source": "arXiv:2310.06825 (table 1); huggingface.co/mistralai/Mistral-7B-v0.1/blob/main/config.json",
}


# The same window, as two codebases write it (NumPy transcriptions of their one line). Mistral's reference
# implementation as released (one_file_ref.py, at the commit below) bands the causal mask with
# ``torch.triu(mask, diagonal=-sliding_window)``: keys i - w ... i, w + 1 of them, as the paper's
# "positions between i - W and i". xformers' local attention masks, which Mistral's own inference code
# uses (``make_local_attention(sliding_window)``), use ``diagonal=-window_size + 1``: w keys, as this course.
# https://github.com/mistralai/mistral-inference/blob/3dc8aed1835d26cbff9ef26a12cbeb2ec8873a0b/one_file_ref.py


def window_as_in_mistral_reference(n, w):
    """(n, n) bool: ``triu(tril(ones), -w)``, the band of Mistral's released one_file_ref.py (w + 1 keys)."""
    return np.triu(np.tril(np.ones((n, n), dtype=bool)), -whole_number("window w", w, minimum=1))


def window_as_in_xformers(n, w):
    """(n, n) bool: ``triu(tril(ones), -w + 1)``, xformers' local attention band (w keys)."""
    return np.triu(np.tril(np.ones((n, n), dtype=bool)), -whole_number("window w", w, minimum=1) + 1)


# Masks combined with OR: a key is allowed if one rule OR another allows it.


def prefix_lm_mask(n, prefix):
    """(n, n) bool: the first ``prefix`` tokens see one another both ways, the rest causally (a prefix LM):
    causal OR (the key is in the prefix)."""
    n, prefix = whole_number("n", n), whole_number("prefix", prefix)
    key = np.arange(n)[None, :]
    return causal_mask(n) | (key < prefix)


def window_with_sinks_mask(n, w, sinks):
    """(n, n) bool: a sliding window OR the first ``sinks`` tokens (attention sinks, kept visible to every
    later query as in StreamingLLM, Xiao et al. 2023), never the future."""
    n, sinks = whole_number("n", n), whole_number("sinks", sinks)
    key = np.arange(n)[None, :]
    return (sliding_window_mask(n, w) | (key < sinks)) & causal_mask(n)


def sliding_window_entries(n, w) -> int:
    """Score entries a sliding window of w keeps: sum over queries of min(query + 1, w)."""
    n = whole_number("n", n)
    w = whole_number("window w", w, minimum=1)
    full_rows = max(n - w, 0)  # queries that see a whole window
    growing = min(n, w)  # the first queries, which see 1, 2, ..., min(n, w) keys
    return full_rows * w + growing * (growing + 1) // 2


def keys_in_cache(n, w=None):
    """(n,) how many keys the KV cache must hold when generating token t = 1..n (bounded by w)."""
    n = whole_number("n", n)
    t = np.arange(1, n + 1)
    return t if w is None else np.minimum(t, whole_number("window w", w, minimum=1))


def kv_cache_bytes_per_token(n_layers, n_kv_heads, head_dim, bytes_per_value=2) -> int:
    """Bytes one cached token costs: a key and a value per KV head per layer."""
    return 2 * n_layers * n_kv_heads * head_dim * bytes_per_value


def receptive_field(n, w, layers):
    """(n, n) bool: which tokens can influence which after stacking ``layers`` windowed layers.

    One layer lets information move w - 1 positions; stacking composes the masks (a boolean matrix
    product), so after L layers a token reaches back L·(w - 1) positions.
    """
    step = sliding_window_mask(n, w).astype(np.int64)
    reach = np.eye(n, dtype=np.int64)
    for _ in range(whole_number("layers", layers, minimum=1)):
        reach = np.minimum(step @ reach, 1)  # keep it 0/1: "some path exists"
    return reach.astype(bool)


# ---------------------------------------------------------------------------------------------
# Block-sparse layouts: (n_blocks, n_blocks) bool, [query block, key block], causal at block level


def local_layout(n_blocks, width=2):
    """Each query block sees its own block and the ``width - 1`` blocks before it (a blocky window)."""
    n_blocks = whole_number("n_blocks", n_blocks, minimum=1)
    return sliding_window_mask(n_blocks, whole_number("width", width, minimum=1))


def global_local_layout(n_blocks, width=2, n_global=1):
    """Local blocks plus the first ``n_global`` blocks, which every later block sees (global tokens)."""
    layout = local_layout(n_blocks, width)
    layout[:, :n_global] = True
    return layout & causal_mask(n_blocks)


def strided_layout(n_blocks, stride=3):
    """Its own block, the one before, and every ``stride``-th block before it (after the Sparse
    Transformer's strided pattern: a local part and a part that jumps by a fixed stride)."""
    n_blocks = whole_number("n_blocks", n_blocks, minimum=1)
    stride = whole_number("stride", stride, minimum=1)
    query, key = np.arange(n_blocks)[:, None], np.arange(n_blocks)[None, :]
    return (key <= query) & (((query - key) % stride == 0) | (key == query - 1))


LAYOUTS = {  # the names are shown (notebook 05's widget): marked for translation, and the keys stay English
    N_("local"): local_layout,
    N_("global + local"): global_local_layout,
    N_("strided"): strided_layout,
    N_("causal (all blocks)"): lambda n_blocks: causal_mask(n_blocks),
}


def layout_mask(kind, n, block):
    """The token-level (n, n) mask of a named layout: kept blocks expanded, and causal inside them."""
    n = whole_number("n", n, minimum=1)
    block = whole_number("block", block, minimum=1)
    n_blocks = -(-n // block)  # ceil(n / block)
    layout = LAYOUTS[kind](n_blocks)
    return layout, block_sparse_mask(layout, block, n) & causal_mask(n)


def block_sparse_work(layout, block, n=None) -> int:
    """Score entries a block-sparse kernel computes: every kept tile whole (tiles cut by n are smaller)."""
    layout = np.asarray(layout, dtype=bool)
    block = whole_number("block", block, minimum=1)
    n = layout.shape[0] * block if n is None else whole_number("n", n)
    starts = np.arange(layout.shape[0]) * block
    sizes = np.clip(n - starts, 0, block)  # the last tile may be cut short
    return int(np.sum(layout * sizes[:, None] * sizes[None, :]))
