"""Checks for notebook 02: the two heads of the retrieval task, and the winning rate of a noisy match.

``retrieval_heads`` is judged by what its weights *do*: the attention each head pays (through the
course's attention, with the causal mask and the 1/sqrt(d) scaling) and the values it hands back,
over several sequence lengths and random contents. Any head size, any scale, any layout that does
the job passes.

``winning_rate`` is a simulation, so its answer is random: it is compared with the exact probability
(computed by integration, :func:`heads_and_masks.score_noise.exact_winning_rate`) with a margin of
six standard errors of a correct simulation with that many trials. A correct answer, whatever its
random numbers, misses that margin with probability about 2e-9 per comparison; the mistakes the
checkpoints were chosen for miss it by several margins.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from ..i18n import N_, _, number, translated
from ..retrieval import head_weights, token_vectors
from ..score_noise import exact_winning_rate, win_probability
from .core import call, exercise_check, expect_value_error, fail, passed, rng
from .core import expect_close, plain_array, plain_float, plain_values

_type, _len = builtins.type, builtins.len

ENOUGH = 0.98  # the weight a head must put on the key its rule names
TRIALS = 4000  # trials the checks ask of winning_rate
MARGIN = 6.0  # standard errors

# the two heads by their rules, as a failure names them (the subject of its sentence)
_HEAD_NAMES = (N_("head 0 (previous token)"), N_("head 1 (first token)"))


# ------------------------------------------------------------------ retrieval_heads
def _learner_heads(retrieval_heads, n, c):
    __tracebackhide__ = True
    what = f"retrieval_heads({n}, {c})"
    names = ("w_q", "w_k", "w_v")
    result = plain_values(call(retrieval_heads, n, c, what=what), names, what=what)
    w_q, w_k, w_v = (plain_array(w, what=f"{what}[{i}] ({name})") for i, (w, name) in enumerate(zip(result, names)))
    return what, w_q, w_k, w_v


def _expect_rule_shapes(what, w_q, w_k, n, c):
    __tracebackhide__ = True
    width = c + n
    if w_q.ndim != 3 or w_q.shape[:2] != (2, width):
        fail(
            _(
                "{what}: w_q should have shape (2, c + n, d) = (2, {width}, d), one (c + n, d) matrix per head "
                "for any head size d ≥ 1, but it has shape {shape}."
            ).format(what=what, width=width, shape=w_q.shape)
        )
    if w_k.shape != w_q.shape:
        fail(
            _(
                "{what}: w_k should have the same shape as w_q, {q_shape} (queries and keys of a head share "
                "the head size d), but it has shape {k_shape}."
            ).format(what=what, q_shape=w_q.shape, k_shape=w_k.shape)
        )
    if w_q.shape[2] < 1:
        fail(_("{what}: the head size d (last axis of w_q) must be at least 1.").format(what=what))
    if not (np.isfinite(w_q).all() and np.isfinite(w_k).all()):
        fail(
            _(
                "{what}: w_q and w_k must be finite numbers (inf - inf gives NaN scores); a large finite "
                "number like 100 is sharp enough."
            ).format(what=what)
        )


def _rule_holds(weights, head, rule):
    """Weight each query t ≥ 1 puts on the key the rule names: (n - 1,)."""
    n = weights.shape[-1]
    t = np.arange(1, n)
    wanted = t - 1 if rule == "previous" else np.zeros_like(t)
    return weights[head, t, wanted]


def _follows(weights, head, rule):
    return bool(_rule_holds(weights, head, rule).min() >= ENOUGH)


def _favourite(weights, head):
    """The key with the largest weight for each query t ≥ 1: (n - 1,)."""
    return np.argmax(weights[head, 1:], axis=-1)


def _diagnose_rules(weights, unmasked, n, c, d):
    """A sentence naming what the two heads do instead of their rules, and the misconception's id."""
    t = np.arange(1, n)
    prev_ok, first_ok = _follows(weights, 0, "previous"), _follows(weights, 1, "first")
    scale_note = (
        " "
        + _(
            "Remember that the scores are divided by sqrt(d) = {root} before the softmax: "
            "a lead of g in q·k becomes g/sqrt(d)."
        ).format(root=number(math.sqrt(d), ".3g"))
        if d > 1
        else ""
    )
    if _follows(weights, 0, "first") and _follows(weights, 1, "previous"):
        return _(
            "your two heads are swapped: head 0 must follow the 'previous token' rule and head 1 the "
            "'first token' rule (the output is [content of t-1 | content of 0], in that order)."
        ), "retrieval.heads_swapped"
    if not first_ok and prev_ok and _follows(weights, 1, "previous"):
        return _(
            "both heads follow the 'previous token' rule: a second head is only useful with a different "
            "rule; head 1 must attend to the first token (position 0) from every query."
        ), "retrieval.same_rule_twice"
    if not prev_ok and first_ok and _follows(weights, 0, "first"):
        return _(
            "both heads follow the 'first token' rule: head 0 must attend to the previous token, key t - 1 for query t."
        ), "retrieval.same_rule_twice"
    for head, rule, ok in ((0, "previous", prev_ok), (1, "first", first_ok)):
        if ok:
            continue
        name = translated(_HEAD_NAMES[head])
        wanted = t - 1 if rule == "previous" else np.zeros_like(t)
        on_rule = _rule_holds(weights, head, rule)
        worst = int(np.argmin(on_rule))
        favourite = _favourite(weights, head)
        if head == 0 and n > 2 and np.all(np.argmax(unmasked[0, :-1], axis=-1) == np.arange(1, n)):
            return _(
                "{name} asks for the *next* token, t + 1, which the causal mask forbids (so its weights "
                "spread evenly). With x @ w, row t of w_q is the query of token t: its entry must sit in the "
                "column of key t - 1 (np.eye(n, k=-1), not k=1)."
            ).format(name=name), "retrieval.asks_next_token"
        if np.all(favourite == t) and not (rule == "first" and n == 2):
            if rule == "previous":
                itself = _(
                    "{name} attends to the current token itself (key t for query t); it must ask for "
                    "the token before it, key t - 1."
                )
            else:
                itself = _(
                    "{name} attends to the current token itself (key t for query t); it must ask for "
                    "position 0 whatever t is."
                )
            return itself.format(name=name), "retrieval.attends_itself"
        if np.all(favourite == wanted):
            return _(
                "{name} picks the right key but not sharply enough: at query t = {t} the right key "
                "gets only {weight} of the weight (at least {enough} is needed). Make the "
                "wanted score lead the others by more: softmax turns a lead of g into a weight of about "
                "1 / (1 + (n - 1) e^-g), so scale the queries up."
            ).format(
                name=name, t=worst + 1, weight=number(on_rule[worst], ".3f"), enough=number(ENOUGH)
            ) + scale_note, "retrieval.not_sharp_enough"
        return _(
            "{name} should put at least {enough} of its weight on key {key} for query "
            "t = {t}, but puts {weight} there and its largest weight {largest} on key {favourite}."
        ).format(
            name=name,
            enough=number(ENOUGH),
            key=int(wanted[worst]),
            t=worst + 1,
            weight=number(on_rule[worst], ".3f"),
            largest=number(weights[head, worst + 1].max(), ".3f"),
            favourite=int(favourite[worst]),
        ), None
    return _("the heads do not follow their rules."), None


def _causal_scores(x, w_q, w_k) -> np.ndarray:
    """The heads' scores q·k/sqrt(d) on the keys each query may see, minus their mean per row: (h, n, n), 0 elsewhere."""
    q = np.einsum("nD,hDd->hnd", x, w_q)  # (h, n, d)
    k = np.einsum("nD,hDd->hnd", x, w_k)  # (h, n, d)
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])  # (h, n, n)
    seen = np.tril(np.ones(scores.shape[-2:], dtype=bool))  # (n, n)
    with np.errstate(all="ignore"):
        mean = np.where(seen, scores, 0.0).sum(-1, keepdims=True) / seen.sum(-1, keepdims=True)  # (h, n, 1)
        centred = np.where(seen, scores - mean, 0.0)
    return np.nan_to_num(centred, nan=0.0, posinf=0.0, neginf=0.0)


@exercise_check
def check_retrieval_heads(retrieval_heads, seed: int = 0, thorough: bool = False) -> None:
    """Each head puts at least 98% of its attention where its rule says, for random contents."""
    __tracebackhide__ = True
    r = rng(seed)
    cases = [(6, 3)] + ([(2, 1), (12, 4), (32, 2)] if thorough else [])
    for n, c in cases:
        what, w_q, w_k, _w_v = _learner_heads(retrieval_heads, n, c)
        _expect_rule_shapes(what, w_q, w_k, n, c)
        d = w_q.shape[2]
        for _draw in range(3):
            contents = r.uniform(-1, 1, size=(n, c))
            x = token_vectors(contents)  # (n, c + n)
            weights = head_weights(x, w_q, w_k)  # (2, n, n), causal, scaled by 1/sqrt(d)
            if not np.isfinite(weights).all():
                fail(
                    _(
                        "{what}: the attention weights of your heads contain NaN or inf (are the scores too "
                        "large? a lead of about 20 after the 1/sqrt(d) scaling is plenty)."
                    ).format(what=what)
                )
            if not (_follows(weights, 0, "previous") and _follows(weights, 1, "first")):
                diagnosis, misconception = _diagnose_rules(weights, head_weights(x, w_q, w_k, causal=False), n, c, d)
                other_contents = r.uniform(-1, 1, size=(n, c))
                other = head_weights(token_vectors(other_contents), w_q, w_k)
                # Weights saturated by huge scores may look alike for two contents on some draws; the scores
                # themselves (up to a constant per row, which softmax ignores) tell a head that reads content.
                shift = _causal_scores(token_vectors(other_contents), w_q, w_k) - _causal_scores(x, w_q, w_k)
                if np.abs(other - weights).max() > 1e-3 or np.abs(shift).max() > 1e-6:
                    diagnosis = _(
                        "your heads' weights change when only the token contents change (same positions): "
                        "a rule by position must read only the position part of x, rows c: of w_q and "
                        "w_k; make rows :c zero. With these contents: {diagnosis}"
                    ).format(diagnosis=diagnosis)
                    misconception = "retrieval.reads_content"
                fail(f"{what}: {diagnosis}", misconception)
        passed(
            _(
                "retrieval_heads({n}, {c}): head 0 attends to the previous token, head 1 to the first token "
                "(at least {enough} of the weight, for any contents)"
            ).format(n=n, c=c, enough=number(ENOUGH))
        )


@exercise_check
def check_retrieval_heads_values(retrieval_heads, seed: int = 0, thorough: bool = False) -> None:
    """Each head hands back the content of the token it fetches (tested with the ideal attention)."""
    __tracebackhide__ = True
    r = rng(seed + 1)
    cases = [(6, 3)] + ([(2, 1), (9, 5), (4, 7)] if thorough else [])
    for n, c in cases:
        what, _w_q, _w_k, w_v = _learner_heads(retrieval_heads, n, c)
        if w_v.shape != (2, c + n, c):
            fail(
                _(
                    "{what}: w_v should have shape (2, c + n, c) = (2, {width}, {c}): each head turns a token into "
                    "a value of c = {c} numbers, so the two heads side by side give 2c; it has shape {shape}."
                ).format(what=what, width=c + n, c=c, shape=w_v.shape)
            )
        for _draw in range(2):
            contents = r.uniform(-1, 1, size=(n, c))
            values = np.einsum("nD,hDv->hnv", token_vectors(contents), w_v)  # (2, n, c)
            # head 0 fetches tokens 0 .. n-2 (the previous token of 1 .. n-1); head 1 fetches token 0
            for head, fetched, values_of in (
                (
                    0,
                    slice(0, n - 1),
                    N_("{what}: the values of head 0 (previous token), x @ w_v[0], for the tokens it fetches"),
                ),
                (
                    1,
                    slice(0, 1),
                    N_("{what}: the values of head 1 (first token), x @ w_v[1], for the tokens it fetches"),
                ),
            ):
                expect_close(
                    values[head, fetched],
                    contents[fetched],
                    what=translated(values_of).format(what=what),
                    diagnoses=[
                        (
                            token_vectors(contents)[fetched, c : c + c],
                            _(
                                "the values read the position part of x; they must copy the content, the first c "
                                "numbers."
                            ),
                            "retrieval.values_read_position",
                        )
                    ]
                    if n >= c
                    else [],
                    hint=_(
                        "w_v[h] must copy the content (the first c numbers of x) and add nothing from "
                        "the position part to the tokens the head fetches: the first c rows an "
                        "identity, the rows of those positions zero."
                    ),
                )
        passed(
            _("retrieval_heads({n}, {c}): both heads hand back the content of the token they attend to").format(
                n=n, c=c
            )
        )


# ------------------------------------------------------------------ winning_rate
def margin(p: float, trials: int) -> float:
    """Six standard errors of a simulated frequency of p over ``trials`` (p(1-p) floored at 0.01·0.99)."""
    return MARGIN * math.sqrt(max(p * (1 - p), 0.01 * 0.99) / trials)


def _wrong_rates(d, noise, n_keys):
    """What the usual mistakes estimate, exactly: (probability, explanation)."""
    rivals = n_keys - 1
    yield (
        win_probability(d, noise, noise, 1),
        _(
            "the match was compared with each other key separately (a pairwise rate); it wins only when it beats "
            "every other key at once: compare its score with the maximum of the others."
        ),
        "noise.pairwise_rate",
    )
    yield (
        win_probability(d, 0.0, noise, rivals),
        _(  # the same rate as noise-free unrelated keys
            "the query has no noise (or the unrelated keys have none); every view is noisy: "
            "q = meaning + noise·ε, and each key is its own meaning + noise·ε."
        ),
        "noise.noise_missing",
    )
    yield (
        win_probability(d, noise, noise, rivals, match_noise=0.0),
        _("the matching key has no noise; it is a noisy view of the shared meaning, like every key."),
        "noise.noise_missing",
    )
    if noise not in (0.0, 1.0):
        yield (
            win_probability(d, noise**2, noise**2, rivals),
            _("noise was used as a variance; it is the standard deviation: multiply ε by noise."),
            "noise.variance_not_sd",
        )
        yield (
            win_probability(d, math.sqrt(noise), math.sqrt(noise), rivals),
            _("noise was used as a variance (scale=np.sqrt(noise)); it is the standard deviation."),
            "noise.variance_not_sd",
        )
    yield (
        win_probability(d, noise, noise, n_keys),
        _("one key too many: n_keys counts all the keys, the match included, so the match has n_keys - 1 rivals."),
        "noise.rivals_off_by_one",
    )
    if rivals > 1:
        yield (
            win_probability(d, noise, noise, rivals - 1),
            _("one key too few: there are n_keys keys in all, the match and n_keys - 1 rivals."),
            "noise.rivals_off_by_one",
        )


def _rate(winning_rate, d, noise, n_keys, seed, what):
    """The learner's rate as a float (a plain number, or a numpy scalar or 0-d array of one)."""
    __tracebackhide__ = True
    result = call(winning_rate, d, noise, n_keys, TRIALS, seed, what=what)
    if _type(result) is np.ndarray and result.ndim == 0 and result.dtype.kind in "fiu":
        result = result[()]  # a 0-d array holds one number: take it out
    return plain_float(result, what=what)


def _expect_rate(winning_rate, d, noise, n_keys, seed):
    __tracebackhide__ = True
    what = f"winning_rate({d}, {noise}, {n_keys}, {TRIALS}, {seed})"
    got = _rate(winning_rate, d, noise, n_keys, seed, what)
    if not math.isfinite(got) or not 0.0 <= got <= 1.0:
        if got > 1:
            fail(
                _(
                    "{what} returned {got}; a rate is a fraction between 0 and 1: did you return the number of "
                    "wins instead of wins / trials?"
                ).format(what=what, got=number(got, "")),
                "noise.wins_not_rate",
            )
        fail(_("{what} returned {got}; a rate is a fraction between 0 and 1.").format(what=what, got=number(got, "")))
    exact = exact_winning_rate(d, noise, n_keys)
    allowed = margin(exact, TRIALS)
    if abs(got - exact) <= allowed:
        return got
    message = _(
        "{what} returned {got}, but the probability it estimates is {exact} (computed exactly by "
        "integration). With {trials} trials a correct simulation lands within ±{allowed} of it "
        "(six standard errors); yours is off by {off}."
    ).format(
        what=what,
        got=number(got, ".4f"),
        exact=number(exact, ".4f"),
        trials=TRIALS,
        allowed=number(allowed, ".3f"),
        off=number(abs(got - exact), ".3f"),
    )
    # every usual mistake whose rate this one matches, the closest first (at some points two coincide)
    causes = sorted(
        (abs(got - wrong) / margin(wrong, TRIALS), explanation, misconception)
        for wrong, explanation, misconception in _wrong_rates(d, noise, n_keys)
        if abs(got - wrong) <= margin(wrong, TRIALS) and abs(wrong - exact) > allowed
    )
    if causes:  # the closest names the misconception; a second one that coincides here is offered too
        message += " " + _("Likely cause: {explanation}").format(explanation=causes[0][1])
        for _distance, explanation, _id in causes[1:2]:
            message += " " + _("Or: {explanation}").format(explanation=explanation)
        fail(message, causes[0][2])
    else:
        message += " " + _(
            "Check the model: key 0 shares the query's meaning, the other n_keys - 1 have their own; "
            "query and keys are meaning + noise·ε; the match wins when its q·k beats every other key's."
        )
    fail(message)


@exercise_check
def check_winning_rate(winning_rate, seed: int = 0, thorough: bool = False) -> None:
    """The simulated rate is within six standard errors of the exact probability, and reproducible."""
    __tracebackhide__ = True
    # chosen so that each usual mistake lands several margins away somewhere (see _wrong_rates); a key
    # too many or too few moves the rate by a margin or more only when there are few keys (2 or 3);
    # the thorough (hidden) run uses other points and other seeds, and stays within a few seconds
    points = [(8, 1.0, 16), (32, 1.5, 16), (32, 3.0, 16), (4, 2.0, 3), (8, 2.0, 2), (2, 0.0, 4)]
    if thorough:
        points = [
            (1, 1.0, 16),
            (16, 0.5, 16),
            (64, 1.0, 16),
            (64, 3.0, 16),
            (128, 1.5, 8),
            (4, 2.0, 2),
            (2, 1.0, 3),
            (24, 0.7, 16),
        ]
    for index, (d, noise, n_keys) in enumerate(points):
        got = _expect_rate(winning_rate, d, noise, n_keys, seed + index)
        if index in (0, _len(points) - 1):  # the same seed again: two coincidences in a row are (about) impossible
            what = f"winning_rate({d}, {noise}, {n_keys}, {TRIALS}, {seed + index})"
            again = _rate(winning_rate, d, noise, n_keys, seed + index, what)
            if again != got:
                fail(
                    _(
                        "{what} returned {got} and then {again}: the same seed must give the same rate. Draw every "
                        "random number from np.random.default_rng(seed) (or seed numpy with it)."
                    ).format(what=what, got=number(got, ""), again=number(again, "")),
                    "noise.unseeded",
                )
    passed(
        _(
            "winning_rate agrees with the exact probability at {points} (within six standard errors of {trials} "
            "trials), and the same seed gives the same rate"
        ).format(points=", ".join(f"d={d} noise={noise} keys={k}" for d, noise, k in points), trials=TRIALS)
    )


@exercise_check
def check_winning_rate_errors(winning_rate) -> None:
    """Arguments that make no sense are refused with ValueError."""
    __tracebackhide__ = True
    for args, why in [
        ((0, 1.0, 16, 100, 0), N_("the head size d must be at least 1")),
        ((8, -0.5, 16, 100, 0), N_("noise is a standard deviation, it cannot be negative")),
        ((8, 1.0, 1, 100, 0), N_("with fewer than 2 keys there is nothing to win against")),
        ((8, 1.0, 16, 0, 0), N_("a rate over 0 trials is undefined")),
    ]:
        expect_value_error(winning_rate, *args, what=f"winning_rate{args}", why=translated(why))
    passed(_("winning_rate refuses d < 1, negative noise, fewer than 2 keys and 0 trials with ValueError"))
