"""Checks for notebook 01: the width cut into heads, multi-head attention, and the cost of one layer.

Every check compares the learner's function with the course's reference on inputs chosen so that
each known mistake gives a visibly different answer: batches of more than one sequence, widths
whose ``(h d)`` and ``(d h)`` readings differ, ``n ≠ h`` so a missing transpose shows in the shape,
masks that change the result, and ``h > 1`` so that ignoring the heads is not harmless. The known
mistakes only improve the message; the verdict is always "equal to the reference or not".
"""

from __future__ import annotations

import numpy as np

from ..attention import masked_softmax as reference_softmax
from ..heads import mha_cost as reference_cost
from ..heads import multi_head_attention as reference_mha
from ..heads import split_heads as reference_split
from ..i18n import N_, _, number, translated
from .core import CheckFailed, call, exercise_check, expect_value_error, fail, passed, rng
from .core import expect_close, plain_array, plain_int

# Graded answers are the learner's own code (`call` locks every course reference), so the single-head
# attention inside multi_head_attention is the learner's too.

_BATCH_HINT = N_(
    "It works for a batch of one sequence (b = 1) but not for b = {b}: a batch size of 1 is "
    "assumed somewhere. Read b from x.shape (or let reshape infer it with -1) and keep the batch "
    "axis first."
)


def _batch_aware(probe, batch_args, single_args, b):
    """Run ``probe`` on a batch; when it fails but the first sequence alone passes, say that b = 1 was assumed."""
    __tracebackhide__ = True
    try:
        probe(*batch_args)
        return
    except CheckFailed as failure:
        message, misconception = str(failure), failure.misconception
    try:
        probe(*single_args)
    except CheckFailed:
        pass  # wrong for one sequence too: the first message is the useful one
    else:
        message += " " + translated(_BATCH_HINT).format(b=b)
        misconception = "conventions.batch_of_one"
    fail(message, misconception)


# ---------------------------------------------------------------------------------- split_heads
def _split_shape_hint(shape, b, n, h, d) -> tuple[str, str | None]:
    """The hint for a wrong shape of split_heads, and the misconception it names."""
    if shape == (b, n, h, d):
        return _(
            "The axes are (b, n, h, d): the reshape is right but the transpose is missing; swap the "
            "axes n and h so that the heads come before the tokens."
        ), "heads.missing_transpose"
    if h != d and shape in ((b, n, d, h), (b, d, n, h), (b, h, n, h), (b, d, n, d)):
        return _(
            "h and d look swapped: h is the number of heads, d = D / h the size of each head."
        ), "heads.h_d_swapped"
    if len(shape) == 3:
        return _(
            "The batch axis is missing: the result keeps b first, (b, h, n, d). Was a batch size of 1 assumed?"
        ), "conventions.batch_of_one"
    return _("The axes are batch, heads, tokens, head size: (b, h, n, d)."), None


def _wrong_splits(x, h):
    """What the usual mistakes return for these inputs (used only to name the mistake)."""
    b, n, width = x.shape
    d = width // h
    yield (
        x.reshape(b, n, d, h).transpose(0, 3, 1, 2),
        _(
            "head i should be the i-th slice of the width, x[..., i*d:(i+1)*d], but your heads take every h-th "
            "column: the width was split as (d h) instead of (h d)."
        ),
        "heads.d_h_split",
    )
    yield (
        x.reshape(b, h, n, d),
        _(
            "a reshape to (b, h, n, d) without a transpose cuts the numbers in memory order, so a 'head' holds "
            "pieces of several tokens. Reshape to (b, n, h, d) first, then transpose the axes n and h."
        ),
        "heads.reshape_without_transpose",
    )
    yield (
        x.reshape(b, d, n, h).transpose(0, 3, 2, 1),
        _("a reshape without a transpose, read in the (d h) order: head i must be x[..., i*d:(i+1)*d]."),
        "heads.reshape_without_transpose",
    )


def _first_wrong_head(result, x, h) -> str:
    d = x.shape[-1] // h
    for i in range(h):
        if not np.allclose(result[:, i], x[..., i * d : (i + 1) * d], rtol=1e-6, atol=1e-9):
            return _(
                "Head {i} should be the columns {first}…{last} of the width, "
                "x[..., {first}:{stop}], for every sequence and token."
            ).format(i=i, first=i * d, last=(i + 1) * d - 1, stop=(i + 1) * d)
    return ""


def _probe_split(split_heads, x, h):
    __tracebackhide__ = True
    b, n, width = x.shape
    d = width // h
    what = _("split_heads(x, h={h}) with x of shape {shape}").format(h=h, shape=x.shape)
    result = plain_array(call(split_heads, x, h, what=what), what=what)
    expected = reference_split(x, h)  # (b, h, n, d)
    if result.shape != expected.shape:
        hint, misconception = _split_shape_hint(result.shape, b, n, h, d)
        fail(
            _("{what} should have shape (b, h, n, d) = {expected}, but it has shape {actual}.").format(
                what=what, expected=expected.shape, actual=result.shape
            )
            + " "
            + hint,
            misconception,
        )
    expect_close(result, expected, what=what, diagnoses=_wrong_splits(x, h), hint=_first_wrong_head(result, x, h))


@exercise_check
def check_split_heads(split_heads, seed: int = 0, thorough: bool = False) -> None:
    """``split_heads(x, h)``: (b, n, D) -> (b, h, n, d), head i being the i-th slice of the width."""
    __tracebackhide__ = True
    r = rng(seed)
    # (b, n, D, h); n ≠ h so that a missing transpose shows in the shape, b > 1 so that the batch matters
    cases = [(2, 3, 8, 2), (3, 4, 12, 3)]
    if thorough:
        cases += [(2, 5, 12, 4), (4, 2, 12, 6), (2, 3, 6, 1), (2, 1, 5, 5), (1, 4, 8, 2)]
        cases += [
            (int(r.integers(2, 4)), int(r.integers(1, 6)), h * d, h)
            for h, d in ((int(r.integers(2, 7)), int(r.integers(1, 6))) for _draw in range(3))
        ]
    for b, n, width, h in cases:
        x = r.normal(size=(b, n, width))
        _batch_aware(_probe_split, (split_heads, x, h), (split_heads, x[:1], h), b)
    if thorough:
        passed(_("split_heads: shape (b, h, n, d) and head i is x[..., i*d:(i+1)*d] on every shape tried"))
    else:
        passed(_("split_heads: shape (b, h, n, d) and head i is x[..., i*d:(i+1)*d]"))


@exercise_check
def check_split_heads_errors(split_heads, thorough: bool = False) -> None:
    """``split_heads`` must refuse a number of heads that does not divide the width."""
    __tracebackhide__ = True
    cases = [(6, 4)] + ([(12, 5), (4, 8), (9, 6), (7, 2)] if thorough else [])
    for width, h in cases:
        x = np.arange(2 * 3 * width, dtype=float).reshape(2, 3, width)
        expect_value_error(
            split_heads,
            x,
            h,
            what=_("split_heads(x, h={h}) with a width D = {width}").format(h=h, width=width),
            why=_("h must divide the width D, and {width} is not a multiple of {h}").format(width=width, h=h),
        )
    passed(_("split_heads raises ValueError when h does not divide the width"))


# ---------------------------------------------------------------------------------- merge_heads
def _wrong_merges(heads):
    b, h, n, d = heads.shape
    yield (
        heads.reshape(b, n, h * d),
        _(
            "a merge without the transpose back: the heads axis must first return behind the tokens, "
            "(b, h, n, d) -> (b, n, h, d), and only then can the last two axes be joined into h*d."
        ),
        "heads.merge_without_transpose",
    )
    yield (
        heads.transpose(0, 2, 3, 1).reshape(b, n, d * h),
        _(
            "the heads were joined in the (d h) order, interleaving their columns; head i must land in the "
            "columns i*d … (i+1)*d - 1, the (h d) order."
        ),
        "heads.d_h_split",
    )


def _probe_merge(merge_heads, x, h):
    __tracebackhide__ = True
    heads = reference_split(x, h)  # (b, h, n, d)
    what = _("merge_heads(heads) with heads of shape {shape}").format(shape=heads.shape)
    result = plain_array(call(merge_heads, np.ascontiguousarray(heads), what=what), what=what)
    if result.shape != x.shape:
        fail(
            _(
                "{what} should have shape (b, n, h*d) = {expected}, but it has shape {actual}. The tokens go "
                "back to the second axis and the heads sit side by side along the width."
            ).format(what=what, expected=x.shape, actual=result.shape)
        )
    expect_close(
        result,
        x,
        what=what,
        diagnoses=_wrong_merges(heads),
        hint=_("merge_heads must undo split_heads exactly: merge_heads(split_heads(x, h)) is x again."),
    )


@exercise_check
def check_merge_heads(merge_heads, seed: int = 0, thorough: bool = False) -> None:
    """``merge_heads(heads)``: (b, h, n, d) -> (b, n, h*d), the inverse of split_heads."""
    __tracebackhide__ = True
    r = rng(seed)
    cases = [(2, 3, 8, 2), (3, 4, 12, 3)]  # (b, n, D, h)
    if thorough:
        cases += [(2, 5, 12, 4), (4, 2, 12, 6), (2, 3, 6, 1), (2, 1, 5, 5), (1, 4, 8, 2)]
    for b, n, width, h in cases:
        x = r.normal(size=(b, n, width))
        _batch_aware(_probe_merge, (merge_heads, x, h), (merge_heads, x[:1], h), b)
    passed(_("merge_heads: shape (b, n, h*d), and merge_heads(split_heads(x, h)) gives x back"))


# ---------------------------------------------------------------------------------- mha_cost
def _wrong_costs(n, width, h):
    d = width // h
    projections, attention = 4 * n * width**2, 2 * n * n * width
    yield (
        2 * (projections + attention),
        _(
            "this counts FLOPs: a multiply-add is one multiplication plus one addition, two FLOPs, and the "
            "course counts multiply-adds (an (m, k) @ (k, p) product is m·k·p of them)."
        ),
        "cost.flops_not_multiply_adds",
    )
    yield (
        projections + attention * h,
        _(
            "the attention part was multiplied by h: each head works on d = D/h columns, so the h heads "
            "together cost h · n²d = n²D for the scores, and the same for the weighted sum."
        ),
        "cost.heads_multiply_cost",
    )
    yield (
        (projections + attention) * h,
        _("the whole cost was multiplied by h, but h does not change it."),
        "cost.heads_multiply_cost",
    )
    yield (
        projections * h + attention,
        _("the projections were multiplied by h: each is one (n, D) @ (D, D) product."),
        "cost.heads_multiply_cost",
    )
    yield (
        3 * n * width**2 + attention,
        _("the output projection W^O is missing: there are four (n, D) @ (D, D) products, Q, K, V and W^O."),
        "cost.missing_term",
    )
    yield (
        projections + attention // 2,
        _("only one of the two n × n products is counted: the scores Q Kᵀ and the weighted sum A V each cost n²D."),
        "cost.missing_term",
    )
    yield (
        projections + 2 * n * n * d,
        _("the attention part of one head (n²d) was counted instead of all h heads (n²D)."),
        "cost.one_head_only",
    )
    yield (
        4 * n * n * width + 2 * n * width**2,
        _("n and D are swapped: the projections cost 4nD², the attention 2n²D."),
        "cost.n_d_swapped",
    )
    yield projections, _("the attention part 2n²D (scores and weighted sum) is missing."), "cost.missing_term"
    yield attention, _("the projections 4nD² (Q, K, V and W^O) are missing."), "cost.missing_term"


def _probe_cost(mha_cost, n, width, h):
    __tracebackhide__ = True
    what = f"mha_cost(n={n}, D={width}, h={h})"
    result = plain_int(call(mha_cost, n, width, h, what=what), what=what)
    expected = reference_cost(n, width, h)
    if result == expected:
        return
    message = _(
        "{what} should be {expected} multiply-adds (4nD² = {projections} for the four projections "
        "plus 2n²D = {attention} for the scores and the weighted sum), but it returned {result}."
    ).format(
        what=what,
        expected=number(expected, ","),
        projections=number(4 * n * width**2, ","),
        attention=number(2 * n * n * width, ","),
        result=number(result, ","),
    )
    if expected and result > 0:  # how far off, as its own sentence
        message += " " + _("That is {ratio} times the expected count.").format(ratio=number(result / expected, ".3g"))
    for wrong, explanation, misconception in _wrong_costs(n, width, h):
        if result == wrong:
            fail(message + " " + _("Likely cause: {explanation}").format(explanation=explanation), misconception)
    fail(message)


@exercise_check
def check_mha_cost(mha_cost, seed: int = 0, thorough: bool = False) -> None:
    """``mha_cost(n, D, h)``: 4nD² + 2n²D multiply-adds, an int, the same for every h that divides D."""
    __tracebackhide__ = True
    cases = [(16, 64, 4), (128, 768, 12), (128, 768, 24)]
    if thorough:
        r = rng(seed)
        cases += [(0, 12, 3), (1, 8, 8), (3, 6, 1), (4096, 12288, 96), (8192, 4096, 32)]
        cases += [
            (int(r.integers(1, 3000)), h * d, h)
            for h, d in ((int(r.integers(1, 40)), int(r.integers(1, 200))) for _draw in range(4))
        ]
    for n, width, h in cases:
        _probe_cost(mha_cost, n, width, h)
    if thorough:
        passed(
            _("mha_cost counts 4nD² + 2n²D multiply-adds, whatever h (also for n = 0, h = 1, h = D and large models)")
        )
    else:
        passed(_("mha_cost counts 4nD² + 2n²D multiply-adds, whatever h"))


@exercise_check
def check_mha_cost_errors(mha_cost, thorough: bool = False) -> None:
    """``mha_cost`` refuses h that does not divide D, and a negative length."""
    __tracebackhide__ = True
    cases = [(10, 10, 4), (-1, 8, 2)]
    if thorough:
        cases += [(5, 12, 5), (4, 6, 12), (-16, 768, 12)]
    for n, width, h in cases:
        if n < 0:
            why = _("a sequence cannot have a negative length")
        else:
            why = _("h must divide the width D, and {width} is not a multiple of {h}").format(width=width, h=h)
        expect_value_error(mha_cost, n, width, h, what=f"mha_cost(n={n}, D={width}, h={h})", why=why)
    passed(_("mha_cost raises ValueError when h does not divide D or n is negative"))


# ---------------------------------------------------------------------------------- multi_head_attention
def _mha_variant(
    x,
    weights,
    h,
    mask,
    *,
    split="(h d)",
    merge="(h d)",
    scale_width=None,
    use_mask=True,
    flip_mask=False,
    output_projection=True,
    transposed_weights=False,
):
    """Multi-head attention with one deliberate mistake (the keyword that is not at its default)."""
    w_q, w_k, w_v, w_o = (w.T if transposed_weights else w for w in weights)
    b, n, width = x.shape
    d = width // h

    def cut(y):  # (b, n, D) -> (b, h, n, d)
        if split == "(h d)":
            return y.reshape(b, n, h, d).transpose(0, 2, 1, 3)
        if split == "(d h)":
            return y.reshape(b, n, d, h).transpose(0, 3, 1, 2)
        return y.reshape(b, h, n, d)  # no transpose

    def join(z):  # (b, h, n, d) -> (b, n, D)
        if merge == "(h d)":
            return z.transpose(0, 2, 1, 3).reshape(b, n, width)
        if merge == "(d h)":
            return z.transpose(0, 2, 3, 1).reshape(b, n, width)
        return z.reshape(b, n, width)  # no transpose

    q, k, v = cut(x @ w_q), cut(x @ w_k), cut(x @ w_v)  # (b, h, n, d)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(scale_width or d)  # (b, h, n, n)
    given = None if (mask is None or not use_mask) else (~mask if flip_mask else mask)
    heads = reference_softmax(scores, given) @ v  # (b, h, n, d)
    merged = join(heads)  # (b, n, D)
    return merged @ w_o if output_projection else merged


def _wrong_mhas(x, weights, h, mask):
    width = x.shape[-1]
    yield (
        _mha_variant(x, weights, h, mask, output_projection=False),
        _(
            "W^O is forgotten: MHA(x) = concat(heads) W^O. Without the output projection the heads are only "
            "placed side by side and never mixed."
        ),
        "projection.missing_w_o",
    )
    yield (
        _mha_variant(x, weights, h, mask, scale_width=width),
        _(
            "the scores were divided by √D (the model width) instead of √d (the head size): each head's dot "
            "products add up only d = D/h terms."
        ),
        "scale.width_not_head_size",
    )
    yield (
        _mha_variant(x, weights, 1, mask),
        _(
            "the answer ignores h: it is one head of size D over the whole width. Cut q, k and v into h heads "
            "of d = D/h and run attention in each."
        ),
        "heads.ignores_heads",
    )
    yield (
        _mha_variant(x, weights, 1, mask, scale_width=width // h),
        _(
            "the answer ignores h: it is one attention over the whole width (scaled by √d). Cut q, k and v "
            "into h heads and run attention in each."
        ),
        "heads.ignores_heads",
    )
    if mask is not None:
        yield (
            _mha_variant(x, weights, h, mask, use_mask=False),
            _("the mask is ignored: pass it to the attention of every head (it broadcasts over the heads axis)."),
            "mask.ignored",
        )
        yield (
            _mha_variant(x, weights, h, mask, flip_mask=True),
            _("the mask polarity is flipped: in this course True means *may attend*."),
            "mask.polarity_flipped",
        )
    for merge in ("(h d)", "(d h)"):
        yield (
            _mha_variant(x, weights, h, mask, split="(d h)", merge=merge),
            _("q, k and v were cut into heads in the (d h) order: head i must be the columns i*d … (i+1)*d - 1."),
            "heads.d_h_split",
        )
    for merge in ("(h d)", "none"):
        yield (
            _mha_variant(x, weights, h, mask, split="none", merge=merge),
            _(
                "the heads were cut with a reshape to (b, h, n, d) without a transpose, which mixes tokens into "
                "heads: reshape to (b, n, h, d), then transpose."
            ),
            "heads.reshape_without_transpose",
        )
    yield (
        _mha_variant(x, weights, h, mask, merge="none"),
        _("the heads were merged without the transpose back to (b, n, h, d) before joining h and d."),
        "heads.merge_without_transpose",
    )
    yield (
        _mha_variant(x, weights, h, mask, merge="(d h)"),
        _("the heads were merged in the (d h) order; head i must come back to the columns i*d … (i+1)*d - 1."),
        "heads.d_h_split",
    )
    yield (
        _mha_variant(x, weights, h, mask, transposed_weights=True),
        _("the weights were transposed: in this course they are applied as x @ w (w of shape (D_in, D_out))."),
        "projection.weights_transposed",
    )


def _probe_mha(mha, x, weights, h, mask):
    __tracebackhide__ = True
    b, n, width = x.shape
    if mask is None:
        what = _("multi_head_attention(x, w_q, w_k, w_v, w_o, h={h}) with x of shape {shape}").format(
            h=h, shape=x.shape
        )
    else:
        what = _(
            "multi_head_attention(x, w_q, w_k, w_v, w_o, h={h}, mask) with x of shape {shape} "
            "and a mask of shape {mask_shape}"
        ).format(h=h, shape=x.shape, mask_shape=mask.shape)
    args = (x, *weights, h) + (() if mask is None else (mask,))
    result = plain_array(call(mha, *args, what=what), what=what)
    expected = reference_mha(x, *weights, h, mask)  # (b, n, D)
    if result.shape != expected.shape:
        hint = (
            _("The heads are not merged back: the output has the shape of x, (b, n, D).")
            if result.ndim == 4
            else _("The output has the shape of x, (b, n, D).")
        )
        fail(
            _("{what} should have shape {expected}, but it has shape {actual}.").format(
                what=what, expected=expected.shape, actual=result.shape
            )
            + " "
            + hint,
            "heads.not_merged_back" if result.ndim == 4 else None,
        )
    expect_close(result, expected, what=what, diagnoses=_wrong_mhas(x, weights, h, mask), rtol=1e-6, atol=1e-8)


def _mha_inputs(r, b, n, width):
    x = r.normal(size=(b, n, width))
    # weights of scale 1/sqrt(D): scores of order 1, so scaling and masking visibly change the weights
    weights = tuple(r.normal(size=(width, width)) / np.sqrt(width) for _weight in range(4))
    return x, weights


def _first_sequence(mask, b):
    if mask is not None and mask.ndim == 4 and mask.shape[0] == b:
        return mask[:1]
    return mask


def _run_mha_cases(mha, r, cases):
    __tracebackhide__ = True
    for b, n, width, h, make_mask in cases:
        x, weights = _mha_inputs(r, b, n, width)
        mask = make_mask(r, b, h, n) if make_mask is not None else None
        _batch_aware(_probe_mha, (mha, x, weights, h, mask), (mha, x[:1], weights, h, _first_sequence(mask, b)), b)


def causal(_r, _b, _h, n):
    """(n, n): each query sees itself and the keys before it."""
    return np.tril(np.ones((n, n), dtype=bool))


def padding(_r, b, _h, n):
    """(b, 1, 1, n): sequence s has its first n - s tokens real, the rest filler."""
    lengths = np.maximum(n - np.arange(b) * 2, 1)
    return (np.arange(n)[None, :] < lengths[:, None])[:, None, None, :]


def random_per_head(r, b, h, n):
    """(b, h, n, n): a different random pattern for every head; each query keeps at least itself."""
    return (r.random((b, h, n, n)) < 0.5) | np.eye(n, dtype=bool)


@exercise_check
def check_multi_head_attention(mha, seed: int = 0, thorough: bool = False) -> None:
    """``multi_head_attention(x, w_q, w_k, w_v, w_o, h)`` without a mask, against the reference."""
    __tracebackhide__ = True
    r = rng(seed)
    cases = [(2, 4, 8, 2, None), (3, 5, 12, 3, None)]
    if thorough:
        cases += [(2, 6, 12, 4, None), (1, 3, 8, 2, None), (2, 1, 6, 3, None), (2, 4, 6, 6, None), (3, 4, 6, 1, None)]
    _run_mha_cases(mha, r, cases)
    if thorough:
        passed(_("multi_head_attention matches the reference without a mask (also for n = 1, h = 1 and h = D)"))
    else:
        passed(_("multi_head_attention matches the reference without a mask"))


@exercise_check
def check_multi_head_attention_masked(mha, seed: int = 0, thorough: bool = False) -> None:
    """``multi_head_attention(..., mask)``: the mask broadcasts against the scores (b, h, n, n)."""
    __tracebackhide__ = True
    r = rng(seed)
    cases = [(2, 5, 8, 2, causal), (2, 5, 8, 2, padding)]
    if thorough:
        cases += [
            (3, 6, 12, 3, causal),
            (3, 6, 12, 4, padding),
            (2, 5, 8, 2, random_per_head),
            (2, 4, 12, 6, random_per_head),
        ]
    _run_mha_cases(mha, r, cases)
    if thorough:
        passed(
            _(
                "multi_head_attention applies an (n, n) causal mask and a (b, 1, 1, n) padding mask, "
                "and a different mask for every head"
            )
        )
    else:
        passed(_("multi_head_attention applies an (n, n) causal mask and a (b, 1, 1, n) padding mask"))
