"""Sample answers for 07_generation: `decode_step`, `bottom_right_causal_mask`, `rolling_cache_write`,
`sinks_window_mask`, `document_mask` and `mixed_cache_bytes`.

The notebook gives `attention(q, k, v, mask=None)` in a cell before the first exercise.
"""

from catalog import Answer, edited, mistakes

ASSIGNMENT = "07_generation"

# Right answers, edited for the mistakes (each mistake reads as what it changes)
_DECODE_STEP = """
            def decode_step(q_new, k_new, v_new, k_cache, v_cache):
                keys = np.concatenate([k_cache, k_new], axis=2)
                values = np.concatenate([v_cache, v_new], axis=2)
                return attention(q_new, keys, values), keys, values
        """
_REFUSES_TOO_MANY_QUERIES = """if n_new > n_keys:
                    raise ValueError("too many queries")
                """
_BOTTOM_RIGHT = f"""
            def bottom_right_causal_mask(n_new, n_keys):
                {_REFUSES_TOO_MANY_QUERIES}return np.tril(np.ones((n_new, n_keys), dtype=bool), k=n_keys - n_new)
        """
_SINKS_RULE = "(k <= q) & ((q - k < window) | (k < sinks))"
_SINKS = f"""
            def sinks_window_mask(n, window, sinks):
                q = np.arange(n)[:, None]
                k = np.arange(n)[None, :]
                return {_SINKS_RULE}
        """

ANSWERS = [
    Answer("untouched", {}, untouched=True),
    # ------------------------------------------------------------------ correct, in several styles
    Answer(
        "own_softmax_and_list_append",
        {
            "decode_step": """
            def decode_step(q_new, k_new, v_new, k_cache, v_cache):
                keys = np.concatenate((k_cache, k_new), axis=-2)
                values = np.concatenate((v_cache, v_new), axis=-2)
                s = np.einsum("bhqd,bhkd->bhqk", q_new, keys) / np.sqrt(q_new.shape[-1])
                s = s - s.max(axis=-1, keepdims=True)
                w = np.exp(s)
                w = w / w.sum(axis=-1, keepdims=True)
                return np.einsum("bhqk,bhkd->bhqd", w, values), keys, values
        """,
            "bottom_right_causal_mask": """
            def bottom_right_causal_mask(n_new, n_keys):
                if n_new > n_keys:
                    raise ValueError("more new queries than keys")
                query = np.arange(n_keys - n_new, n_keys)[:, None]
                return np.arange(n_keys)[None, :] <= query
        """,
            "rolling_cache_write": """
            def rolling_cache_write(cache, new, position):
                out = np.array(cache, copy=True)
                w = cache.shape[-2]
                for i in range(new.shape[-2]):
                    out[..., (position + i) % w, :] = new[..., i, :]
                return out
        """,
            "sinks_window_mask": """
            def sinks_window_mask(n, window, sinks):
                mask = np.zeros((n, n), dtype=bool)
                for i in range(n):
                    for j in range(i + 1):
                        if i - j < window or j < sinks:
                            mask[i, j] = True
                return mask
        """,
            "document_mask": """
            def document_mask(doc_ids):
                ids = np.asarray(doc_ids)
                n = ids.shape[-1]
                rows = ids.reshape(-1, n)
                out = np.zeros((rows.shape[0], n, n), dtype=bool)
                for r, row in enumerate(rows):
                    for i in range(n):
                        for j in range(i + 1):
                            out[r, i, j] = row[i] == row[j]
                return out.reshape(ids.shape + (n,))
        """,
            "mixed_cache_bytes": """
            def mixed_cache_bytes(n_local, n_global, window, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_value=2):
                total = 0
                for layer in range(n_local + n_global):
                    kept = min(seq_len, window) if layer < n_local else seq_len
                    total += 2 * n_kv_heads * head_dim * kept * batch * bytes_per_value
                return total
        """,
        },
    ),
    Answer(
        "given_attention_and_triu_styles",
        {
            "decode_step": """
            def decode_step(q_new, k_new, v_new, k_cache, v_cache):
                k_all = np.append(k_cache, k_new, axis=2)
                v_all = np.append(v_cache, v_new, axis=2)
                mask = np.ones((1, k_all.shape[2]), dtype=bool)
                return attention(q_new, k_all, v_all, mask), k_all, v_all
        """,
            "bottom_right_causal_mask": """
            def bottom_right_causal_mask(n_new, n_keys):
                if n_new > n_keys:
                    raise ValueError(f"n_new={n_new} > n_keys={n_keys}")
                return ~np.triu(np.ones((n_new, n_keys), dtype=bool), k=n_keys - n_new + 1)
        """,
            "rolling_cache_write": """
            def rolling_cache_write(cache, new, position):
                w, t = cache.shape[-2], new.shape[-2]
                slots = (position + np.arange(t)) % w
                out = cache.copy()
                np.put_along_axis(out, np.broadcast_to(slots[:, None], new.shape[:-2] + (t, new.shape[-1])).copy(),
                                  new, axis=-2)
                return out
        """,
            "sinks_window_mask": """
            def sinks_window_mask(n, window, sinks):
                causal = np.tril(np.ones((n, n), dtype=bool))
                window_band = np.triu(causal, k=-(window - 1))
                sink_columns = np.zeros((n, n), dtype=bool)
                sink_columns[:, :sinks] = True
                return causal & (window_band | sink_columns)
        """,
            "document_mask": """
            def document_mask(doc_ids):
                doc_ids = np.asarray(doc_ids)
                n = doc_ids.shape[-1]
                same = doc_ids[..., :, None] == doc_ids[..., None, :]
                return np.logical_and(same, np.tril(np.ones((n, n), bool)))
        """,
            "mixed_cache_bytes": """
            def mixed_cache_bytes(n_local, n_global, window, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_value=2):
                local = n_local * 2 * n_kv_heads * head_dim * min(window, seq_len)
                glob = n_global * 2 * n_kv_heads * head_dim * seq_len
                return (local + glob) * batch * bytes_per_value
        """,
        },
    ),
    Answer(
        "float32_and_numpy_ints",
        {
            "decode_step": """
            def decode_step(q_new, k_new, v_new, k_cache, v_cache):
                q32, k32, v32 = (a.astype(np.float32) for a in (q_new, k_new, v_new))
                keys = np.concatenate([k_cache.astype(np.float32), k32], axis=2)
                values = np.concatenate([v_cache.astype(np.float32), v32], axis=2)
                return attention(q32, keys, values), keys, values
        """,
            "mixed_cache_bytes": """
            def mixed_cache_bytes(n_local, n_global, window, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_value=2):
                layers_tokens = np.array([n_local * min(seq_len, window), n_global * seq_len], dtype=np.int64)
                return np.int64(2 * n_kv_heads * head_dim) * layers_tokens.sum() * batch * bytes_per_value
        """,
            "document_mask": """
            def document_mask(doc_ids):
                ids = np.asarray(doc_ids)
                n = ids.shape[-1]
                starts = np.concatenate([np.ones(ids.shape[:-1] + (1,), bool), ids[..., 1:] != ids[..., :-1]], axis=-1)
                segment = np.cumsum(starts, axis=-1)        # documents are contiguous runs
                return (segment[..., :, None] == segment[..., None, :]) & np.tri(n, dtype=bool)
        """,
        },
    ),
    # ------------------------------------------------------------------ decode_step mistakes
    *mistakes(
        "decode_step",
        (
            "cache_forgets_own_kv",
            "forgets the new token's own K/V",
            """
            def decode_step(q_new, k_new, v_new, k_cache, v_cache):
                out = attention(q_new, k_cache, v_cache)          # the new token's own key is missing
                return out, np.concatenate([k_cache, k_new], axis=2), np.concatenate([v_cache, v_new], axis=2)
        """,
        ),
        ("cache_not_appended", "not appended", edited(_DECODE_STEP, ("), keys, values", "), k_cache, v_cache"))),
        (
            "new_token_prepended",
            "before the cached ones",
            edited(_DECODE_STEP, ("[k_cache, k_new]", "[k_new, k_cache]"), ("[v_cache, v_new]", "[v_new, v_cache]")),
        ),
        (
            "decode_top_left_tril",
            "aligned top-left",
            edited(
                _DECODE_STEP,
                (
                    "return attention(q_new, keys, values)",
                    "mask = np.tril(np.ones((1, keys.shape[2]), dtype=bool))\n"
                    "                return attention(q_new, keys, values, mask)",
                ),
            ),
        ),
        (
            "decode_top_left_by_positions",
            "aligned top-left",
            """
            def decode_step(q_new, k_new, v_new, k_cache, v_cache):
                keys = np.concatenate([k_cache, k_new], axis=2)
                values = np.concatenate([v_cache, v_new], axis=2)
                query = np.arange(q_new.shape[2])[:, None]      # the new queries, numbered from 0
                key = np.arange(keys.shape[2])[None, :]
                return attention(q_new, keys, values, key <= query), keys, values
        """,
        ),
        (
            "decode_top_left_additive_own_softmax",
            "aligned top-left",
            """
            def decode_step(q_new, k_new, v_new, k_cache, v_cache):
                keys = np.concatenate((k_cache, k_new), axis=-2)
                values = np.concatenate((v_cache, v_new), axis=-2)
                scores = q_new @ np.swapaxes(keys, -1, -2) / np.sqrt(q_new.shape[-1])
                scores = scores + np.where(np.tri(1, keys.shape[-2], dtype=bool), 0.0, -np.inf)
                w = np.exp(scores - scores.max(axis=-1, keepdims=True))
                return (w / w.sum(axis=-1, keepdims=True)) @ values, keys, values
        """,
        ),
    ),
    # ------------------------------------------------------------------ bottom_right_causal_mask mistakes
    *mistakes(
        "bottom_right_causal_mask",
        ("top_left_tril", "top-left alignment", edited(_BOTTOM_RIGHT, (", k=n_keys - n_new)", ")"))),
        (
            "bottom_right_without_own_key",
            "its own key",
            edited(_BOTTOM_RIGHT, ("k=n_keys - n_new)", "k=n_keys - n_new - 1)")),
        ),
        ("bottom_right_never_refuses", "ValueError", edited(_BOTTOM_RIGHT, (_REFUSES_TOO_MANY_QUERIES, ""))),
        (
            "bottom_right_refuses_no_new_query",
            "no new query",
            edited(_BOTTOM_RIGHT, ("if n_new > n_keys:", "if not 0 < n_new <= n_keys:")),
        ),
        (
            "bottom_right_refuses_zero_with_its_own_words",
            "no new query",
            edited(
                _BOTTOM_RIGHT,
                (
                    _REFUSES_TOO_MANY_QUERIES,
                    _REFUSES_TOO_MANY_QUERIES.replace("n_new > n_keys", "n_new < 1") + _REFUSES_TOO_MANY_QUERIES,
                ),
            ),
        ),
        (
            "bottom_right_rows_from_a_list",
            "empty list",
            """
            def bottom_right_causal_mask(n_new, n_keys):
                if n_new > n_keys:
                    raise ValueError("more new queries than keys")
                offset = n_keys - n_new
                return np.array([[key <= offset + i for key in range(n_keys)] for i in range(n_new)])
        """,
        ),
    ),
    # ------------------------------------------------------------------ rolling_cache_write mistakes
    *mistakes(
        "rolling_cache_write",
        (
            "rolling_indexed_by_step",
            "indexed by step instead of position",
            """
            def rolling_cache_write(cache, new, position):
                out = cache.copy()
                w = cache.shape[-2]
                for step in range(new.shape[-2]):
                    out[..., step % w, :] = new[..., step, :]
                return out
        """,
        ),
        (
            "rolling_off_by_one_slot",
            "off by one slot",
            """
            def rolling_cache_write(cache, new, position):
                out = cache.copy()
                w = cache.shape[-2]
                slots = (np.arange(new.shape[-2]) + position + 1) % w
                out[..., slots, :] = new
                return out
        """,
        ),
        (
            "rolling_appends",
            "shifted like a queue",
            """
            def rolling_cache_write(cache, new, position):
                return np.concatenate([cache, new], axis=-2)[..., -cache.shape[-2]:, :]
        """,
        ),
        (
            "rolling_in_place",
            "`out = cache.copy()`",
            """
            def rolling_cache_write(cache, new, position):
                w = cache.shape[-2]
                cache[..., np.arange(position, position + new.shape[-2]) % w, :] = new
                return cache
        """,
        ),
    ),
    # ------------------------------------------------------------------ sinks_window_mask mistakes
    *mistakes(
        "sinks_window_mask",
        (
            "sinks_and_instead_of_or",
            "AND where OR is needed",
            edited(_SINKS, (_SINKS_RULE, "(k <= q) & (q - k < window) & (k < sinks)")),
        ),
        (
            "sinks_see_the_future",
            "causal",
            edited(_SINKS, (_SINKS_RULE, "((k <= q) & (q - k < window)) | (k < sinks)")),
        ),
    ),
    # ------------------------------------------------------------------ document_mask mistakes
    *mistakes(
        "document_mask",
        (
            "documents_see_earlier_documents",
            "documents see earlier documents",
            """
            def document_mask(doc_ids):
                ids = np.asarray(doc_ids)
                n = ids.shape[-1]
                return np.broadcast_to(np.tril(np.ones((n, n), dtype=bool)), ids.shape + (n,)).copy()
        """,
        ),
        (
            "documents_or_instead_of_and",
            "OR where AND is needed",
            """
            def document_mask(doc_ids):
                ids = np.asarray(doc_ids)
                n = ids.shape[-1]
                return (ids[..., :, None] == ids[..., None, :]) | np.tril(np.ones((n, n), dtype=bool))
        """,
        ),
        (
            "documents_logical_or_of_two_rules",
            "OR where AND is needed",
            """
            def document_mask(doc_ids):
                ids = np.asarray(doc_ids)
                query, key = np.arange(ids.shape[-1])[:, None], np.arange(ids.shape[-1])[None, :]
                same_document = np.equal(ids[..., :, None], ids[..., None, :])
                return np.logical_or(same_document, key <= query)
        """,
        ),
        (
            "documents_or_in_a_loop",
            "OR where AND is needed",
            """
            def document_mask(doc_ids):
                ids = np.asarray(doc_ids)
                n = ids.shape[-1]
                rows = ids.reshape(-1, n)
                out = np.zeros((len(rows), n, n), dtype=bool)
                for r, row in enumerate(rows):
                    for i in range(n):
                        for j in range(n):
                            out[r, i, j] = row[i] == row[j] or j <= i
                return out.reshape(ids.shape + (n,))
        """,
        ),
        (
            "documents_assume_sorted_ids",
            "increase along the row",
            """
            def document_mask(doc_ids):
                ids = np.asarray(doc_ids)
                n = ids.shape[-1]
                # with key <= query, the key's id is at most the query's: equal means the same document
                return (ids[..., None, :] >= ids[..., :, None]) & np.tril(np.ones((n, n), dtype=bool))
        """,
        ),
        (
            "documents_blocks_from_unique_counts",
            "increase along the row",
            """
            def document_mask(doc_ids):
                ids = np.asarray(doc_ids)
                n = ids.shape[-1]
                masks = []
                for row in ids.reshape(-1, n):
                    _, lengths = np.unique(row, return_counts=True)   # one block per document
                    segment = np.repeat(np.arange(len(lengths)), lengths)
                    masks.append((segment[:, None] == segment[None, :]) & np.tri(n, dtype=bool))
                return np.array(masks).reshape(ids.shape + (n,))
        """,
        ),
        (
            "documents_lengths_from_bincount",
            "increase along the row",
            """
            def document_mask(doc_ids):
                ids = np.asarray(doc_ids)
                n = ids.shape[-1]
                out = []
                for row in ids.reshape(-1, n):
                    lengths = np.bincount(row - row.min())
                    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
                    start_of = np.repeat(starts, lengths)             # where each token's document starts
                    key = np.arange(n)
                    out.append((key[None, :] >= start_of[:, None]) & (key[None, :] <= key[:, None]))
                return np.array(out).reshape(ids.shape + (n,))
        """,
        ),
        (
            "documents_batch_axes_mixed",
            "mixes the batch axis",
            """
            def document_mask(doc_ids):
                ids = np.asarray(doc_ids)
                n = ids.shape[-1]
                same = ids[:, None] == ids[None, :]
                return same & np.tril(np.ones((n, n), dtype=bool))
        """,
        ),
        (
            "documents_equal_outer",
            "mixes the batch axis",
            """
            def document_mask(doc_ids):
                ids = np.asarray(doc_ids)
                return np.equal.outer(ids, ids) & np.tri(ids.shape[-1], dtype=bool)
        """,
        ),
        (
            "documents_flattened_batch",
            "mixes the batch axis",
            """
            def document_mask(doc_ids):
                ids = np.asarray(doc_ids)
                flat = ids.reshape(-1)
                return np.tril(flat[:, None] == flat[None, :])
        """,
        ),
        (
            "documents_bidirectional",
            "bidirectional inside a document",
            """
            def document_mask(doc_ids):
                ids = np.asarray(doc_ids)
                return ids[..., :, None] == ids[..., None, :]
        """,
        ),
    ),
    # ------------------------------------------------------------------ mixed_cache_bytes mistakes
    *mistakes(
        "mixed_cache_bytes",
        (
            "every_layer_global",
            "every layer counted as global",
            """
            def mixed_cache_bytes(n_local, n_global, window, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_value=2):
                return 2 * (n_local + n_global) * n_kv_heads * head_dim * seq_len * batch * bytes_per_value
        """,
        ),
        (
            "local_layers_always_full_window",
            "min(seq_len, window)",
            """
            def mixed_cache_bytes(n_local, n_global, window, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_value=2):
                per = 2 * n_kv_heads * head_dim * batch * bytes_per_value
                return per * (n_local * window + n_global * seq_len)
        """,
        ),
    ),
]
