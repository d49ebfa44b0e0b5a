"""Checks for notebook 08: the backward pass of masked attention for one head, and reading a trained model.

``attention_backward(q, k, v, mask, dout)`` is compared with the course's reference **and** with finite
differences of the forward pass, on inputs drawn from the check's own seed (the instructor's key while
grading), never from the learner's random stream. The inputs are chosen so that each misconception changes
the result: the 1/√d left out of dq and dk, only the diagonal of the softmax Jacobian, gradient through
forbidden entries, dq and dk computed with each other's transpose, NaN on a row with no allowed key.
The known wrong results only name the mistake in the message; the verdict is the comparison.
"""

from __future__ import annotations

import math

import numpy as np

from ..attention import attention as reference_attention
from ..attention import masked_softmax as reference_softmax
from ..training import attention_backward as reference_backward
from ..training import rule_weights as reference_rule_weights
from ..i18n import _, number
from .core import CheckFailed, call, exercise_check, fail, passed, rng, secret_draws
from .core import _isnan, expect_close, expect_shape, plain_array, plain_values, sentence

_NAMES = ("dq", "dk", "dv")


# ---------------------------------------------------------------------------- attention_backward
def _pieces(q, k, v, mask, dout, *, weights=None):
    """The intermediate values of the backward pass (float64), optionally with other weights."""
    scale = 1.0 / math.sqrt(q.shape[-1])
    p = reference_softmax(q @ k.T * scale, mask) if weights is None else weights  # (n_q, n_k)
    dp = dout @ v.T  # (n_q, n_k)
    return scale, p, dp


def _from_dscores(q, k, p, dout, ds, scale):
    return ds @ k * scale, ds.T @ q * scale, p.T @ dout


def _wrong_gradients(q, k, v, mask, dout):
    """(what the usual mistakes return, the misconception in words); only used to name the mistake."""
    scale, p, dp = _pieces(q, k, v, mask, dout)
    ds = p * (dp - np.sum(p * dp, axis=-1, keepdims=True))
    right = _from_dscores(q, k, p, dout, ds, scale)
    yield (
        (right[0] / scale, right[1] / scale, right[2]),
        _(
            "the 1/√d is forgotten in the gradient: the scores are q kᵀ / √d, so dq = ds k / √d and dk = dsᵀ q / √d "
            "(the chain rule goes through the scaling too)."
        ),
        "backward.scale_forgotten",
    )
    yield (
        _from_dscores(q, k, p, dout, p * dp, scale),
        _(
            "only the diagonal of the softmax Jacobian is used (ds = p ⊙ dp): every weight of a row depends on every "
            "score of the row, so ds = p ⊙ (dp − Σⱼ pⱼ dpⱼ)."
        ),
        "backward.jacobian_diagonal_only",
    )
    yield (
        _from_dscores(q, k, p, dout, p * (1 - p) * dp, scale),
        _(
            "only the diagonal of the softmax Jacobian is used (ds = p(1 − p) ⊙ dp): the off-diagonal terms −pᵢpⱼ "
            "are missing; ds = p ⊙ (dp − Σⱼ pⱼ dpⱼ)."
        ),
        "backward.jacobian_diagonal_only",
    )
    # the row sum of the softmax's backward taken over another axis: Σ over the queries (axis 0), over the whole
    # matrix, or over the right axis without keepdims (a (n_q,) vector that broadcasts along the keys instead)
    sum_wrong_axis = _(
        "the sum Σⱼ pⱼ dpⱼ of the softmax's backward is taken over the wrong axis: it runs over the keys of one "
        "query row, np.sum(p * dp, axis=-1, keepdims=True), one number per query subtracted along its own row."
    )
    over_queries = np.sum(p * dp, axis=0, keepdims=True)  # (1, n_k)
    yield (
        _from_dscores(q, k, p, dout, p * (dp - over_queries), scale),
        sum_wrong_axis + " " + _("Yours sums over the queries (axis 0), one number per key."),
        "backward.sum_wrong_axis",
    )
    yield (
        _from_dscores(q, k, p, dout, p * (dp - np.sum(p * dp)), scale),
        sum_wrong_axis + " " + _("Yours sums the whole matrix (no axis)."),
        "backward.sum_wrong_axis",
    )
    if q.shape[0] == k.shape[0]:
        per_query_as_row = np.sum(p * dp, axis=-1)[None, :]  # (1, n_q): broadcast along the wrong axis
        yield (
            _from_dscores(q, k, p, dout, p * (dp - per_query_as_row), scale),
            sum_wrong_axis
            + " "
            + _(
                "Yours sums the right axis but without keepdims, so the (n,) vector of sums broadcasts along the "
                "keys: key j gets query j's sum."
            ),
            "backward.sum_wrong_axis",
        )
        yield (
            (ds.T @ k * scale, ds @ q * scale, right[2]),
            _(
                "dq and dk have their transposes swapped: dq = ds k / √d (queries are the rows of ds) and "
                "dk = dsᵀ q / √d (keys are its columns)."
            ),
            "backward.dq_dk_swapped",
        )
    if mask is not None:
        unmasked = reference_softmax(q @ k.T * scale)
        ds_free = unmasked * (dp - np.sum(unmasked * dp, axis=-1, keepdims=True))
        yield (
            _from_dscores(q, k, unmasked, dout, ds_free, scale),
            _(
                "gradient flows through forbidden entries: the backward pass used the weights of the unmasked "
                "softmax. Use the masked weights p, which are 0 on forbidden entries, so ds is 0 there."
            ),
            "backward.through_forbidden",
        )
        empty = ~np.broadcast_to(mask, p.shape).any(axis=-1)
        if empty.any():  # a filler like -1e9 gives a row with no allowed key uniform weights over forbidden keys
            filled = p.copy()
            filled[empty] = 1.0 / p.shape[-1]
            ds_fill = filled * (dp - np.sum(filled * dp, axis=-1, keepdims=True))
            yield (
                _from_dscores(q, k, filled, dout, ds_fill, scale),
                _(
                    "gradient flows through forbidden entries on a row with no allowed key: a fill value such as -1e9 "
                    "gives that row uniform weights over forbidden keys. Its weights must be all 0, so that its query "
                    "gets a zero gradient and its keys and values none from it."
                ),
                "backward.through_forbidden",
            )


def _as_three(result, what):
    __tracebackhide__ = True
    result = plain_values(result, _NAMES, what=what)
    return [plain_array(r, what=_("{name} of {what}").format(name=name, what=what)) for r, name in zip(result, _NAMES)]


def _probe(backward, q, k, v, mask, dout, label):
    __tracebackhide__ = True
    args = (q, k, v, mask, dout)
    what = f"attention_backward(q, k, v, mask, dout) {label}"
    allowed = (
        np.ones((q.shape[0], k.shape[0]), bool) if mask is None else np.broadcast_to(mask, (q.shape[0], k.shape[0]))
    )
    empty_rows = np.flatnonzero(~allowed.any(axis=1))
    nan_note = (
        " "
        + _(
            "Query {query} has no allowed key: NaN on a fully masked row? Its weights must be all 0 "
            "(the forward pass's convention), so it gets a zero gradient: never divide by a zero sum or "
            "subtract -inf from -inf."
        ).format(query=empty_rows[0])
        if empty_rows.size
        else ""
    )
    try:
        got = _as_three(call(backward, *args, what=what, allow_warnings=False), what)
    except CheckFailed as error:
        # told apart by its id, not its words: the message may be in the learner's language
        warned = error.misconception == "numerics.warning"
        fail(
            sentence(error) + nan_note if warned else str(error),
            "mask.fully_masked_nan" if warned and empty_rows.size else error.misconception,
        )
    expected = reference_backward(*args)
    for name, g, e in zip(_NAMES, got, expected):
        expect_shape(
            g,
            e.shape,
            what=_("{name} of {what}").format(name=name, what=what),
            hint=_("Each gradient has the shape of what it is the gradient of: {input} has shape {shape}.").format(
                input=name[1:], shape=e.shape
            ),
        )
    for name, g in zip(_NAMES, got):
        if _isnan(g).any():
            where = np.argwhere(_isnan(g))[0]
            contains_nan = _("{name} of {what} contains NaN (first at index {index}).").format(
                name=name, what=what, index=tuple(int(i) for i in where)
            )
            fail(
                contains_nan + nan_note,
                "mask.fully_masked_nan" if empty_rows.size else None,
            )
    diagnoses = list(_wrong_gradients(q, k, v, mask, dout))
    for index, (name, g, e) in enumerate(zip(_NAMES, got, expected)):
        with_others = [
            (wrong[index], words, found)
            for wrong, words, found in diagnoses
            if all(np.allclose(got[j], wrong[j], rtol=1e-5, atol=1e-8) for j in range(3) if j != index)
        ]
        rest = [(wrong[index], words, found) for wrong, words, found in diagnoses]
        hint, named = _forbidden_hint(name, g, allowed)
        expect_close(
            g,
            e,
            what=_("{name} of {what}").format(name=name, what=what),
            diagnoses=with_others + rest,
            rtol=1e-6,
            atol=1e-9,
            hint=hint,
            misconception=named,
        )
    _finite_differences(got, q, k, v, mask, dout, what)


def _forbidden_hint(name, g, allowed) -> tuple[str, str | None]:
    """A gradient where no allowed entry can send one: the rows that must be zero (hint, misconception id)."""
    rows = np.flatnonzero(
        ~allowed.any(axis=1 if name == "dq" else 0)
    )  # the queries (dq) or keys (dk, dv) of no allowed entry
    bad = [int(r) for r in rows if np.abs(g[r]).max() > 1e-12]
    if bad and name == "dq":
        hint = _(
            "Gradient flows through forbidden entries: query {row} takes part in no allowed entry, so "
            "{name}[{row}] must be 0, but it is not. Only allowed entries (weights p > 0) pass gradient."
        )
        return hint.format(row=bad[0], name=name), "backward.through_forbidden"
    if bad:
        hint = _(
            "Gradient flows through forbidden entries: key {row} takes part in no allowed entry, so "
            "{name}[{row}] must be 0, but it is not. Only allowed entries (weights p > 0) pass gradient."
        )
        return hint.format(row=bad[0], name=name), "backward.through_forbidden"
    return (
        _(
            "Check each step against the chain rule: dv = pᵀ dout, dp = dout vᵀ, ds = p ⊙ (dp − Σⱼ pⱼ dpⱼ), "
            "dq = ds k / √d, dk = dsᵀ q / √d."
        ),
        None,
    )


def _finite_differences(got, q, k, v, mask, dout, what):
    """Along a random direction of each input, central differences of Σ out ⊙ dout against ⟨gradient, direction⟩."""
    __tracebackhide__ = True
    directions = np.random.default_rng(int(abs(q).sum() * 1e6) % 2**32)  # from the inputs, not the learner's stream
    inputs = [q, k, v]
    eps = 1e-5
    for index, name in enumerate(_NAMES):
        delta = directions.normal(size=inputs[index].shape)
        up = [a.copy() for a in inputs]
        down = [a.copy() for a in inputs]
        up[index] += eps * delta
        down[index] -= eps * delta
        numeric = (np.sum(reference_attention(*up, mask) * dout) - np.sum(reference_attention(*down, mask) * dout)) / (
            2 * eps
        )
        analytic = float(np.sum(got[index] * delta))
        if not math.isclose(numeric, analytic, rel_tol=1e-5, abs_tol=1e-6):
            fail(
                _(
                    "{name} of {what} is not the gradient: along a random direction δ, finite differences of the "
                    "forward pass give {numeric}, while ⟨{name}, δ⟩ = {analytic}."
                ).format(name=name, what=what, numeric=number(numeric, ".6g"), analytic=number(analytic, ".6g"))
            )


def _inputs(r, n_q, n_k, d, d_v, *, scale=1.0):
    q = r.normal(size=(n_q, d)) * scale
    k = r.normal(size=(n_k, d)) * scale
    v = r.normal(size=(n_k, d_v))
    dout = r.normal(size=(n_q, d_v))
    return q, k, v, dout


@exercise_check
def check_attention_backward(backward, seed: int = 0, thorough: bool = False) -> None:
    """Gradients without a mask and with a causal mask, against the reference and finite differences."""
    __tracebackhide__ = True
    r = rng(seed)
    sizes = [(4, 4, 3, 2), (5, 5, 8, 3)] + ([(6, 6, 16, 4), (3, 3, 1, 5), (7, 7, 4, 4)] if thorough else [])
    sizes += [
        (n, n, d, 3)
        for n, d in zip(secret_draws(2, 2, 9, label="backward n"), secret_draws(2, 1, 17, label="backward d"))
    ]
    for n_q, n_k, d, d_v in sizes:
        q, k, v, dout = _inputs(r, n_q, n_k, d, d_v, scale=1.5)
        label = _("without a mask (n = {n}, d = {d}, d_v = {d_v})").format(n=n_q, d=d, d_v=d_v)
        _probe(backward, q, k, v, None, dout, label)
    passed(_("dq, dk and dv match the reference and finite differences without a mask"))
    for n_q, n_k, d, d_v in sizes:
        q, k, v, dout = _inputs(r, n_q, n_k, d, d_v, scale=1.5)
        causal = np.tril(np.ones((n_q, n_k), bool))
        _probe(backward, q, k, v, causal, dout, _("with a causal mask (n = {n}, d = {d})").format(n=n_q, d=d))
    passed(_("with a causal mask the gradients match too"))
    if thorough:  # more keys than queries (a rectangular mask, as with a cache)
        q, k, v, dout = _inputs(r, 3, 6, 4, 2, scale=1.5)
        mask = np.tril(np.ones((3, 6), bool), k=3)
        _probe(backward, q, k, v, mask, dout, _("with 3 queries and 6 keys"))
        passed(_("3 queries against 6 keys: the gradients have the shapes of q, k and v"))


@exercise_check
def check_attention_backward_masks(backward, seed: int = 0, thorough: bool = False) -> None:
    """Random masks with a row that allows no key and a key that no query may see: zero gradient there, no NaN."""
    __tracebackhide__ = True
    r = rng(seed)
    cases = [(5, 4, 3), (6, 3, 2)] + ([(8, 6, 3), (4, 2, 1), (9, 5, 4)] if thorough else [])
    for n, d, d_v in cases:
        q, k, v, dout = _inputs(r, n, n, d, d_v, scale=1.5)
        mask = r.random((n, n)) < 0.6
        mask[int(r.integers(n))] = False  # a query that may attend to nothing (a padding query)
        mask[:, int(r.integers(n))] = False  # a key that no query may see (a padding key)
        label = _("with a random mask (n = {n}) that has a row and a column all False").format(n=n)
        _probe(backward, q, k, v, mask, dout, label)
    passed(_("a fully masked row gets zero gradients and no NaN; a forbidden key gets no gradient"))


# ---------------------------------------------------------------------------- rule_weights
def _wrong_rule_weights(weights):
    n = weights.shape[-1]
    for start in (1, 0):
        t = np.arange(max(start, 1), n)
        prev = weights[:, :, t, t - 1].mean(axis=(0, 2))
        t0 = np.arange(start, n)
        first = weights[:, :, t0, 0].mean(axis=(0, 2))
        yield (
            np.stack([prev, first], -1),
            _(
                "the queries from t = {start} are included: there the previous token is the first token, so those "
                "rows cannot tell the two rules apart. Average over t = 2 … n − 1 only."
            ).format(start=start),
            "rules.first_queries_included",
        )
    t = np.arange(2, n)
    yield (
        np.stack([weights[:, :, t, t].mean(axis=(0, 2)), weights[:, :, t, 0].mean(axis=(0, 2))], -1),
        _("the previous token is key t − 1, not key t (the diagonal, where the query looks at itself)."),
        "rules.diagonal_for_previous",
    )
    yield (
        np.stack([weights[:, :, t - 1, t].mean(axis=(0, 2)), weights[:, :, 0, t].mean(axis=(0, 2))], -1),
        _(
            "rows and columns are swapped: weights[..., query, key], so the weight of query t on key t − 1 is "
            "weights[..., t, t - 1]."
        ),
        "rules.query_key_swapped",
    )
    right = reference_rule_weights(weights)
    yield (
        right[:, ::-1],
        _("the two columns are swapped: column 0 is the previous token, column 1 the first token."),
        "rules.columns_swapped",
    )


def _attention_like(r, b, h, n, sharp=2.0):
    scores = r.normal(size=(b, h, n, n)) * sharp
    return reference_softmax(scores, np.tril(np.ones((n, n), bool)))


def _probe_rules(rule_weights, weights, label):
    __tracebackhide__ = True
    what = f"rule_weights(weights) {label}"
    got = plain_array(call(rule_weights, weights, what=what, allow_warnings=False), what=what)
    expected = reference_rule_weights(weights)
    expect_shape(
        got,
        expected.shape,
        what=what,
        hint=_("One row per head (axis 1 of the weights), two columns: previous token, first token."),
        misconception="rules.not_per_head" if got.ndim == 2 and got.shape[-1] == 2 else None,
    )
    expect_close(
        got,
        expected,
        what=what,
        diagnoses=_wrong_rule_weights(weights),
        hint=_(
            "Column 0: the mean of weights[:, :, t, t - 1], column 1: the mean of weights[:, :, t, 0], "
            "over the batch and over t = 2 … n − 1."
        ),
    )


@exercise_check
def check_rule_weights(rule_weights, seed: int = 0, thorough: bool = False) -> None:
    """On heads built by hand (a previous-token head, a first-token head, a uniform head) and on random maps."""
    __tracebackhide__ = True
    n = 6
    t = np.arange(n)
    previous = np.zeros((n, n))
    previous[t[1:], t[1:] - 1] = 1.0
    previous[0, 0] = 1.0
    first = np.zeros((n, n))
    first[:, 0] = 1.0
    uniform = np.tril(np.ones((n, n))) / np.arange(1, n + 1)[:, None]
    built = np.stack([previous, first, uniform])[None]  # (1, 3, n, n)
    _probe_rules(rule_weights, built, _("on three heads built by hand (previous-token, first-token, uniform)"))
    passed(_("a previous-token head scores (1, 0), a first-token head (0, 1), a uniform head in between"))
    r = rng(seed)
    shapes = [(4, 2, 5), (3, 3, 8)] + ([(1, 4, 3), (7, 1, 10), (2, 6, 4)] if thorough else [])
    shapes += [
        (2, h, n) for h, n in zip(secret_draws(2, 1, 6, label="rules h"), secret_draws(2, 3, 12, label="rules n"))
    ]
    for b, h, n in shapes:
        label = _("on random causal attention maps of shape {shape}").format(shape=(b, h, n, n))
        _probe_rules(rule_weights, _attention_like(r, b, h, n), label)
    passed(_("on random causal maps: the mean over the batch and over queries t = 2 … n − 1, per head"))
