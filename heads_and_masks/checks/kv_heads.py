"""Checks for notebook 06: grouped-query attention (MHA, GQA, MQA in one) and the KV-cache size."""

from __future__ import annotations

import numpy as np

from ..attention import attention as reference_attention
from ..kv_heads import grouped_query_attention as reference_gqa
from ..kv_heads import kv_cache_bytes as reference_kv_cache_bytes
from ..i18n import N_, _, ngettext, number, translated
from .core import CheckFailed, call, call_count, exercise_check, expect_value_error, fail, passed, rng
from .core import expect_close, expect_shape, raised_by_the_answer, is_close, plain_array, sentence


_SHAPE_HINT = N_(
    "Query head i reads KV head i // (h // g): each KV head is repeated h // g times "
    "(the group size, not g), along the heads axis (axis 1), so k and v get h heads like q."
)


# ---------------------------------------------------------------------------- grouped_query_attention
def _with_kv_heads(q, k, v, mask, kv_index):
    """Attention where query head i reads KV head kv_index[i] (to name wrong mappings)."""
    return reference_attention(q, k[:, kv_index], v[:, kv_index], mask)


def _wrong_gqa(q, k, v, mask):
    """What the usual mistakes produce on these inputs (used only to name the mistake)."""
    h, g = q.shape[1], k.shape[1]
    heads = np.arange(h)
    yield (
        _with_kv_heads(q, k, v, mask, heads % g),
        _(
            "query head i got KV head i % g: the KV heads were tiled (np.tile, or a reshape to (b, h // g, g, ...)) "
            "instead of repeated (np.repeat, a reshape to (b, g, h // g, ...)). Consecutive query heads share a KV "
            "head: head i must read KV head i // (h // g)."
        ),
        "kv_heads.tiled_not_repeated",
    )
    yield (
        _with_kv_heads(q, k, v, mask, np.zeros(h, int)),
        _(
            "every query head read KV head 0: the other KV heads were never used. Head i must read KV head "
            "i // (h // g)."
        ),
        "kv_heads.one_kv_head_used",
    )
    yield (
        _with_kv_heads(q, k, v, mask, np.full(h, g - 1)),
        _("every query head read the last KV head."),
        "kv_heads.one_kv_head_used",
    )
    right = heads // (h // g)
    d = q.shape[-1]
    # the reference divides by sqrt(d): scaling q changes what the scores are divided by
    yield (
        _with_kv_heads(q * np.sqrt(d), k, v, mask, right),
        _("the scores are not divided by sqrt(d)."),
        "scale.missing",
    )
    yield (
        _with_kv_heads(q / np.sqrt(h), k, v, mask, right),
        _("the scores are divided by sqrt(h · d) instead of sqrt(d), the head size."),
        "scale.width_not_head_size",
    )
    if mask is not None:
        yield _with_kv_heads(q, k, v, None, right), _("the mask is ignored."), "mask.ignored"


def _with_g_squared_heads(gqa, q, k, v, mask) -> str | None:
    """What an answer that failed on these shapes does with h = g · g query heads: "repeated", "tiled" or None.

    There, and only there (for g > 1), the group size h // g equals g: an answer that repeats (or tiles) each KV
    head g times, the number of KV heads, gets g · g KV heads, as many as the query heads, and runs. Repeated,
    it is right; tiled, query head i reads KV head i % g. On any other h it has g · g KV heads for h query heads,
    and it raises. The query heads (and a per-head mask) for g · g heads are the probe's own, taken in turn.
    """
    h, g = q.shape[1], k.shape[1]
    if g == 1 or h == g * g:  # g = 1: repeating once is right; h = g · g: these are the shapes it failed on
        return None
    heads = np.arange(g * g) % h
    q_g2 = q[:, heads]  # (b, g·g, n_q, d)
    mask_g2 = mask[:, heads] if mask is not None and mask.ndim == 4 and mask.shape[1] == h > 1 else mask
    args = (q_g2, k, v) if mask is None else (q_g2, k, v, mask_g2)
    what = _("grouped_query_attention with h = {h} query heads and g = {g} KV heads").format(h=g * g, g=g)
    try:
        out = plain_array(call(gqa, *args, what=what), what=what)
    except CheckFailed:
        return None
    if is_close(out, reference_gqa(*args)):
        return "repeated"
    tiled = reference_attention(q_g2, k[:, np.arange(g * g) % g], v[:, np.arange(g * g) % g], mask_g2)
    return "tiled" if is_close(out, tiled) else None


def _probe(gqa, q, k, v, mask, label):
    __tracebackhide__ = True
    args = (q, k, v) if mask is None else (q, k, v, mask)
    call_text = "grouped_query_attention(q, k, v, mask)" if mask is not None else "grouped_query_attention(q, k, v)"
    what = f"{call_text} {label}"  # the call stays code; the label is a translated phrase
    try:
        out = plain_array(call(gqa, *args, what=what, allow_warnings=False), what=what)
    except CheckFailed as error:
        message, misconception = str(error), error.misconception
        h, g = q.shape[1], k.shape[1]
        found = _with_g_squared_heads(gqa, q, k, v, mask) if raised_by_the_answer(error) else None
        if found == "repeated":
            fail(
                sentence(message)
                + " "
                + _(
                    "k and v must get h = {h} heads, like q. Likely cause: each KV head was repeated "
                    "g = {g} times (the number of KV heads) instead of h // g = {group} times (the group size), "
                    "which gives g · g = {g2} KV heads for {h} query heads. With h = {g2} query heads, where "
                    "h // g = g, your function matches the reference. Query head i reads KV head i // (h // g): "
                    "np.repeat(k, h // g, axis=1)."
                ).format(h=h, g=g, group=h // g, g2=g * g),
                "kv_heads.repeated_g_times",
            )
        if found == "tiled":
            fail(
                sentence(message)
                + " "
                + _(
                    "k and v must get h = {h} heads, like q. Likely cause: the KV heads were tiled g = {g} "
                    "times (np.tile: the number of KV heads) instead of each repeated h // g = {group} times (the "
                    "group size), which gives g · g = {g2} KV heads for {h} query heads. With h = {g2} query "
                    "heads your function runs, but query head i reads KV head i % g: tiled, where consecutive query "
                    "heads must share a KV head. Query head i reads KV head i // (h // g): np.repeat(k, h // g, axis=1)."
                ).format(h=h, g=g, group=h // g, g2=g * g),
                "kv_heads.repeated_g_times",
            )
        if raised_by_the_answer(error):
            message += " " + translated(_SHAPE_HINT)
            if mask is not None and mask.ndim == 4:
                message += " " + _(
                    "A mask of shape (b, 1, n, n) or (b, h, n, n) belongs to the query heads: "
                    "broadcast it to (b, h, n, n) before you group the query heads as (b, g, h // g, n, n)."
                )
                misconception = misconception or "kv_heads.mask_not_broadcast"
        fail(message, misconception)
    expected = reference_gqa(q, k, v, mask)
    expect_shape(
        out,
        expected.shape,
        what=what,
        hint=_("The output has one head per query head: (b, h, n_queries, d), the shape of q."),
    )
    expect_close(out, expected, what=what, diagnoses=_wrong_gqa(q, k, v, mask), hint=translated(_SHAPE_HINT))


def _qkv(r, b, h, g, n, d, n_q=None):
    q = r.normal(size=(b, h, n if n_q is None else n_q, d))
    k, v = r.normal(size=(b, g, n, d)), r.normal(size=(b, g, n, d))
    return q, k, v


@exercise_check
def check_grouped_query_attention(gqa, seed: int = 0, thorough: bool = False) -> None:
    """Values against the reference for MHA, GQA and MQA shapes; the head mapping; a generation step."""
    __tracebackhide__ = True
    r = rng(seed)
    # groups of 2 and 3 heads with g > 1: the only shapes where repeat and tile differ
    shapes = [(2, 6, 3, 4, 5), (1, 8, 2, 3, 4)] + (
        [(3, 12, 4, 5, 2), (2, 6, 2, 1, 3), (1, 9, 3, 7, 6)] if thorough else []
    )
    for b, h, g, n, d in shapes:
        q, k, v = _qkv(r, b, h, g, n, d)
        _probe(
            gqa,
            q,
            k,
            v,
            None,
            _("with h = {h} query heads and g = {g} KV heads (q {q_shape}, k and v {k_shape})").format(
                h=h, g=g, q_shape=q.shape, k_shape=k.shape
            ),
        )
    passed(_("grouped-query attention (1 < g < h) matches the reference: query head i reads KV head i // (h // g)"))

    # the two ends of the family: g = h is MHA, g = 1 is MQA
    for b, h, g, n, d in [(2, 4, 4, 3, 5), (2, 6, 1, 4, 3)] + ([(1, 1, 1, 2, 2), (3, 16, 1, 2, 4)] if thorough else []):
        q, k, v = _qkv(r, b, h, g, n, d)
        label = _("as MHA (g = h) with h = {h}, g = {g}") if g == h else _("as MQA (g = 1) with h = {h}, g = {g}")
        _probe(gqa, q, k, v, None, label.format(h=h, g=g))
    passed(_("g = h gives multi-head attention and g = 1 gives multi-query attention"))

    # one new query per head against n cached keys and values: a generation step
    b, h, g, n, d = (2, 6, 2, 7, 4) if not thorough else (1, 10, 5, 9, 3)
    q, k, v = _qkv(r, b, h, g, n, d, n_q=1)
    _probe(
        gqa,
        q,
        k,
        v,
        None,
        ngettext(
            "for one generation step (q {q_shape} against a cache of {n} key, k {k_shape})",
            "for one generation step (q {q_shape} against a cache of {n} keys, k {k_shape})",
            n,
        ).format(q_shape=q.shape, n=n, k_shape=k.shape),
    )
    passed(_("a single new query per head attends over the cached keys and values"))


@exercise_check
def check_grouped_query_attention_masks(gqa, seed: int = 0, thorough: bool = False) -> None:
    """Masks broadcast against (b, h, n, n): an (n, n) causal mask, a (b, 1, n, n) and a per-head mask."""
    __tracebackhide__ = True
    r = rng(seed)
    b, h, g, n, d = (3, 6, 2, 5, 4) if not thorough else (2, 12, 3, 6, 3)
    q, k, v = _qkv(r, b, h, g, n, d)
    causal = np.tril(np.ones((n, n), bool))
    _probe(gqa, q, k, v, causal, _("with an ({n}, {n}) causal mask (h = {h}, g = {g})").format(n=n, h=h, g=g))
    passed(_("an (n, n) causal mask applies to every query head"))

    lengths = r.integers(1, n + 1, size=b)
    lengths[0] = n - 1  # at least one sequence with padding
    padding = np.arange(n)[None, :] < lengths[:, None]  # (b, n): real keys
    mask = causal[None, None] & padding[:, None, None, :]  # (b, 1, n, n); no row is empty: key 0 is real
    _probe(
        gqa,
        q,
        k,
        v,
        mask,
        _("with a causal-and-padding mask of shape {shape} (b = {b} ≠ g = {g})").format(shape=mask.shape, b=b, g=g),
    )
    per_head = (r.random((b, h, n, n)) < 0.5) | np.eye(n, dtype=bool)  # every head its own pattern
    _probe(
        gqa,
        q,
        k,
        v,
        per_head,
        _("with a different random mask for each query head, shape {shape}").format(shape=per_head.shape),
    )
    passed(_("masks of shape (b, 1, n, n) and (b, h, n, n) go to the right query heads"))


@exercise_check
def check_grouped_query_attention_errors(gqa, seed: int = 0, thorough: bool = False) -> None:
    """h not divisible by g must be refused with ValueError (not answered, not crashed otherwise)."""
    __tracebackhide__ = True
    r = rng(seed)
    cases = [(6, 4), (8, 3)] + ([(2, 4), (9, 6), (10, 4)] if thorough else [])
    for h, g in cases:
        q, k, v = _qkv(r, 1, h, g, 3, 2)
        expect_value_error(
            gqa,
            q,
            k,
            v,
            what=_("grouped_query_attention with h = {h} query heads and g = {g} KV heads").format(h=h, g=g),
            why=_("{h} query heads cannot be split into {g} equal groups: h must be divisible by g").format(h=h, g=g),
        )
    passed(_("h not divisible by g is refused with ValueError"))


# ---------------------------------------------------------------------------- kv_cache_bytes
def _wrong_sizes(expected: int, layers, kv_heads, head_dim, seq_len, batch, bytes_per_value):
    yield (
        expected // 2,
        _("the factor 2 is missing: the cache holds K *and* V, two tensors of the same size."),
        "kv_cache.k_and_v",
    )
    yield (
        expected * 2,
        _("twice the right size: the factor 2 of K and V counted twice, or a default other than bytes_per_value=2."),
        "kv_cache.k_and_v",
    )
    yield (
        expected * 8,
        _("that is the size in bits: multiply by bytes per value, not by bits (8 bits = 1 byte)."),
        "kv_cache.bits_not_bytes",
    )
    yield (
        expected * 16,
        _("bits instead of bytes, and the factor 2 of K and V counted twice."),
        "kv_cache.bits_not_bytes",
    )
    if batch > 1:
        yield (
            expected // batch,
            _("the batch is ignored: every sequence of the batch has its own cache."),
            "kv_cache.argument_ignored",
        )
    if bytes_per_value != 1:
        yield (
            expected // bytes_per_value,
            _("bytes_per_value is ignored (every value takes bytes_per_value bytes)."),
            "kv_cache.argument_ignored",
        )
    if bytes_per_value != 2:
        yield (
            expected // bytes_per_value * 2,
            _("bytes_per_value is fixed at 2 instead of using the argument."),
            "kv_cache.argument_ignored",
        )
    yield (
        expected // 2 // bytes_per_value,
        _("the factor 2 of K and V and bytes_per_value are both missing."),
        "kv_cache.k_and_v",
    )


_NAMES = ("n_layers", "n_kv_heads", "head_dim", "seq_len", "batch", "bytes_per_value")
_DEFAULTS = {"batch": 1, "bytes_per_value": 2}


def _probe_size(kv_cache_bytes, args, kwargs, label):
    __tracebackhide__ = True
    what, result, full = call_count(kv_cache_bytes, "kv_cache_bytes", args, kwargs, names=_NAMES, defaults=_DEFAULTS)
    expected = reference_kv_cache_bytes(*args, **kwargs)
    if result == expected:
        return
    message = _(
        "{what} {label} should be {expected} bytes = 2 (K and V) × {layers} layers × {kv_heads} KV heads × "
        "head size {head_dim} × {tokens} tokens × batch {batch} × {bytes} bytes per value, but it returned {result}."
    ).format(
        what=what,
        label=label,
        expected=number(expected, ","),
        layers=full["n_layers"],
        kv_heads=full["n_kv_heads"],
        head_dim=full["head_dim"],
        tokens=full["seq_len"],
        batch=full["batch"],
        bytes=full["bytes_per_value"],
        result=number(result, ","),
    )
    if expected and result:  # how far off, as its own sentence
        ratio = result / expected
        if ratio > 1:
            message += " " + _("That is {ratio} times too large.").format(ratio=number(ratio, ".4g"))
        else:
            message += " " + _("That is {ratio} times too small.").format(ratio=number(1 / ratio, ".4g"))
    for wrong, explanation, misconception in _wrong_sizes(expected, *full.values()):
        if result == wrong:
            fail(message + " " + _("Likely cause: {explanation}").format(explanation=explanation), misconception)
    if full["seq_len"] > 1 and result * full["seq_len"] == expected:
        fail(message + " " + _("Likely cause: the number of tokens (seq_len) is ignored."), "kv_cache.argument_ignored")
    fail(message)


@exercise_check
def check_kv_cache_bytes(kv_cache_bytes, seed: int = 0, thorough: bool = False) -> None:
    """Exact byte counts against the formula, with defaults, keywords, batches and other value sizes."""
    __tracebackhide__ = True
    _probe_size(kv_cache_bytes, (32, 32, 128, 4096), {}, _("(Llama-2-7B at 4096 tokens, batch 1, 2 bytes per value)"))
    _probe_size(kv_cache_bytes, (80, 8, 128, 8192), {"batch": 4}, _("(Llama-2-70B-sized, batch 4)"))
    _probe_size(kv_cache_bytes, (18, 1, 256, 1000), {"batch": 3, "bytes_per_value": 1}, _("(an MQA model, fp8)"))
    _probe_size(kv_cache_bytes, (40, 40, 128, 2048, 2, 4), {}, _("(all six arguments by position, fp32)"))
    passed(_("kv_cache_bytes counts K and V, every layer, KV head, token and sequence, in bytes"))
    if thorough:
        r = rng(seed)
        for _draw in range(6):
            args = tuple(int(x) for x in r.integers(1, 200, size=4))
            kwargs = {"batch": int(r.integers(2, 64)), "bytes_per_value": int(r.choice([1, 2, 4]))}
            _probe_size(kv_cache_bytes, args, kwargs, _("(random sizes)"))
        _probe_size(kv_cache_bytes, (96, 96, 128, 0), {}, _("(no tokens yet: an empty cache)"))
        _probe_size(kv_cache_bytes, (96, 96, 128, 1_000_000), {"batch": 512, "bytes_per_value": 4}, _("(very large)"))
        passed(_("kv_cache_bytes is exact on random and extreme sizes"))


@exercise_check
def check_kv_cache_bytes_errors(kv_cache_bytes, seed: int = 0, thorough: bool = False) -> None:
    """Negative counts are refused with ValueError."""
    __tracebackhide__ = True
    cases = [
        ((32, 8, 128, -1), N_("a negative number of tokens makes no sense")),
        ((-32, 8, 128, 10), N_("a negative number of layers makes no sense")),
    ]
    if thorough:
        cases += [
            ((32, -8, 128, 10), N_("a negative number of KV heads makes no sense")),
            ((32, 8, -128, 10), N_("a negative head size makes no sense")),
        ]
    for args, why in cases:
        expect_value_error(kv_cache_bytes, *args, what=f"kv_cache_bytes{args}", why=translated(why))
    if thorough:
        expect_value_error(
            lambda *a: kv_cache_bytes(*a, batch=-2),
            32,
            8,
            128,
            10,
            what="kv_cache_bytes(32, 8, 128, 10, batch=-2)",
            why=_("a negative batch makes no sense"),
        )
    passed(_("negative sizes are refused with ValueError"))
