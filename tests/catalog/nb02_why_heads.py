"""Sample answers for 02_why_heads: `retrieval_heads(n, c)` and `winning_rate(d, noise, n_keys, trials, seed)`."""

from catalog import Answer, edited, mistakes

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


_NOISY_QUERY = "q = meaning[:, 0, :] + noise * rng.normal(size=(trials, d))"
_NOISY_KEYS = "k = meaning + noise * rng.normal(size=(trials, n_keys, d))"


def _unscaled(*edits: tuple[str, str]) -> str:
    """RATE_VECTORISED without its (harmless) 1/sqrt(d), and with the edits that make the mistake."""
    return edited(RATE_VECTORISED, (" / np.sqrt(d)     # the scaling changes no ranking", ""), *edits)


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
    *mistakes(
        "retrieval_heads",
        ("heads_next_token", "next", edited(HEADS_SHIFT_MATRIX, ("k=-1", "k=1"))),
        ("heads_current_token", "current token", edited(HEADS_SHIFT_MATRIX, ("np.eye(n, k=-1)", "np.eye(n)"))),
        ("heads_not_sharp", "not sharply enough", edited(HEADS_SHIFT_MATRIX, ("100 *", "1 *"), ("= 100", "= 1"))),
        ("heads_forgot_sqrt_d", "sqrt(d)", edited(HEADS_SHIFT_MATRIX, ("100 *", "7 *"), ("= 100", "= 7"))),
        (
            "heads_swapped",
            "swapped",
            edited(
                HEADS_SHIFT_MATRIX,
                ("w_q[0, c:, :]", "w_q[2, c:, :]"),
                ("w_q[1, c:, 0]", "w_q[0, c:, 0]"),
                ("w_q[2, c:, :]", "w_q[1, c:, :]"),
            ),
        ),
        (
            "heads_same_rule_twice",
            "both heads",
            edited(HEADS_SHIFT_MATRIX, ("w_q[1, c:, 0] = 100", "w_q[1, c:, :] = 100 * np.eye(n, k=-1)")),
        ),
        (
            "heads_read_the_content",
            "contents change",
            edited(
                HEADS_SHIFT_MATRIX,
                ("w_k[:, c:, :] = np.eye(n)", "w_k[:, c:, :] = np.eye(n)\n        w_k[:, :c, :] = 100.0"),
            ),
        ),
        (
            "heads_values_read_positions",
            "position part",
            edited(HEADS_SHIFT_MATRIX, ("w_v[:, :c, :] = np.eye(c)", "w_v[:, c:2 * c, :] = np.eye(c)")),
        ),
        (
            "heads_values_keep_position",
            "copy the content",
            edited(
                HEADS_SHIFT_MATRIX,
                ("w_v[:, :c, :] = np.eye(c)", "w_v[:, :, :] = np.eye(c + n, c)\n        w_v[:, c:, :] = 1.0"),
            ),
        ),
        (
            "heads_calls_the_reference",
            "reference",
            """
        import heads_and_masks.retrieval as course
        def retrieval_heads(n, c):
            return course.retrieval_heads(n, c)
    """,
        ),
    ),
    # ------------------------------------------------------------ winning_rate: misconceptions
    *mistakes(
        "winning_rate",
        (
            "rate_pairwise",
            "every other key",
            _unscaled(("scores[:, 0] > scores[:, 1:].max(axis=1)", "scores[:, :1] > scores[:, 1:]")),
        ),
        ("rate_clean_query", "query has no noise", _unscaled((_NOISY_QUERY, "q = meaning[:, 0, :]"))),
        (
            "rate_clean_match",
            "matching key has no noise",
            _unscaled((_NOISY_KEYS, _NOISY_KEYS + "\n        k[:, 0, :] = meaning[:, 0, :]")),
        ),
        (
            "rate_noise_as_variance",
            "standard deviation",
            _unscaled(("noise * rng.normal(size=", "rng.normal(scale=np.sqrt(noise), size=")),
        ),
        ("rate_counts_wins", "number of wins", _unscaled(("return float(np.mean(", "return int(np.sum("))),
        (
            "rate_one_key_too_many",
            "one key too many",
            edited(RATE_VECTORISED, ("size=(trials, n_keys, d)", "size=(trials, n_keys + 1, d)")),
        ),
        (
            "rate_one_key_too_few",
            "one key too few",
            edited(RATE_VECTORISED, ("size=(trials, n_keys, d)", "size=(trials, n_keys - 1, d)")),
        ),
        ("rate_ignores_seed", "same seed", edited(RATE_VECTORISED, ("default_rng(seed)", "default_rng()"))),
        (
            "rate_no_value_errors",
            "ValueError",
            edited(
                RATE_VECTORISED,
                (
                    'if d < 1 or noise < 0 or n_keys < 2 or trials < 1:\n            raise ValueError("bad arguments")',
                    "pass",
                ),
            ),
        ),
        (
            "rate_calls_the_exact_reference",
            "reference",
            """
        from heads_and_masks.score_noise import exact_winning_rate
        def winning_rate(d, noise, n_keys=16, trials=4000, seed=0):
            return exact_winning_rate(d, noise, n_keys)
    """,
        ),
    ),
]
