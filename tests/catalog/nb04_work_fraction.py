"""Sample answers for 04_work_fraction: `causal_used_entries`, `causal_used_fraction`, `blocked_causal_attention`.

Correct answers in several styles (online softmax over key tiles, one softmax per query strip,
an additive mask, per-query loops); one wrong answer per misconception the notebook warns about.
"""

import dataclasses

from catalog import Answer

ASSIGNMENT = "04_work_fraction"

ONLINE_TILES = """
    def blocked_causal_attention(q, k, v, block):
        q, k, v = np.asarray(q, float), np.asarray(k, float), np.asarray(v, float)
        if block < 1:
            raise ValueError("block must be at least 1")
        if not (len(q) == len(k) == len(v)):
            raise ValueError("q, k and v must have the same length")
        n, d = q.shape
        out = np.zeros((n, v.shape[1]))
        computed = 0
        for qs in range(0, n, block):
            qe = min(qs + block, n)
            m = np.full(qe - qs, -np.inf)
            total = np.zeros(qe - qs)
            acc = np.zeros((qe - qs, v.shape[1]))
            for ks in range(0, qe, block):
                ke = min(ks + block, n)
                s = q[qs:qe] @ k[ks:ke].T / np.sqrt(d)
                computed += s.size
                allowed = np.arange(ks, ke)[None, :] <= np.arange(qs, qe)[:, None]
                s = np.where(allowed, s, -np.inf)
                m_new = np.maximum(m, s.max(axis=1))
                p = np.exp(s - m_new[:, None])
                shrink = np.exp(m - m_new)
                total = total * shrink + p.sum(axis=1)
                acc = acc * shrink[:, None] + p @ v[ks:ke]
                m = m_new
            out[qs:qe] = acc / total[:, None]
        return out, computed
"""

# Every answer fills all three cells: an exercise it does not get wrong gets one of these.
RIGHT = {
    "causal_used_entries": """
        def causal_used_entries(n):
            return n * (n + 1) // 2
    """,
    "causal_used_fraction": """
        def causal_used_fraction(n):
            return (n + 1) / (2 * n)
    """,
    "blocked_causal_attention": ONLINE_TILES,
}


def wrong(name: str, cell: str, source: str, says) -> Answer:
    """A mistake in one exercise, the other exercises answered correctly."""
    return Answer(name, {**RIGHT, cell: source}, breaks=cell, says=says)


ANSWERS = [
    Answer("untouched", {}, untouched=True),
    Answer("online_softmax_over_key_tiles", dict(RIGHT)),
    Answer(
        "one_softmax_per_query_strip",
        {
            "causal_used_entries": """
            def causal_used_entries(n):
                return sum(range(1, n + 1))
        """,
            "causal_used_fraction": """
            def causal_used_fraction(n):
                return causal_used_entries(n) / n ** 2
        """,
            "blocked_causal_attention": """
            def blocked_causal_attention(q, k, v, block):
                if block < 1 or q.shape[0] != k.shape[0] or k.shape[0] != v.shape[0]:
                    raise ValueError(f"bad arguments: block={block}, shapes {q.shape} {k.shape} {v.shape}")
                n, d = q.shape
                out = np.empty((n, v.shape[-1]))
                computed = 0
                for start in range(0, n, block):
                    stop = min(start + block, n)
                    # the strip of queries sees the keys of every tile up to and including its diagonal tile
                    scores = q[start:stop] @ k[:stop].T / np.sqrt(d)      # (B, stop)
                    computed += scores.size
                    future = np.arange(stop)[None, :] > np.arange(start, stop)[:, None]
                    scores[future] = -np.inf
                    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
                    weights /= weights.sum(axis=1, keepdims=True)
                    out[start:stop] = weights @ v[:stop]
                return out, computed
        """,
        },
    ),
    Answer(
        "additive_mask_and_einsum",
        {
            "causal_used_entries": """
            import math
            def causal_used_entries(n):
                return math.comb(n + 1, 2)
        """,
            "causal_used_fraction": """
            def causal_used_fraction(n):
                return 0.5 + 0.5 / n
        """,
            "blocked_causal_attention": """
            def blocked_causal_attention(q, k, v, block):
                n = q.shape[0]
                if int(block) != block or block <= 0:
                    raise ValueError("block must be a positive whole number")
                if k.shape[0] != n or v.shape[0] != n:
                    raise ValueError("q, k, v need the same number of rows")
                scale = 1 / np.sqrt(q.shape[1])
                n_tiles = -(-n // block)
                bounds = [(i * block, min((i + 1) * block, n)) for i in range(n_tiles)]
                out = np.zeros((n, v.shape[1]))
                computed = 0
                for i, (q0, q1) in enumerate(bounds):
                    row_max = np.full((q1 - q0, 1), np.finfo(float).min)
                    row_sum = np.zeros((q1 - q0, 1))
                    acc = np.zeros((q1 - q0, v.shape[1]))
                    for j, (k0, k1) in enumerate(bounds[: i + 1]):
                        s = np.einsum("qd,kd->qk", q[q0:q1], k[k0:k1]) * scale
                        computed += s.shape[0] * s.shape[1]
                        if j == i:
                            s = s + np.where(np.arange(k0, k1)[None, :] > np.arange(q0, q1)[:, None], -1e30, 0.0)
                        new_max = np.maximum(row_max, s.max(axis=1, keepdims=True))
                        p = np.exp(s - new_max)
                        c = np.exp(row_max - new_max)
                        row_sum = c * row_sum + p.sum(axis=1, keepdims=True)
                        acc = c * acc + np.einsum("qk,kv->qv", p, v[k0:k1])
                        row_max = new_max
                    out[q0:q1] = acc / row_sum
                return out, computed
        """,
        },
    ),
    Answer(
        "loops_over_query_rows",
        {
            "causal_used_entries": """
            def causal_used_entries(n):
                return int(np.arange(1, n + 1).sum())
        """,
            "causal_used_fraction": """
            def causal_used_fraction(n):
                return float(np.float64(n + 1) / (2 * n))
        """,
            "blocked_causal_attention": """
            import math
            def blocked_causal_attention(q, k, v, block):
                if not block >= 1:
                    raise ValueError("block must be >= 1")
                if not q.shape[0] == k.shape[0] == v.shape[0]:
                    raise ValueError("lengths differ")
                n, d = q.shape
                out = np.zeros((n, v.shape[1]))
                computed = 0
                for tile_start in range(0, n, block):
                    tile_end = min(tile_start + block, n)
                    computed += (tile_end - tile_start) * tile_end   # this strip's tiles, diagonal one included
                    for i in range(tile_start, tile_end):
                        scores = k[:tile_end] @ q[i] / math.sqrt(d)  # the row as far as the diagonal tile goes
                        scores = scores[: i + 1]                     # the keys after i are dropped (masked)
                        w = np.exp(scores - scores.max())
                        out[i] = (w / w.sum()) @ v[: i + 1]
                return out, computed
        """,
        },
    ),
    # ------------------------------------------------------------------ the counting formulas
    wrong(
        "entries_without_the_diagonal",
        "causal_used_entries",
        """
        def causal_used_entries(n):
            return n * (n - 1) // 2
    """,
        "diagonal is missing",
    ),
    wrong(
        "entries_as_a_float",
        "causal_used_entries",
        """
        def causal_used_entries(n):
            return n * (n + 1) / 2
    """,
        "whole number",
    ),
    wrong(
        "entries_n_squared_over_two",
        "causal_used_entries",
        """
        def causal_used_entries(n):
            return n * n / 2
    """,
        ("diagonal is missing", "whole number"),
    ),
    wrong(
        "entries_counted_on_an_n_by_n_mask",
        "causal_used_entries",
        """
        def causal_used_entries(n):
            return int(np.count_nonzero(np.tril(np.ones((n, n), dtype=bool))))
    """,
        ("ran out of memory", "n(n+1)/2"),
    ),
    wrong(
        "fraction_is_the_limit_one_half",
        "causal_used_fraction",
        """
        def causal_used_fraction(n):
            return 1 / 2
    """,
        "limit for large n",
    ),
    wrong(
        "fraction_with_integer_division",
        "causal_used_fraction",
        """
        def causal_used_fraction(n):
            return (n + 1) // (2 * n)
    """,
        "integer division",
    ),
    # ------------------------------------------------------------------ the tiled kernel
    wrong(
        "tiles_above_the_diagonal_not_skipped",
        "blocked_causal_attention",
        ONLINE_TILES.replace("for ks in range(0, qe, block):", "for ks in range(0, n, block):"),
        "above the diagonal",
    ),
    wrong(
        "diagonal_tiles_not_masked",
        "blocked_causal_attention",
        ONLINE_TILES.replace("s = np.where(allowed, s, -np.inf)", "pass"),
        "future leaks",
    ),
    wrong(
        "diagonal_tiles_skipped_after_the_first",
        "blocked_causal_attention",
        """
        def blocked_causal_attention(q, k, v, block):
            if block < 1 or not (len(q) == len(k) == len(v)):
                raise ValueError("bad arguments")
            n, d = q.shape
            out = np.zeros((n, v.shape[1]))
            computed = 0
            for qs in range(0, n, block):
                qe = min(qs + block, n)
                m, total, acc = np.full(qe - qs, -np.inf), np.zeros(qe - qs), np.zeros((qe - qs, v.shape[1]))
                for ks in range(0, max(qs, block), block):   # key tiles before the query tile (the first one kept)
                    ke = min(ks + block, n)
                    s = q[qs:qe] @ k[ks:ke].T / np.sqrt(d)
                    computed += s.size
                    s = np.where(np.arange(ks, ke)[None, :] <= np.arange(qs, qe)[:, None], s, -np.inf)
                    m_new = np.maximum(m, s.max(axis=1))
                    p, shrink = np.exp(s - m_new[:, None]), np.exp(m - m_new)
                    total = total * shrink + p.sum(axis=1)
                    acc = acc * shrink[:, None] + p @ v[ks:ke]
                    m = m_new
                out[qs:qe] = acc / total[:, None]
            return out, computed
    """,
        ("diagonal tiles were skipped", "diagonal tile(s) short"),
    ),
    wrong(
        "diagonal_tiles_skipped",
        "blocked_causal_attention",
        """
        def blocked_causal_attention(q, k, v, block):
            if block < 1 or not (len(q) == len(k) == len(v)):
                raise ValueError("bad arguments")
            n, d = q.shape
            out = np.zeros((n, v.shape[1]))
            computed = 0
            for qs in range(0, n, block):
                qe = min(qs + block, n)
                if qs == 0:
                    continue                      # nothing strictly below the diagonal yet
                s = q[qs:qe] @ k[:qs].T / np.sqrt(d)   # only the tiles strictly below the diagonal
                computed += s.size
                w = np.exp(s - s.max(axis=1, keepdims=True))
                out[qs:qe] = w / w.sum(axis=1, keepdims=True) @ v[:qs]
            return out, computed
    """,
        "diagonal tiles were skipped",
    ),
    wrong(
        "count_reported_as_the_ideal",
        "blocked_causal_attention",
        ONLINE_TILES.replace("return out, computed", "return out, n * (n + 1) // 2"),
        "ideal count",
    ),
    wrong(
        "full_score_matrix_built",
        "blocked_causal_attention",
        """
        def blocked_causal_attention(q, k, v, block):
            if block < 1 or not (len(q) == len(k) == len(v)):
                raise ValueError("bad arguments")
            n, d = q.shape
            scores = q @ k.T / np.sqrt(d)                               # (n, n): the whole matrix
            scores = np.where(np.tril(np.ones((n, n), bool)), scores, -np.inf)
            w = np.exp(scores - scores.max(axis=1, keepdims=True))
            out = w / w.sum(axis=1, keepdims=True) @ v
            computed = 0
            for qs in range(0, n, block):                               # the count a tiled kernel would report
                qe = min(qs + block, n)
                computed += (qe - qs) * qe
            return out, computed
    """,
        "whole score matrix",
    ),
    wrong(
        "assumes_block_divides_n",
        "blocked_causal_attention",
        """
        def blocked_causal_attention(q, k, v, block):
            if block < 1 or not (len(q) == len(k) == len(v)):
                raise ValueError("bad arguments")
            n, d = q.shape
            out = np.zeros((n, v.shape[1]))
            computed = 0
            for i in range(n // block):                                # the last, shorter tile is forgotten
                qs, qe = i * block, (i + 1) * block
                s = q[qs:qe] @ k[:qe].T / np.sqrt(d)
                computed += s.size
                s = np.where(np.arange(qe)[None, :] <= np.arange(qs, qe)[:, None], s, -np.inf)
                w = np.exp(s - s.max(axis=1, keepdims=True))
                out[qs:qe] = w / w.sum(axis=1, keepdims=True) @ v[:qe]
            return out, computed
    """,
        "not a multiple of block",
    ),
    wrong(
        "softmax_per_tile",
        "blocked_causal_attention",
        ONLINE_TILES.replace(
            "total = total * shrink + p.sum(axis=1)",
            "p = p / p.sum(axis=1, keepdims=True); total = np.ones_like(total)",
        ).replace("acc = acc * shrink[:, None] + p @ v[ks:ke]", "acc = acc + p @ v[ks:ke]"),
        "own softmax",
    ),
    wrong(
        "running_max_without_rescaling",
        "blocked_causal_attention",
        ONLINE_TILES.replace("shrink = np.exp(m - m_new)", "shrink = np.ones_like(m)"),
        "running maximum",
    ),
    wrong(
        "block_not_validated",
        "blocked_causal_attention",
        ONLINE_TILES.replace('if block < 1:\n            raise ValueError("block must be at least 1")', "pass"),
        "block must be at least 1",
    ),
    # the whole score matrix built, with the memory measurement tampered with: the tracer stopped, or the
    # matrix in memory mapped past it (the grader also reads the kernel's memory cgroup, from outside)
    dataclasses.replace(
        wrong(
            "full_matrix_then_tracer_stopped",
            "blocked_causal_attention",
            ONLINE_TILES
            + """
    _tiled = blocked_causal_attention
    def blocked_causal_attention(q, k, v, block):
        import tracemalloc
        full = np.ones((q.shape[0], k.shape[0])) * 1.0       # the n x n matrix a tiled kernel never builds
        result = _tiled(q, k, v, block)
        if tracemalloc.is_tracing():
            tracemalloc.stop()
        return result
    """,
            "MiB",
        ),
        graded_only=True,
    ),
    dataclasses.replace(
        wrong(
            "full_matrix_in_an_mmap",
            "blocked_causal_attention",
            ONLINE_TILES
            + """
    _tiled = blocked_causal_attention
    def blocked_causal_attention(q, k, v, block):
        import mmap
        n = q.shape[0]
        buffer = mmap.mmap(-1, max(8, n * n * 8))
        scores = np.frombuffer(buffer, dtype=np.float64)[: n * n].reshape(n, n)
        scores[...] = 1.0                                     # touched: n x n floats in memory
        return _tiled(q, k, v, block)
    """,
            "MiB",
        ),
        graded_only=True,
    ),
    # hangs: stopped at its time limit in the demo cell and in the first test, never called again; the
    # other exercises keep their points (the whole notebook has a time budget)
    dataclasses.replace(
        wrong(
            "kernel_never_returns",
            "blocked_causal_attention",
            """
        def blocked_causal_attention(q, k, v, block):
            while True:
                pass
    """,
            "did not finish",
        ),
        graded_only=True,
    ),
    wrong(
        "calls_the_reference",
        "blocked_causal_attention",
        """
        import heads_and_masks as hm
        def blocked_causal_attention(q, k, v, block):
            return hm.blocked_causal_attention(q, k, v, block)
    """,
        "reference",
    ),
    wrong(
        "count_from_the_package",
        "blocked_causal_attention",
        """
        from heads_and_masks import tiled_computed_entries
        def blocked_causal_attention(q, k, v, block):
            if block < 1 or not (len(q) == len(k) == len(v)):
                raise ValueError("bad arguments")
            n, d = q.shape
            out = np.zeros((n, v.shape[1]))
            for qs in range(0, n, block):
                qe = min(qs + block, n)
                s = q[qs:qe] @ k[:qe].T / np.sqrt(d)
                s = np.where(np.arange(qe)[None, :] <= np.arange(qs, qe)[:, None], s, -np.inf)
                w = np.exp(s - s.max(axis=1, keepdims=True))
                out[qs:qe] = w / w.sum(axis=1, keepdims=True) @ v[:qe]
            return out, tiled_computed_entries(n, block)
    """,
        "reference",
    ),
]
