"""Sample answers for 08_learned_heads: `attention_backward(q, k, v, mask, dout)` and `rule_weights(weights)`.

The notebook gives `attention(q, k, v, mask=None)` (notebook 00's function) in a cell before the
exercise; answers may use it.
"""

from catalog import Answer, edited, mistakes

ASSIGNMENT = "08_learned_heads"

_SOFTMAX = """
def _masked_softmax(scores, mask):
    allowed = np.ones(scores.shape, bool) if mask is None else np.broadcast_to(mask, scores.shape)
    top = np.max(np.where(allowed, scores, -np.inf), axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.where(allowed, np.exp(np.where(allowed, scores - top, 0.0)), 0.0)
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)
"""


def _backward(
    ds_line: str, *, dq="ds @ k / np.sqrt(d)", dk="ds.T @ q / np.sqrt(d)", softmax="_masked_softmax(s, mask)"
):
    """A matrix-form answer with one step changed (for the mistakes)."""
    return (
        _SOFTMAX
        + f"""
def attention_backward(q, k, v, mask, dout):
    d = q.shape[-1]
    s = q @ k.T / np.sqrt(d)
    p = {softmax}
    dv = p.T @ dout
    dp = dout @ v.T
    {ds_line}
    return {dq}, {dk}, dv
"""
    )


_RIGHT_DS = "ds = p * (dp - np.sum(p * dp, axis=-1, keepdims=True))"

# rule_weights by fancy indexing: right as it stands, edited for the mistakes
_RULES_INDEXED = """
        def rule_weights(weights):
            n = weights.shape[-1]
            t = np.arange(2, n)
            return np.stack([weights[:, :, t, t - 1].mean(axis=(0, 2)), weights[:, :, t, 0].mean(axis=(0, 2))], -1)
    """

ANSWERS = [
    Answer("untouched", {}, untouched=True),
    # ------------------------------------------------------------------ correct, in several styles
    Answer("matrix_form", {"attention_backward": _backward(_RIGHT_DS)}),
    Answer(
        "rows_with_the_jacobian_matrix",
        {
            "attention_backward": """
        def attention_backward(q, k, v, mask, dout):
            n_q, d = q.shape
            allowed = np.ones((n_q, k.shape[0]), bool) if mask is None else mask
            dq, dk, dv = np.zeros(q.shape), np.zeros(k.shape), np.zeros(v.shape)
            for i in range(n_q):
                keys = np.flatnonzero(allowed[i])
                if len(keys) == 0:
                    continue                                   # no weights, no gradient
                s = k[keys] @ q[i] / np.sqrt(d)
                p = np.exp(s - s.max())
                p = p / p.sum()
                jacobian = np.diag(p) - np.outer(p, p)         # d p / d s for this row
                dv[keys] += np.outer(p, dout[i])
                ds = jacobian @ (v[keys] @ dout[i])
                dq[i] = ds @ k[keys] / np.sqrt(d)
                dk[keys] += np.outer(ds, q[i]) / np.sqrt(d)
            return dq, dk, dv
    """
        },
    ),
    Answer(
        "weights_from_the_given_attention_einsum",
        {
            "attention_backward": """
        def attention_backward(q, k, v, mask, dout):
            d = q.shape[-1]
            p = attention(q, k, np.eye(k.shape[0]), mask)      # the weights themselves: p @ I
            dv = np.einsum("qk,qe->ke", p, dout)
            dp = np.einsum("qe,ke->qk", dout, v)
            ds = p * (dp - np.einsum("qk,qk->q", p, dp)[:, None])
            dq = np.einsum("qk,kd->qd", ds, k) / np.sqrt(d)
            dk = np.einsum("qk,qd->kd", ds, q) / np.sqrt(d)
            return dq, dk, dv
    """
        },
    ),
    Answer(
        "dtype_min_fill_then_zeroed",
        {
            "attention_backward": """
        def attention_backward(q, k, v, mask, dout):
            scale = 1 / np.sqrt(q.shape[1])
            s = q @ k.T * scale
            if mask is None:
                mask = np.ones(s.shape, dtype=bool)
            s = np.where(mask, s, np.finfo(s.dtype).min)
            w = np.exp(s - s.max(axis=1, keepdims=True)) * mask    # forbidden (and empty rows) -> 0
            total = w.sum(axis=1, keepdims=True)
            p = w / np.where(total == 0, 1, total)
            g = dout @ v.T
            ds = p * g - p * (p * g).sum(axis=1, keepdims=True)
            return (ds @ k) * scale, (ds.T @ q) * scale, p.T @ dout
    """
        },
    ),
    Answer(
        "rules_by_diagonal_and_loop",
        {
            "rule_weights": """
        def rule_weights(weights):
            b, h, n, _ = weights.shape
            previous = np.diagonal(weights, offset=-1, axis1=2, axis2=3)[..., 1:]   # entries [t, t - 1], t = 2 ...
            first = weights[:, :, 2:, 0]
            rows = []
            for head in range(h):
                rows.append([previous[:, head].mean(), first[:, head].mean()])
            return np.array(rows)
    """
        },
    ),
    Answer(
        "rules_with_masks_of_positions",
        {
            "rule_weights": """
        def rule_weights(weights):
            n = weights.shape[-1]
            query = np.arange(n)[:, None]
            key = np.arange(n)[None, :]
            counted = query >= 2
            prev = (key == query - 1) & counted
            first = (key == 0) & counted
            total = weights.shape[0] * (n - 2)
            return np.stack([(weights * prev).sum(axis=(0, 2, 3)) / total,
                             (weights * first).sum(axis=(0, 2, 3)) / total], axis=1)
    """
        },
    ),
    # ------------------------------------------------------------------ attention_backward mistakes
    *mistakes(
        "attention_backward",
        ("sqrt_d_forgotten_in_the_gradient", "1/√d is forgotten", _backward(_RIGHT_DS, dq="ds @ k", dk="ds.T @ q")),
        ("diagonal_of_the_jacobian_only", "only the diagonal of the softmax Jacobian", _backward("ds = p * dp")),
        ("p_one_minus_p", "diagonal of the softmax Jacobian", _backward("ds = p * (1 - p) * dp")),
        (
            "row_sum_over_the_queries",
            "over the wrong axis",
            _backward("ds = p * (dp - np.sum(p * dp, axis=0, keepdims=True))"),
        ),
        (
            "row_sum_without_keepdims",
            "over the wrong axis",
            _backward("ds = p * (dp - (p * dp).sum(axis=1))"),
        ),
        (
            "row_sum_of_the_whole_matrix",
            "over the wrong axis",
            _backward("ds = p * (dp - np.sum(p * dp))"),
        ),
        (
            "row_sum_over_the_queries_einsum",
            "over the wrong axis",
            """
        def attention_backward(q, k, v, mask, dout):
            d = q.shape[-1]
            p = attention(q, k, np.eye(k.shape[0]), mask)
            dv = np.einsum("qk,qe->ke", p, dout)
            dp = np.einsum("qe,ke->qk", dout, v)
            ds = p * (dp - np.einsum("qk,qk->k", p, dp)[None, :])   # one sum per key
            dq = np.einsum("qk,kd->qd", ds, k) / np.sqrt(d)
            dk = np.einsum("qk,qd->kd", ds, q) / np.sqrt(d)
            return dq, dk, dv
    """,
        ),
        (
            "dq_dk_transposes_swapped",
            "transposes swapped",
            _backward(_RIGHT_DS, dq="ds.T @ k / np.sqrt(d)", dk="ds @ q / np.sqrt(d)"),
        ),
        (
            "backward_through_the_unmasked_softmax",
            "forbidden entries",
            _backward(_RIGHT_DS, softmax="_masked_softmax(s, None)"),
        ),
        (
            "minus_1e9_gives_empty_rows_weights",
            "forbidden entries",
            """
        def attention_backward(q, k, v, mask, dout):
            d = q.shape[-1]
            s = q @ k.T / np.sqrt(d)
            if mask is not None:
                s = s + np.where(mask, 0.0, -1e9)              # an empty row becomes uniform
            p = np.exp(s - s.max(axis=-1, keepdims=True))
            p = p / p.sum(axis=-1, keepdims=True)
            dp = dout @ v.T
            ds = p * (dp - (p * dp).sum(axis=-1, keepdims=True))
            return ds @ k / np.sqrt(d), ds.T @ q / np.sqrt(d), p.T @ dout
    """,
        ),
        (
            "nan_on_a_fully_masked_row",
            "NaN on a fully masked row",
            """
        def attention_backward(q, k, v, mask, dout):
            d = q.shape[-1]
            s = q @ k.T / np.sqrt(d)
            if mask is not None:
                s = np.where(mask, s, -np.inf)
            p = np.exp(s - s.max(axis=-1, keepdims=True))      # -inf - (-inf) on an empty row
            p = p / p.sum(axis=-1, keepdims=True)
            dp = dout @ v.T
            ds = p * (dp - (p * dp).sum(axis=-1, keepdims=True))
            return ds @ k / np.sqrt(d), ds.T @ q / np.sqrt(d), p.T @ dout
    """,
        ),
        (
            "backward_calls_the_reference",
            "reference",
            """
        from heads_and_masks.training import attention_backward as course_backward
        def attention_backward(q, k, v, mask, dout):
            return course_backward(q, k, v, mask, dout)
    """,
        ),
    ),
    # ------------------------------------------------------------------ rule_weights mistakes
    *mistakes(
        "rule_weights",
        ("rules_from_t_equals_1", "t = 1", edited(_RULES_INDEXED, ("np.arange(2, n)", "np.arange(1, n)"))),
        ("rules_diagonal_for_previous", "not key t", edited(_RULES_INDEXED, ("t, t - 1]", "t, t]"))),
        (
            "rules_rows_and_columns_swapped",
            "rows and columns are swapped",
            edited(_RULES_INDEXED, ("t, t - 1]", "t - 1, t]"), ("t, 0]", "0, t]")),
        ),
        ("rules_averaged_over_heads", "one row per head", edited(_RULES_INDEXED, ("axis=(0, 2)", "axis=(1, 2)"))),
    ),
]
