"""Sample answers for 03_causal_mask: `causal_mask(n)`, `masked_softmax(scores, mask)`,
`row_entropy_bits(weights)`. Correct answers in several styles, and one wrong answer per
misconception of the lesson."""

from catalog import Answer

ASSIGNMENT = "03_causal_mask"

ANSWERS = [
    Answer("untouched", {}, untouched=True),
    # ---- correct answers, several styles -------------------------------------------------------
    Answer(
        "comparison_dtype_min_log2_where",
        {
            "causal_mask": """
            def causal_mask(n):
                if n < 0:
                    raise ValueError(f"n must be >= 0, got {n}")
                query = np.arange(n)[:, None]
                key = np.arange(n)[None, :]
                return key <= query
        """,
            "masked_softmax": """
            def masked_softmax(scores, mask):
                scores, mask = np.broadcast_arrays(np.asarray(scores, dtype=float), mask)
                filled = np.where(mask, scores, np.finfo(scores.dtype).min)
                filled = filled - filled.max(axis=-1, keepdims=True)
                e = np.exp(filled) * mask               # explicit zeros for the forbidden keys
                total = e.sum(axis=-1, keepdims=True)
                return np.divide(e, total, out=np.zeros_like(e), where=total > 0)
        """,
            "row_entropy_bits": """
            def row_entropy_bits(weights):
                logs = np.log2(weights, out=np.zeros_like(weights), where=weights > 0)
                return -(weights * logs).sum(axis=-1)
        """,
        },
    ),
    Answer(
        "loops_additive_ln",
        {
            "causal_mask": """
            def causal_mask(n):
                if n < 0:
                    raise ValueError("negative length")
                return np.array([[key <= query for key in range(n)] for query in range(n)], dtype=bool).reshape(n, n)
        """,
            "masked_softmax": """
            def masked_softmax(scores, mask):
                additive = np.where(mask, 0.0, -np.inf)           # the additive-mask convention
                logits = scores + additive
                out = np.zeros(logits.shape)
                for index in np.ndindex(*logits.shape[:-1]):
                    row = logits[index]
                    if np.isneginf(row).all():
                        continue                                   # nothing allowed: zeros
                    e = np.exp(row - row.max())
                    out[index] = e / e.sum()
                return out
        """,
            "row_entropy_bits": """
            import math
            def row_entropy_bits(weights):
                w = np.asarray(weights, dtype=float)
                out = np.zeros(w.shape[:-1])
                for index in np.ndindex(*w.shape[:-1]):
                    out[index] = -sum(p * math.log(p) for p in w[index] if p > 0) / math.log(2)
                return out
        """,
        },
    ),
    Answer(
        "tril_neg_inf_nansum",
        {
            "causal_mask": """
            def causal_mask(n):
                return np.tril(np.ones((n, n), dtype=bool))
        """,
            "masked_softmax": """
            def masked_softmax(scores, mask):
                s = np.where(mask, scores, -np.inf)
                m = s.max(axis=-1, keepdims=True)
                m = np.where(np.isfinite(m), m, 0.0)    # a fully masked row: any finite shift will do
                e = np.exp(s - m)                       # exp(-inf) = 0 exactly
                z = e.sum(axis=-1, keepdims=True)
                return e / np.where(z == 0, 1.0, z)
        """,
            "row_entropy_bits": """
            def row_entropy_bits(weights):
                with np.errstate(divide="ignore", invalid="ignore"):
                    terms = weights * np.log2(weights)     # 0 * -inf = nan for zero weights...
                return -np.nansum(terms, axis=-1)           # ...which nansum counts as 0
        """,
        },
    ),
    Answer(
        "additive_minus_1e9_masked_sum",
        {
            "causal_mask": """
            def causal_mask(n):
                n = int(n)
                if n < 0:
                    raise ValueError("n cannot be negative")
                return np.tri(n, dtype=bool)
        """,
            "masked_softmax": """
            def masked_softmax(scores, mask):
                mask = np.asarray(mask, dtype=bool)
                logits = scores + (1.0 - mask) * -1e9      # the practice of many libraries
                logits = logits - logits.max(axis=-1, keepdims=True)
                e = np.exp(logits)
                e = np.where(mask, e, 0.0)
                total = e.sum(axis=-1, keepdims=True)
                safe = np.where(total > 0, total, 1.0)
                return e / safe
        """,
            "row_entropy_bits": """
            def row_entropy_bits(weights):
                safe = np.where(weights > 0, weights, 1.0)   # log2(1) = 0 where the weight is 0
                return -np.einsum("...k,...k->...", weights, np.log2(safe))
        """,
        },
    ),
    # ---- causal_mask: wrong ---------------------------------------------------------------------
    Answer(
        "mask_triu",
        {
            "causal_mask": """
        def causal_mask(n):
            return np.triu(np.ones((n, n), dtype=bool))
    """
        },
        breaks="causal_mask",
        says="triu",
    ),
    Answer(
        "mask_without_diagonal",
        {
            "causal_mask": """
        def causal_mask(n):
            return np.tril(np.ones((n, n), dtype=bool), k=-1)
    """
        },
        breaks="causal_mask",
        says="diagonal",
    ),
    Answer(
        "mask_additive_float",
        {
            "causal_mask": """
        def causal_mask(n):
            return np.triu(np.full((n, n), -np.inf), k=1)     # 0 where allowed, -inf above the diagonal
    """
        },
        breaks="causal_mask",
        says="additive",
    ),
    Answer(
        "mask_ones_and_zeros",
        {
            "causal_mask": """
        def causal_mask(n):
            return np.tril(np.ones((n, n)))
    """
        },
        breaks="causal_mask",
        says="boolean",
    ),
    Answer(
        "mask_no_value_error",
        {
            "causal_mask": """
        def causal_mask(n):
            return np.tri(n, dtype=bool)                      # np.tri(-1) quietly returns an empty array
    """
        },
        breaks="causal_mask",
        says="ValueError",
    ),
    # ---- masked_softmax: wrong ------------------------------------------------------------------
    Answer(
        "softmax_zero_fill",
        {
            "masked_softmax": """
        def masked_softmax(scores, mask):
            s = np.where(mask, scores, 0.0)
            e = np.exp(s - s.max(axis=-1, keepdims=True))
            return e / e.sum(axis=-1, keepdims=True)
    """
        },
        breaks="masked_softmax",
        says="e^0",
    ),
    Answer(
        "softmax_mask_after",
        {
            "masked_softmax": """
        def masked_softmax(scores, mask):
            e = np.exp(scores - scores.max(axis=-1, keepdims=True))
            return e / e.sum(axis=-1, keepdims=True) * mask
    """
        },
        breaks="masked_softmax",
        says="after softmax",
    ),
    Answer(
        "softmax_mask_after_renormalised",
        {
            "masked_softmax": """
        def masked_softmax(scores, mask):
            e = np.exp(scores - scores.max(axis=-1, keepdims=True))
            w = e / e.sum(axis=-1, keepdims=True) * mask
            total = w.sum(axis=-1, keepdims=True)
            return np.divide(w, total, out=np.zeros_like(w), where=total > 0)
    """
        },
        breaks="masked_softmax",
        says="after softmax",
    ),
    Answer(
        "softmax_mask_after_renormalised_nan",
        {
            "masked_softmax": """
        def masked_softmax(scores, mask):
            e = np.exp(scores - scores.max(axis=-1, keepdims=True))
            w = e / e.sum(axis=-1, keepdims=True) * mask
            return w / np.where(np.any(mask, axis=-1, keepdims=True), w.sum(axis=-1, keepdims=True), 1.0)
    """
        },
        breaks="masked_softmax",
        says="before softmax",
    ),
    Answer(
        "softmax_max_over_all_keys",
        {
            "masked_softmax": """
        def masked_softmax(scores, mask):
            shifted = scores - scores.max(axis=-1, keepdims=True)   # forbidden scores count in the max
            e = np.where(mask, np.exp(shifted), 0.0)
            total = e.sum(axis=-1, keepdims=True)
            return np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    """
        },
        breaks="masked_softmax",
        says="largest *allowed* score",
    ),
    Answer(
        "softmax_nan_on_empty_row",
        {
            "masked_softmax": """
        def masked_softmax(scores, mask):
            s = np.where(mask, scores, -np.inf)
            e = np.exp(s - s.max(axis=-1, keepdims=True))
            return e / e.sum(axis=-1, keepdims=True)
    """
        },
        breaks="masked_softmax",
        says="fully masked",
    ),
    Answer(
        "softmax_warning_on_empty_row",
        {
            "masked_softmax": """
        def masked_softmax(scores, mask):
            s = np.where(mask, scores, -np.inf)
            e = np.exp(s - s.max(axis=-1, keepdims=True))
            return np.nan_to_num(e / e.sum(axis=-1, keepdims=True))   # right values, but numpy warns
    """
        },
        breaks="masked_softmax",
        says="warning",
    ),
    Answer(
        "softmax_uniform_on_empty_row",
        {
            "masked_softmax": """
        def masked_softmax(scores, mask):
            s = np.where(mask, scores, np.finfo(float).min)
            e = np.exp(s - s.max(axis=-1, keepdims=True))
            return e / e.sum(axis=-1, keepdims=True)
    """
        },
        breaks="masked_softmax",
        says="same weight on every key",
    ),
    Answer(
        "softmax_no_max_subtraction",
        {
            "masked_softmax": """
        def masked_softmax(scores, mask):
            e = np.where(mask, np.exp(scores), 0.0)
            total = e.sum(axis=-1, keepdims=True)
            return np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    """
        },
        breaks="masked_softmax",
        says="subtract",
    ),
    Answer(
        "softmax_fill_minus_1e4",
        {
            "masked_softmax": """
        def masked_softmax(scores, mask):
            s = np.where(mask, scores, -1e4)                    # "large enough", until scores are larger
            e = np.exp(s - s.max(axis=-1, keepdims=True))
            return e / e.sum(axis=-1, keepdims=True)
    """
        },
        breaks="masked_softmax",
        says="too small",
    ),
    Answer(
        "softmax_additive_minus_1e4",
        {
            "masked_softmax": """
        def masked_softmax(scores, mask):
            s = scores + np.where(mask, 0.0, -1e4)
            e = np.exp(s - s.max(axis=-1, keepdims=True))
            e = e * np.any(mask, axis=-1, keepdims=True)       # a fully masked row stays zero
            total = e.sum(axis=-1, keepdims=True)
            return np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    """
        },
        breaks="masked_softmax",
        says="too small",
    ),
    Answer(
        "softmax_in_place",
        {
            "masked_softmax": """
        def masked_softmax(scores, mask):
            mask = np.broadcast_to(mask, scores.shape)
            scores[~mask] = -np.inf                             # writes into the caller's array
            m = scores.max(axis=-1, keepdims=True)
            m[~np.isfinite(m)] = 0.0
            e = np.exp(scores - m)
            total = e.sum(axis=-1, keepdims=True)
            return np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    """
        },
        breaks="masked_softmax",
        says="in place",
    ),
    Answer(
        "softmax_calls_the_reference",
        {
            "masked_softmax": """
        import heads_and_masks as hm
        def masked_softmax(scores, mask):
            return hm.masked_softmax(scores, mask)
    """
        },
        breaks="masked_softmax",
        says="reference",
    ),
    # ---- row_entropy_bits: wrong ----------------------------------------------------------------
    Answer(
        "entropy_in_nats",
        {
            "row_entropy_bits": """
        def row_entropy_bits(weights):
            logs = np.log(np.where(weights > 0, weights, 1.0))
            return -(weights * logs).sum(axis=-1)
    """
        },
        breaks="row_entropy_bits",
        says="nats",
    ),
    Answer(
        "entropy_nan_from_zero_log_zero",
        {
            "row_entropy_bits": """
        def row_entropy_bits(weights):
            return -(weights * np.log2(weights)).sum(axis=-1)
    """
        },
        breaks="row_entropy_bits",
        says="0·log",
    ),
    Answer(
        "entropy_keepdims",
        {
            "row_entropy_bits": """
        def row_entropy_bits(weights):
            logs = np.log2(np.where(weights > 0, weights, 1.0))
            return -(weights * logs).sum(axis=-1, keepdims=True)
    """
        },
        breaks="row_entropy_bits",
        says="one entropy per row",
    ),
]
