"""Checks for notebook 05: padding masks, sliding windows, composed masks, and batch invariance."""

from __future__ import annotations

import functools

import numpy as np

from .. import masks as reference
from ..attention import attention as reference_attention
from ..padding import batched_attention as reference_batched_attention
from ..i18n import N_, _, ngettext, number, translated
from .core import CheckFailed, call, exercise_check, expect_value_error, fail, passed, rng, secret_draws
from .core import expect_shape, is_close, max_difference, named, plain_array, plain_bool_array, sentence

# Bound at import: learner code that patches numpy later does not change how masks are compared.
_array, _argwhere, _isfinite, _array_equal = np.array, np.argwhere, np.isfinite, np.array_equal


# --------------------------------------------------------------------------------------------------
# comparing boolean masks


# what an entry of a mask means, and the names of a mask's axes (marked N_, shown with translated())
_MEANING = {True: N_("True (may attend)"), False: N_("False (forbidden)")}
_SEQUENCE, _POSITION, _HEAD, _QUERY, _KEY = N_("sequence"), N_("position"), N_("head"), N_("query"), N_("key")


def _describe_difference(actual, expected, axes, what):
    """'... is wrong: 5 of 25 entries differ; the first at [query 2, key 3]: expected True (may attend), got False
    (forbidden).'"""
    wrong = _argwhere(actual != expected)
    first = tuple(int(i) for i in wrong[0])
    where = ", ".join(f"{translated(axis)} {index}" for axis, index in zip(axes, first))
    return ngettext(
        "{what} is wrong: {count} entry of {size} differs, at [{where}]: expected {expected}, got {actual}.",
        "{what} is wrong: {count} of {size} entries differ; the first at [{where}]: expected {expected}, got {actual}.",
        len(wrong),
    ).format(
        what=what,
        count=len(wrong),
        size=actual.size,
        where=where,
        expected=translated(_MEANING[bool(expected[first])]),
        actual=translated(_MEANING[bool(actual[first])]),
    )


def expect_same_mask(actual, expected, *, what, axes, diagnoses=(), hint="", shape_misconception=None):
    """Fail unless two boolean masks are equal; name a matching misconception from ``diagnoses``.

    ``axes`` names the mask's axes, one word each, marked with ``N_`` where it is written (the message shows it
    in the learner's language with ``translated``)."""
    __tracebackhide__ = True
    expect_shape(actual, expected.shape, what=what, hint=hint, misconception=shape_misconception)
    if _array_equal(actual, expected):
        return
    message = _describe_difference(actual, expected, axes, what)
    for diagnosis in diagnoses:  # (wrong, explanation, id), or (wrong, explanation) naming no id
        wrong, explanation, misconception = named(diagnosis)
        wrong = _array(wrong, dtype=bool)
        if wrong.shape == actual.shape and _array_equal(wrong, actual):
            fail(message + " " + _("Likely cause: {explanation}").format(explanation=explanation), misconception)
    fail(message)


# --------------------------------------------------------------------------------------------------
# padding_mask(lengths, n)


def _padding_mistakes(lengths, n):
    lengths = np.asarray(lengths)[:, None]
    position = np.arange(n)[None, :]
    right = position < lengths
    yield (
        position <= lengths,
        _(
            "`<=` instead of `<`: positions count from 0, so a sequence of length L has "
            "its real tokens at positions 0 … L − 1 and position L is already filler."
        ),
        "padding.off_by_one",
    )
    yield (
        ~right,
        _(
            "the polarity is flipped: True must mark the real tokens (a key that may be attended to) "
            "and False the filler."
        ),
        "mask.polarity_flipped",
    )
    yield (
        position >= n - lengths,
        _(
            "the filler is at the start (left padding); in this course the real "
            "tokens come first and the filler after them."
        ),
        "padding.left_padding",
    )
    yield (
        position < lengths - 1,
        _("one real token too few: the last real token (position L − 1) must be True."),
        "padding.off_by_one",
    )


def _probe_padding(padding_mask, lengths, n):
    __tracebackhide__ = True
    shown = lengths if isinstance(lengths, list) else f"np.array({lengths.tolist()})"
    what = f"padding_mask({shown}, {n})"
    result = plain_bool_array(call(padding_mask, lengths, n, what=what), what=what)
    expected = reference.padding_mask(lengths, n)
    hint = _("The mask has one row per sequence and one column per position: (b, n).")
    if result.shape == expected.shape[::-1]:
        hint += " " + _("Yours looks transposed.")
    expect_same_mask(
        result,
        expected,
        what=what,
        axes=(_SEQUENCE, _POSITION),
        diagnoses=_padding_mistakes(lengths, n),
        hint=hint,
        shape_misconception="padding.transposed" if result.shape == expected.shape[::-1] else None,
    )


@exercise_check
def check_padding_mask(padding_mask, seed: int = 0, thorough: bool = False) -> None:
    """The learner's ``padding_mask(lengths, n)`` against the reference: values, shape, type."""
    __tracebackhide__ = True
    _probe_padding(padding_mask, [3, 5, 1], 5)
    _probe_padding(padding_mask, np.array([2, 4]), 6)
    passed(_("padding_mask marks the first L positions of each sequence as real, from a list or an array"))
    _probe_padding(padding_mask, [0, 4], 4)
    passed(_("padding_mask handles a sequence of length 0 (all filler) and one that fills the whole batch"))
    if thorough:
        r = rng(seed)
        for _draw in range(4):
            n = int(r.integers(1, 12))
            lengths = r.integers(0, n + 1, size=int(r.integers(1, 6)))
            _probe_padding(padding_mask, lengths, n)
            _probe_padding(padding_mask, [int(x) for x in lengths], n)
        _probe_padding(padding_mask, np.array([1, 0, 2], dtype=np.int32), 3)
        _probe_padding(padding_mask, [7], 7)
        passed(_("padding_mask matches the reference on random lengths"))


def _does_not_fit(length: int, n: int) -> str:
    return ngettext(
        "a sequence of length {length} does not fit in n = {n} position",
        "a sequence of length {length} does not fit in n = {n} positions",
        n,
    ).format(length=length, n=n)


@exercise_check
def check_padding_mask_errors(padding_mask, thorough: bool = False) -> None:
    """Lengths that do not fit in n, or negative ones, must raise ValueError."""
    __tracebackhide__ = True
    expect_value_error(
        padding_mask,
        [2, 6],
        5,
        what="padding_mask([2, 6], 5)",
        why=ngettext(
            "a sequence of length {length} does not fit in n = {n} position: a length longer than n "
            "means the batch was built wrong, and must not be silently cut",
            "a sequence of length {length} does not fit in n = {n} positions: a length longer than n "
            "means the batch was built wrong, and must not be silently cut",
            5,
        ).format(length=6, n=5),
    )
    expect_value_error(padding_mask, [3, -1], 4, what="padding_mask([3, -1], 4)", why=_("a length cannot be negative"))
    passed(_("padding_mask refuses lengths longer than n and negative lengths"))
    if thorough:
        expect_value_error(
            padding_mask,
            np.array([0, 9, 1]),
            8,
            what="padding_mask(np.array([0, 9, 1]), 8)",
            why=_does_not_fit(9, 8),
        )
        expect_value_error(
            padding_mask,
            np.array([-2]),
            3,
            what="padding_mask(np.array([-2]), 3)",
            why=_("a length cannot be negative"),
        )
        expect_value_error(
            padding_mask,
            [1, 0],
            0,
            what="padding_mask([1, 0], 0)",
            why=_does_not_fit(1, 0),
        )
        passed(_("padding_mask refuses bad lengths given as arrays too"))


# --------------------------------------------------------------------------------------------------
# sliding_window_mask(n, w)


def _window_mistakes(n, w):
    query, key = np.arange(n)[:, None], np.arange(n)[None, :]
    past = key <= query
    yield (
        past & (key >= query - w),
        _(
            "the window holds w + 1 keys (itself and the w before it); it should hold "
            "exactly w: itself and the w − 1 before it (query − w < key)."
        ),
        "window.off_by_one",
    )
    yield (
        np.abs(query - key) < w,
        _(
            "the window is symmetric, so each query sees w − 1 keys of the future; "
            "a decoder's window looks only backwards (key ≤ query)."
        ),
        "window.sees_future",
    )
    yield (
        np.abs(query - key) <= w,
        _(
            "the window is symmetric (it sees the future) and w + 1 keys wide on each "
            "side; it should be key ≤ query and query − w < key."
        ),
        "window.sees_future",
    )
    yield (
        key > query - w,
        _("the window has no upper bound: it sees the whole future; add key ≤ query."),
        "window.sees_future",
    )
    yield (
        past & (key > query - w) & (key < query),
        _("the query itself is left out: the window is itself and the w − 1 tokens before it."),
        "mask.diagonal_forbidden",
    )
    yield (
        past & (key > query - w + 1),
        _("the window holds w − 1 keys; it should hold w (itself and w − 1 before)."),
        "window.off_by_one",
    )
    yield (
        ~(past & (key > query - w)),
        _("the polarity is flipped: True must mean *may attend*."),
        "mask.polarity_flipped",
    )
    yield (
        past & (key >= query - w) & (key < query),
        _("the window is the w tokens before the query, without itself."),
        "mask.diagonal_forbidden",
    )


def _probe_window(sliding_window_mask, n, w):
    __tracebackhide__ = True
    what = f"sliding_window_mask({n}, {w})"
    result = plain_bool_array(call(sliding_window_mask, n, w, what=what), what=what)
    expected = reference.sliding_window_mask(n, w)
    expect_same_mask(
        result,
        expected,
        what=what,
        axes=(_QUERY, _KEY),
        diagnoses=_window_mistakes(n, w),
        hint=_("The mask is (n, n), indexed [query, key]."),
    )


@exercise_check
def check_sliding_window_mask(sliding_window_mask, thorough: bool = False) -> None:
    """The learner's ``sliding_window_mask(n, w)``: itself and the w − 1 keys before it."""
    __tracebackhide__ = True
    _probe_window(sliding_window_mask, 6, 3)
    passed(_("sliding_window_mask(6, 3): each query sees itself and the 2 tokens before it"))
    _probe_window(sliding_window_mask, 5, 1)
    _probe_window(sliding_window_mask, 4, 4)
    _probe_window(sliding_window_mask, 3, 8)
    passed(_("sliding_window_mask with w = 1 (only itself) and w ≥ n (the causal mask)"))
    if thorough:
        drawn = zip(secret_draws(3, 1, 40, label="sliding_window n"), secret_draws(3, 1, 12, label="sliding_window w"))
        for n, w in [(9, 2), (12, 5), (1, 1), (7, 6), (10, 10), (0, 3), (2, 1), *drawn]:
            _probe_window(sliding_window_mask, n, w)
        passed(_("sliding_window_mask matches the reference on more sizes"))


@exercise_check
def check_sliding_window_mask_errors(sliding_window_mask, thorough: bool = False) -> None:
    """A window of fewer than one key is meaningless: ValueError."""
    __tracebackhide__ = True
    expect_value_error(
        sliding_window_mask,
        5,
        0,
        what="sliding_window_mask(5, 0)",
        why=_("a window of w = 0 keys would let a query see nothing, not even itself; w must be ≥ 1"),
    )
    passed(_("sliding_window_mask refuses w = 0"))
    if thorough:
        expect_value_error(
            sliding_window_mask,
            4,
            -2,
            what="sliding_window_mask(4, -2)",
            why=_("a window cannot have a negative size"),
        )
        passed(_("sliding_window_mask refuses a negative w"))


# --------------------------------------------------------------------------------------------------
# attention_mask(lengths, n, causal=True, window=None)


def _attention_mask_mistakes(lengths, n, causal, window):
    keys_real = reference.padding_mask(lengths, n)  # (b, n)
    query, key = np.arange(n)[:, None], np.arange(n)[None, :]
    pattern = np.ones((n, n), bool)
    if causal:
        pattern = pattern & (key <= query)
    if window is not None:
        pattern = pattern & (key <= query) & (key > query - window)
    yield (
        keys_real[:, None, :, None] & pattern,
        _(
            "the padding is applied to the queries (rows) instead of the keys (columns): the mask is [query, key], "
            "so the padding mask must broadcast as (b, 1, 1, n), not (b, 1, n, 1)."
        ),
        "padding.queries_not_keys",
    )
    yield (
        keys_real[:, None, :, None] & keys_real[:, None, None, :] & pattern,
        _(
            "the query rows of the filler are masked as well as the keys: mask only the keys. A padded query may look "
            "at real keys (its output is ignored later), and a row with nothing allowed invites NaN."
        ),
        "padding.queries_masked_too",
    )
    yield (
        np.broadcast_to(pattern, (len(keys_real), 1, n, n)),
        _("the padding is ignored: filler keys must be False."),
        "padding.ignored",
    )
    yield (
        keys_real[:, None, None, :] & np.ones((n, n), bool),
        _("neither the causal mask nor the window was applied."),
        "mask.not_combined",
    )
    if window is not None:
        yield (
            keys_real[:, None, None, :] & (key > query - window),
            _(
                "the window lets queries see the future: the window is itself and the w − 1 tokens *before* it, so "
                "combine the lower bound with key ≤ query."
            ),
            "window.sees_future",
        )
        causal_only = keys_real[:, None, None, :] & (key <= query)
        yield (
            causal_only,
            _(
                "the window is ignored when causal=True: the masks must be combined with a logical "
                "AND (causal and window and padding), not chosen one or the other."
            ),
            "mask.not_combined",
        )
        yield (
            keys_real[:, None, None, :] & (key <= query) & (key >= query - window),
            _("the window holds w + 1 keys; it should be itself and the w − 1 tokens before it."),
            "window.off_by_one",
        )
    if causal:
        yield (
            keys_real[:, None, None, :]
            & np.ones((n, n), bool)
            & ((key > query - window) if window is not None else True),
            _("the causal mask is missing (key ≤ query)."),
            "mask.not_combined",
        )
    yield (
        ~(keys_real[:, None, None, :] & pattern),
        _("the polarity is flipped: True must mean *may attend*."),
        "mask.polarity_flipped",
    )


def _probe_attention_mask(attention_mask, lengths, n, causal, window):
    __tracebackhide__ = True
    shown = lengths if isinstance(lengths, list) else f"np.array({lengths.tolist()})"
    kwargs = {"causal": causal} | ({} if window is None else {"window": window})
    arguments = ", ".join(f"{k}={v}" for k, v in kwargs.items())
    what = f"attention_mask({shown}, {n}, {arguments})"
    result = plain_bool_array(call(attention_mask, lengths, n, what=what, **kwargs), what=what)
    expected = reference.attention_mask(lengths, n, causal=causal, window=window)
    b = expected.shape[0]
    hint = _(
        "The combined mask is (b, 1, n, n) = {shape}: one (n, n) [query, key] mask per sequence "
        "and a size-1 head axis that broadcasts over the heads."
    ).format(shape=expected.shape)
    if result.shape == (b, n, n):
        hint += " " + _("Yours has no head axis: add it with mask[:, None].")
    expect_same_mask(
        result,
        expected,
        what=what,
        axes=(_SEQUENCE, _HEAD, _QUERY, _KEY),
        diagnoses=_attention_mask_mistakes(lengths, n, causal, window),
        hint=hint,
        shape_misconception="mask.missing_head_axis" if result.shape == (b, n, n) else None,
    )


@exercise_check
def check_attention_mask(attention_mask, seed: int = 0, thorough: bool = False) -> None:
    """The learner's ``attention_mask(lengths, n, causal=True, window=None)``: padding AND causal AND window."""
    __tracebackhide__ = True
    _probe_attention_mask(attention_mask, [5, 2, 3], 5, causal=False, window=None)
    passed(_("attention_mask with padding only: filler keys are masked, filler queries are not"))
    _probe_attention_mask(attention_mask, [5, 2, 3], 5, causal=True, window=None)
    passed(_("attention_mask with padding and the causal mask"))
    _probe_attention_mask(attention_mask, [6, 4], 6, causal=True, window=2)
    _probe_attention_mask(attention_mask, [6, 4], 6, causal=False, window=3)
    passed(_("attention_mask with padding and a sliding window (which never includes the future)"))
    if thorough:
        r = rng(seed)
        for _draw in range(4):
            n = int(r.integers(1, 10))
            lengths = r.integers(0, n + 1, size=int(r.integers(1, 5)))
            window = None if r.random() < 0.3 else int(r.integers(1, n + 2))
            _probe_attention_mask(attention_mask, lengths, n, causal=bool(r.random() < 0.6), window=window)
        _probe_attention_mask(attention_mask, [0, 3], 3, causal=True, window=1)
        _probe_attention_mask(attention_mask, np.array([7, 2, 5]), 7, causal=True, window=4)
        expect_value_error(
            attention_mask,
            [2, 5],
            4,
            what="attention_mask([2, 5], 4)",
            why=_does_not_fit(5, 4),
        )
        passed(_("attention_mask matches the reference on random batches and refuses lengths longer than n"))


# --------------------------------------------------------------------------------------------------
# batched_attention(q, k, v, lengths, causal=True, window=None): batch invariance


def _padded_batch(r, lengths, n, d, d_v, filler_scale=10.0):
    """Random real tokens, and loud random filler (a padding mask must make its values irrelevant)."""
    b = len(lengths)
    q, k, v = r.normal(size=(b, n, d)), r.normal(size=(b, n, d)), r.normal(size=(b, n, d_v))
    is_filler = np.arange(n)[None, :, None] >= np.asarray(lengths)[:, None, None]  # (b, n, 1)
    for array in (q, k, v):
        array[...] = np.where(is_filler, filler_scale * r.normal(size=array.shape) + 3.0, array)
    return q, k, v


def _batched_mistakes(q, k, v, lengths, causal, window):
    n = q.shape[1]
    keys_real = reference.padding_mask(lengths, n)
    query, key = np.arange(n)[:, None], np.arange(n)[None, :]
    pattern = np.ones((n, n), bool)
    if causal:
        pattern = pattern & (key <= query)
    if window is not None:
        pattern = pattern & (key <= query) & (key > query - window)
    yield (
        reference_attention(q, k, v, pattern),
        _(
            "the padding mask is missing: each query also attends to the filler keys of its batch, so a sequence's "
            "output depends on how long its neighbours are."
        ),
        "padding.ignored",
    )
    yield (
        reference_attention(q, k, v, keys_real[:, :, None] & pattern),
        _("the padding is applied to the queries instead of the keys: real queries still attend to filler keys."),
        "padding.queries_not_keys",
    )
    if causal or window is not None:
        yield (
            reference_attention(q, k, v, keys_real[:, None, :]),
            _("the causal mask (or the window) is missing."),
            "mask.not_combined",
        )
    if window is not None:
        yield (
            reference_attention(q, k, v, keys_real[:, None, :] & (key <= query)),
            _("the window is missing."),
            "mask.not_combined",
        )


def _earlier_mask_wrong(attention_mask, lengths, n, causal, window) -> str | None:
    """Why the learner's own ``attention_mask`` is wrong for these arguments (its check's message), or None."""
    try:
        _probe_attention_mask(attention_mask, list(lengths), n, causal, window)
    except CheckFailed as failure:
        return str(failure)
    except NotImplementedError:  # not written: batched_attention does not build on it
        return None
    return None


def _probe_batched(batched_attention, q, k, v, lengths, causal, window, label, attention_mask=None):
    """Batch invariance of one batch; when it fails and the learner's own attention_mask (which batched_attention
    builds on) is wrong for the same arguments, the failure says so: that is the first thing to mend."""
    __tracebackhide__ = True
    try:
        _probe_batched_alone(batched_attention, q, k, v, lengths, causal, window, label)
    except CheckFailed as failure:
        why = (
            None if attention_mask is None else _earlier_mask_wrong(attention_mask, lengths, q.shape[1], causal, window)
        )
        if why is None:
            raise
        # when the failure names a likely cause of its own already, this one is said to lie earlier
        likely_cause = _("Likely cause: {explanation}").format(explanation="").strip()  # in this language
        if likely_cause in str(failure):
            message = _(
                "{failure} The cause lies earlier: your batched_attention builds on your attention_mask (exercise 3), "
                "which is wrong for these arguments: {why} Mend attention_mask first, then run this test again."
            )
        else:
            message = _(
                "{failure} Likely cause: your batched_attention builds on your attention_mask (exercise 3), which is "
                "wrong for these arguments: {why} Mend attention_mask first, then run this test again."
            )
        fail(message.format(failure=sentence(failure), why=sentence(why)), "conventions.earlier_exercise_wrong")


def _probe_batched_alone(batched_attention, q, k, v, lengths, causal, window, label):
    __tracebackhide__ = True
    kwargs = {"causal": causal} | ({} if window is None else {"window": window})
    arguments = ", ".join(f"{name}={value}" for name, value in kwargs.items())
    what = f"batched_attention(q, k, v, lengths={list(lengths)}, {arguments}) {label}"
    # the learner's own attention_mask and softmax (hm.attention and hm.attention_mask are locked, as when graded)
    out = plain_array(call(batched_attention, q, k, v, list(lengths), what=what, **kwargs), what=what)
    b, n, _d = q.shape
    expected_shape = (b, n, v.shape[-1])
    hint = _("The output has the shape of the batch: (b, n, d_v).")
    if out.shape == (b, b, n, v.shape[-1]):
        hint += " " + _(
            "Yours is (b, b, n, d_v): a (b, 1, n, n) mask was broadcast against (b, n, n) scores, which pairs "
            "every sequence's scores with every sequence's mask. Drop the head axis (mask[:, 0]) first."
        )
    expect_shape(
        out,
        expected_shape,
        what=what,
        hint=hint,
        misconception="mask.broadcast_across_batch" if out.shape == (b, b, n, v.shape[-1]) else None,
    )
    if not _isfinite(out).all():
        fail(
            _(
                "{what} contains NaN or inf (first at index {index}). "
                "Every row must stay finite, padded rows included: in the next layer a NaN value at a filler position "
                "is multiplied by its weight 0, and 0 · NaN = NaN spreads into the real tokens."
            ).format(what=what, index=tuple(int(i) for i in _argwhere(~_isfinite(out))[0])),
            "mask.fully_masked_nan",
        )
    mistakes = list(_batched_mistakes(q, k, v, np.asarray(lengths), causal, window))
    window_alone = {} if window is None else {"window": window}
    for index, length in enumerate(lengths):
        alone = reference_batched_attention(
            q[index : index + 1, :length],
            k[index : index + 1, :length],
            v[index : index + 1, :length],
            [length],
            causal=causal,
            **window_alone,
        )[0]  # (length, d_v): the sequence by itself
        got = out[index, :length]
        if is_close(got, alone, rtol=1e-6, atol=1e-9):
            continue
        message = ngettext(
            "{what}: sequence {index} (length {length}) gets a different output in this batch than it gets "
            "alone: its {length} real row differs by up to {difference}. Batching must not change a sequence's result.",
            "{what}: sequence {index} (length {length}) gets a different output in this batch than it gets "
            "alone: its {length} real rows differ by up to {difference}. Batching must not change a sequence's "
            "result.",
            length,
        ).format(what=what, index=index, length=length, difference=number(max_difference(got, alone), ".3g"))
        whole = [
            (explanation, named_id)
            for wrong, explanation, named_id in mistakes
            if is_close(out, wrong, rtol=1e-5, atol=1e-8)
        ]
        rows = [
            (explanation, named_id)
            for wrong, explanation, named_id in mistakes
            if is_close(got, wrong[index, :length], rtol=1e-5, atol=1e-8)
        ]
        if whole or rows:  # a mistake that explains every row, filler included, names the cause best
            explanation, named_id = (whole or rows)[0]
            fail(message + " " + _("Likely cause: {explanation}").format(explanation=explanation), named_id)
        fail(message)


@exercise_check
def check_batched_attention(batched_attention, attention_mask=None, seed: int = 0, thorough: bool = False) -> None:
    """Each sequence of a padded batch must get exactly the output it gets alone, whatever the filler holds.

    ``attention_mask`` is the learner's own (exercise 3), which batched_attention builds on: it is never graded
    here, only called when batched_attention fails, to say whether the mask it builds on is the cause.
    """
    __tracebackhide__ = True
    probe = functools.partial(_probe_batched, attention_mask=attention_mask)
    r = rng(seed)
    lengths = [5, 2, 3]
    q, k, v = _padded_batch(r, lengths, 5, 4, 3)
    probe(batched_attention, q, k, v, lengths, False, None, _("(an encoder: no causal mask)"))
    passed(_("without a causal mask, every sequence gets in the batch exactly its output alone"))
    probe(batched_attention, q, k, v, lengths, True, None, _("(a decoder)"))
    passed(_("with the causal mask, every sequence gets in the batch exactly its output alone"))
    probe(batched_attention, q, k, v, lengths, True, 2, _("(a decoder with a window of 2)"))
    passed(_("with a sliding window too"))
    # The same three sequences with other neighbours and other filler: still the same real rows.
    q2, k2, v2 = _padded_batch(r, [8, 5, 2, 3], 8, 4, 3)
    for array, other in ((q2, q), (k2, k), (v2, v)):
        array[1:, :5] = other
    probe(batched_attention, q2, k2, v2, [8, 5, 2, 3], False, None, _("(the same sequences behind a longer one)"))
    passed(_("the result does not depend on the neighbours in the batch nor on what the filler holds"))
    if thorough:
        for _draw in range(4):
            n = int(r.integers(2, 9))
            b = int(r.integers(1, 5))
            lengths = [int(x) for x in r.integers(1, n + 1, size=b)]
            lengths[int(r.integers(b))] = n
            d, d_v = int(r.integers(1, 6)), int(r.integers(1, 4))
            q, k, v = _padded_batch(r, lengths, n, d, d_v, filler_scale=float(r.choice([1.0, 30.0])))
            causal = bool(r.random() < 0.5)
            window = None if r.random() < 0.5 else int(r.integers(1, n + 1))
            probe(batched_attention, q, k, v, lengths, causal, window, _("(random batch)"))
        q, k, v = _padded_batch(r, [4, 1], 4, 3, 2)
        probe(batched_attention, q, k, v, [4, 1], False, None, _("(a sequence of one token)"))
        passed(_("batched_attention is batch-invariant on random batches"))
