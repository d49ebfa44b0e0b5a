"""Sample answers for 00_start_here: `attention(q, k, v, mask=None)`."""

from catalog import Answer

ASSIGNMENT = "00_start_here"

ANSWERS = [
    Answer("untouched", {}, untouched=True),
    Answer(
        "where_neg_inf_with_guard",
        {
            "attention": """
        def attention(q, k, v, mask=None):
            d = q.shape[-1]
            s = q @ np.swapaxes(k, -1, -2) / np.sqrt(d)
            if mask is not None:
                s = np.where(mask, s, -np.inf)
            m = s.max(axis=-1, keepdims=True)
            m = np.where(np.isneginf(m), 0.0, m)
            e = np.exp(s - m)
            z = e.sum(axis=-1, keepdims=True)
            w = e / np.where(z == 0, 1.0, z)
            return w @ v
    """
        },
    ),
    Answer(
        "einsum_dtype_min",
        {
            "attention": """
        def attention(q, k, v, mask=None):
            scale = 1.0 / np.sqrt(q.shape[-1])
            scores = np.einsum("...qd,...kd->...qk", q, k) * scale
            if mask is None:
                mask = np.ones(scores.shape, dtype=bool)
            mask = np.broadcast_to(mask, scores.shape)
            scores = np.where(mask, scores, np.finfo(scores.dtype).min)
            scores = scores - scores.max(axis=-1, keepdims=True)
            weights = np.exp(scores) * mask          # explicit zeros for the forbidden keys
            totals = weights.sum(axis=-1, keepdims=True)
            weights = np.divide(weights, totals, out=np.zeros_like(weights), where=totals > 0)
            return np.einsum("...qk,...kv->...qv", weights, v)
    """
        },
    ),
    Answer(
        "loops_over_rows",
        {
            "attention": """
        import math
        def attention(q, k, v, mask=None):
            q, k, v = np.asarray(q, float), np.asarray(k, float), np.asarray(v, float)
            lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
            n_q, n_k = q.shape[-2], k.shape[-2]
            full_mask = np.ones(lead + (n_q, n_k), bool) if mask is None else np.broadcast_to(mask, lead + (n_q, n_k))
            q, k, v = (np.broadcast_to(a, lead + a.shape[-2:]) for a in (q, k, v))
            out = np.zeros(lead + (n_q, v.shape[-1]))
            for idx in np.ndindex(*lead):
                for i in range(n_q):
                    allowed = [j for j in range(n_k) if full_mask[idx + (i, j)]]
                    if not allowed:
                        continue
                    s = [float(q[idx + (i,)] @ k[idx + (j,)]) / math.sqrt(q.shape[-1]) for j in allowed]
                    top = max(s)
                    e = [math.exp(x - top) for x in s]
                    total = sum(e)
                    for j, ej in zip(allowed, e):
                        out[idx + (i,)] += ej / total * v[idx + (j,)]
            return out
    """
        },
    ),
    Answer(
        "additive_mask",
        {
            "attention": """
        def attention(q, k, v, mask=None):
            scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
            if mask is not None:
                scores = scores + np.where(mask, 0.0, -1e30)
                keep = np.broadcast_to(mask, scores.shape)
            else:
                keep = np.ones(scores.shape, bool)
            scores = scores - scores.max(axis=-1, keepdims=True)
            e = np.where(keep, np.exp(scores), 0.0)
            total = e.sum(-1, keepdims=True)
            return np.divide(e, total, out=np.zeros_like(e), where=total > 0) @ v
    """
        },
    ),
    Answer(
        "no_sqrt_d",
        {
            "attention": """
        def attention(q, k, v, mask=None):
            s = q @ np.swapaxes(k, -1, -2)
            if mask is not None:
                s = np.where(mask, s, -1e30)
            e = np.exp(s - s.max(-1, keepdims=True))
            if mask is not None:
                e = e * mask
            t = e.sum(-1, keepdims=True)
            return np.divide(e, t, out=np.zeros_like(e), where=t > 0) @ v
    """
        },
        breaks="attention",
        says="sqrt(d)",
    ),
    Answer(
        "softmax_over_queries",
        {
            "attention": """
        def attention(q, k, v, mask=None):
            s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
            if mask is not None:
                s = np.where(mask, s, -1e30)
            e = np.exp(s - s.max())
            if mask is not None:
                e = e * mask
            t = e.sum(-2, keepdims=True)
            return np.divide(e, t, out=np.zeros_like(e), where=t > 0) @ v
    """
        },
        breaks="attention",
        says="axis",
    ),
    Answer(
        "zero_fill",
        {
            "attention": """
        def attention(q, k, v, mask=None):
            s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
            if mask is not None:
                s = np.where(mask, s, 0.0)
            e = np.exp(s - s.max(-1, keepdims=True))
            return e / e.sum(-1, keepdims=True) @ v
    """
        },
        breaks="attention",
        says="e^0",
    ),
    Answer(
        "mask_polarity_flipped",
        {
            "attention": """
        def attention(q, k, v, mask=None):
            s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
            keep = np.ones(s.shape, bool) if mask is None else ~np.broadcast_to(mask, s.shape)
            m = np.where(keep, s, -np.inf).max(-1, keepdims=True)
            m = np.where(np.isfinite(m), m, 0)
            e = np.where(keep, np.exp(np.where(keep, s - m, 0)), 0)
            t = e.sum(-1, keepdims=True)
            return np.divide(e, t, out=np.zeros_like(e), where=t > 0) @ v
    """
        },
        breaks="attention",
        says="polarity",
    ),
    Answer(
        "mask_polarity_inverted_where",
        {
            "attention": """
        def attention(q, k, v, mask=None):
            s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
            if mask is not None:
                s = np.where(mask, -np.inf, s)  # True taken as "forbidden"
            e = np.exp(s - s.max(-1, keepdims=True))
            return e / e.sum(-1, keepdims=True) @ v
    """
        },
        breaks="attention",
        says=("polarity", "true means *may attend*"),
    ),
    Answer(
        "mask_polarity_inverted_additive",
        {
            "attention": """
        def attention(q, k, v, mask=None):
            s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
            if mask is not None:
                s = s + np.where(mask, -1e9, 0.0)  # an additive mask built the wrong way round
            e = np.exp(s - s.max(-1, keepdims=True))
            return e / e.sum(-1, keepdims=True) @ v
    """
        },
        breaks="attention",
        says=("polarity", "true means *may attend*"),
    ),
    Answer(
        "nan_on_fully_masked_row",
        {
            "attention": """
        def attention(q, k, v, mask=None):
            s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
            if mask is not None:
                s = np.where(mask, s, -np.inf)
            e = np.exp(s - s.max(-1, keepdims=True))
            return e / e.sum(-1, keepdims=True) @ v
    """
        },
        breaks="attention",
        says=("nan",),
    ),
    Answer(
        "no_max_subtraction",
        {
            "attention": """
        def attention(q, k, v, mask=None):
            s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
            e = np.exp(s)
            if mask is not None:
                e = e * np.broadcast_to(mask, e.shape)
            t = e.sum(-1, keepdims=True)
            return np.divide(e, t, out=np.zeros_like(e), where=t > 0) @ v
    """
        },
        breaks="attention",
        says="large scores",
    ),
    Answer(
        "only_2d_inputs",
        {
            "attention": """
        def attention(q, k, v, mask=None):
            s = q @ k.T / np.sqrt(q.shape[-1])
            keep = np.ones(s.shape, bool) if mask is None else np.broadcast_to(mask, s.shape)
            m = np.where(keep, s, -np.inf).max(-1, keepdims=True)
            m = np.where(np.isfinite(m), m, 0)
            e = np.where(keep, np.exp(np.where(keep, s - m, 0)), 0)
            t = e.sum(-1, keepdims=True)
            return np.divide(e, t, out=np.zeros_like(e), where=t > 0) @ v
    """
        },
        breaks="attention",
        says="batch",
    ),
    Answer(
        "calls_the_reference",
        {
            "attention": """
        from heads_and_masks import attention as course_attention
        def attention(q, k, v, mask=None):
            return course_attention(q, k, v, mask)
    """
        },
        breaks="attention",
        says="reference",
    ),
]
