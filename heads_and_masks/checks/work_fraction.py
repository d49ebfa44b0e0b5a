"""Checks for notebook 04: what the causal mask saves, and a tiled kernel that really saves it.

``check_causal_used_entries`` and ``check_causal_used_fraction`` check the two counting formulas;
``check_blocked_causal_attention`` checks the output of the tiled kernel, ``..._count`` the work it
reports, ``..._memory`` that it never holds an n × n matrix, ``..._errors`` that bad arguments are
refused. Each compares with the course's reference; the known wrong variants only name the mistake.
"""

from __future__ import annotations

import math
import tracemalloc

import _tracemalloc
import numpy as np

from ..attention import masked_softmax as _softmax
from ..tiled import blocked_causal_attention as _reference_blocked
from ..tiled import tiled_computed_entries as _reference_computed
from ..i18n import N_, _, ngettext, number, translated
from .core import call, exercise_check, expect_value_error, fail, passed, rng
from .core import expect_close, expect_shape, is_close, plain_array, plain_float, plain_int, plain_values


# Bound now: a learner's cell that replaces these later does not change how memory is measured.
_is_tracing, _start, _stop = tracemalloc.is_tracing, tracemalloc.start, tracemalloc.stop
_get_traced, _reset_peak = tracemalloc.get_traced_memory, tracemalloc.reset_peak


# ---------------------------------------------------------------- the two counting formulas
def _wrong_entries(n):
    yield (
        n * (n - 1) // 2,
        _(
            "the diagonal is missing: a query may attend to itself, so query i (counting from 0) has i + 1 allowed keys, and 1 + 2 + ... + n = n(n+1)/2."
        ),
        "mask.diagonal_forbidden",
    )
    yield (
        n * n,
        _("that is every entry of the n × n matrix; the causal mask keeps only the keys at or before each query."),
        "cost.full_matrix_counted",
    )
    yield (
        n * n / 2,
        _(
            "the diagonal is missing: n²/2 is the lower triangle without it, which is only the limit for "
            "large n. Query i may attend to itself, so the diagonal adds n/2: n(n+1)/2 = n²/2 + n/2."
        ),
        "cost.large_n_limit",
    )
    yield n * n // 2, _("n²/2 is only the limit for large n: the diagonal adds n/2 more entries."), "cost.large_n_limit"
    yield (
        (n + 1) * (n + 2) // 2,
        _("one key too many per query: query i has i + 1 allowed keys (0, ..., i), not i + 2."),
        "mask.future_allowed",
    )


_LARGE_N = 10**6  # the contexts of today's models: the exercise states it, the tests use it


def _count_by_formula() -> str:
    return _(
        "At n = {n} an n × n mask has {entries} entries ({gib} GiB even as booleans): do not build the matrix "
        "to count it, use the formula n(n+1)/2, which costs nothing at any n."
    ).format(n=number(_LARGE_N, ","), entries=number(_LARGE_N**2, ","), gib=number(_LARGE_N**2 / 2**30, ",.0f"))


@exercise_check
def check_causal_used_entries(causal_used_entries, thorough: bool = False) -> None:
    """``causal_used_entries(n)`` must be n(n+1)/2, an int, for every n ≥ 0, up to n = a million."""
    __tracebackhide__ = True
    sizes = [1, 2, 4, 5, 128, 1024] + ([0, 3, 7, 100, 999, 4096, np.int64(12)] if thorough else []) + [_LARGE_N]
    for n in sizes:
        what = f"causal_used_entries({n})"
        got = call(
            causal_used_entries,
            n,
            what=what,
            memory_hint=_count_by_formula() if n >= _LARGE_N else "",
            memory_misconception="cost.builds_matrix_to_count" if n >= _LARGE_N else None,
        )
        expected = int(n) * (int(n) + 1) // 2
        as_number = float(got) if isinstance(got, (float, np.floating)) else got
        if isinstance(as_number, float) and as_number != expected:  # a float answer: say what is wrong with its value
            message = _entries_message(what, n, expected, repr(got))
            misconception = "conventions.not_int"
            for wrong, explanation, named_id in _wrong_entries(int(n)):
                if as_number == wrong:
                    message += " " + _("Likely cause: {explanation}").format(explanation=explanation)
                    misconception = named_id
                    break
            fail(
                message + " " + _("It should also be a whole number (an int): use // rather than / to divide."),
                misconception,
            )
        got = plain_int(got, what=what)
        if got != expected:
            message = _entries_message(what, n, expected, number(got, ","))
            for wrong, explanation, misconception in _wrong_entries(int(n)):
                if got == wrong:
                    fail(
                        message + " " + _("Likely cause: {explanation}").format(explanation=explanation), misconception
                    )
            fail(message)
    if thorough:
        passed(_("causal_used_entries gives n(n+1)/2 as an int, for n up to a million (and from 0 on)"))
    else:
        passed(_("causal_used_entries gives n(n+1)/2 as an int, for n up to a million"))


def _entries_message(what, n, expected, got) -> str:
    return _("{what} should be {expected} (out of n² = {entries}), but it returned {got}.").format(
        what=what, expected=number(expected, ","), entries=number(int(n) ** 2, ","), got=got
    )


def _wrong_fractions(n):
    yield (
        0.5,
        _(
            "1/2 is the limit for large n, not the fraction at this n: the diagonal adds n entries out of n², so the fraction is (n+1)/(2n), a little above 1/2."
        ),
        "cost.large_n_limit",
    )
    yield (
        (n + 1) // (2 * n),
        _("integer division (//) rounds the fraction down to a whole number; use / for a fraction."),
        "numerics.integer_division",
    )
    yield (
        (n - 1) / (2 * n),
        _("the diagonal is missing: query i may attend to itself, so the used entries are n(n+1)/2, not n(n−1)/2."),
        "mask.diagonal_forbidden",
    )
    yield (
        (n + 1) / 2 * n,
        _("operator precedence: (n+1)/2*n multiplies by n; write (n + 1) / (2 * n)."),
        "numerics.operator_precedence",
    )
    yield (
        n * (n + 1) / 2,
        _("that is the number of used entries; the fraction divides it by the n² entries of the matrix."),
        "cost.count_not_fraction",
    )


@exercise_check
def check_causal_used_fraction(causal_used_fraction, thorough: bool = False) -> None:
    """``causal_used_fraction(n)`` must be (n+1)/(2n) for every n ≥ 1."""
    __tracebackhide__ = True
    sizes = [1, 2, 4, 128, 1024] + ([3, 7, 999, 4096, 10**6, np.int64(12)] if thorough else [])
    for n in sizes:
        what = f"causal_used_fraction({n})"
        got = plain_float(call(causal_used_fraction, n, what=what), what=what)
        expected = (int(n) + 1) / (2 * int(n))
        if not math.isclose(got, expected, rel_tol=1e-12, abs_tol=0.0):
            message = _("{what} should be {expected} ({percent}), but it returned {got}.").format(
                what=what, expected=number(expected, ".10g"), percent=number(expected, ".4%"), got=repr(got)
            )
            for wrong, explanation, misconception in _wrong_fractions(int(n)):
                if math.isclose(got, wrong, rel_tol=1e-12, abs_tol=1e-15):
                    fail(
                        message + " " + _("Likely cause: {explanation}").format(explanation=explanation), misconception
                    )
            fail(message)
    if thorough:
        passed(_("causal_used_fraction gives (n+1)/(2n), which falls towards 1/2 from above"))
    else:
        passed(_("causal_used_fraction gives (n+1)/(2n)"))


# ---------------------------------------------------------------- the tiled kernel
def _tile_index(n, block):
    return np.arange(n) // block  # the tile each position falls in


def _attend(q, k, v, allowed, *, scale=True):
    """Attention with an explicit (n, n) allowed-mask; rows with nothing allowed give 0."""
    scores = q @ k.T / (np.sqrt(q.shape[1]) if scale else 1.0)
    return _softmax(scores, allowed) @ v


def _wrong_outputs(q, k, v, block):
    """What the usual mistakes produce on these inputs (only to name the mistake)."""
    n = q.shape[0]
    tile = _tile_index(n, block)
    causal = np.arange(n)[None, :] <= np.arange(n)[:, None]
    same_or_earlier_tile = tile[None, :] <= tile[:, None]
    earlier_tile = tile[None, :] < tile[:, None]
    yield (
        _attend(q, k, v, same_or_earlier_tile),
        _(
            "the diagonal tiles were not masked inside, so a query saw the keys after it in its own tile "
            "(the future leaks). Inside a diagonal tile, set the scores of keys after the query to -inf."
        ),
        "tiles.diagonal_unmasked",
    )
    yield (
        _attend(q, k, v, np.ones((n, n), bool)),
        _("no causal mask at all: every query saw every key (the future leaks)."),
        "mask.ignored",
    )
    skipped_diagonal = _attend(q, k, v, earlier_tile)
    yield (
        skipped_diagonal,
        _(
            "the diagonal tiles were skipped: a query may attend to itself and to the keys "
            "before it in its own tile, so the diagonal tiles must be computed (and masked inside)."
        ),
        "tiles.diagonal_skipped",
    )
    with np.errstate(all="ignore"):
        nan_rows = np.where(earlier_tile.any(axis=1, keepdims=True), skipped_diagonal, np.nan)
    yield (
        nan_rows,
        _("the diagonal tiles were skipped (the first tile's queries then have no key at all)."),
        "tiles.diagonal_skipped",
    )
    yield (
        _attend(q, k, v, causal, scale=False),
        _("the scores are not divided by sqrt(d) (d = the width of q and k)."),
        "scale.missing",
    )
    per_tile = np.zeros((n, v.shape[1]))
    for key_tile in range(tile.max() + 1):
        allowed = causal & (tile[None, :] == key_tile)
        per_tile += _attend(q, k, v, allowed)
    yield (
        per_tile,
        _(
            "each key tile got its own softmax and the results were added: the softmax must run over "
            "all the keys of a query, across tiles (keep a running maximum and sum, and rescale what "
            "was accumulated when the maximum grows)."
        ),
        "tiles.softmax_per_tile",
    )


_SKIPPED_DIAGONAL = N_(
    "the diagonal tiles were skipped: a query may attend to itself and to the keys before "
    "it in its own tile, so a diagonal tile must be computed (whole) and masked inside (key > query "
    "set to -inf). Only the tiles strictly above the diagonal, whose keys all come after all their "
    "queries, are skipped."
)


def _skipped_diagonal_tiles(out, q, k, v, block) -> list[int]:
    """The query tiles whose rows come out as if their diagonal tile had been skipped (else [])."""
    n = q.shape[0]
    if out.shape != (n, v.shape[1]) or n == 0:
        return []
    tile = _tile_index(n, block)
    causal = np.arange(n)[None, :] <= np.arange(n)[:, None]
    right = _attend(q, k, v, causal)
    earlier_only = _attend(q, k, v, tile[None, :] < tile[:, None])  # rows with no earlier key: 0
    has_earlier = tile > 0
    with np.errstate(all="ignore"):
        ok = np.isclose(out, right, rtol=1e-5, atol=1e-8).all(axis=1)
        # a row whose query tile has no earlier keys gets nothing at all: NaN, zeros, whatever the answer fills in
        skipped = np.where(has_earlier, np.isclose(out, earlier_only, rtol=1e-5, atol=1e-8).all(axis=1), True)
        differs = ~np.isclose(right, earlier_only, rtol=1e-5, atol=1e-8).all(axis=1) | ~has_earlier
    if not (ok | skipped).all():
        return []
    missing = sorted({int(t) for t in tile[skipped & ~ok & differs]})
    return missing


_ONLINE_HINT = N_(
    "If you use a running (online) softmax: when the running maximum m grows to m_new, multiply both "
    "the running sum and the accumulated output by exp(m − m_new) before adding the new tile, and "
    "divide by the running sum only at the end."
)


def _inputs(r, n, d, d_v, scale=1.0):
    return r.normal(size=(n, d)) * scale, r.normal(size=(n, d)) * scale, r.normal(size=(n, d_v))


def _run(blocked, q, k, v, block, label, memory_hint=""):
    """Call the learner's kernel; return (out, computed) as plain, checked values."""
    __tracebackhide__ = True
    what = f"blocked_causal_attention(q, k, v, block={block}) {label}"
    result = call(
        blocked,
        q,
        k,
        v,
        block,
        what=what,
        memory_hint=memory_hint,
        memory_misconception="tiles.full_matrix_built" if memory_hint else None,
    )
    result = plain_values(result, ("out", "computed"), what=what)
    out = plain_array(result[0], what=_("the output of {what}").format(what=what))
    computed = plain_int(result[1], what=_("the count `computed` of {what}").format(what=what))
    return what, out, computed


def _cases(r, thorough):
    """(label, q, k, v, block): divisible and ragged tilings, tiny and degenerate shapes, huge scores."""
    cases = [(8, 4, 3, 4, 1.0), (10, 3, 2, 4, 1.0), (6, 2, 2, 1, 1.0), (3, 4, 2, 8, 1.0), (12, 4, 3, 4, 40.0)]
    if thorough:
        cases += [
            (1, 1, 1, 1, 1.0),
            (1, 3, 2, 5, 1.0),
            (17, 5, 3, 4, 1.0),
            (33, 8, 8, 8, 1.0),
            (31, 4, 4, 7, 1.0),
            (64, 16, 4, 16, 1.0),
            (9, 3, 5, 3, 60.0),
            (20, 6, 2, 20, 1.0),
            (21, 6, 2, 20, 1.0),
        ]
        for _draw in range(4):
            n = int(r.integers(1, 40))
            cases.append((n, int(r.integers(1, 9)), int(r.integers(1, 5)), int(r.integers(1, n + 3)), 1.0))
    for n, d, d_v, block, scale in cases:
        q, k, v = _inputs(r, n, d, d_v, scale)
        if scale > 1:
            label = _("with n = {n}, d = {d}, d_v = {d_v} and very large scores").format(n=n, d=d, d_v=d_v)
        else:
            label = _("with n = {n}, d = {d}, d_v = {d_v}").format(n=n, d=d, d_v=d_v)
        yield label, q, k, v, block


@exercise_check
def check_blocked_causal_attention(blocked_causal_attention, seed: int = 0, thorough: bool = False) -> None:
    """The output of the tiled kernel equals causal attention, for any n and any block ≥ 1."""
    __tracebackhide__ = True
    r = rng(seed)
    for label, q, k, v, block in _cases(r, thorough):
        what, out, _computed = _run(blocked_causal_attention, q, k, v, block, label)
        expected, _count = _reference_blocked(q, k, v, block)
        the_output = _("the output of {what}").format(what=what)
        expect_shape(
            out, expected.shape, what=the_output, hint=_("It has one row per query and the width of v: (n, d_v).")
        )
        hint = translated(_ONLINE_HINT)
        n, rows = q.shape[0], q.shape[0] % block
        if rows:
            hint = (
                ngettext(
                    "Here n = {n} is not a multiple of block = {block}: the last tile is smaller ({rows} row); "
                    "slices like q[start:start + block] handle that by themselves.",
                    "Here n = {n} is not a multiple of block = {block}: the last tile is smaller ({rows} rows); "
                    "slices like q[start:start + block] handle that by themselves.",
                    rows,
                ).format(n=n, block=block, rows=rows)
                + " "
                + hint
            )
        missing = [] if is_close(out, expected) else _skipped_diagonal_tiles(out, q, k, v, block)
        if missing:
            _fail_skipped_diagonal(the_output, missing, tiles=-(-n // block))
        expect_close(out, expected, what=the_output, diagnoses=_wrong_outputs(q, k, v, block), hint=hint)
    if thorough:
        passed(
            _("blocked_causal_attention computes causal attention for every tiling tried, ragged last tiles included")
        )
    else:
        passed(_("blocked_causal_attention computes causal attention, also when block does not divide n"))


def _fail_skipped_diagonal(the_output, missing, tiles) -> None:
    """Fail on an output whose wrong rows are those of query tiles whose diagonal tile was skipped."""
    __tracebackhide__ = True
    message = ngettext(
        "{the_output} is wrong for the queries of {wrong} of the {tiles} query tile.",
        "{the_output} is wrong for the queries of {wrong} of the {tiles} query tiles.",
        tiles,
    ).format(the_output=the_output, wrong=len(missing), tiles=tiles)
    if len(missing) < tiles:  # which ones, as a sentence of its own
        message += " " + ngettext(
            "That is query tile {which}, counting from 0.",
            "Those are query tiles {which}, counting from 0.",
            len(missing),
        ).format(which=", ".join(map(str, missing)))
    explanation = translated(_SKIPPED_DIAGONAL)
    fail(message + " " + _("Likely cause: {explanation}").format(explanation=explanation), "tiles.diagonal_skipped")


def _missing_diagonal_tiles(n, block, computed) -> int:
    """How many diagonal tiles a count leaves out, if it is the right count minus some diagonal tiles (else 0)."""
    sizes = [min(block, n - start) for start in range(0, n, block)]
    shortfall = _reference_computed(n, block) - computed
    if shortfall <= 0:
        return 0
    reachable = {0: 0}  # subset sums of the diagonal tiles' sizes -> fewest tiles that make them
    for size in sizes:
        for total, count in list(reachable.items()):
            reachable.setdefault(total + size * size, count + 1)
    return reachable.get(shortfall, 0)


def _wrong_counts(n, block):
    tiles = -(-n // block)  # tiles a side, the last one possibly smaller
    sizes = [min(block, n - start) for start in range(0, n, block)]
    below = sum(sizes[i] * sizes[j] for i in range(tiles) for j in range(i))
    yield (
        n * n,
        _(
            "every tile was computed (or counted), also those above the diagonal; a tile whose keys all come after all its queries must be skipped."
        ),
        "tiles.every_tile_computed",
    )
    yield (
        n * (n + 1) // 2,
        _(
            "that is the ideal count n(n+1)/2, not what your kernel did: a diagonal tile is computed "
            "whole (all its block × block scores) and only then masked, so count every entry of every tile you compute."
        ),
        "tiles.ideal_count",
    )
    yield (
        below,
        _("the diagonal tiles are missing from the count (were they skipped?); they are computed and masked inside."),
        "tiles.diagonal_skipped",
    )
    yield (
        (tiles * (tiles + 1) // 2) * block * block,
        ngettext(
            "each tile was counted as block × block = {entries} entry, but when block does not divide n the last "
            "row and column of tiles are smaller: count the real size of each tile (len of the query slice × len of the key slice).",
            "each tile was counted as block × block = {entries} entries, but when block does not divide n the last "
            "row and column of tiles are smaller: count the real size of each tile (len of the query slice × len of the key slice).",
            block * block,
        ).format(entries=block * block),
        "tiles.ragged_last_tile",
    )
    whole = n // block
    yield (
        whole * (whole + 1) // 2 * block * block,
        _(
            "only the complete tiles were counted (or computed): n = {n} is not a multiple of block = {block}, so the "
            "last row of tiles is narrower and must be included too."
        ).format(n=n, block=block),
        "tiles.ragged_last_tile",
    )
    yield (
        tiles * (tiles + 1) // 2,
        _("that is the number of tiles computed; count the score entries (each tile holds rows × columns of them)."),
        "tiles.counted_tiles_not_entries",
    )


@exercise_check
def check_blocked_causal_attention_count(
    blocked_causal_attention, seed: int = 0, thorough: bool = False, n: int = 2048
) -> None:
    """``computed`` is the number of score entries of the tiles actually computed: no more, no less; at ``n``
    (graded: 16384, whose whole score matrix, or even every causal score packed in float32, a grading kernel of 04
    cannot hold) the memory of the same call says
    whether those tiles are all that was computed."""
    __tracebackhide__ = True
    r = rng(seed + 1)
    for label, q, k, v, block in _cases(r, thorough):
        what, _out, computed = _run(blocked_causal_attention, q, k, v, block, label)
        size = q.shape[0]
        expected = _reference_computed(size, block)
        if computed != expected:
            _fail_count(what, size, block, computed, expected)
    # The count is the learner's own report: at a large n the memory of the same call says whether the tiles it
    # counts are all that was computed (the whole n × n matrix does not fit in a tiled kernel's memory).
    d, block = 8, 64  # d = 8: at n = 16384 the output (1 MiB of float64) stays well within what the judge passes back
    q, k, v = _inputs(r, n, d, d)
    label = _("with n = {n}, d = {d}").format(n=n, d=d)
    what, _out, computed, peak = _measured_run(blocked_causal_attention, q, k, v, block, label)
    expected = _reference_computed(n, block)
    limit = _memory_limit(q, k, v, block)
    if computed == expected and peak > limit:
        fail(
            _(
                "the count `computed` of {what} is {computed}, the entries of the tiles on and below the diagonal, "
                "but the kernel did more than that: {memory} Count only what is really computed."
            ).format(what=what, computed=computed, memory=_full_matrix_message(what, peak, limit, n, block)),
            "tiles.full_matrix_built",
        )
    if computed != expected:
        _fail_count(what, n, block, computed, expected)
    passed(_("blocked_causal_attention counts exactly the entries of the tiles it computed"))


def _fail_count(what, n, block, computed, expected, after: str = "") -> None:
    """Fail on a wrong count ``computed``, naming the mistake that gives exactly that count when one does."""
    __tracebackhide__ = True
    message = ngettext(
        "the count `computed` of {what} should be {expected} score entry ({share} of the n² = {entries}), "
        "but it is {computed}.",
        "the count `computed` of {what} should be {expected} score entries ({share} of the n² = {entries}), "
        "but it is {computed}.",
        expected,
    ).format(what=what, expected=expected, share=number(expected / n**2, ".1%"), entries=n * n, computed=computed)
    if after:
        message += " " + after
    for wrong, explanation, misconception in _wrong_counts(n, block):
        if computed == wrong:
            fail(message + " " + _("Likely cause: {explanation}").format(explanation=explanation), misconception)
    missing = _missing_diagonal_tiles(n, block, computed)
    if missing:
        tiles = -(-n // block)
        # the English keeps "tile(s)" (the catalog of wrong answers quotes it); the Russian says it without a plural
        short = _("That is exactly {missing} diagonal tile(s) short, of the {tiles} on the diagonal.").format(
            missing=missing, tiles=tiles
        )
        cause = _("Likely cause: {explanation}").format(explanation=translated(_SKIPPED_DIAGONAL))
        fail(
            message + " " + short + " " + cause + " " + _("Count every entry of every tile you compute."),
            "tiles.diagonal_skipped",
        )
    fail(message)


class _MemoryProbe:
    """tracemalloc around one call, on the learner's own machine (a graded call is measured by the grader,
    from outside the learner's kernel: :func:`_measured_run`); the learner's code may not stop it meanwhile."""

    _names = ("stop", "start", "reset_peak", "clear_traces")

    def __enter__(self):
        self.was_tracing = _is_tracing()
        if not self.was_tracing:
            _start()
        self.saved = [
            (module, name, getattr(module, name)) for module in (tracemalloc, _tracemalloc) for name in self._names
        ]
        for module, name, _original in self.saved:
            setattr(module, name, self._refuse(name))
        _reset_peak()
        self.base = _get_traced()[0]
        return self

    @staticmethod
    def _refuse(name):
        def refused(*args, **kwargs):
            raise RuntimeError(
                _("tracemalloc.{name}() is not available while the memory of your answer is measured").format(name=name)
            )

        return refused

    def peak(self) -> int:
        if not _is_tracing():
            fail(_("tracemalloc was stopped while your answer ran, so its memory could not be measured."))
        return max(0, _get_traced()[1] - self.base)

    def __exit__(self, *exc):
        for module, name, original in self.saved:
            setattr(module, name, original)
        if not self.was_tracing and _is_tracing():
            _stop()
        return False


def _too_large_hint(n, block) -> str:
    """What a call at ``n`` that ran out of memory most likely did (graded, 04's kernels cannot hold the matrix)."""
    mib = 2**20
    sizes = _(
        "At n = {n} one n × n float64 matrix is {matrix} MiB ({matrix32} MiB in float32), while a strip of "
        "block × n scores is {strip} MiB: a tiled kernel fits in memory where the whole matrix does not."
    ).format(
        n=n,
        matrix=number(n * n * 8 / mib, ",.0f"),
        matrix32=number(n * n * 4 / mib, ",.0f"),
        strip=number(block * n * 8 / mib, ".1f"),
    )
    return (
        sizes
        + " "
        + _(
            "Likely cause: the whole score matrix (or the weights, or an n × n mask) is built at once; keep only one "
            "tile (or one strip of block query rows) of scores at a time."
        )
    )


def _measured_run(blocked, q, k, v, block, label):
    """One call of the learner's kernel and the memory that very call needed: (what, out, computed, peak bytes).

    Graded, ``blocked`` stands for the function in the learner's kernel (autograde/judge.py): the grader
    measures every call it makes there from outside that kernel (``last_peak_bytes``), so this call looks
    like any other and its output, count and memory are graded together. On the learner's own machine,
    tracemalloc measures it here.
    """
    __tracebackhide__ = True
    hint = _too_large_hint(q.shape[0], block)
    if hasattr(blocked, "last_peak_bytes"):
        what, out, computed = _run(blocked, q, k, v, block, label, hint)
        peak = blocked.last_peak_bytes
        if peak is None:
            fail(_("the memory of {what} could not be measured in your kernel.").format(what=what))
        return what, out, computed, peak
    with _MemoryProbe() as probe:
        what, out, computed = _run(blocked, q, k, v, block, label, hint)
        peak = probe.peak()
    return what, out, computed, peak


# The memory a tiled kernel may use at its peak, relative to what it is given: a few strips of block × n
# scores (a query strip over its allowed keys, with its exponentials and mask; an online softmax needs far
# less), and, graded, the inputs and the output as they travel to and from the learner's kernel (the
# request's text, decoded, and the reply's: about 7 times their bytes). Measured from outside the kernel
# (docs/security.md has the table): at n = 2048, d = 16, block = 64 this limit is 24 MiB; the correct styles
# of the catalog peaked at 6-10 MiB, the whole score matrix at 100 MiB (float64) and 56 MiB (float32).
# An n × n boolean mask is only n / (8 · block) strips (4 here): this test does not tell it from a strip.
_STRIPS = 12  # block × n float64 strips
_WIRE = 10  # times the bytes of q, k, v and the output
_SLACK = 2 * 2**20  # bytes: the kernel's own bookkeeping around a call


_DIAGNOSED_UP_TO = 2500  # n: beyond it a wrong output is not compared with the known mistakes (n × n each)


def _memory_limit(q, k, v, block) -> int:
    n = q.shape[0]
    return _STRIPS * n * min(block, n) * 8 + _WIRE * (q.nbytes + k.nbytes + v.nbytes + n * v.shape[1] * 8) + _SLACK


def _full_matrix_message(what, peak, limit, n, block) -> str:
    mib = 2**20
    sizes = _(
        "{what} needed {peak} MiB of memory at its peak (measured while it ran), but a tiled kernel should stay "
        "below {limit} MiB: one n × n float64 matrix alone is {matrix} MiB, a strip of block × n scores {strip} MiB "
        "and a tile only {tile} KiB."
    ).format(
        what=what,
        peak=number(peak / mib, ".1f"),
        limit=number(limit / mib, ".0f"),
        matrix=number(n * n * 8 / mib, ".0f"),
        strip=number(block * n * 8 / mib, ".1f"),
        tile=number(block * block * 8 / 1024, ".0f"),
    )
    return (
        sizes
        + " "
        + _(
            "Likely cause: the whole score matrix (or the weights, or an n × n float mask) is built and then masked; "
            "keep only one tile (or one strip of block query rows) of scores at a time."
        )
    )


@exercise_check
def check_blocked_causal_attention_memory(
    blocked_causal_attention, n: int = 2048, d: int = 16, block: int = 64, seed: int = 0
) -> None:
    """One call at n = 2048 (an n × n float64 matrix is 32 MiB; graded, also one at 16384, 2 GiB, and even every
    causal score packed in float32 is 512 MiB, more than a grading kernel of 04 may hold): its output, its count and
    its peak memory, which must stay within a few strips of block × n scores."""
    __tracebackhide__ = True
    r = rng(seed + 2)
    q, k, v = _inputs(r, n, d, d)
    label = _("with n = {n}, d = {d}").format(n=n, d=d)
    what, out, computed, peak = _measured_run(blocked_causal_attention, q, k, v, block, label)
    expected, expected_count = _reference_blocked(q, k, v, block)
    expect_close(
        out,
        expected,
        what=_("the output of {what}").format(what=what),
        # each known mistake is an n × n computation here: named at small n only (the output test names it)
        diagnoses=_wrong_outputs(q, k, v, block) if n <= _DIAGNOSED_UP_TO else (),
        hint=_(
            "The memory is measured only for a correct output: fix the output first (the test of the "
            "output above names the likely mistake)."
        ),
    )
    if computed != expected_count:
        after = _("The memory is measured only for a correct count.")
        _fail_count(what, n, block, computed, expected_count, after=after)
    limit = _memory_limit(q, k, v, block)
    if peak > limit:
        fail(_full_matrix_message(what, peak, limit, n, block), "tiles.full_matrix_built")
    mib = 2**20
    passed(
        _(
            "blocked_causal_attention at n = {n} peaked at {peak} MiB (one n × n float64 matrix would be {matrix} MiB)"
        ).format(n=n, peak=number(peak / mib, ".2f"), matrix=number(n * n * 8 / mib, ".0f"))
    )


@exercise_check
def check_blocked_causal_attention_errors(blocked_causal_attention) -> None:
    """Bad arguments are refused with ValueError."""
    __tracebackhide__ = True
    r = rng(3)
    q, k, v = _inputs(r, 6, 3, 2)
    for block in (0, -2):
        expect_value_error(
            blocked_causal_attention,
            q,
            k,
            v,
            block,
            what=f"blocked_causal_attention(q, k, v, block={block})",
            why=_("a tile needs at least one row: block must be at least 1"),
        )
    expect_value_error(
        blocked_causal_attention,
        q,
        r.normal(size=(7, 3)),
        v,
        2,
        what=_("blocked_causal_attention with q of 6 rows and k of 7 rows"),
        why=_("q, k and v must have the same number of rows n"),
    )
    expect_value_error(
        blocked_causal_attention,
        q,
        k,
        r.normal(size=(5, 2)),
        2,
        what=_("blocked_causal_attention with q and k of 6 rows and v of 5 rows"),
        why=_("q, k and v must have the same number of rows n"),
    )
    passed(_("blocked_causal_attention refuses block < 1 and q, k, v of different lengths with ValueError"))
