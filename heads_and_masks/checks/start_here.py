"""Checks for notebook 00: single-head scaled dot-product attention."""

from __future__ import annotations

import numpy as np

from ..attention import attention as reference_attention
from ..attention import masked_softmax as reference_softmax
from ..i18n import N_, _, translated
from .core import CheckFailed, call, exercise_check, fail, passed, rng
from .core import expect_close, expect_shape, plain_array, sentence


def _wrong_attentions(q, k, v, mask):
    """What the usual mistakes produce on these inputs (used only to name the mistake)."""
    d = q.shape[-1]
    raw = q @ np.swapaxes(k, -1, -2)
    allowed = np.ones(raw.shape, bool) if mask is None else np.broadcast_to(mask, raw.shape)

    def soft(s, m=allowed):
        return reference_softmax(s, m)

    yield soft(raw) @ v, _("the scores are not divided by sqrt(d) (the head size)."), "scale.missing"
    yield soft(raw / d) @ v, _("the scores are divided by d instead of sqrt(d)."), "scale.d_not_sqrt_d"
    e = np.exp(raw / np.sqrt(d) - raw.max())
    yield (
        (e / e.sum(axis=-2, keepdims=True) * allowed) @ v,
        _("softmax normalised over the queries (axis -2) instead of the keys (last axis)."),
        "softmax.wrong_axis",
    )
    yield (raw / np.sqrt(d)) @ v, _("softmax is missing: the raw scores were used as weights."), "softmax.missing"
    if mask is not None:
        yield soft(raw / np.sqrt(d), np.ones_like(allowed)) @ v, _("the mask is ignored."), "mask.ignored"
        yield soft(raw / np.sqrt(d), ~allowed) @ v, translated(_POLARITY), "mask.polarity_flipped"
        yield (
            reference_softmax(np.where(allowed, raw / np.sqrt(d), 0.0)) @ v,
            _("forbidden scores were set to 0, which still gets weight e^0 = 1; use -inf (or a huge negative number)."),
            "mask.zero_not_ban",
        )
        full = reference_softmax(raw / np.sqrt(d))
        yield (
            (full * allowed) @ v,
            _("the mask was applied after softmax, so rows no longer sum to 1."),
            "mask.after_softmax",
        )


_POLARITY = N_(
    "the mask polarity is inverted: your attention treats True as *forbidden*, but in this course "
    "(as in PyTorch's scaled_dot_product_attention) True means *may attend*: query i may look at key j "
    "where mask[i, j] is True. Keep the scores where the mask is True and forbid them where it is False "
    "(np.where(mask, scores, -np.inf))."
)


def _inverted_polarity(out, q, k, v, mask) -> bool:
    """Does ``out`` equal attention under the negated mask, on every row the negated mask leaves some key?

    A row that the true mask allows entirely has no key at all under the negated mask: what an inverted
    answer gives there (NaN, zeros, or an unmasked softmax) depends on how it fills, so only the other
    rows decide.
    """
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    inverted = ~np.broadcast_to(mask, scores.shape)
    wrong = reference_softmax(scores, inverted) @ v  # (..., n_q, d_v)
    rows = inverted.any(axis=-1)  # (..., n_q): rows with a key under the inverted mask
    if out.shape != wrong.shape or not rows.any():
        return False
    with np.errstate(all="ignore"):
        return bool(
            np.allclose(out[rows], wrong[rows], rtol=1e-5, atol=1e-8)
            and not np.allclose(wrong[rows], reference_attention(q, k, v, mask)[rows], rtol=1e-5, atol=1e-8)
        )


def _probe(attention, q, k, v, mask, label, *, misconception=None, hint=""):
    """Compare with the reference; ``misconception`` is what these inputs were chosen to catch: it names a
    failure that no diagnosis names more precisely (a warning or an unexplained difference)."""
    __tracebackhide__ = True
    try:
        _compare(attention, q, k, v, mask, label)
    except CheckFailed as failure:
        if misconception is None or failure.misconception not in (None, "numerics.warning"):
            raise
        fail(
            f"{sentence(str(failure))} {hint}" if hint else str(failure), misconception
        )  # the hint: a sentence of its own


def _compare(attention, q, k, v, mask, label):
    __tracebackhide__ = True
    call_text = "attention(q, k, v, mask)" if mask is not None else "attention(q, k, v)"
    what = f"{call_text} {label}"  # the call stays code; the label is a translated phrase
    arguments = (q, k, v) + (() if mask is None else (mask,))
    if mask is not None:  # a flipped mask often also gives NaN (and a warning) on a row: name the flip first
        first = call(attention, *arguments, what=what)
        if type(first) is np.ndarray and first.dtype.kind == "f" and _inverted_polarity(first, q, k, v, mask):
            fail(
                _("{what} is wrong: it attends exactly where the mask forbids. Likely cause: {explanation}").format(
                    what=what, explanation=translated(_POLARITY)
                ),
                "mask.polarity_flipped",
            )
    out = plain_array(call(attention, *arguments, what=what, allow_warnings=False), what=what)
    expected = reference_attention(q, k, v, mask)
    expect_shape(
        out, expected.shape, what=what, hint=_("The output has one row per query and the width of v: (..., n_q, d_v).")
    )
    expect_close(out, expected, what=what, diagnoses=_wrong_attentions(q, k, v, mask))


@exercise_check
def check_attention(attention, seed: int = 0, thorough: bool = False) -> None:
    """Compare the learner's ``attention(q, k, v, mask=None)`` with the reference on many inputs."""
    __tracebackhide__ = True
    r = rng(seed)
    shapes = [(3, 4, 2, 5)] + ([(1, 1, 3, 1), (5, 2, 7, 3), (6, 6, 16, 4)] if thorough else [])
    for n_q, n_k, d, d_v in shapes:
        q, k, v = r.normal(size=(n_q, d)), r.normal(size=(n_k, d)), r.normal(size=(n_k, d_v))
        label = _("with q {q_shape}, k {k_shape}, v {v_shape}").format(
            q_shape=q.shape, k_shape=k.shape, v_shape=v.shape
        )
        _probe(attention, q, k, v, None, label)
    passed(_("attention without a mask matches the reference"))

    n, d = (4, 8) if not thorough else (6, 3)
    q, k, v = (r.normal(size=(n, d)) * 2 for _i in range(3))
    causal = np.tril(np.ones((n, n), bool))
    _probe(attention, q, k, v, causal, _("with a causal mask (n = {n}, d = {d})").format(n=n, d=d))
    passed(_("attention with a causal mask matches the reference"))

    batch = r.normal(size=(2, 3, n, d)), r.normal(size=(2, 3, n, d)), r.normal(size=(2, 3, n, 2))
    _probe(attention, *batch, causal, _("with leading batch axes (2, 3) and an (n, n) mask broadcast over them"))
    passed(_("attention works over leading batch/head axes"))

    # A query that may attend to nothing: zero weights, zero output, no NaN and no warning.
    mask = causal.copy()
    mask[0, :] = False
    _probe(attention, q, k, v, mask, _("with a fully masked first query row (its output must be all zeros)"))
    # Scores far beyond exp's range: subtract the row maximum before exp.
    q_big = q * 300.0
    # On every draw one allowed score (the last query's own key) lies far beyond exp's range (about 709):
    # scaling alone left every score below it on a few draws, and then a missing max subtraction passed.
    own = q_big[-1] @ k[-1] / np.sqrt(d)
    if own < 1200.0:
        q_big[-1] = q_big[-1] + (1200.0 - own) * np.sqrt(d) * k[-1] / (k[-1] @ k[-1])
    _probe(
        attention,
        q_big,
        k,
        v,
        causal,
        _("with very large scores (|q·k| in the thousands)"),
        misconception="softmax.overflow",
        hint=_("np.exp overflows beyond about 709: subtract each row's largest allowed score before exp."),
    )
    passed(_("attention handles a fully masked row and very large scores without NaN or warnings"))

    if thorough:
        for _draw in range(3):
            b, n_q, n_k, d = r.integers(1, 4), r.integers(1, 7), r.integers(1, 7), r.integers(1, 9)
            q, k, v = r.normal(size=(b, n_q, d)), r.normal(size=(b, n_k, d)), r.normal(size=(b, n_k, 3))
            mask = r.random((b, n_q, n_k)) < 0.6
            _probe(attention, q, k, v, mask, _("with a random mask of shape {shape}").format(shape=mask.shape))
        passed(_("attention matches the reference on random shapes and masks"))
