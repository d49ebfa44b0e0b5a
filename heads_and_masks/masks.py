"""Boolean attention masks (True = may attend) and how they compose.

Every mask here is indexed ``[query, key]`` and broadcasts to ``(b, h, n_q, n_k)``. Masks that forbid
(padding, causal, window, block-sparse) combine with a logical AND; rules that grant attention (a prefix
seen both ways, attention sinks, global tokens) combine with OR (see ``local_attention``).
"""

from __future__ import annotations

import numpy as np

from ._guard import reference
from ._validate import whole_number


@reference
def causal_mask(n):
    """(n, n) bool, True where key <= query: each token sees itself and the past."""
    n = whole_number("n", n)
    return np.tril(np.ones((n, n), dtype=bool))


@reference
def padding_mask(lengths, n):
    """(b, n) bool, True at real tokens (position < length), False at the filler after them."""
    n = whole_number("n", n)
    lengths = np.asarray(lengths)
    if lengths.ndim != 1 or not (lengths.size == 0 or np.issubdtype(lengths.dtype, np.integer)):
        raise ValueError(f"lengths must be a 1-D array of whole numbers, got {lengths!r}")
    if np.any(lengths < 0) or np.any(lengths > n):
        raise ValueError(f"every length must lie in [0, n = {n}], got {lengths.tolist()}")
    return np.arange(n)[None, :] < lengths[:, None]  # (b, n)


@reference
def sliding_window_mask(n, w):
    """(n, n) bool, True where query - w < key <= query: itself and the w - 1 tokens before it."""
    n = whole_number("n", n)
    w = whole_number("window w", w, minimum=1)
    query = np.arange(n)[:, None]
    key = np.arange(n)[None, :]
    return (key <= query) & (key > query - w)


@reference
def attention_mask(lengths, n, causal=True, window=None):
    """(b, 1, n, n) bool: the key is real, and (if asked) not in the future, and within the window.

    Padding masks keys, not queries: a padded query still attends to real keys; its output is
    simply ignored downstream. The size-1 axis broadcasts over the heads.
    """
    keys_real = padding_mask(lengths, n)[:, None, None, :]  # (b, 1, 1, n_k)
    allowed = np.ones((n, n), dtype=bool)  # (n_q, n_k)
    if causal:
        allowed = allowed & causal_mask(n)
    if window is not None:
        allowed = allowed & sliding_window_mask(n, window)
    return keys_real & allowed  # (b, 1, n_q, n_k)


def block_sparse_mask(layout, block, n=None):
    """Expand a (n_blocks, n_blocks) bool layout of kept blocks into a token-level mask.

    Cell (i, j) of the layout says whether query block i may attend to key block j.
    ``n`` trims the result when the sequence does not fill the last block.
    """
    layout = np.asarray(layout)
    if layout.dtype != bool or layout.ndim != 2 or layout.shape[0] != layout.shape[1]:
        raise ValueError(f"layout must be a square boolean array, got {layout.dtype} {layout.shape}")
    block = whole_number("block", block, minimum=1)
    mask = np.repeat(np.repeat(layout, block, axis=0), block, axis=1)
    if n is not None:
        n = whole_number("n", n)
        if n > mask.shape[0]:
            raise ValueError(f"n = {n} is longer than the layout covers ({mask.shape[0]})")
        mask = mask[:n, :n]
    return mask


def kept_fraction(mask) -> float:
    """The fraction of score entries a mask keeps (the work an honest kernel does)."""
    mask = np.asarray(mask, dtype=bool)
    return float(mask.mean()) if mask.size else 0.0
