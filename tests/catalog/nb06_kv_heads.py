"""Sample answers for 06_kv_heads: `grouped_query_attention(q, k, v, mask=None)` and
`kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_value=2)`.

The notebook gives `attention(q, k, v, mask=None)` (notebook 00's function) in a cell before the
exercise; answers may use it or write their own softmax.
"""

from catalog import Answer

ASSIGNMENT = "06_kv_heads"

ANSWERS = [
    Answer("untouched", {}, untouched=True),
    # ------------------------------------------------------------------ correct, in several styles
    Answer(
        "repeat_then_attention",
        {
            "grouped_query_attention": """
        def grouped_query_attention(q, k, v, mask=None):
            h, g = q.shape[1], k.shape[1]
            if h % g != 0:
                raise ValueError(f"{h} query heads are not divisible by {g} KV heads")
            k = np.repeat(k, h // g, axis=1)
            v = np.repeat(v, h // g, axis=1)
            return attention(q, k, v, mask)
    """
        },
    ),
    Answer(
        "grouped_einsum_without_copies",
        {
            "grouped_query_attention": """
        def grouped_query_attention(q, k, v, mask=None):
            b, h, n_q, d = q.shape
            g, n_k = k.shape[1], k.shape[2]
            if g == 0 or h % g:
                raise ValueError("h must be divisible by g")
            group = h // g
            qg = q.reshape(b, g, group, n_q, d)                       # (b, g, group, n_q, d)
            scores = np.einsum("bgqnd,bgkd->bgqnk", qg, k) / np.sqrt(d)  # K shared, never copied
            if mask is None:
                allowed = np.ones(scores.shape, bool)
            else:
                allowed = np.broadcast_to(mask, (b, h, n_q, n_k)).reshape(b, g, group, n_q, n_k)
            scores = np.where(allowed, scores, -np.inf)
            top = scores.max(axis=-1, keepdims=True)
            top = np.where(np.isfinite(top), top, 0.0)
            e = np.where(allowed, np.exp(scores - top), 0.0)
            total = e.sum(axis=-1, keepdims=True)
            w = np.divide(e, total, out=np.zeros_like(e), where=total > 0)
            out = np.einsum("bgqnk,bgkd->bgqnd", w, v)
            return out.reshape(b, h, n_q, v.shape[-1])
    """
        },
    ),
    Answer(
        "loop_over_query_heads",
        {
            "grouped_query_attention": """
        def grouped_query_attention(q, k, v, mask=None):
            h, g = q.shape[1], k.shape[1]
            if g < 1 or h % g:
                raise ValueError("the number of query heads must be a multiple of the KV heads")
            heads_per_kv = h // g
            if mask is not None:
                mask = np.broadcast_to(mask, q.shape[:2] + (q.shape[2], k.shape[2]))
            outputs = []
            for i in range(h):
                j = i // heads_per_kv
                outputs.append(attention(q[:, i], k[:, j], v[:, j], None if mask is None else mask[:, i]))
            return np.stack(outputs, axis=1)
    """
        },
    ),
    Answer(
        "index_array_own_softmax_dtype_min",
        {
            "grouped_query_attention": """
        def grouped_query_attention(q, k, v, mask=None):
            h, g = q.shape[1], k.shape[1]
            if g == 0 or h % g != 0:
                raise ValueError("query heads must be divisible by KV heads")
            which = np.arange(h) // (h // g)       # KV head of each query head
            k, v = k[:, which], v[:, which]
            s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1])
            if mask is not None:
                s = np.where(mask, s, np.finfo(s.dtype).min)
            s = s - s.max(axis=-1, keepdims=True)
            w = np.exp(s)
            if mask is not None:
                w = w * mask
            return w / w.sum(axis=-1, keepdims=True) @ v
    """
        },
    ),
    Answer(
        "kv_size_styles",
        {
            "kv_cache_bytes": """
        import math
        def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_value=2):
            sizes = (n_layers, n_kv_heads, head_dim, seq_len, batch)
            if any(s < 0 for s in sizes):
                raise ValueError(f"sizes must not be negative, got {sizes}")
            per_token_per_layer = 2 * n_kv_heads * head_dim * bytes_per_value   # K and V
            return math.prod([per_token_per_layer, n_layers, seq_len, batch])
    """
        },
    ),
    Answer(
        "kv_size_numpy_int",
        {
            "kv_cache_bytes": """
        def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_value=2):
            shape = np.array([2, n_layers, n_kv_heads, head_dim, seq_len, batch], dtype=np.int64)
            if (shape < 0).any():
                raise ValueError("negative size")
            return shape.prod() * bytes_per_value
    """
        },
    ),
    # ------------------------------------------------------------------ grouped_query_attention mistakes
    Answer(
        "tile_instead_of_repeat",
        {
            "grouped_query_attention": """
        def grouped_query_attention(q, k, v, mask=None):
            h, g = q.shape[1], k.shape[1]
            if h % g:
                raise ValueError("h must be divisible by g")
            k = np.tile(k, (1, h // g, 1, 1))
            v = np.tile(v, (1, h // g, 1, 1))
            return attention(q, k, v, mask)
    """
        },
        breaks="grouped_query_attention",
        says="i % g",
    ),
    Answer(
        "grouped_reshape_in_tile_order",
        {
            "grouped_query_attention": """
        def grouped_query_attention(q, k, v, mask=None):
            b, h, n, d = q.shape
            g = k.shape[1]
            if h % g:
                raise ValueError("h must be divisible by g")
            qg = q.reshape(b, h // g, g, n, d)          # head i lands in group i % g
            out = attention(qg, k[:, None], v[:, None],
                            None if mask is None else np.broadcast_to(mask, (b, h, n, k.shape[2])).reshape(b, h // g, g, n, -1))
            return out.reshape(b, h, n, -1)
    """
        },
        breaks="grouped_query_attention",
        says="tiled",
    ),
    Answer(
        "kv_head_zero_for_everyone",
        {
            "grouped_query_attention": """
        def grouped_query_attention(q, k, v, mask=None):
            h, g = q.shape[1], k.shape[1]
            if h % g:
                raise ValueError("h must be divisible by g")
            return attention(q, k[:, :1], v[:, :1], mask)
    """
        },
        breaks="grouped_query_attention",
        says="KV head 0",
    ),
    Answer(
        "repeat_by_g_not_group_size",
        {
            "grouped_query_attention": """
        def grouped_query_attention(q, k, v, mask=None):
            h, g = q.shape[1], k.shape[1]
            if h % g:
                raise ValueError("h must be divisible by g")
            return attention(q, np.repeat(k, g, axis=1), np.repeat(v, g, axis=1), mask)
    """
        },
        breaks="grouped_query_attention",
        says="group size",
    ),
    Answer(
        "repeat_by_g_with_broadcast_to",
        {
            "grouped_query_attention": """
        def grouped_query_attention(q, k, v, mask=None):
            b, h, n_q, d = q.shape
            g = k.shape[1]
            if h % g:
                raise ValueError("h must be divisible by g")
            shape = (b, g, g) + k.shape[2:]                        # each KV head g times
            k_all = np.broadcast_to(k[:, :, None], shape).reshape(b, g * g, *k.shape[2:])
            v_all = np.broadcast_to(v[:, :, None], (b, g, g) + v.shape[2:]).reshape(b, g * g, *v.shape[2:])
            return attention(q, k_all, v_all, mask)
    """
        },
        breaks="grouped_query_attention",
        says="group size",
    ),
    Answer(
        "tile_by_g_not_group_size",
        {
            "grouped_query_attention": """
        def grouped_query_attention(q, k, v, mask=None):
            h, g = q.shape[1], k.shape[1]
            if h % g:
                raise ValueError("h must be divisible by g")
            return attention(q, np.tile(k, (1, g, 1, 1)), np.tile(v, (1, g, 1, 1)), mask)
    """
        },
        breaks="grouped_query_attention",
        says=("tiled g = ", "group size"),
    ),
    Answer(
        "mask_not_broadcast_before_grouping",
        {
            "grouped_query_attention": """
        def grouped_query_attention(q, k, v, mask=None):
            b, h, n_q, d = q.shape
            g = k.shape[1]
            if h % g:
                raise ValueError("h must be divisible by g")
            qg = q.reshape(b, g, h // g, n_q, d)                  # (b, g, group, n, d)
            out = attention(qg, k[:, :, None], v[:, :, None], mask)  # the mask is still (b, 1, n, n)
            return out.reshape(b, h, n_q, -1)
    """
        },
        breaks="grouped_query_attention",
        says="broadcast it to (b, h, n, n)",
    ),
    Answer(
        "accepts_h_not_divisible_by_g",
        {
            "grouped_query_attention": """
        def grouped_query_attention(q, k, v, mask=None):
            h, g = q.shape[1], k.shape[1]
            which = np.arange(h) * g // h       # spreads the query heads as evenly as it can
            return attention(q, k[:, which], v[:, which], mask)
    """
        },
        breaks="grouped_query_attention",
        says="divisible",
    ),
    Answer(
        "gqa_calls_the_reference",
        {
            "grouped_query_attention": """
        import heads_and_masks as hm
        def grouped_query_attention(q, k, v, mask=None):
            return hm.grouped_query_attention(q, k, v, mask)
    """
        },
        breaks="grouped_query_attention",
        says="reference",
    ),
    # ------------------------------------------------------------------ kv_cache_bytes mistakes
    Answer(
        "forgot_factor_two",
        {
            "kv_cache_bytes": """
        def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_value=2):
            if min(n_layers, n_kv_heads, head_dim, seq_len, batch) < 0:
                raise ValueError("negative size")
            return n_layers * n_kv_heads * head_dim * seq_len * batch * bytes_per_value
    """
        },
        breaks="kv_cache_bytes",
        says="factor 2",
    ),
    Answer(
        "bits_not_bytes",
        {
            "kv_cache_bytes": """
        def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_value=2):
            if min(n_layers, n_kv_heads, head_dim, seq_len, batch) < 0:
                raise ValueError("negative size")
            bits = 8 * bytes_per_value
            return 2 * n_layers * n_kv_heads * head_dim * seq_len * batch * bits
    """
        },
        breaks="kv_cache_bytes",
        says="bits",
    ),
    Answer(
        "batch_ignored",
        {
            "kv_cache_bytes": """
        def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_value=2):
            if min(n_layers, n_kv_heads, head_dim, seq_len) < 0:
                raise ValueError("negative size")
            return 2 * n_layers * n_kv_heads * head_dim * seq_len * bytes_per_value
    """
        },
        breaks="kv_cache_bytes",
        says="batch is ignored",
    ),
    Answer(
        "no_check_of_negative_sizes",
        {
            "kv_cache_bytes": """
        def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_value=2):
            return 2 * n_layers * n_kv_heads * head_dim * seq_len * batch * bytes_per_value
    """
        },
        breaks="kv_cache_bytes",
        says="ValueError",
    ),
    Answer(
        "kv_calls_the_reference",
        {
            "kv_cache_bytes": """
        from heads_and_masks import kv_cache_bytes as course_kv_cache_bytes
        def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_value=2):
            return course_kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch, bytes_per_value)
    """
        },
        breaks="kv_cache_bytes",
        says="reference",
    ),
]
