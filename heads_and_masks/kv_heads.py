"""Fewer key/value heads than query heads: MHA (g = h), GQA (1 < g < h) and MQA (g = 1).

Query head i reads KV head ``i // (h // g)``: consecutive query heads share one KV head.
"""

from __future__ import annotations

import numbers

import numpy as np

from ._guard import reference
from ._validate import float_array, whole_number
from .attention import attention


@reference
def grouped_query_attention(q, k, v, mask=None):
    """q: (b, h, n, d); k, v: (b, g, n, d) with g dividing h; mask broadcastable to (b, h, n, n)."""
    q = float_array("q", q, ndim=4)
    k = float_array("k", k, ndim=4)
    v = float_array("v", v, ndim=4)
    h, g = q.shape[1], k.shape[1]
    if v.shape[1] != g:
        raise ValueError(f"k and v must have the same number of KV heads, got {g} and {v.shape[1]}")
    if g < 1 or h % g:
        raise ValueError(f"the {h} query heads must be divisible by the {g} KV heads")
    group = h // g
    # repeat (not tile): KV head j serves query heads j*group ... (j+1)*group - 1
    k = np.repeat(k, group, axis=1)  # (b, h, n, d)
    v = np.repeat(v, group, axis=1)  # (b, h, n, d)
    return attention(q, k, v, mask)  # (b, h, n, d)


@reference
def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_value=2):
    """Bytes of the K and V cache: 2 (K and V) · layers · KV heads · head size · tokens · batch · bytes."""
    values = 2 * (
        whole_number("n_layers", n_layers)
        * whole_number("n_kv_heads", n_kv_heads)
        * whole_number("head_dim", head_dim)
        * whole_number("seq_len", seq_len)
        * whole_number("batch", batch)
    )
    if isinstance(bytes_per_value, bool) or not isinstance(bytes_per_value, numbers.Real) or bytes_per_value <= 0:
        raise ValueError(f"bytes_per_value must be a positive number, got {bytes_per_value!r}")
    return int(round(values * bytes_per_value))
