"""Checks for notebook 03: the causal mask, the masked softmax and the entropy of a row in bits.

Every check compares the learner's function with the course's reference on inputs chosen so that
each misconception of the lesson changes the result: future keys allowed, the diagonal forgotten,
a float mask, forbidden scores set to 0, the mask applied after softmax, NaN on a row with no
allowed key, exp overflowing on large scores, a fill value that large scores beat, entropy in nats,
NaN from 0·log 0. The known wrong results are only used to name the mistake in the message.
"""

from __future__ import annotations

import numpy as np

from ..attention import masked_softmax as reference_softmax
from ..attention import row_entropy_bits as reference_entropy
from ..masks import causal_mask as reference_mask
from ..i18n import _, number
from .core import CheckFailed, call, exercise_check, expect_value_error, fail, passed, rng, secret_draws
from .core import _array_equal, expect_close, expect_shape, named, plain_array, plain_bool_array


# ---------------------------------------------------------------------------------------------
# causal_mask(n)


def _wrong_masks(n):
    """What the usual mistakes return for causal_mask(n), with the misconception in words."""
    ones = np.ones((n, n), dtype=bool)
    yield (
        np.triu(ones),
        _(
            "True above the diagonal means each query sees the *future* keys: "
            "did you use np.triu instead of np.tril (or compare key >= query)?"
        ),
        "mask.future_allowed",
    )
    yield (
        np.tril(ones, k=-1),
        _(
            "the diagonal is False, but a token may attend to itself (key <= query, "
            "not key < query): did you use np.tril(..., k=-1) or a strict comparison?"
        ),
        "mask.diagonal_forbidden",
    )
    yield (
        np.triu(ones, k=1),
        _("the polarity is flipped: True must mean *may attend*, so True on and below the diagonal, False above it."),
        "mask.polarity_flipped",
    )
    yield (
        np.tril(ones, k=1),
        _("one future key per query is allowed (np.tril(..., k=1)): key must be <= query."),
        "mask.future_allowed",
    )


def _expect_mask(actual, expected, *, what, diagnoses):
    __tracebackhide__ = True
    expect_shape(
        actual, expected.shape, what=what, hint=_("A causal mask has one row per query and one column per key.")
    )
    if _array_equal(actual, expected):
        return
    query, key = (int(i) for i in np.argwhere(actual != expected)[0])
    # one whole sentence for each place of the key (word order differs between languages)
    if key > query:
        message = _(
            "{what} is wrong at [{query}, {key}]: key {key} is in the future of query {query}, so the entry "
            "should be {expected}, but it is {actual}."
        )
    elif key == query:
        message = _(
            "{what} is wrong at [{query}, {key}]: key {key} is the query itself, for query {query}, so the entry "
            "should be {expected}, but it is {actual}."
        )
    else:
        message = _(
            "{what} is wrong at [{query}, {key}]: key {key} is in the past of query {query}, so the entry "
            "should be {expected}, but it is {actual}."
        )
    message = message.format(
        what=what, query=query, key=key, expected=bool(expected[query, key]), actual=bool(actual[query, key])
    )
    for diagnosis in diagnoses:
        wrong, explanation, misconception = named(diagnosis)
        if wrong.shape == actual.shape and _array_equal(actual, wrong):
            fail(message + " " + _("Likely cause: {explanation}").format(explanation=explanation), misconception)
    fail(message)


@exercise_check
def check_causal_mask(causal_mask, thorough: bool = False) -> None:
    """``causal_mask(n)``: an (n, n) boolean array, True where key <= query."""
    __tracebackhide__ = True
    sizes = [4, 1] + ([0, 2, 3, 7, 64, *secret_draws(3, 5, 90, label="causal_mask")] if thorough else [])
    for n in sizes:
        what = f"causal_mask({n})"
        mask = plain_bool_array(call(causal_mask, n, what=what), what=what)
        _expect_mask(mask, reference_mask(n), what=what, diagnoses=_wrong_masks(n))
    if thorough:
        passed(_("causal_mask is True exactly where key <= query (n = 0 to 64)"))
    else:
        passed(_("causal_mask is True exactly where key <= query"))


@exercise_check
def check_causal_mask_bad_n(causal_mask) -> None:
    """A negative length is refused with ValueError."""
    __tracebackhide__ = True
    for n in (-1, -5):
        expect_value_error(causal_mask, n, what=f"causal_mask({n})", why=_("a sequence cannot have a negative length"))
    passed(_("causal_mask refuses a negative length with ValueError"))


# ---------------------------------------------------------------------------------------------
# masked_softmax(scores, mask)


def _softmax_all(scores):
    """Plain softmax over the last axis, every key allowed (stable)."""
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _wrong_softmaxes(scores, mask, *, fills_first=False):
    """What the usual mistakes return on these inputs, with the misconception in words.

    On very negative scores a fill of 0 and a fill of -1e4 give the same (wrong) weights;
    ``fills_first`` names the too-small fill value first there.
    """
    allowed = np.broadcast_to(mask, np.broadcast_shapes(scores.shape, mask.shape))
    scores = np.broadcast_to(scores, allowed.shape)
    if fills_first:
        yield from _wrong_fills(scores, allowed)
    yield (
        _softmax_all(np.where(allowed, scores, 0.0)),
        _(
            "forbidden scores were set to 0, but a score of 0 is not a ban: it gets weight e^0 = 1 before "
            "normalising, an ordinary weight. Fill with -inf (or a number so negative that no score comes near it)."
        ),
        "mask.zero_not_ban",
    )
    after = _softmax_all(scores) * allowed
    totals = after.sum(axis=-1, keepdims=True)
    renormalised = after / totals
    vanished = _(
        "a forbidden score dwarfs the allowed ones here, and every allowed weight was rounded to 0 "
        "before the division. Either the mask was applied after softmax (the first softmax gives the "
        "allowed keys exp(-huge) = 0, and renormalising then divides 0 by 0), or the row maximum was "
        "taken over all keys, forbidden ones included (exp(allowed - forbidden max) underflows). Mask "
        "before softmax, and subtract the largest *allowed* score."
    )
    yield renormalised, vanished, "softmax.allowed_weights_vanish"
    yield np.nan_to_num(renormalised), vanished, "softmax.allowed_weights_vanish"
    yield (
        after,
        _(
            "the mask was applied after softmax: the forbidden weights were zeroed, but the rows no "
            "longer sum to 1. Mask the scores *before* softmax, so the forbidden keys drop out of "
            "the denominator too."
        ),
        "mask.after_softmax",
    )
    any_allowed = allowed.any(axis=-1, keepdims=True)
    uniform = np.where(any_allowed, reference_softmax(scores, allowed), 1.0 / allowed.shape[-1])
    yield (
        uniform,
        _(
            "a row with no allowed key got the same weight on every key: a finite fill value "
            "(like -1e9 or the dtype minimum) makes all of them equal, so softmax spreads the row "
            "evenly. Set the forbidden weights to exactly 0 after exp, and leave a row with nothing "
            "allowed at all zeros."
        ),
        "mask.fully_masked_uniform",
    )
    if not fills_first:
        yield from _wrong_fills(scores, allowed)
    yield (
        reference_softmax(scores, ~allowed),
        _("the polarity is flipped: in this course True means *may attend*."),
        "mask.polarity_flipped",
    )
    yield _softmax_all(scores), _("the mask is ignored."), "mask.ignored"


def _wrong_fills(scores, allowed):
    """Fill values (plain and additive) that large scores beat."""
    for fill in (-1e4, -1e3, -100.0):
        yield (
            _softmax_all(np.where(allowed, scores, fill)),
            _(
                "the fill value {fill} is too small for these scores: a forbidden key filled with {fill} beats "
                "allowed keys whose scores are lower still, so it gets the weight. Use -inf, -1e9 or the dtype's "
                "minimum (np.finfo(scores.dtype).min), which no real score comes near."
            ).format(fill=number(fill, "g")),
            "mask.fill_too_small",
        )
        yield (
            _softmax_all(scores + np.where(allowed, 0.0, fill)),
            _(
                "the additive mask {fill} is too small for these scores: a forbidden score minus {minus} can still "
                "exceed the allowed scores. Use -inf, -1e9 or the dtype's minimum."
            ).format(fill=number(fill, "g"), minus=number(-fill, "g")),
            "mask.fill_too_small",
        )


def _probe_softmax(
    masked_softmax, scores, mask, label, *, strict=False, hint="", fills_first=False, misconception=None
):
    """Run the learner's masked_softmax and compare with the reference, exact zeros included.

    The values are checked first (they name the misconception best); with ``strict`` the function
    is then run once more and must not emit any numpy warning.
    """
    __tracebackhide__ = True
    what = f"masked_softmax {label}"
    weights = plain_array(call(masked_softmax, scores, mask, what=what, names=("scores", "mask")), what=what)
    expected = reference_softmax(scores, mask)
    expect_shape(
        weights,
        expected.shape,
        what=what,
        hint=_("The weights have the shape of the scores (the mask broadcasts against them)."),
    )
    allowed = np.broadcast_to(mask, expected.shape)
    if np.isnan(weights).any():
        nan_rows = np.isnan(weights).any(axis=-1)
        empty_rows = ~allowed.any(axis=-1)
        if (nan_rows & empty_rows).any():
            fail(
                _(
                    "{what} returned NaN on a row with no allowed key (a fully masked row). Such a row must be "
                    "all zeros: with -inf everywhere the row maximum is -inf and -inf - (-inf) is NaN, or the sum "
                    "is 0 and 0 / 0 is NaN. Handle that row explicitly (np.where, or np.divide(..., where=...))."
                ).format(what=what),
                "mask.fully_masked_nan",
            )
    expect_close(
        weights,
        expected,
        what=what,
        diagnoses=_wrong_softmaxes(scores, mask, fills_first=fills_first),
        rtol=1e-6,
        atol=1e-12,
        hint=hint,
        misconception=misconception,
    )
    if np.any(weights[~allowed] != 0.0):
        worst = float(np.abs(weights[~allowed]).max())
        # Close to the reference yet not exact: when one of the usual mistakes gives exactly these weights
        # (a fill of 0 whose weights underflowed almost to nothing, say), name that mistake, on any draw.
        for wrong, why, named in _wrong_softmaxes(scores, mask):
            if np.shape(wrong) == weights.shape and np.allclose(weights, wrong, rtol=1e-9, atol=0.0):
                fail(
                    _("{what}: forbidden keys must get weight exactly 0, but one got {worst}: {why}").format(
                        what=what, worst=number(worst, ".3g"), why=why
                    ),
                    named,
                )
        fail(
            _(
                "{what}: forbidden keys must get weight exactly 0, but one got {worst}. "
                "Fill with -inf, or zero the forbidden entries explicitly after exp."
            ).format(what=what, worst=number(worst, ".3g")),
            "mask.forbidden_not_zero",
        )
    if strict:
        try:
            call(masked_softmax, scores, mask, what=what, allow_warnings=False, names=("scores", "mask"))
        except CheckFailed as failure:  # a warning on inputs chosen to catch one mistake is that mistake
            named = (
                misconception
                if failure.misconception == "numerics.warning" and misconception
                else failure.misconception
            )
            fail(f"{failure} {hint}".strip(), named)


@exercise_check
def check_masked_softmax(masked_softmax, seed: int = 0, thorough: bool = False) -> None:
    """Values, exact zeros and broadcasting on ordinary scores."""
    __tracebackhide__ = True
    r = rng(seed)
    n = 5 if not thorough else 7
    causal = np.tril(np.ones((n, n), dtype=bool))
    scores = r.normal(size=(n, n)) * 2.0
    _probe_softmax(masked_softmax, scores, causal, _("with a causal mask on ({n}, {n}) scores").format(n=n))
    passed(_("masked_softmax matches the reference with a causal mask: forbidden weights exactly 0, rows sum to 1"))

    mask = r.random((4, 6)) < 0.5
    mask[np.arange(4), r.integers(0, 6, size=4)] = True  # at least one allowed key per row
    _probe_softmax(masked_softmax, r.normal(size=(4, 6)) * 3.0, mask, _("with a random (4, 6) mask"))
    batched = r.normal(size=(2, 3, n, n))
    _probe_softmax(
        masked_softmax,
        batched,
        causal,
        _("with scores (2, 3, {n}, {n}) and an ({n}, {n}) mask broadcast over batch and heads").format(n=n),
        hint=_("The mask must broadcast against the scores: np.where(mask, scores, ...) does it for you."),
    )
    passed(_("masked_softmax works with random masks and broadcasts an (n, n) mask over leading axes"))

    if thorough:
        for _draw in range(4):
            b, h, n_q, n_k = (int(x) for x in r.integers(1, 5, size=4))
            scores = r.normal(size=(b, h, n_q, n_k)) * r.uniform(0.5, 5)
            lengths = r.integers(1, n_k + 1, size=b)
            padding = (np.arange(n_k)[None, :] < lengths[:, None])[:, None, None, :]  # (b, 1, 1, n_k)
            _probe_softmax(
                masked_softmax,
                scores,
                padding,
                _("with scores {scores_shape} and a padding mask {mask_shape}").format(
                    scores_shape=scores.shape, mask_shape=padding.shape
                ),
            )
        passed(_("masked_softmax matches the reference on random shapes and padding masks"))


@exercise_check
def check_masked_softmax_empty_rows(masked_softmax, seed: int = 0, thorough: bool = False) -> None:
    """A row with no allowed key: all zeros, no NaN, no warning."""
    __tracebackhide__ = True
    r = rng(seed)
    mask = np.tril(np.ones((4, 4), dtype=bool))
    mask[1, :] = False  # query 1 may look at nothing
    hint = _(
        "A row with no allowed key must come back as zeros, without NaN and without a numpy warning "
        "(a warning usually means -inf - (-inf) or 0 / 0 was computed along the way)."
    )
    _probe_softmax(
        masked_softmax,
        r.normal(size=(4, 4)),
        mask,
        _("with a fully masked row (query 1 may see no key)"),
        strict=True,
        hint=hint,
    )
    if thorough:
        nothing = np.zeros((3, 5), dtype=bool)
        _probe_softmax(
            masked_softmax, r.normal(size=(3, 5)), nothing, _("with every row fully masked"), strict=True, hint=hint
        )
        lengths = np.array([3, 0])  # the second sequence is empty: every one of its rows is fully masked
        padding = (np.arange(4)[None, :] < lengths[:, None])[:, None, None, :]  # (2, 1, 1, 4)
        _probe_softmax(
            masked_softmax,
            r.normal(size=(2, 2, 4, 4)) * 3,
            padding,
            _("with a padding mask where one sequence has length 0"),
            strict=True,
            hint=hint,
        )
    passed(_("masked_softmax gives all-zero weights to a fully masked row, without NaN or warnings"))


def _large_scores(r, n: int) -> np.ndarray:
    """(n, n) scores in the thousands for a causal mask; two decisive rows name a mistake alike on every draw.

    The other rows are plain draws (normal, times 1000): whether a forbidden score dwarfs the allowed
    ones of its row is left to chance there. The decisive rows are built:

    * row 0 (one allowed key, key 0): its forbidden scores sit just above the allowed one (by 0.5 to 2).
      Masking *after* softmax keeps the allowed key's weight exp(s_0) / Σ exp(s), 3 % to 13 %, so the
      row sums to that, not to 1: ``mask.after_softmax``. Renormalising what is left, or taking the row
      maximum over forbidden keys too, gives this row exactly (a difference of 2 is no underflow): the
      other rows and the next probe (forbidden scores about 3e4) tell those apart
      (``softmax.allowed_weights_vanish``). Drawn plainly, a forbidden score
      thousands above the allowed one rounds its weight to 0, and the zero row left by masking after
      softmax is what vanished allowed weights look like: named so on 230 of 600 seeds.
    * row n - 1 (every key allowed): its last score is at least 1200, beyond exp's range (about 709),
      so a softmax that does not subtract the row maximum overflows, inf / inf = NaN, here:
      ``softmax.overflow``. Drawn plainly, no allowed score came that far on 1 seed of 600, and a
      later probe caught the overflow under another name.
    """
    scores = r.normal(size=(n, n)) * 1000.0  # (n_q, n_k)
    scores[0, 1:] = scores[0, 0] + r.uniform(0.5, 2.0, size=n - 1)  # row 0: forbidden just above allowed
    scores[n - 1, n - 1] = max(scores[n - 1, n - 1], 1200.0)  # row n - 1: an allowed score beyond exp's range
    return scores


@exercise_check
def check_masked_softmax_large_scores(masked_softmax, seed: int = 0, thorough: bool = False) -> None:
    """Scores far beyond exp's range, forbidden scores that dwarf the allowed ones, very negative scores."""
    __tracebackhide__ = True
    r = rng(seed)
    n = 5
    causal = np.tril(np.ones((n, n), dtype=bool))
    _probe_softmax(
        masked_softmax,
        _large_scores(r, n),
        causal,
        _("on large scores (|s| in the thousands)"),
        strict=True,
        hint=_("np.exp overflows beyond about 709: subtract each row's largest allowed score before exp."),
        misconception="softmax.overflow",
    )

    future_dwarfs = np.where(causal, r.normal(size=(n, n)), 3e4 + 1e3 * r.random((n, n)))
    _probe_softmax(
        masked_softmax,
        future_dwarfs,
        causal,
        _("on scores whose forbidden (future) entries are huge (about 3e4) and allowed ones ordinary"),
        strict=True,
        hint=_("Forbidden keys must get exactly 0 however large their scores are: mask before softmax."),
        misconception="mask.after_softmax",
    )
    passed(_("masked_softmax handles large scores and huge forbidden scores without NaN or warnings"))

    very_negative = -5e4 + r.normal(size=(n, n)) * 10.0
    _probe_softmax(
        masked_softmax,
        very_negative,
        causal,
        _("on very negative scores (about -5e4)"),
        strict=True,
        fills_first=True,
        hint=_(
            "A fill value is too small when real scores can lie below it: use -inf, -1e9 or "
            "np.finfo(dtype).min, and subtract the largest *allowed* score so exp does not underflow "
            "to 0 for the whole row."
        ),
        misconception="mask.fill_too_small",
    )
    if thorough:
        for scale in (1e5, 1e6):
            scores = r.normal(size=(3, n, n)) * scale
            _probe_softmax(
                masked_softmax,
                scores,
                causal,
                _("on scores of size about {scale}").format(scale=number(scale, "g")),
                strict=True,
                hint=_("Subtract the largest allowed score per row and fill with a value no score comes near."),
            )
    passed(_("masked_softmax handles very negative scores: the fill value is small enough"))


# ---------------------------------------------------------------------------------------------
# row_entropy_bits(weights)


def _wrong_entropies(weights):
    positive = weights > 0
    bits = reference_entropy(weights)
    yield (
        bits * np.log(2.0),
        _("this is the entropy in nats (natural log): in bits use np.log2 (or divide by ln 2)."),
        "entropy.nats",
    )
    yield (
        -bits,
        _("the sign is flipped: entropy is -Σ p·log2(p), which is >= 0 because log2(p) <= 0."),
        "entropy.sign",
    )
    yield (
        -(weights * np.log2(weights)).sum(axis=-1),
        _(
            "0·log2(0) came out as NaN (0 times -inf). By convention 0·log 0 = 0: compute the logarithm only "
            "where the weight is positive (np.where, np.log2(..., where=..., out=...)) and use 0 elsewhere."
        ),
        "entropy.zero_log_zero",
    )
    if weights.ndim >= 2 and weights.shape[-1] == weights.shape[-2]:
        yield (
            reference_entropy(np.swapaxes(weights, -1, -2)),
            _(
                "the entropy was taken down the columns: each row (one query's weights, the last axis) is one "
                "distribution."
            ),
            "entropy.wrong_axis",
        )
    yield (
        np.where(positive, -weights * np.log2(np.where(positive, weights, 1.0)), 0.0).sum(axis=-1)
        / np.log2(np.maximum(positive.sum(axis=-1), 2)),
        _("the entropy was divided by its maximum: return it in plain bits."),
        "entropy.normalised",
    )


def _probe_entropy(row_entropy_bits, weights, label):
    __tracebackhide__ = True
    what = f"row_entropy_bits {label}"
    result = plain_array(call(row_entropy_bits, weights, what=what, names=("weights",)), what=what)
    expected = reference_entropy(weights)
    expect_shape(
        result,
        expected.shape,
        what=what,
        hint=_("One entropy per row: sum over the last axis (no keepdims), so (..., n_k) -> (...)."),
        misconception="entropy.not_one_per_row",
    )
    expect_close(result, expected, what=what, diagnoses=_wrong_entropies(weights), rtol=1e-7, atol=1e-9)


@exercise_check
def check_row_entropy_bits(row_entropy_bits, seed: int = 0, thorough: bool = False) -> None:
    """Entropy in bits of each row, with 0·log 0 = 0, over any leading axes."""
    __tracebackhide__ = True
    r = rng(seed)
    n = 5
    uniform = np.full((3, 8), 1.0 / 8)
    uniform[1] = [0.25] * 4 + [0.0] * 4
    uniform[2] = [1.0] + [0.0] * 7
    _probe_entropy(row_entropy_bits, uniform, _("on rows of 8, 4 and 1 equal weights (3, 2 and 0 bits)"))
    causal = np.tril(np.ones((n, n), dtype=bool))
    weights = reference_softmax(r.normal(size=(n, n)) * 2, causal)
    _probe_entropy(
        row_entropy_bits,
        weights,
        _("on the causal attention weights of ({n}, {n}) scores (zeros above the diagonal)").format(n=n),
    )
    passed(_("row_entropy_bits is right in bits, with 0·log 0 = 0"))

    empty = np.tril(np.ones((4, 4), dtype=bool))
    empty[2] = False
    weights = reference_softmax(r.normal(size=(2, 3, 4, 4)), empty)  # row 2 of every matrix is all zeros
    _probe_entropy(row_entropy_bits, weights, _("on weights of shape (2, 3, 4, 4) with an all-zero row"))
    passed(_("row_entropy_bits works over leading axes and gives 0 for an all-zero row"))
    if thorough:
        for _draw in range(3):
            shape = tuple(int(x) for x in r.integers(1, 6, size=r.integers(2, 4)))
            mask = r.random(shape) < 0.6
            weights = reference_softmax(r.normal(size=shape) * r.uniform(0.1, 20), mask)
            _probe_entropy(row_entropy_bits, weights, _("on random weights of shape {shape}").format(shape=shape))
        peaked = reference_softmax(np.array([[0.0, -800.0, -30.0, -745.0]]))  # weights down to ~1e-324
        _probe_entropy(row_entropy_bits, peaked, _("on a row with tiny (subnormal) weights"))
        passed(_("row_entropy_bits matches the reference on random shapes and tiny weights"))
