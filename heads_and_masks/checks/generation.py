"""Checks for notebook 07: decoding with a KV cache, the bottom-right mask, the rolling buffer, document and
sinks masks, and the cache bytes of models whose layers differ."""

from __future__ import annotations

import builtins

import numpy as np

from .. import generation as reference
from ..attention import attention as reference_attention
from ..i18n import N_, _, ngettext, number, translated
from ..masks import causal_mask as reference_causal
from .core import CheckFailed, call, call_count, exercise_check, expect_value_error, fail, passed, rng, secret_draws
from .core import expect_close, expect_shape, raised_by_the_answer, plain_array, plain_bool_array, plain_values
from .core import sentence
from .other_masks import expect_same_mask

_type = builtins.type
_array_equal = np.array_equal
_DECODE_ARGUMENTS = ("q_new", "k_new", "v_new", "k_cache", "v_cache")

# the explanations of the usual mistakes that several diagnoses share: marked here, shown with translated()
FORGOT_OWN_KV = N_(
    "the cache forgets the new token's own K/V: the new query attended only over the cached keys. "
    "Append k_new and v_new to the cache first, then attend over all of them (a token always sees "
    "itself; from an empty cache its output is its own value)."
)
TOP_LEFT = N_(
    "top-left alignment: np.tril of the (n_new, n_keys) rectangle lets new query i see keys 0 … i, as if "
    "the new tokens came first (PyTorch's is_causal does this for non-square inputs). The new tokens are the "
    "last n_new positions: align the diagonal to the bottom right, query i sees keys 0 … n_keys − n_new + i."
)
TOP_LEFT_IN_DECODE = N_(
    "a causal mask aligned top-left inside the step: np.tril of the (1, n + 1) rectangle lets the new query see "
    "only key 0, the first cached token, as if the new token came first. The new token is the last position: it "
    "sees every cached key and its own, so one new query needs no mask (or the bottom-right one of exercise 2)."
)
BY_STEP = N_(
    "the rolling buffer is indexed by step instead of position: the slot came from a counter of the tokens "
    "written in this call, not from their positions. Position p goes to slot p mod w, whatever was written before."
)
OFF_BY_ONE_SLOT = N_("off by one slot: position p goes to slot p mod w (position 0 to slot 0), not (p ± 1) mod w.")
EARLIER_DOCUMENTS = N_(
    "documents see earlier documents: the mask is causal across the whole packed row, so a token reads "
    "the documents packed before it. A token may see only its own document: same id AND causal."
)
AND_NOT_OR = N_(
    "AND where OR is needed: a key is allowed when it is in the window OR when it is one of the sinks "
    "(rules that grant attention combine with OR); AND keeps only keys that are both, almost none."
)
OR_NOT_AND = N_(
    "OR where AND is needed: rules that forbid combine with AND. (same document) OR (key <= query) lets a token "
    "see every earlier token of the row, whatever its document, and the later tokens of its own document; the "
    "mask is (same document) AND (key <= query)."
)
ASSUMES_SORTED = N_(
    "the mask assumes the ids increase along the row (documents numbered 0, 1, 2 … in the order they are packed): "
    "with the same documents renumbered in that order, your function gives the right mask. Ids only name "
    "documents, in any order: compare them for equality, (same id) AND (key <= query)."
)
BATCH_AXES_MIXED = N_(
    "each row of ids alone gives the right mask, the batch does not: the comparison mixes the batch axis with "
    "the tokens axis. On ids of shape (b, n), ids[:, None] and ids[None, :] (or a flattened row) pair tokens of "
    "different rows; put the new axes after the tokens axis, ids[..., :, None] == ids[..., None, :], which works "
    "for (n,) and (b, n) alike."
)
ALL_GLOBAL = N_(
    "every layer counted as global: a local (sliding-window) layer keeps at most `window` tokens, "
    "min(seq_len, window); only the global layers keep all seq_len."
)
# the axes of the masks this notebook compares (marked here, named in the learner's language by expect_same_mask)
_NEW_QUERY, _ROW, _QUERY, _KEY = N_("new query"), N_("row"), N_("query"), N_("key")


def _tuple_of_three(result, what):
    __tracebackhide__ = True
    result = plain_values(result, ("out", "k_cache", "v_cache"), what=what)
    return [plain_array(r, what=f"{what}[{i}]") for i, r in enumerate(result)]


# ---------------------------------------------------------------------------- decode_step
def _decode_call(decode_step, q, k, v, k_cache, v_cache, what):
    __tracebackhide__ = True
    result = call(decode_step, q, k, v, k_cache, v_cache, what=what, names=_DECODE_ARGUMENTS)
    return _tuple_of_three(result, what)


def _output_mistakes(q, k_all, v_all):
    """What the usual mistakes make of one step's output, given the keys and values it should attend over."""
    n_cached = k_all.shape[2] - 1
    if n_cached:  # from an empty cache the own key is the only one: these two mistakes are right there
        yield (
            reference_attention(q, k_all[:, :, :n_cached], v_all[:, :, :n_cached]),
            translated(FORGOT_OWN_KV),
            "decode.forgets_own_kv",
        )
        yield (
            reference_attention(q, k_all, v_all, reference.top_left_causal_mask(1, n_cached + 1)),
            translated(TOP_LEFT_IN_DECODE),
            "mask.top_left_alignment",
        )
    yield (
        reference_attention(q * np.sqrt(q.shape[-1]), k_all, v_all),
        _("the scores are not divided by sqrt(d)."),
        "scale.missing",
    )


def _probe_step_output(decode_step, q, k, v, k_cache, v_cache, label):
    __tracebackhide__ = True
    what = f"decode_step(q_new, k_new, v_new, k_cache, v_cache) {label}"  # code, then the translated label
    out, _k_returned, _v_returned = _decode_call(decode_step, q, k, v, k_cache, v_cache, what)
    expected, k_all, v_all = reference.decode_step(q, k, v, k_cache, v_cache)
    expect_close(
        out,
        expected,
        what=_("{what}, the output").format(what=what),
        diagnoses=_output_mistakes(q, k_all, v_all),
        hint=_("The output is attention of the new query over every cached key and its own."),
    )


@exercise_check
def check_decode_step(decode_step, seed: int = 0, thorough: bool = False) -> None:
    """The output of one step: on a given cache, and from an empty cache (the caches it returns: the next check)."""
    __tracebackhide__ = True
    r = rng(seed)
    for b, h, n, d in [(2, 3, 5, 4)] + ([(1, 4, 9, 3), (3, 1, 1, 2)] if thorough else []):
        q, k, v = r.normal(size=(3, b, h, 1, d))
        k_cache, v_cache = r.normal(size=(2, b, h, n, d))
        label = ngettext(
            "with {n} cached token (q_new {q_shape}, k_cache {cache_shape})",
            "with {n} cached tokens (q_new {q_shape}, k_cache {cache_shape})",
            n,
        ).format(n=n, q_shape=q.shape, cache_shape=k_cache.shape)
        _probe_step_output(decode_step, q, k, v, k_cache, v_cache, label)
    passed(_("the new query attends over every cached key and its own"))
    _probe_step_output(
        decode_step,
        q,
        k,
        v,
        k_cache[:, :, :0],
        v_cache[:, :, :0],
        _("from an empty cache (k_cache of shape {shape}): the first token sees only itself").format(
            shape=(b, h, 0, d)
        ),
    )
    passed(_("from an empty cache, the first token's output is its own value"))


def _probe_step_caches(decode_step, q, k, v, k_cache, v_cache, label):
    __tracebackhide__ = True
    what = f"decode_step(q_new, k_new, v_new, k_cache, v_cache) {label}"
    _out, k_all, v_all = _decode_call(decode_step, q, k, v, k_cache, v_cache, what)
    _expected_out, k_expected, v_expected = reference.decode_step(q, k, v, k_cache, v_cache)
    for name, got, wanted, cache in (("k_cache", k_all, k_expected, k_cache), ("v_cache", v_all, v_expected, v_cache)):
        if got.shape == cache.shape and got.shape != wanted.shape:
            expect_shape(
                got,
                wanted.shape,
                what=_("{what}, the returned {name}").format(what=what, name=name),
                hint=_(
                    "The returned cache has the shape of the old one: the new token's K and V were not appended. "
                    "Likely cause: the cache forgets the new token's own K/V, so the next step would not see this "
                    "token at all. Return the caches with k_new and v_new appended."
                ),
                misconception="decode.cache_not_appended",
            )
        cached = cache.shape[2]
        prepended = np.concatenate([wanted[:, :, cached:], wanted[:, :, :cached]], axis=2)
        expect_close(
            got,
            wanted,
            what=_("{what}, the returned {name} (shape (b, h, n + 1, d))").format(what=what, name=name),
            hint=_("The returned cache is the old one with the new token's appended along the tokens axis (axis 2)."),
            diagnoses=[
                (
                    prepended,
                    _(
                        "the new token was put before the cached ones: append it at the end, "
                        "so that slot i of the cache holds position i."
                    ),
                    "decode.new_token_first",
                )
            ],
        )


@exercise_check
def check_decode_step_cache(decode_step, seed: int = 0, thorough: bool = False) -> None:
    """The caches one step returns: the old ones with the new token's K and V appended at the end."""
    __tracebackhide__ = True
    r = rng(seed)
    for b, h, n, d in [(2, 3, 5, 4)] + ([(1, 2, 8, 3), (2, 1, 1, 5)] if thorough else []):
        q, k, v = r.normal(size=(3, b, h, 1, d))
        k_cache, v_cache = r.normal(size=(2, b, h, n, d))
        label = ngettext(
            "with {n} cached token (k_cache {cache_shape})", "with {n} cached tokens (k_cache {cache_shape})", n
        ).format(n=n, cache_shape=k_cache.shape)
        _probe_step_caches(decode_step, q, k, v, k_cache, v_cache, label)
    label = _("from an empty cache (k_cache {shape})").format(shape=(b, h, 0, d))
    _probe_step_caches(decode_step, q, k, v, k_cache[:, :, :0], v_cache[:, :, :0], label)
    passed(_("the returned caches are the old ones with the new token's K and V appended at the end"))


@exercise_check
def check_decode_step_generation(decode_step, seed: int = 0, thorough: bool = False) -> None:
    """A whole generation: a prefill (the course's), then the learner's steps fed back the learner's own caches."""
    __tracebackhide__ = True
    r = rng(seed)
    b, h, d = (2, 3, 4) if not thorough else (1, 4, 3)
    total, prompt = (8, 3) if not thorough else (11, 1)
    qs, ks, vs = r.normal(size=(3, b, h, total, d))
    full = reference_attention(qs, ks, vs, reference_causal(total))  # (b, h, total, d)
    k_cache, v_cache = ks[:, :, :prompt], vs[:, :, :prompt]
    for t in range(prompt, total):
        what = ngettext(
            "decode_step at position {t} of a generation (prompt of {prompt} token, then your own returned "
            "caches fed back step after step)",
            "decode_step at position {t} of a generation (prompt of {prompt} tokens, then your own returned "
            "caches fed back step after step)",
            prompt,
        ).format(t=t, prompt=prompt)
        step = slice(t, t + 1)
        out, k_cache, v_cache = _decode_call(
            decode_step, qs[:, :, step], ks[:, :, step], vs[:, :, step], k_cache, v_cache, what
        )
        expect_close(
            out,
            full[:, :, step],
            what=_("{what}, compared with full causal attention over the sequence").format(what=what),
            diagnoses=_output_mistakes(qs[:, :, step], ks[:, :, : t + 1], vs[:, :, : t + 1]),
        )
        for name, cache in (("k_cache", k_cache), ("v_cache", v_cache)):
            if cache.ndim != 4 or cache.shape[2] != t + 1:
                fail(
                    ngettext(
                        "{what}: the {name} it returned should hold the {count} position 0 … {last}, but it has "
                        "shape {shape}. Likely cause: the new token's K and V were not appended to the cache it "
                        "returns, so the next step cannot see this token.",
                        "{what}: the {name} it returned should hold the {count} positions 0 … {last}, but it has "
                        "shape {shape}. Likely cause: the new token's K and V were not appended to the cache it "
                        "returns, so the next step cannot see this token.",
                        t + 1,
                    ).format(what=what, name=name, count=t + 1, last=t, shape=cache.shape),
                    "decode.cache_not_appended",
                )
    generated = total - prompt
    passed(
        ngettext(
            "generating {n} token one by one gives full causal attention's outputs",
            "generating {n} tokens one by one gives full causal attention's outputs",
            generated,
        ).format(n=generated)
    )


# ---------------------------------------------------------------------------- bottom_right_causal_mask
def _mask_mistakes(n_new, n_keys):
    offset = n_keys - n_new
    ones = np.ones((n_new, n_keys), dtype=bool)
    yield np.tril(ones), translated(TOP_LEFT), "mask.top_left_alignment"
    yield (
        np.tril(ones, offset - 1),
        _(
            "off by one: each new query must see its own key too (the diagonal is allowed), "
            "query i sees keys 0 … n_keys − n_new + i."
        ),
        "mask.diagonal_forbidden",
    )
    yield (
        np.tril(ones, offset + 1),
        _("off by one: each new query sees one future key; it must stop at its own."),
        "mask.future_allowed",
    )
    yield (
        np.triu(ones, offset),
        _("the mask is flipped: True must mark the past and the query itself, not the future."),
        "mask.polarity_flipped",
    )
    yield (
        ones,
        _("nothing is masked: with several new queries, each must not see the new tokens after it."),
        "mask.ignored",
    )


def _probe_mask(bottom_right_causal_mask, n_new, n_keys):
    __tracebackhide__ = True
    what = f"bottom_right_causal_mask({n_new}, {n_keys})"
    result = plain_bool_array(call(bottom_right_causal_mask, n_new, n_keys, what=what), what=what)
    expected = reference.bottom_right_causal_mask(n_new, n_keys)
    hint = _("One row per new query, one column per key (cached ones first, the new ones last): (n_new, n_keys).")
    if result.shape == (n_new, n_keys + n_new):
        hint += " " + _("n_keys already counts the new tokens.")
    expect_same_mask(
        result, expected, what=what, axes=(_NEW_QUERY, _KEY), diagnoses=_mask_mistakes(n_new, n_keys), hint=hint
    )


@exercise_check
def check_bottom_right_causal_mask(bottom_right_causal_mask, seed: int = 0, thorough: bool = False) -> None:
    __tracebackhide__ = True
    for n_new, n_keys in [(3, 7), (2, 5)]:
        _probe_mask(bottom_right_causal_mask, n_new, n_keys)
    passed(_("several new queries against a cache: the causal diagonal is aligned to the bottom right"))
    for n_new, n_keys in [(1, 6), (4, 4)]:
        _probe_mask(bottom_right_causal_mask, n_new, n_keys)
    passed(_("one new query sees every key; n_new = n_keys is the square causal mask"))
    if thorough:
        r = rng(seed)
        sizes = [(int(a), int(a + b)) for a, b in zip(r.integers(1, 8, size=5), r.integers(0, 9, size=5))]
        for n_new, n_keys in sizes + [(1, 1)]:
            _probe_mask(bottom_right_causal_mask, n_new, n_keys)
        passed(_("bottom_right_causal_mask matches the reference on random sizes"))


@exercise_check
def check_bottom_right_causal_mask_no_new_queries(
    bottom_right_causal_mask, seed: int = 0, thorough: bool = False
) -> None:
    """n_new = 0 (an empty chunk) is allowed: an empty boolean (0, n_keys) mask, not an error."""
    __tracebackhide__ = True
    for n_keys in [4] + ([0, 1, 9] if thorough else []):
        what = f"bottom_right_causal_mask(0, {n_keys})"
        empty = _(
            "With no new query (n_new = 0, an empty chunk) the mask has no row: an empty boolean array of shape "
            "(0, {n_keys}). Only n_new > n_keys is impossible."
        ).format(n_keys=n_keys)
        try:
            result = call(bottom_right_causal_mask, 0, n_keys, what=what)
        except CheckFailed as failure:
            refused = failure.misconception is None and raised_by_the_answer(failure)
            fail(
                f"{sentence(failure)} {empty}" if refused else str(failure),  # two whole sentences
                "conventions.empty_case" if refused else None,
            )
        if _type(result) is np.ndarray and result.dtype != np.bool_ and result.size == 0:
            fail(
                _(
                    "{what} should return a boolean array of shape (0, {n_keys}), but it returned an empty array of "
                    "dtype {dtype} and shape {shape}. Likely cause: np.array of an empty list of rows is a float "
                    "array of shape (0,): build the mask from its shape (np.ones((n_new, n_keys), bool))."
                ).format(what=what, n_keys=n_keys, dtype=result.dtype, shape=result.shape),
                "conventions.empty_case",
            )
        result = plain_bool_array(result, what=what)
        expect_shape(result, (0, n_keys), what=what, hint=empty, misconception="conventions.empty_case")
    passed(_("no new query (n_new = 0) gives an empty (0, n_keys) mask"))


@exercise_check
def check_bottom_right_causal_mask_errors(bottom_right_causal_mask, seed: int = 0, thorough: bool = False) -> None:
    __tracebackhide__ = True
    cases = [(5, 3)] + ([(2, 1), (4, 0)] if thorough else [])
    for n_new, n_keys in cases:
        expect_value_error(
            bottom_right_causal_mask,
            n_new,
            n_keys,
            what=f"bottom_right_causal_mask({n_new}, {n_keys})",
            why=_("the keys include the new tokens' own, so there are at least n_new of them"),
        )
    passed(_("more new queries than keys is refused with ValueError"))


# ---------------------------------------------------------------------------- rolling_cache_write
def _write_mistakes(cache, new, position):
    w, t = cache.shape[-2], new.shape[-2]

    def written(slots):
        out = np.array(cache, copy=True)
        for i, slot in enumerate(slots):
            out[..., slot % w, :] = new[..., i, :]
        return out

    yield written(range(t)), translated(BY_STEP), "rolling.indexed_by_step"
    yield written(range(position + 1, position + t + 1)), translated(OFF_BY_ONE_SLOT), "rolling.off_by_one_slot"
    yield written(range(position - 1, position + t - 1)), translated(OFF_BY_ONE_SLOT), "rolling.off_by_one_slot"
    yield (
        written([w - 1 - (p % w) for p in range(position, position + t)]),
        _("the slots are counted from the end."),
        "rolling.slots_reversed",
    )
    yield (
        np.concatenate([cache, new], axis=-2)[..., -w:, :],
        _(
            "the buffer was shifted like a queue (append, then drop the oldest): a rolling buffer never moves its "
            "tokens, it overwrites the oldest one where it is, in slot p mod w."
        ),
        "rolling.shifted_queue",
    )


def _probe_write(rolling_cache_write, cache, new, position, label):
    __tracebackhide__ = True
    what = f"rolling_cache_write(cache, new, position={position}) {label}"
    result = plain_array(
        call(rolling_cache_write, cache, new, position, what=what, names=("cache", "new", "position")), what=what
    )
    expected = reference.rolling_cache_write(cache, new, position)
    hint = _("The buffer keeps its w slots: (..., w, d), position p written to slot p mod w.")
    if result.shape[-2] == cache.shape[-2] + new.shape[-2]:
        appended = _("The new tokens were appended: a rolling buffer keeps its w slots and overwrites the oldest.")
        hint = f"{appended} {hint}"
    expect_close(result, expected, what=what, diagnoses=_write_mistakes(cache, new, position), hint=hint)
    return result


@exercise_check
def check_rolling_cache_write(rolling_cache_write, seed: int = 0, thorough: bool = False) -> None:
    __tracebackhide__ = True
    r = rng(seed)
    b, h, w, d = (1, 2, 4, 3) if not thorough else (2, 1, 5, 2)
    cache = r.normal(size=(b, h, w, d))
    _probe_write(
        rolling_cache_write,
        cache,
        r.normal(size=(b, h, 1, d)),
        6,
        ngettext(
            "(one token at position 6, a buffer of w = {w} slot)",
            "(one token at position 6, a buffer of w = {w} slots)",
            w,
        ).format(w=w),
    )
    _probe_write(
        rolling_cache_write,
        cache,
        r.normal(size=(b, h, 3, d)),
        w + 2,
        _("(three tokens at positions {first} … {last}, wrapping around the end of the buffer)").format(
            first=w + 2, last=w + 4
        ),
    )
    passed(_("position p is written to slot p mod w, wrapping around; the other slots keep their tokens"))
    if thorough:
        whole = _("(a whole buffer at once)")
        _probe_write(rolling_cache_write, np.zeros((3, w, d)), r.normal(size=(3, w, d)), 0, whole)
        passed(_("rolling_cache_write matches the reference on more shapes"))


@exercise_check
def check_rolling_cache_write_generation(rolling_cache_write, seed: int = 0, thorough: bool = False) -> None:
    """A generation through the learner's own buffer: a prompt, then one token per step."""
    __tracebackhide__ = True
    r = rng(seed)
    b, h, w, d = (1, 2, 4, 3) if not thorough else (2, 1, 5, 2)
    # a prompt shorter than w - 1: written into an empty buffer, w - 1 tokens land where a queue would put them too
    total, prompt = (11, 2) if not thorough else (13, 2 + len(secret_draws(1, 0, 2, label="rolling")))
    tokens = r.normal(size=(b, h, total, d))
    buffer = np.zeros((b, h, w, d))
    for start, stop in [(0, prompt)] + [(p, p + 1) for p in range(prompt, total)]:
        if start:
            label = _(
                "(writing positions {start} … {last} into your own buffer after positions 0 … {before}, "
                "w = {w}: a prompt of {prompt}, then one token per step)"
            ).format(start=start, last=stop - 1, before=start - 1, w=w, prompt=prompt)
        else:
            label = ngettext(
                "(writing a prompt, positions 0 … {last}, into an empty buffer of w = {w} slot)",
                "(writing a prompt, positions 0 … {last}, into an empty buffer of w = {w} slots)",
                w,
            ).format(last=stop - 1, w=w)
        buffer = _probe_write(rolling_cache_write, buffer, tokens[:, :, start:stop], start, label)
    steps = total - prompt
    passed(
        ngettext(
            "a prompt and {steps} step: the buffer holds the last {w} positions, each in slot p mod w",
            "a prompt and {steps} steps: the buffer holds the last {w} positions, each in slot p mod w",
            steps,
        ).format(steps=steps, w=w)
    )


# ---------------------------------------------------------------------------- document_mask
def _document_mistakes(ids):
    ids = np.asarray(ids)
    n = ids.shape[-1]
    causal = reference_causal(n)
    same = ids[..., :, None] == ids[..., None, :]
    earlier_documents = translated(EARLIER_DOCUMENTS)
    yield np.broadcast_to(causal, same.shape), earlier_documents, "documents.see_earlier_documents"
    yield (ids[..., None, :] <= ids[..., :, None]) & causal, earlier_documents, "documents.see_earlier_documents"
    yield (
        same,
        _(
            "bidirectional inside a document: the mask must also be causal, (same document) AND (key <= query); "
            "a token must not see the later tokens of its own document."
        ),
        "documents.not_causal",
    )
    yield same | causal, translated(OR_NOT_AND), "mask.or_not_and"
    transposed = _("the mask is transposed: it is indexed [query, key].")
    yield np.swapaxes(same & causal, -1, -2), transposed, "mask.transposed"


def _numbered_in_order(ids):
    """The same documents, numbered 0, 1, 2 … in the order they first appear along each row."""
    ids = np.asarray(ids)
    rows = ids.reshape(-1, ids.shape[-1])
    numbered = np.empty_like(rows)
    for r, row in enumerate(rows):
        _values, first, inverse = np.unique(row, return_index=True, return_inverse=True)
        rank = np.argsort(np.argsort(first))  # document k of np.unique's order is the rank[k]-th to appear
        numbered[r] = rank[inverse]
    return numbered.reshape(ids.shape)


def _document_mask_of(document_mask, ids, what):
    """The learner's mask for ``ids``, or None when it fails there (raises, or is not a boolean array)."""
    try:
        return plain_bool_array(call(document_mask, ids, what=what, names=("doc_ids",)), what=what)
    except CheckFailed:
        return None


def _right_on(document_mask, ids, what) -> bool:
    result = _document_mask_of(document_mask, ids, what)
    return result is not None and _array_equal(result, reference.document_mask(ids))


def _cause_by_probing(document_mask, ids):
    """The misconception a failing answer shows by what it gets right: renumbered ids, or each row alone."""
    ordered = _numbered_in_order(ids)
    if not _array_equal(ordered, ids) and _right_on(document_mask, ordered, _("document_mask on renumbered ids")):
        return ASSUMES_SORTED, "documents.assumes_sorted_ids"
    if ids.ndim == 2 and ids.shape[0] > 1:
        if all(_right_on(document_mask, row, _("document_mask on one row of the batch")) for row in ids):
            return BATCH_AXES_MIXED, "conventions.batch_axes_mixed"
    return None


def _probe_documents(document_mask, ids, label):
    """The learner's mask for ``ids`` against the reference. A wrong one is first asked what it gets right (the same
    documents numbered in order, each row alone): that names its idea even where its values happen to coincide
    with another mistake's (ids that decrease along the row make "key id >= query id" the causal mask)."""
    __tracebackhide__ = True
    shown = f"np.array({ids.tolist()})"
    what = f"document_mask({shown}) {label}"
    expected = reference.document_mask(ids)
    axes = (_ROW, _QUERY, _KEY)[3 - expected.ndim :]
    hint = _("One (n, n) mask per row of ids: the shape of ids plus one more axis of n.")
    result = None  # until the call returns a boolean array
    try:
        result = plain_bool_array(call(document_mask, ids, what=what, names=("doc_ids",)), what=what)
        expect_same_mask(result, expected, what=what, axes=axes, hint=hint)
    except CheckFailed as failure:
        found = None if failure.misconception is not None else _cause_by_probing(document_mask, ids)
        if found is None and failure.misconception is None and result is not None:
            expect_same_mask(result, expected, what=what, axes=axes, diagnoses=_document_mistakes(ids), hint=hint)
        if found is None:
            raise
        explanation, misconception = found
        cause = _("Likely cause: {explanation}").format(explanation=translated(explanation))
        fail(f"{sentence(failure)} {cause}", misconception)


def _random_packing(r, n):
    """Ids of a random packed row of n tokens: 2 to 4 documents (one if n = 1), named by ids out of order."""
    count = 1 if n == 1 else int(r.integers(2, min(4, n) + 1))
    cuts = np.sort(r.choice(np.arange(1, n), size=count - 1, replace=False))
    lengths = np.diff(np.concatenate([[0], cuts, [n]]))
    ids = r.choice(60, size=count, replace=False)
    if count > 1 and (np.diff(ids) > 0).all():
        ids = ids[::-1]  # never in increasing order: ids only name documents
    return np.repeat(ids, lengths)


@exercise_check
def check_document_mask(document_mask, seed: int = 0, thorough: bool = False) -> None:
    """One packed row of ids (n,): sorted ids, then ids in any order."""
    __tracebackhide__ = True
    _probe_documents(document_mask, np.array([0, 0, 0, 1, 1, 2, 2, 2]), _("(three documents packed in one row)"))
    _probe_documents(document_mask, np.array([7, 7, 3, 3, 3, 9]), _("(ids that are not in order)"))
    passed(_("a token sees the earlier tokens of its own document, never another document"))
    if thorough:
        r = rng(seed)
        for n in (5, 8, 11):
            _probe_documents(document_mask, _random_packing(r, n), _("(random documents)"))
        _probe_documents(document_mask, np.array([3]), _("(one token)"))
        passed(_("document_mask matches the reference on random packings"))


@exercise_check
def check_document_mask_batch(document_mask, seed: int = 0, thorough: bool = False) -> None:
    """A batch of packed rows (b, n): one mask per row, (b, n, n)."""
    __tracebackhide__ = True
    two_rows = np.array([[0, 0, 1, 1, 1], [4, 5, 5, 5, 6]])
    _probe_documents(document_mask, two_rows, _("(a batch of two packed rows)"))
    passed(_("a batch of rows (b, n) gives one mask per row, (b, n, n)"))
    if thorough:
        r = rng(seed)
        for b, n in [(3, 6), (2, 9), (4, 1)]:
            rows = np.array([_random_packing(r, n) for _row in range(b)])
            _probe_documents(document_mask, rows, _("(a random batch of packed rows)"))
        passed(_("document_mask matches the reference on random batches"))


# ---------------------------------------------------------------------------- sinks_window_mask
def _sinks_mistakes(n, w, s):
    query, key = np.arange(n)[:, None], np.arange(n)[None, :]
    causal = key <= query
    window = causal & (key > query - w)
    and_not_or = translated(AND_NOT_OR)
    yield window & (key < s), and_not_or, "mask.and_not_or"
    yield causal & ((key > query - w) & (key < s)), and_not_or, "mask.and_not_or"
    yield (
        window | (key < s),
        _(
            "the sinks are visible from every query, even before them: the whole mask is still "
            "causal, causal AND (window OR sink)."
        ),
        "mask.future_allowed",
    )
    yield (
        causal & ((key > query - w - 1) | (key < s)),
        _(
            "the window holds w + 1 keys: it is the query itself and the "
            "w − 1 tokens before it (notebook 05's convention)."
        ),
        "window.off_by_one",
    )
    yield (
        causal & ((key > query - w) | (key <= s)),
        _("one sink too many: the sinks are positions 0 … sinks − 1."),
        "sinks.off_by_one",
    )
    yield (
        window,
        _("the sinks are missing: the first `sinks` tokens must stay visible to every later query."),
        "sinks.missing",
    )


def _probe_sinks(sinks_window_mask, n, w, s):
    __tracebackhide__ = True
    what = f"sinks_window_mask({n}, window={w}, sinks={s})"
    result = plain_bool_array(call(sinks_window_mask, n, w, s, what=what), what=what)
    expect_same_mask(
        result,
        reference.sinks_window_mask(n, w, s),
        what=what,
        axes=(_QUERY, _KEY),
        diagnoses=_sinks_mistakes(n, w, s),
    )


@exercise_check
def check_sinks_window_mask(sinks_window_mask, seed: int = 0, thorough: bool = False) -> None:
    __tracebackhide__ = True
    for n, w, s in [(9, 3, 2), (7, 2, 1)]:
        _probe_sinks(sinks_window_mask, n, w, s)
    passed(_("every query sees its window OR the sinks, never the future"))
    for n, w, s in [(6, 6, 2), (5, 2, 0)]:
        _probe_sinks(sinks_window_mask, n, w, s)
    passed(_("a window as long as the sequence is the causal mask; no sinks is the plain window"))
    if thorough:
        r = rng(seed)
        for _draw in range(4):
            n = int(r.integers(1, 14))
            _probe_sinks(sinks_window_mask, n, int(r.integers(1, n + 2)), int(r.integers(0, n + 1)))
        passed(_("sinks_window_mask matches the reference on random sizes"))


# ---------------------------------------------------------------------------- mixed_cache_bytes
_NAMES = ("n_local", "n_global", "window", "n_kv_heads", "head_dim", "seq_len", "batch", "bytes_per_value")
_DEFAULTS = {"batch": 1, "bytes_per_value": 2}


def _byte_mistakes(full):
    a = dict(full)
    per = 2 * a["n_kv_heads"] * a["head_dim"] * a["batch"] * a["bytes_per_value"]
    layers = a["n_local"] + a["n_global"]
    yield per * layers * a["seq_len"], translated(ALL_GLOBAL), "kv_cache.every_layer_global"
    yield (
        per * (a["n_local"] * a["window"] + a["n_global"] * a["seq_len"]),
        _("a local layer cannot hold more tokens than there are: it keeps min(seq_len, window), not always window."),
        "kv_cache.window_not_capped",
    )
    yield (
        per * layers * min(a["seq_len"], a["window"]),
        _("every layer counted as local: the global layers keep all seq_len tokens."),
        "kv_cache.every_layer_local",
    )
    yield (
        per * a["n_local"] * min(a["seq_len"], a["window"]),
        _("the global layers are left out."),
        "kv_cache.layers_left_out",
    )
    yield (
        per * a["n_global"] * a["seq_len"],
        _("the local layers are left out: they keep min(seq_len, window) tokens each."),
        "kv_cache.layers_left_out",
    )
    # the mistakes notebook 06's kv_cache_bytes also has: the same sentences as its check (one translation each)
    right = per * (a["n_local"] * min(a["seq_len"], a["window"]) + a["n_global"] * a["seq_len"])
    yield (
        right // 2,
        _("the factor 2 is missing: the cache holds K *and* V, two tensors of the same size."),
        "kv_cache.k_and_v",
    )
    yield (
        right * 8,
        _("that is the size in bits: multiply by bytes per value, not by bits (8 bits = 1 byte)."),
        "kv_cache.bits_not_bytes",
    )
    if a["batch"] > 1:
        yield (
            right // a["batch"],
            _("the batch is ignored: every sequence of the batch has its own cache."),
            "kv_cache.argument_ignored",
        )
    if a["bytes_per_value"] != 2:
        yield (
            right // a["bytes_per_value"] * 2,
            _("bytes_per_value is fixed at 2 instead of using the argument."),
            "kv_cache.argument_ignored",
        )


def _probe_bytes(mixed_cache_bytes, args, kwargs, label):
    __tracebackhide__ = True
    what, result, full = call_count(
        mixed_cache_bytes, "mixed_cache_bytes", args, kwargs, names=_NAMES, defaults=_DEFAULTS, label=label
    )
    expected = reference.mixed_cache_bytes(*args, **kwargs)
    if result == expected:
        return
    # the placeholders are the arguments' names: every argument by name, as call_count gives them
    message = _(
        "{what} should be {expected} bytes = 2 (K and V) × {n_kv_heads} KV heads × head size {head_dim} × "
        "({n_local} local layers × min({seq_len}, {window}) + {n_global} global layers × {seq_len}) tokens × "
        "batch {batch} × {bytes_per_value} bytes, but it returned {result}."
    ).format(what=what, expected=number(expected, ","), result=number(result, ","), **full)
    for wrong, explanation, misconception in _byte_mistakes(full):
        if result == wrong:
            fail(message + " " + _("Likely cause: {explanation}").format(explanation=explanation), misconception)
    fail(message)


@exercise_check
def check_mixed_cache_bytes(mixed_cache_bytes, seed: int = 0, thorough: bool = False) -> None:
    __tracebackhide__ = True
    _probe_bytes(mixed_cache_bytes, (21, 21, 4096, 8, 256, 8192), {}, _("(Gemma 2 9B at its 8K context)"))
    gemma_3 = _("(Gemma 3 27B, 32K tokens, batch 4)")
    _probe_bytes(mixed_cache_bytes, (52, 10, 1024, 16, 128, 32768), {"batch": 4}, gemma_3)
    passed(_("local layers keep at most their window, global layers every token"))
    short = _("(shorter than the window, fp8)")
    _probe_bytes(mixed_cache_bytes, (5, 1, 1024, 4, 64, 300), {"bytes_per_value": 1}, short)
    _probe_bytes(mixed_cache_bytes, (0, 32, 4096, 8, 128, 5000), {}, _("(no local layer: an ordinary model)"))
    passed(_("a sequence shorter than the window, and a model without local layers"))
    if thorough:
        r = rng(seed)
        for _draw in range(5):
            args = tuple(int(x) for x in r.integers(1, 100, size=6))
            _probe_bytes(
                mixed_cache_bytes,
                args,
                {"batch": int(r.integers(1, 9)), "bytes_per_value": int(r.choice([1, 2, 4]))},
                _("(random sizes)"),
            )
        _probe_bytes(mixed_cache_bytes, (3, 0, 16, 2, 8, 1_000_000), {}, _("(only local layers: a flat cache)"))
        passed(_("mixed_cache_bytes is exact on random sizes"))
