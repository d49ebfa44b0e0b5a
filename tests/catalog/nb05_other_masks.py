"""Sample answers for 05_other_masks: padding_mask, sliding_window_mask, attention_mask, batched_attention."""

from catalog import Answer

ASSIGNMENT = "05_other_masks"

# The softmax part written by the learner (notebook 00's attention, again: graded code may not call hm.*).
OWN_ATTENTION = """
        def own_attention(q, k, v, mask=None):
            scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
            if mask is not None:
                scores = np.where(mask, scores, -np.inf)
            top = scores.max(axis=-1, keepdims=True)
            e = np.exp(scores - np.where(np.isfinite(top), top, 0.0))
            t = e.sum(axis=-1, keepdims=True)
            return np.divide(e, t, out=np.zeros_like(e), where=t > 0) @ v
"""

# ---------------------------------------------------------------------------------------------------
# correct answers, each in another style for all four exercises

LOOPS = {
    "padding_mask": """
        def padding_mask(lengths, n):
            lengths = [int(x) for x in lengths]
            for length in lengths:
                if length < 0 or length > n:
                    raise ValueError("bad length")
            mask = np.zeros((len(lengths), n), dtype=bool)
            for i, length in enumerate(lengths):
                for p in range(length):
                    mask[i, p] = True
            return mask
    """,
    "sliding_window_mask": """
        def sliding_window_mask(n, w):
            if w <= 0:
                raise ValueError("w must be positive")
            mask = np.zeros((n, n), dtype=bool)
            for i in range(n):
                for j in range(max(0, i - w + 1), i + 1):
                    mask[i, j] = True
            return mask
    """,
    "attention_mask": """
        def attention_mask(lengths, n, causal=True, window=None):
            lengths = list(lengths)
            if any(L < 0 or L > n for L in lengths):
                raise ValueError("lengths must be in [0, n]")
            mask = np.zeros((len(lengths), 1, n, n), dtype=bool)
            for b, L in enumerate(lengths):
                for i in range(n):
                    for j in range(L):
                        if causal and j > i:
                            continue
                        if window is not None and not (i - window < j <= i):
                            continue
                        mask[b, 0, i, j] = True
            return mask
    """,
    "batched_attention": OWN_ATTENTION
    + """
        def batched_attention(q, k, v, lengths, causal=True, window=None):
            # every sequence on its own; the filler rows get zeros (nobody reads them)
            out = np.zeros(q.shape[:2] + (v.shape[-1],))
            for i, L in enumerate(lengths):
                mask = np.ones((L, L), dtype=bool)
                if causal:
                    mask &= np.tril(np.ones((L, L), dtype=bool))
                if window is not None:
                    i_, j_ = np.indices((L, L))
                    mask &= (j_ <= i_) & (j_ > i_ - window)
                out[i, :L] = own_attention(q[i, :L], k[i, :L], v[i, :L], mask)
            return out
    """,
}

TRI_AND_OWN_SOFTMAX = {
    "padding_mask": """
        def padding_mask(lengths, n):
            lengths = np.array(lengths, dtype=int).reshape(-1)
            if (lengths < 0).any():
                raise ValueError("negative length")
            if (lengths > n).any():
                raise ValueError("length longer than n")
            return np.greater.outer(lengths, np.arange(n))
    """,
    "sliding_window_mask": """
        def sliding_window_mask(n, w):
            if w < 1:
                raise ValueError("window must be at least 1")
            ones = np.ones((n, n), dtype=bool)
            return np.tril(ones) & ~np.tril(ones, k=-w)
    """,
    "attention_mask": """
        def attention_mask(lengths, n, causal=True, window=None):
            keys = padding_mask(lengths, n)[:, np.newaxis, np.newaxis, :]
            pattern = np.tri(n, dtype=bool) if causal else np.ones((n, n), bool)
            if window is not None:
                pattern = pattern & sliding_window_mask(n, window)
            return keys & pattern
    """,
    "batched_attention": """
        def batched_attention(q, k, v, lengths, causal=True, window=None):
            mask = attention_mask(lengths, q.shape[1], causal, window)[:, 0]      # (b, n, n)
            scores = q @ k.transpose(0, 2, 1) / np.sqrt(q.shape[-1])
            scores = np.where(mask, scores, -1e30)
            scores = scores - scores.max(axis=-1, keepdims=True)
            weights = np.exp(scores) * mask
            totals = weights.sum(axis=-1, keepdims=True)
            weights = np.divide(weights, totals, out=np.zeros_like(weights), where=totals > 0)
            return weights @ v
    """,
}

EINSUM_4D = {
    "padding_mask": """
        def padding_mask(lengths, n):
            lengths = np.asarray(lengths)
            if lengths.size and (lengths.min() < 0 or lengths.max() > n):
                raise ValueError(f"lengths must be between 0 and {n}")
            return np.arange(n) < lengths.reshape(-1, 1)
    """,
    "sliding_window_mask": """
        def sliding_window_mask(n, w):
            if not w >= 1:
                raise ValueError("w < 1")
            i, j = np.indices((n, n))
            distance = i - j
            return (distance >= 0) & (distance < w)
    """,
    "attention_mask": """
        def attention_mask(lengths, n, causal=True, window=None):
            real = padding_mask(lengths, n)                  # (b, n_k)
            i, j = np.indices((n, n))
            ok = np.full((n, n), True)
            if causal:
                ok = np.logical_and(ok, j <= i)
            if window is not None:
                ok = np.logical_and(ok, sliding_window_mask(n, window))
            return np.einsum("bk,qk->bqk", real, ok).astype(bool)[:, None]
    """,
    "batched_attention": OWN_ATTENTION
    + """
        def batched_attention(q, k, v, lengths, causal=True, window=None):
            mask = attention_mask(lengths, q.shape[1], causal=causal, window=window)  # (b, 1, n, n)
            out = own_attention(q[:, None], k[:, None], v[:, None], mask)             # (b, 1, n, d_v)
            return out[:, 0]
    """,
}

# ---------------------------------------------------------------------------------------------------

ANSWERS = [
    Answer("untouched", {}, untouched=True),
    Answer("loops", LOOPS),
    Answer("tri_and_own_softmax", TRI_AND_OWN_SOFTMAX),
    Answer("einsum_and_4d_heads", EINSUM_4D),
    # padding_mask
    Answer(
        "padding_le_instead_of_lt",
        {
            "padding_mask": """
        def padding_mask(lengths, n):
            lengths = np.asarray(lengths)
            if np.any(lengths < 0) or np.any(lengths > n):
                raise ValueError("bad lengths")
            return np.arange(n)[None, :] <= lengths[:, None]
    """
        },
        breaks="padding_mask",
        says="`<=` instead of `<`",
    ),
    Answer(
        "padding_polarity_flipped",
        {
            "padding_mask": """
        def padding_mask(lengths, n):
            lengths = np.asarray(lengths)
            if np.any(lengths < 0) or np.any(lengths > n):
                raise ValueError("bad lengths")
            return np.arange(n)[None, :] >= lengths[:, None]    # True at the filler
    """
        },
        breaks="padding_mask",
        says="polarity",
    ),
    Answer(
        "padding_accepts_too_long",
        {
            "padding_mask": """
        def padding_mask(lengths, n):
            lengths = np.asarray(lengths)
            if np.any(lengths < 0):
                raise ValueError("negative length")
            return np.arange(n)[None, :] < lengths[:, None]
    """
        },
        breaks="padding_mask",
        says="does not fit in n",
    ),
    Answer(
        "padding_accepts_negative",
        {
            "padding_mask": """
        def padding_mask(lengths, n):
            lengths = np.asarray(lengths)
            if np.any(lengths > n):
                raise ValueError("too long")
            return np.arange(n)[None, :] < lengths[:, None]
    """
        },
        breaks="padding_mask",
        says="negative",
    ),
    Answer(
        "padding_transposed",
        {
            "padding_mask": """
        def padding_mask(lengths, n):
            lengths = np.asarray(lengths)
            if np.any(lengths < 0) or np.any(lengths > n):
                raise ValueError("bad lengths")
            return np.arange(n)[:, None] < lengths[None, :]     # (n, b)
    """
        },
        breaks="padding_mask",
        says="(b, n)",
    ),
    Answer(
        "padding_calls_the_reference",
        {
            "padding_mask": """
        def padding_mask(lengths, n):
            return hm.padding_mask(lengths, n)
    """
        },
        breaks="padding_mask",
        says="reference",
    ),
    # sliding_window_mask
    Answer(
        "window_w_plus_one",
        {
            "sliding_window_mask": """
        def sliding_window_mask(n, w):
            if w < 1:
                raise ValueError("w < 1")
            q, k = np.arange(n)[:, None], np.arange(n)[None, :]
            return (k <= q) & (k >= q - w)
    """
        },
        breaks="sliding_window_mask",
        says="w + 1",
    ),
    Answer(
        "window_symmetric",
        {
            "sliding_window_mask": """
        def sliding_window_mask(n, w):
            if w < 1:
                raise ValueError("w < 1")
            q, k = np.arange(n)[:, None], np.arange(n)[None, :]
            return np.abs(q - k) < w
    """
        },
        breaks="sliding_window_mask",
        says="future",
    ),
    Answer(
        "window_without_itself",
        {
            "sliding_window_mask": """
        def sliding_window_mask(n, w):
            if w < 1:
                raise ValueError("w < 1")
            q, k = np.arange(n)[:, None], np.arange(n)[None, :]
            return (k < q) & (k >= q - w)
    """
        },
        breaks="sliding_window_mask",
        says="without itself",
    ),
    Answer(
        "window_accepts_zero",
        {
            "sliding_window_mask": """
        def sliding_window_mask(n, w):
            q, k = np.arange(n)[:, None], np.arange(n)[None, :]
            return (k <= q) & (k > q - w)
    """
        },
        breaks="sliding_window_mask",
        says="w = 0",
    ),
    # attention_mask
    Answer(
        "mask_padding_on_queries",
        {
            "attention_mask": """
        def attention_mask(lengths, n, causal=True, window=None):
            lengths = np.asarray(lengths)
            if np.any(lengths < 0) or np.any(lengths > n):
                raise ValueError("bad lengths")
            real = np.arange(n)[None, :] < lengths[:, None]
            q, k = np.arange(n)[:, None], np.arange(n)[None, :]
            pattern = (k <= q) if causal else np.ones((n, n), bool)
            if window is not None:
                pattern = pattern & (k <= q) & (k > q - window)
            return real[:, None, :, None] & pattern               # rows, not columns
    """
        },
        breaks="attention_mask",
        cascades=("batched_attention",),
        says="instead of the keys",
    ),
    Answer(
        "mask_query_rows_too",
        {
            "attention_mask": """
        def attention_mask(lengths, n, causal=True, window=None):
            lengths = np.asarray(lengths)
            if np.any(lengths < 0) or np.any(lengths > n):
                raise ValueError("bad lengths")
            real = np.arange(n)[None, :] < lengths[:, None]
            q, k = np.arange(n)[:, None], np.arange(n)[None, :]
            pattern = (k <= q) if causal else np.ones((n, n), bool)
            if window is not None:
                pattern = pattern & (k <= q) & (k > q - window)
            return real[:, None, :, None] & real[:, None, None, :] & pattern
    """
        },
        breaks="attention_mask",
        says="query rows",
    ),
    Answer(
        "mask_causal_or_window",
        {
            "attention_mask": """
        def attention_mask(lengths, n, causal=True, window=None):
            lengths = np.asarray(lengths)
            if np.any(lengths < 0) or np.any(lengths > n):
                raise ValueError("bad lengths")
            real = (np.arange(n)[None, :] < lengths[:, None])[:, None, None, :]
            q, k = np.arange(n)[:, None], np.arange(n)[None, :]
            if causal:
                pattern = k <= q                 # the window is forgotten when causal=True
            elif window is not None:
                pattern = (k <= q) & (k > q - window)
            else:
                pattern = np.ones((n, n), bool)
            return real & pattern
    """
        },
        breaks="attention_mask",
        cascades=("batched_attention",),
        says="logical AND",
    ),
    Answer(
        "mask_window_sees_future",
        {
            "attention_mask": """
        def attention_mask(lengths, n, causal=True, window=None):
            lengths = np.asarray(lengths)
            if np.any(lengths < 0) or np.any(lengths > n):
                raise ValueError("bad lengths")
            real = (np.arange(n)[None, :] < lengths[:, None])[:, None, None, :]
            q, k = np.arange(n)[:, None], np.arange(n)[None, :]
            pattern = np.ones((n, n), bool)
            if causal:
                pattern = pattern & (k <= q)
            if window is not None:
                pattern = pattern & (k > q - window)   # not combined with key <= query
            return real & pattern
    """
        },
        breaks="attention_mask",
        cascades=("batched_attention",),
        says="future",
    ),
    Answer(
        "mask_without_head_axis",
        {
            "attention_mask": """
        def attention_mask(lengths, n, causal=True, window=None):
            lengths = np.asarray(lengths)
            if np.any(lengths < 0) or np.any(lengths > n):
                raise ValueError("bad lengths")
            q, k = np.arange(n)[:, None], np.arange(n)[None, :]
            mask = k[None] < lengths[:, None, None]
            if causal:
                mask = mask & (k <= q)
            if window is not None:
                mask = mask & (k <= q) & (k > q - window)
            return np.broadcast_to(mask, (len(lengths), n, n)).copy()
    """
        },
        breaks="attention_mask",
        cascades=("batched_attention",),
        says="head axis",
    ),
    # batched_attention
    Answer(
        "batched_forgets_padding",
        {
            "batched_attention": OWN_ATTENTION
            + """
        def batched_attention(q, k, v, lengths, causal=True, window=None):
            n = q.shape[1]
            mask = np.tril(np.ones((n, n), bool)) if causal else np.ones((n, n), bool)
            if window is not None:
                mask = mask & sliding_window_mask(n, window)
            return own_attention(q, k, v, mask)
    """
        },
        breaks="batched_attention",
        says="padding mask is missing",
    ),
    Answer(
        "batched_4d_mask_on_3d_scores",
        {
            "batched_attention": OWN_ATTENTION
            + """
        def batched_attention(q, k, v, lengths, causal=True, window=None):
            mask = attention_mask(lengths, q.shape[1], causal=causal, window=window)
            return own_attention(q, k, v, mask)
    """
        },
        breaks="batched_attention",
        says="(b, b, n, d_v)",
    ),
    Answer(
        "batched_pads_queries",
        {
            "batched_attention": OWN_ATTENTION
            + """
        def batched_attention(q, k, v, lengths, causal=True, window=None):
            n = q.shape[1]
            real = np.arange(n)[None, :] < np.asarray(lengths)[:, None]
            pattern = attention_mask([n] * len(lengths), n, causal=causal, window=window)[:, 0]
            return own_attention(q, k, v, real[:, :, None] & pattern)
    """
        },
        breaks="batched_attention",
        says="queries instead of the keys",
    ),
    Answer(
        "batched_nan_in_filler_rows",
        {
            "batched_attention": """
        def batched_attention(q, k, v, lengths, causal=True, window=None):
            n = q.shape[1]
            real = np.arange(n)[None, :] < np.asarray(lengths)[:, None]
            mask = attention_mask(lengths, n, causal=causal, window=window)[:, 0] & real[:, :, None]
            scores = np.where(mask, q @ np.swapaxes(k, 1, 2) / np.sqrt(q.shape[-1]), -np.inf)
            e = np.exp(scores - scores.max(axis=-1, keepdims=True))
            return e / e.sum(axis=-1, keepdims=True) @ v
    """
        },
        breaks="batched_attention",
        says="nan",
    ),
]
