"""Sample answers for 01_heads: `split_heads`, `merge_heads`, `multi_head_attention`, `mha_cost`.

Five correct styles (numpy reshape, einops, slicing and stacking, plain loops, einsum with weights cut
per head) and one wrong answer for every misconception the notebook warns about.
"""

import textwrap

from catalog import Answer, mistakes

ASSIGNMENT = "01_heads"

# A single-head attention as a learner would paste it from notebook 00 (graded code may not call hm.attention).
ATTENTION = """
    def attention(q, k, v, mask=None):   # the learner's own, pasted from notebook 00
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
        if mask is not None:
            scores = np.where(mask, scores, -1e30)
        weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
        if mask is not None:
            weights = weights * np.broadcast_to(mask, weights.shape)
        return weights / weights.sum(axis=-1, keepdims=True) @ v
"""

# ---------------------------------------------------------------- correct answers, in five styles
NUMPY_RESHAPE = {
    "split_heads": """
        def split_heads(x, h):
            b, n, D = x.shape
            d, rest = divmod(D, h)
            if rest:
                raise ValueError(f"{h} heads do not divide the width {D}")
            return np.swapaxes(x.reshape(b, n, h, d), 1, 2)
    """,
    "merge_heads": """
        def merge_heads(x):
            return np.moveaxis(x, 1, 2).reshape(x.shape[0], x.shape[2], -1)
    """,
    "multi_head_attention": """
        def multi_head_attention(x, w_q, w_k, w_v, w_o, h, mask=None):
            q, k, v = (split_heads(x @ w, h) for w in (w_q, w_k, w_v))   # (b, h, n, d)
            scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
            if mask is not None:
                scores = np.where(mask, scores, -np.inf)
            scores = scores - scores.max(axis=-1, keepdims=True)
            weights = np.exp(scores)
            weights = weights / weights.sum(axis=-1, keepdims=True)
            return merge_heads(weights @ v) @ w_o
    """,
    "mha_cost": """
        def mha_cost(n, D, h):
            if n < 0 or h <= 0 or D % h:
                raise ValueError("n must be >= 0 and h must divide D")
            return int(4 * n * D * D + 2 * n * n * D)
    """,
}

EINOPS = {
    "split_heads": """
        def split_heads(x, h):
            if x.shape[-1] % h != 0:
                raise ValueError(f"{h} heads do not divide the width {x.shape[-1]}")
            return rearrange(x, "b n (h d) -> b h n d", h=h)
    """,
    "merge_heads": """
        def merge_heads(x):
            return rearrange(x, "b h n d -> b n (h d)")
    """,
    "multi_head_attention": """
        def multi_head_attention(x, w_q, w_k, w_v, w_o, h, mask=None):
            heads = attention(split_heads(x @ w_q, h), split_heads(x @ w_k, h), split_heads(x @ w_v, h), mask)
            return merge_heads(heads) @ w_o
    """,
    "mha_cost": """
        def mha_cost(n, D, h):
            if n < 0:
                raise ValueError("negative length")
            d, rest = divmod(D, h)
            if rest:
                raise ValueError("h does not divide D")
            projections = 4 * n * D**2
            attention = 2 * h * n**2 * d
            return projections + attention
    """,
}

SLICING = {
    "split_heads": """
        def split_heads(x, h):
            D = x.shape[-1]
            if D % h:
                raise ValueError("h must divide D")
            d = D // h
            return np.stack([x[:, :, i * d:(i + 1) * d] for i in range(h)], axis=1)
    """,
    "merge_heads": """
        def merge_heads(x):
            return np.concatenate([x[:, i] for i in range(x.shape[1])], axis=-1)
    """,
    "multi_head_attention": """
        def multi_head_attention(x, w_q, w_k, w_v, w_o, h, mask=None):
            b, n, D = x.shape
            d = D // h
            outputs = []
            for i in range(h):
                cols = slice(i * d, (i + 1) * d)
                head_mask = None if mask is None else np.broadcast_to(mask, (b, h, n, n))[:, i]
                outputs.append(attention(x @ w_q[:, cols], x @ w_k[:, cols], x @ w_v[:, cols], head_mask))
            return np.concatenate(outputs, axis=-1) @ w_o
    """,
    "mha_cost": """
        def mha_cost(n, D, h):
            if n < 0:
                raise ValueError("n < 0")
            if D % h:
                raise ValueError("h does not divide D")
            d = D // h
            products = [(n, D, D)] * 4 + [(n, d, n), (n, n, d)] * h
            return sum(m * k * p for m, k, p in products)
    """,
}

LOOPS = {
    "split_heads": """
        def split_heads(x, h):
            b, n, width = x.shape
            if width % h:
                raise ValueError("the number of heads must divide the width")
            d = width // h
            out = np.empty((b, h, n, d))
            for s in range(b):
                for i in range(h):
                    for t in range(n):
                        out[s, i, t] = x[s, t, i * d:(i + 1) * d]
            return out
    """,
    "merge_heads": """
        def merge_heads(x):
            b, h, n, d = x.shape
            out = np.empty((b, n, h * d))
            for s in range(b):
                for t in range(n):
                    for i in range(h):
                        out[s, t, i * d:(i + 1) * d] = x[s, i, t]
            return out
    """,
    "multi_head_attention": """
        import math
        def multi_head_attention(x, w_q, w_k, w_v, w_o, h, mask=None):
            b, n, D = x.shape
            d = D // h
            allowed = np.ones((b, h, n, n), bool) if mask is None else np.broadcast_to(mask, (b, h, n, n))
            q, k, v = x @ w_q, x @ w_k, x @ w_v
            concat = np.zeros((b, n, D))
            for s in range(b):
                for i in range(h):
                    cols = slice(i * d, (i + 1) * d)
                    for t in range(n):
                        keys = [j for j in range(n) if allowed[s, i, t, j]]
                        scores = [float(q[s, t, cols] @ k[s, j, cols]) / math.sqrt(d) for j in keys]
                        top = max(scores)
                        e = [math.exp(score - top) for score in scores]
                        total = sum(e)
                        for weight, j in zip(e, keys):
                            concat[s, t, cols] += weight / total * v[s, j, cols]
            return concat @ w_o
    """,
    "mha_cost": """
        def mha_cost(n, D, h):
            if n < 0 or D % h:
                raise ValueError("bad n or h")
            d = D // h
            def matmul(m, k, p):
                return m * k * p
            total = 4 * matmul(n, D, D)
            for _ in range(h):
                total += matmul(n, d, n) + matmul(n, n, d)
            return total
    """,
}

EINSUM = {
    "split_heads": """
        def split_heads(x, h):
            b, n, D = x.shape
            if D % h != 0:
                raise ValueError("D % h != 0")
            return np.moveaxis(x.reshape(b, n, h, -1), 2, 1).copy()
    """,
    "multi_head_attention": """
        def multi_head_attention(x, w_q, w_k, w_v, w_o, h, mask=None):
            D = x.shape[-1]
            d = D // h
            q = np.einsum("bnD,Dhd->bhnd", x, w_q.reshape(D, h, d))
            k = np.einsum("bnD,Dhd->bhnd", x, w_k.reshape(D, h, d))
            v = np.einsum("bnD,Dhd->bhnd", x, w_v.reshape(D, h, d))
            scores = np.einsum("bhqd,bhkd->bhqk", q, k) / np.sqrt(d)
            if mask is not None:
                scores = np.where(mask, scores, np.finfo(scores.dtype).min)
            scores = scores - scores.max(axis=-1, keepdims=True)
            weights = np.exp(scores)
            weights = weights / weights.sum(axis=-1, keepdims=True)
            heads = np.einsum("bhqk,bhkd->bhqd", weights, v)
            return np.einsum("bhnd,hdE->bnE", heads, w_o.reshape(h, d, D))
    """,
}

# ---------------------------------------------------------------- wrong answers, one per misconception
SPLIT_D_H = """
    def split_heads(x, h):
        if x.shape[-1] % h:
            raise ValueError("h must divide D")
        return rearrange(x, "b n (d h) -> b h n d", h=h)
"""
SPLIT_D_H_NUMPY = """
    def split_heads(x, h):
        b, n, D = x.shape
        if D % h:
            raise ValueError("h must divide D")
        return x.reshape(b, n, D // h, h).transpose(0, 3, 1, 2)
"""
SPLIT_RESHAPE_ONLY = """
    def split_heads(x, h):
        b, n, D = x.shape
        if D % h:
            raise ValueError("h must divide D")
        return x.reshape(b, h, n, D // h)
"""
SPLIT_NO_TRANSPOSE = """
    def split_heads(x, h):
        b, n, D = x.shape
        if D % h:
            raise ValueError("h must divide D")
        return x.reshape(b, n, h, D // h)
"""
SPLIT_NO_CHECK = """
    def split_heads(x, h):
        d = x.shape[-1] // h
        return np.stack([x[..., i * d:(i + 1) * d] for i in range(h)], axis=1)
"""
SPLIT_BATCH_OF_ONE = """
    def split_heads(x, h):
        n, D = x.shape[1], x.shape[2]
        if D % h:
            raise ValueError("h must divide D")
        return x.reshape(n, h, D // h).transpose(1, 0, 2)[None]
"""
MERGE_NO_TRANSPOSE = """
    def merge_heads(x):
        b, h, n, d = x.shape
        return x.reshape(b, n, h * d)
"""
MERGE_D_H = """
    def merge_heads(x):
        return rearrange(x, "b h n d -> b n (d h)")
"""
MERGE_BATCH_OF_ONE = """
    def merge_heads(x):
        h, n, d = x.shape[1:]
        return x[0].transpose(1, 0, 2).reshape(1, n, h * d)
"""
COST_FLOPS = """
    def mha_cost(n, D, h):
        if n < 0 or D % h:
            raise ValueError("bad arguments")
        return 2 * (4 * n * D * D + 2 * n * n * D)   # each multiply-add is two operations
"""
COST_ATTENTION_TIMES_H = """
    def mha_cost(n, D, h):
        if n < 0 or D % h:
            raise ValueError("bad arguments")
        return 4 * n * D * D + h * 2 * n * n * D   # attention once per head
"""
COST_FORGETS_W_O = """
    def mha_cost(n, D, h):
        if n < 0 or D % h:
            raise ValueError("bad arguments")
        return 3 * n * D * D + 2 * n * n * D   # Q, K, V
"""
COST_FLOAT = """
    def mha_cost(n, D, h):
        if n < 0 or D % h:
            raise ValueError("bad arguments")
        d = D / h
        return 4 * n * D * D + 2 * h * n * n * d
"""
COST_NO_CHECK = """
    def mha_cost(n, D, h):
        return 4 * n * D * D + 2 * n * n * D
"""
MHA_FORGETS_W_O = """
    def multi_head_attention(x, w_q, w_k, w_v, w_o, h, mask=None):
        q, k, v = (rearrange(x @ w, "b n (h d) -> b h n d", h=h) for w in (w_q, w_k, w_v))
        return rearrange(attention(q, k, v, mask), "b h n d -> b n (h d)")
"""
MHA_SQRT_D_MODEL = """
    def multi_head_attention(x, w_q, w_k, w_v, w_o, h, mask=None):
        D = x.shape[-1]
        q, k, v = (split_heads(x @ w, h) for w in (w_q, w_k, w_v))
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(D)
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        scores = scores - scores.max(axis=-1, keepdims=True)
        weights = np.exp(scores)
        weights = weights / weights.sum(axis=-1, keepdims=True)
        return merge_heads(weights @ v) @ w_o
"""
MHA_IGNORES_MASK = """
    def multi_head_attention(x, w_q, w_k, w_v, w_o, h, mask=None):
        q, k, v = (split_heads(x @ w, h) for w in (w_q, w_k, w_v))
        return merge_heads(attention(q, k, v)) @ w_o
"""
MHA_IGNORES_H = """
    def multi_head_attention(x, w_q, w_k, w_v, w_o, h, mask=None):
        return attention(x @ w_q, x @ w_k, x @ w_v, mask) @ w_o
"""
MHA_BATCH_OF_ONE = """
    def multi_head_attention(x, w_q, w_k, w_v, w_o, h, mask=None):
        n, D = x.shape[1], x.shape[2]
        seq = x[0]
        q, k, v = ((seq @ w).reshape(n, h, D // h).transpose(1, 0, 2) for w in (w_q, w_k, w_v))
        heads = attention(q, k, v, mask)
        return (heads.transpose(1, 0, 2).reshape(n, D) @ w_o)[None]
"""
MHA_D_H = """
    def multi_head_attention(x, w_q, w_k, w_v, w_o, h, mask=None):
        q, k, v = (rearrange(x @ w, "b n (d h) -> b h n d", h=h) for w in (w_q, w_k, w_v))
        return rearrange(attention(q, k, v, mask), "b h n d -> b n (h d)") @ w_o
"""
MHA_RESHAPE_ONLY = """
    def multi_head_attention(x, w_q, w_k, w_v, w_o, h, mask=None):
        b, n, D = x.shape
        q, k, v = ((x @ w).reshape(b, h, n, D // h) for w in (w_q, w_k, w_v))
        return attention(q, k, v, mask).reshape(b, n, D) @ w_o
"""
MHA_CALLS_COURSE_ATTENTION = """
    def multi_head_attention(x, w_q, w_k, w_v, w_o, h, mask=None):
        q, k, v = (split_heads(x @ w, h) for w in (w_q, w_k, w_v))
        return merge_heads(hm.attention(q, k, v, mask)) @ w_o
"""
MHA_CALLS_REFERENCE = """
    def multi_head_attention(x, w_q, w_k, w_v, w_o, h, mask=None):
        return hm.multi_head_attention(x, w_q, w_k, w_v, w_o, h, mask)
"""


def with_attention(source: str) -> str:
    """The answer's cell with the learner's own single-head attention pasted above it."""
    return textwrap.dedent(ATTENTION).strip("\n") + "\n\n\n" + textwrap.dedent(source).strip("\n")


EINOPS["multi_head_attention"] = with_attention(EINOPS["multi_head_attention"])
SLICING["multi_head_attention"] = with_attention(SLICING["multi_head_attention"])
(MHA_FORGETS_W_O, MHA_IGNORES_MASK, MHA_IGNORES_H, MHA_BATCH_OF_ONE, MHA_D_H, MHA_RESHAPE_ONLY) = map(
    with_attention, (MHA_FORGETS_W_O, MHA_IGNORES_MASK, MHA_IGNORES_H, MHA_BATCH_OF_ONE, MHA_D_H, MHA_RESHAPE_ONLY)
)

ANSWERS = [
    Answer("untouched", {}, untouched=True),
    Answer("numpy_reshape", NUMPY_RESHAPE),
    Answer("einops", EINOPS),
    Answer("slicing_and_stacking", SLICING),
    Answer("python_loops", LOOPS),
    Answer("einsum_weights_per_head", EINSUM),
    *mistakes(
        "split_heads",
        ("split_d_h_einops", "(d h)", SPLIT_D_H),
        ("split_d_h_numpy", "(d h)", SPLIT_D_H_NUMPY),
        ("split_reshape_without_transpose", "without a transpose", SPLIT_RESHAPE_ONLY),
        ("split_transpose_forgotten", "transpose is missing", SPLIT_NO_TRANSPOSE),
        ("split_no_divisibility_check", "must divide the width", SPLIT_NO_CHECK),
        ("split_batch_of_one", "batch size of 1", SPLIT_BATCH_OF_ONE),
    ),
    *mistakes(
        "merge_heads",
        ("merge_without_transpose_back", "without the transpose back", MERGE_NO_TRANSPOSE),
        ("merge_d_h", "(d h)", MERGE_D_H),
        ("merge_batch_of_one", "batch size of 1", MERGE_BATCH_OF_ONE),
    ),
    *mistakes(
        "mha_cost",
        ("cost_counts_flops", "FLOPs", COST_FLOPS),
        ("cost_attention_times_h", "multiplied by h", COST_ATTENTION_TIMES_H),
        ("cost_forgets_w_o", "W^O", COST_FORGETS_W_O),
        ("cost_returns_float", "whole number", COST_FLOAT),
        ("cost_no_argument_check", "should raise ValueError", COST_NO_CHECK),
    ),
    *mistakes(
        "multi_head_attention",
        ("mha_forgets_w_o", "W^O is forgotten", MHA_FORGETS_W_O),
        ("mha_scales_by_sqrt_D", "√D", MHA_SQRT_D_MODEL),
        ("mha_ignores_mask", "mask is ignored", MHA_IGNORES_MASK),
        ("mha_ignores_h", "ignores h", MHA_IGNORES_H),
        ("mha_batch_of_one", "batch size of 1", MHA_BATCH_OF_ONE),
        ("mha_d_h_split", "(d h)", MHA_D_H),
        ("mha_reshape_without_transpose", "without a transpose", MHA_RESHAPE_ONLY),
        ("mha_calls_the_reference", "reference", MHA_CALLS_REFERENCE),
        ("mha_calls_the_course_attention", "reference `attention`", MHA_CALLS_COURSE_ATTENTION),
    ),
]
