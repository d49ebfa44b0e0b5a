"""Sample answers for 02_why_heads: `retrieval_heads(n, c)` and `winning_rate(d, noise, n_keys, trials, seed)`."""

from catalog import Answer

ASSIGNMENT = "02_why_heads"

# ---------------------------------------------------------------- retrieval_heads: correct styles
HEADS_SHIFT_MATRIX = """
    def retrieval_heads(n, c):
        w_q, w_k, w_v = np.zeros((2, c + n, n)), np.zeros((2, c + n, n)), np.zeros((2, c + n, c))
        w_k[:, c:, :] = np.eye(n)
        w_q[0, c:, :] = 100 * np.eye(n, k=-1)
        w_q[1, c:, 0] = 100
        w_v[:, :c, :] = np.eye(c)
        return w_q, w_k, w_v
"""

HEADS_EINSUM_TWO_DIMENSIONS = """
    def retrieval_heads(n, c):
        # d = 2: keys sit on a circle by position, queries point one step back (or at position 0)
        angle = lambda t: 2 * np.pi * np.asarray(t) / (2 * n)   # less than half a turn in all
        w_q, w_k = np.zeros((2, c + n, 2)), np.zeros((2, c + n, 2))
        positions = np.arange(n)
        scale = 400.0 * n
        for head, wanted in ((0, positions - 1), (1, np.zeros(n))):
            w_k[head, c:, 0], w_k[head, c:, 1] = np.cos(angle(positions)), np.sin(angle(positions))
            w_q[head, c:, 0], w_q[head, c:, 1] = scale * np.cos(angle(wanted)), scale * np.sin(angle(wanted))
        w_v = np.stack([np.eye(c + n, c)] * 2)   # the first c rows copy the content
        return w_q, w_k, w_v
"""

HEADS_STACKED_LISTS = """
    def retrieval_heads(n, c):
        width = c + n
        big = 50.0 * np.sqrt(n)
        keys = np.vstack([np.zeros((c, n)), np.eye(n)])                              # (c + n, n)
        previous = np.vstack([np.zeros((c, n)), big * np.roll(np.eye(n), -1, axis=1)])  # row t -> column t-1
        previous[c, :] = 0.0   # token 0 has no previous token (np.roll wrapped it around)
        first = np.vstack([np.zeros((c, n)), big * np.outer(np.ones(n), np.eye(n)[0])])
        copy = np.vstack([np.eye(c), np.zeros((n, c))])
        return np.stack([previous, first]), np.stack([keys, keys]), np.stack([copy, copy])
"""

# ---------------------------------------------------------------- winning_rate: correct styles
RATE_VECTORISED = """
    def winning_rate(d, noise, n_keys=16, trials=4000, seed=0):
        if d < 1 or noise < 0 or n_keys < 2 or trials < 1:
            raise ValueError("bad arguments")
        rng = np.random.default_rng(seed)
        meaning = rng.normal(size=(trials, n_keys, d))
        q = meaning[:, 0, :] + noise * rng.normal(size=(trials, d))
        k = meaning + noise * rng.normal(size=(trials, n_keys, d))
        scores = np.einsum("td,tkd->tk", q, k) / np.sqrt(d)     # the scaling changes no ranking
        return float(np.mean(scores[:, 0] > scores[:, 1:].max(axis=1)))
"""

RATE_LOOPS_LEGACY_SEED = """
    def winning_rate(d, noise, n_keys=16, trials=4000, seed=0):
        if not (d >= 1 and noise >= 0 and n_keys >= 2 and trials >= 1):
            raise ValueError(f"invalid arguments d={d} noise={noise} n_keys={n_keys} trials={trials}")
        np.random.seed(seed)
        wins = 0
        for _ in range(trials):
            shared = np.random.randn(d)
            query = shared + np.random.normal(0.0, noise, d)
            match = shared + np.random.normal(0.0, noise, d)
            best_other = -np.inf
            for _ in range(n_keys - 1):
                other = np.random.randn(d) + noise * np.random.randn(d)
                best_other = max(best_other, query @ other)
            wins += int(query @ match > best_other)
        return wins / trials
"""

RATE_SEPARATE_ARRAYS = """
    def winning_rate(d, noise, n_keys=16, trials=4000, seed=0):
        for name, value, low in (("d", d, 1), ("n_keys", n_keys, 2), ("trials", trials, 1)):
            if value < low:
                raise ValueError(f"{name} must be at least {low}")
        if noise < 0:
            raise ValueError("noise must be >= 0")
        gen = np.random.default_rng(seed)
        u = gen.standard_normal((trials, d))
        query = u + noise * gen.standard_normal((trials, d))
        match = u + noise * gen.standard_normal((trials, d))
        others = gen.standard_normal((trials, n_keys - 1, d)) + noise * gen.standard_normal((trials, n_keys - 1, d))
        s_match = np.sum(query * match, axis=1)
        s_others = np.matmul(others, query[:, :, None])[:, :, 0]
        return np.count_nonzero(np.all(s_match[:, None] > s_others, axis=1)) / trials
"""

RATE_MATCH_LAST_IN_CHUNKS = """
    def winning_rate(d, noise, n_keys=16, trials=4000, seed=0):
        # the same model, computed as "the match's score minus the best rival's score > 0"
        if d <= 0 or noise < 0 or n_keys <= 1 or trials <= 0:
            raise ValueError("d >= 1, noise >= 0, n_keys >= 2 and trials >= 1 are required")
        rng = np.random.default_rng([seed, 2])
        total = 0
        for chunk in np.array_split(np.arange(trials), 4):
            t = len(chunk)
            keys = rng.normal(size=(t, n_keys, d)) + noise * rng.normal(size=(t, n_keys, d))
            meaning = rng.normal(size=(t, d))
            keys[:, -1, :] = meaning + noise * rng.normal(size=(t, d))
            query = meaning + noise * rng.normal(size=(t, d))
            scores = (keys @ query[:, :, None])[..., 0]
            total += int(np.sum(scores[:, -1] - scores[:, :-1].max(axis=1) > 0))
        return total / trials
"""


def _rate(body: str) -> str:
    return RATE_VECTORISED.replace(
        """        meaning = rng.normal(size=(trials, n_keys, d))
        q = meaning[:, 0, :] + noise * rng.normal(size=(trials, d))
        k = meaning + noise * rng.normal(size=(trials, n_keys, d))
        scores = np.einsum("td,tkd->tk", q, k) / np.sqrt(d)     # the scaling changes no ranking
        return float(np.mean(scores[:, 0] > scores[:, 1:].max(axis=1)))""",
        body,
    )


ANSWERS = [
    Answer("untouched", {}, untouched=True),
    Answer(
        "shift_matrix_and_vectorised_rate", {"retrieval_heads": HEADS_SHIFT_MATRIX, "winning_rate": RATE_VECTORISED}
    ),
    Answer(
        "circle_keys_and_loops_with_legacy_seed",
        {"retrieval_heads": HEADS_EINSUM_TWO_DIMENSIONS, "winning_rate": RATE_LOOPS_LEGACY_SEED},
    ),
    Answer(
        "stacked_matrices_and_separate_arrays",
        {"retrieval_heads": HEADS_STACKED_LISTS, "winning_rate": RATE_SEPARATE_ARRAYS},
    ),
    Answer("match_last_and_score_differences", {"winning_rate": RATE_MATCH_LAST_IN_CHUNKS}),
    # ------------------------------------------------------------ retrieval_heads: misconceptions
    Answer(
        "heads_next_token",
        {"retrieval_heads": HEADS_SHIFT_MATRIX.replace("k=-1", "k=1")},
        breaks="retrieval_heads",
        says="next",
    ),
    Answer(
        "heads_current_token",
        {"retrieval_heads": HEADS_SHIFT_MATRIX.replace("np.eye(n, k=-1)", "np.eye(n)")},
        breaks="retrieval_heads",
        says="current token",
    ),
    Answer(
        "heads_not_sharp",
        {"retrieval_heads": HEADS_SHIFT_MATRIX.replace("100 *", "1 *").replace("= 100", "= 1")},
        breaks="retrieval_heads",
        says="not sharply enough",
    ),
    Answer(
        "heads_forgot_sqrt_d",
        {"retrieval_heads": HEADS_SHIFT_MATRIX.replace("100 *", "7 *").replace("= 100", "= 7")},
        breaks="retrieval_heads",
        says="sqrt(d)",
    ),
    Answer(
        "heads_swapped",
        {
            "retrieval_heads": HEADS_SHIFT_MATRIX.replace("w_q[0, c:, :]", "w_q[2, c:, :]")
            .replace("w_q[1, c:, 0]", "w_q[0, c:, 0]")
            .replace("w_q[2, c:, :]", "w_q[1, c:, :]")
        },
        breaks="retrieval_heads",
        says="swapped",
    ),
    Answer(
        "heads_same_rule_twice",
        {"retrieval_heads": HEADS_SHIFT_MATRIX.replace("w_q[1, c:, 0] = 100", "w_q[1, c:, :] = 100 * np.eye(n, k=-1)")},
        breaks="retrieval_heads",
        says="both heads",
    ),
    Answer(
        "heads_read_the_content",
        {
            "retrieval_heads": HEADS_SHIFT_MATRIX.replace(
                "w_k[:, c:, :] = np.eye(n)", "w_k[:, c:, :] = np.eye(n)\n        w_k[:, :c, :] = 100.0"
            )
        },
        breaks="retrieval_heads",
        says="contents change",
    ),
    Answer(
        "heads_values_read_positions",
        {"retrieval_heads": HEADS_SHIFT_MATRIX.replace("w_v[:, :c, :] = np.eye(c)", "w_v[:, c:2 * c, :] = np.eye(c)")},
        breaks="retrieval_heads",
        says="position part",
    ),
    Answer(
        "heads_values_keep_position",
        {
            "retrieval_heads": HEADS_SHIFT_MATRIX.replace(
                "w_v[:, :c, :] = np.eye(c)", "w_v[:, :, :] = np.eye(c + n, c)\n        w_v[:, c:, :] = 1.0"
            )
        },
        breaks="retrieval_heads",
        says="copy the content",
    ),
    Answer(
        "heads_calls_the_reference",
        {
            "retrieval_heads": """
        import heads_and_masks.retrieval as course
        def retrieval_heads(n, c):
            return course.retrieval_heads(n, c)
    """
        },
        breaks="retrieval_heads",
        says="reference",
    ),
    # ------------------------------------------------------------ winning_rate: misconceptions
    Answer(
        "rate_pairwise",
        {
            "winning_rate": _rate("""        meaning = rng.normal(size=(trials, n_keys, d))
        q = meaning[:, 0, :] + noise * rng.normal(size=(trials, d))
        k = meaning + noise * rng.normal(size=(trials, n_keys, d))
        scores = np.einsum("td,tkd->tk", q, k)
        return float(np.mean(scores[:, :1] > scores[:, 1:]))""")
        },
        breaks="winning_rate",
        says="every other key",
    ),
    Answer(
        "rate_clean_query",
        {
            "winning_rate": _rate("""        meaning = rng.normal(size=(trials, n_keys, d))
        q = meaning[:, 0, :]
        k = meaning + noise * rng.normal(size=(trials, n_keys, d))
        scores = np.einsum("td,tkd->tk", q, k)
        return float(np.mean(scores[:, 0] > scores[:, 1:].max(axis=1)))""")
        },
        breaks="winning_rate",
        says="query has no noise",
    ),
    Answer(
        "rate_clean_match",
        {
            "winning_rate": _rate("""        meaning = rng.normal(size=(trials, n_keys, d))
        q = meaning[:, 0, :] + noise * rng.normal(size=(trials, d))
        k = meaning + noise * rng.normal(size=(trials, n_keys, d))
        k[:, 0, :] = meaning[:, 0, :]
        scores = np.einsum("td,tkd->tk", q, k)
        return float(np.mean(scores[:, 0] > scores[:, 1:].max(axis=1)))""")
        },
        breaks="winning_rate",
        says="matching key has no noise",
    ),
    Answer(
        "rate_noise_as_variance",
        {
            "winning_rate": _rate("""        meaning = rng.normal(size=(trials, n_keys, d))
        q = meaning[:, 0, :] + rng.normal(scale=np.sqrt(noise), size=(trials, d))
        k = meaning + rng.normal(scale=np.sqrt(noise), size=(trials, n_keys, d))
        scores = np.einsum("td,tkd->tk", q, k)
        return float(np.mean(scores[:, 0] > scores[:, 1:].max(axis=1)))""")
        },
        breaks="winning_rate",
        says="standard deviation",
    ),
    Answer(
        "rate_counts_wins",
        {
            "winning_rate": _rate("""        meaning = rng.normal(size=(trials, n_keys, d))
        q = meaning[:, 0, :] + noise * rng.normal(size=(trials, d))
        k = meaning + noise * rng.normal(size=(trials, n_keys, d))
        scores = np.einsum("td,tkd->tk", q, k)
        return int(np.sum(scores[:, 0] > scores[:, 1:].max(axis=1)))""")
        },
        breaks="winning_rate",
        says="number of wins",
    ),
    Answer(
        "rate_one_key_too_many",
        {"winning_rate": RATE_VECTORISED.replace("size=(trials, n_keys, d)", "size=(trials, n_keys + 1, d)")},
        breaks="winning_rate",
        says="one key too many",
    ),
    Answer(
        "rate_one_key_too_few",
        {"winning_rate": RATE_VECTORISED.replace("size=(trials, n_keys, d)", "size=(trials, n_keys - 1, d)")},
        breaks="winning_rate",
        says="one key too few",
    ),
    Answer(
        "rate_ignores_seed",
        {"winning_rate": RATE_VECTORISED.replace("default_rng(seed)", "default_rng()")},
        breaks="winning_rate",
        says="same seed",
    ),
    Answer(
        "rate_no_value_errors",
        {
            "winning_rate": RATE_VECTORISED.replace(
                'if d < 1 or noise < 0 or n_keys < 2 or trials < 1:\n            raise ValueError("bad arguments")',
                "pass",
            )
        },
        breaks="winning_rate",
        says="ValueError",
    ),
    Answer(
        "rate_calls_the_exact_reference",
        {
            "winning_rate": """
        from heads_and_masks.score_noise import exact_winning_rate
        def winning_rate(d, noise, n_keys=16, trials=4000, seed=0):
            return exact_winning_rate(d, noise, n_keys)
    """
        },
        breaks="winning_rate",
        says="reference",
    ),
]
