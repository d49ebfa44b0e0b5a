"""Every misconception the checks can name, by its stable identifier.

A failing check carries one of these ids (``CheckFailed.misconception``); the grader records it with
the verdict, and the class report (``autograde/class_report.py``) counts students per id. The ids
never change once published, so reports compare across years and across translations of the
messages; the words here are for the teacher reading the report, not for the learner (the learner
reads the check's own message). They are marked for translation: :func:`describe` gives them in the
language of the moment (the id itself stays English). An id is ``family.name``: the family is the idea the mistake is
about (``mask``, ``heads``, ``scale``...), so the report can follow one idea from notebook to notebook.
"""

from __future__ import annotations

from ..i18n import N_, translated

MISCONCEPTIONS: dict[str, str] = {
    # conventions of the whole course
    "conventions.batch_of_one": N_("works for one sequence only: a batch size of 1 is assumed"),
    "conventions.batch_axes_mixed": N_(
        "right for one row, wrong for a batch: the batch axis mixed with the tokens axis"
    ),
    "conventions.called_reference": N_("calls the course's reference function instead of its own code"),
    "conventions.empty_case": N_(
        "an empty case the contract allows (zero new queries) refused, or given the wrong shape"
    ),
    "conventions.earlier_exercise_wrong": N_("fails because the learner's own earlier function it builds on is wrong"),
    "conventions.in_place": N_("changes its input array in place"),
    "conventions.no_return": N_("returns nothing (a missing `return`)"),
    "conventions.no_value_error": N_("does not refuse bad arguments with ValueError"),
    "conventions.not_int": N_("returns a float where a whole number (int) is expected"),
    "numerics.warning": N_("computes through a numpy warning (inf - inf, 0/0, overflow)"),
    "numerics.integer_division": N_("integer division (//) where a fraction is wanted"),
    "numerics.operator_precedence": N_("operator precedence: (n+1)/2*n for (n+1)/(2n)"),
    # heads: the width cut into heads
    "heads.d_h_split": N_("the width split (or joined) as (d h) instead of (h d)"),
    "heads.reshape_without_transpose": N_("a reshape to (b, h, n, d) without the transpose, mixing tokens into heads"),
    "heads.merge_without_transpose": N_("heads merged without transposing back to (b, n, h, d)"),
    "heads.missing_transpose": N_("the reshape is right but the transpose of n and h is missing"),
    "heads.h_d_swapped": N_("the number of heads h and the head size d swapped"),
    "heads.ignores_heads": N_("one head over the whole width: h is ignored"),
    "heads.not_merged_back": N_("the heads are not merged back into the width"),
    "projection.missing_w_o": N_("the output projection W^O is forgotten"),
    "projection.weights_transposed": N_("weights applied transposed (w @ x instead of x @ w)"),
    # scale: scores / √d
    "scale.missing": N_("scores not divided by √d"),
    "scale.d_not_sqrt_d": N_("scores divided by d instead of √d"),
    "scale.width_not_head_size": N_("scores divided by √D (the width) instead of √d (the head size)"),
    # softmax
    "softmax.wrong_axis": N_("softmax over the queries instead of the keys"),
    "softmax.missing": N_("no softmax: raw scores used as weights"),
    "softmax.overflow": N_("exp overflows: the row maximum is not subtracted"),
    "softmax.allowed_weights_vanish": N_("allowed weights vanish: maximum over all keys, or mask after softmax"),
    # mask: boolean, True = may attend, −∞ and not 0
    "mask.zero_not_ban": N_("forbidden scores set to 0: a score of 0 is not a ban"),
    "mask.after_softmax": N_("the mask applied after softmax: rows no longer sum to 1"),
    "mask.polarity_flipped": N_("mask polarity flipped: True read as forbidden"),
    "mask.ignored": N_("the mask is ignored"),
    "mask.future_allowed": N_("the future is allowed (triu instead of tril, or one key too many)"),
    "mask.diagonal_forbidden": N_("the diagonal forbidden: a token may attend to itself"),
    "mask.not_boolean": N_("a float (additive) or 0/1 mask instead of a boolean one"),
    "mask.fully_masked_nan": N_("NaN on a row with no allowed key"),
    "mask.fully_masked_uniform": N_("a row with no allowed key spreads its weight evenly"),
    "mask.fill_too_small": N_("a fill value that real scores can beat"),
    "mask.forbidden_not_zero": N_("forbidden keys get a small weight instead of exactly 0"),
    "mask.not_combined": N_("masks not combined with AND (causal, window, padding)"),
    "mask.missing_head_axis": N_("the combined mask has no head axis: (b, n, n) instead of (b, 1, n, n)"),
    "mask.broadcast_across_batch": N_(
        "a (b, 1, n, n) mask broadcast against (b, n, n) scores: every sequence with every mask"
    ),
    "padding.off_by_one": N_("padding off by one (<= for <, or one real token too few)"),
    "padding.left_padding": N_("filler at the start (left padding)"),
    "padding.queries_not_keys": N_("padding applied to the queries (rows) instead of the keys (columns)"),
    "padding.queries_masked_too": N_("filler queries masked as well as filler keys"),
    "padding.ignored": N_("the padding mask is missing"),
    "padding.transposed": N_("the padding mask transposed: (n, b) instead of (b, n)"),
    "window.off_by_one": N_("the window holds w ± 1 keys instead of w"),
    "window.sees_future": N_("the window sees the future (symmetric or unbounded)"),
    # entropy
    "entropy.nats": N_("entropy in nats instead of bits"),
    "entropy.sign": N_("entropy with its sign flipped"),
    "entropy.zero_log_zero": N_("0·log 0 gives NaN instead of 0"),
    "entropy.wrong_axis": N_("entropy down the columns instead of along each row"),
    "entropy.not_one_per_row": N_("not one entropy per row (keepdims, or the wrong axis summed)"),
    "entropy.normalised": N_("entropy divided by its maximum"),
    # cost: counting the work
    "cost.flops_not_multiply_adds": N_("FLOPs counted instead of multiply-adds"),
    "cost.heads_multiply_cost": N_("the cost multiplied by h: more heads thought to cost more"),
    "cost.missing_term": N_("a term of the cost is missing (W^O, one n×n product, projections or attention)"),
    "cost.one_head_only": N_("the attention of one head counted instead of all h"),
    "cost.n_d_swapped": N_("n and D swapped in the cost"),
    "cost.full_matrix_counted": N_("every entry of the n×n matrix counted, not the causal ones"),
    "cost.large_n_limit": N_("the large-n limit n²/2 (or 1/2) taken as the exact count"),
    "cost.count_not_fraction": N_("the count returned where the fraction is asked"),
    "cost.builds_matrix_to_count": N_("builds the n×n matrix to count it"),
    # tiles: the tiled causal kernel
    "tiles.diagonal_unmasked": N_("diagonal tiles not masked inside: the future leaks"),
    "tiles.diagonal_skipped": N_("diagonal tiles skipped"),
    "tiles.softmax_per_tile": N_("a separate softmax per key tile"),
    "tiles.every_tile_computed": N_("every tile computed, also those above the diagonal"),
    "tiles.ideal_count": N_("the ideal count n(n+1)/2 reported instead of the work done"),
    "tiles.ragged_last_tile": N_("a ragged last tile counted as whole (or left out)"),
    "tiles.counted_tiles_not_entries": N_("tiles counted instead of score entries"),
    "tiles.full_matrix_built": N_("the whole n×n score matrix built, then masked"),
    # retrieval heads and score noise (notebook 02)
    "retrieval.heads_swapped": N_("the two heads' rules swapped"),
    "retrieval.same_rule_twice": N_("both heads follow the same rule"),
    "retrieval.asks_next_token": N_("a head asks for the next token, which the causal mask forbids"),
    "retrieval.attends_itself": N_("a head attends to the current token itself"),
    "retrieval.not_sharp_enough": N_("the right key, but the scores not sharp enough"),
    "retrieval.reads_content": N_("a rule by position that reads the token contents"),
    "retrieval.values_read_position": N_("the values read the position part instead of the content"),
    "noise.pairwise_rate": N_("the match compared with each key separately (a pairwise rate)"),
    "noise.noise_missing": N_("noise left out of the query or of the matching key"),
    "noise.variance_not_sd": N_("noise used as a variance instead of a standard deviation"),
    "noise.rivals_off_by_one": N_("the number of rival keys off by one"),
    "noise.wins_not_rate": N_("the number of wins returned instead of the rate"),
    "noise.unseeded": N_("the same seed gives different rates"),
    # KV heads and the KV cache (notebook 06)
    "kv_heads.tiled_not_repeated": N_("KV heads tiled instead of repeated"),
    "kv_heads.one_kv_head_used": N_("every query head reads one KV head"),
    "kv_heads.repeated_g_times": N_(
        "each KV head repeated (or tiled) g times (the number of KV heads) instead of h // g (the group size)"
    ),
    "kv_heads.mask_not_broadcast": N_("a per-sequence mask not broadcast to the query heads before grouping"),
    "kv_cache.k_and_v": N_("the factor 2 for K and V missing or doubled"),
    "kv_cache.bits_not_bytes": N_("the size in bits instead of bytes"),
    "kv_cache.argument_ignored": N_("an argument (batch, bytes_per_value, seq_len) ignored"),
    # learned heads: the backward pass and reading a trained model (notebook 08)
    "backward.scale_forgotten": N_("the 1/√d left out of dq and dk (the chain rule goes through the scaling)"),
    "backward.jacobian_diagonal_only": N_("only the diagonal of the softmax Jacobian (ds = p ⊙ dp or p(1 − p) ⊙ dp)"),
    "backward.dq_dk_swapped": N_("dq and dk computed with their transposes swapped"),
    "backward.through_forbidden": N_(
        "gradient through forbidden entries (unmasked weights, or a finite fill on an empty row)"
    ),
    "backward.sum_wrong_axis": N_(
        "the softmax backward's sum Σⱼ pⱼ dpⱼ taken over the wrong axis (queries, all, or no keepdims)"
    ),
    "rules.first_queries_included": N_("queries t = 0, 1 averaged in, where the previous token is the first token"),
    "rules.diagonal_for_previous": N_("key t (the query itself) read as the previous token"),
    "rules.query_key_swapped": N_("the weights read as [key, query] instead of [query, key]"),
    "rules.columns_swapped": N_("the two columns (previous token, first token) swapped"),
    "rules.not_per_head": N_("averaged over the heads instead of one row per head"),
    # generation: the mask meets the KV cache (notebook 07)
    "decode.forgets_own_kv": N_("the new query attends over the cache without the new token's own K/V"),
    "decode.cache_not_appended": N_("the returned cache lacks the new token's K/V"),
    "decode.new_token_first": N_("the new token's K/V put before the cached ones"),
    "mask.top_left_alignment": N_(
        "a rectangular causal mask aligned top-left (np.tril, is_causal) instead of bottom-right"
    ),
    "mask.transposed": N_("the mask transposed: indexed [key, query]"),
    "mask.and_not_or": N_("masks that grant attention (sinks, prefix) combined with AND instead of OR"),
    "mask.or_not_and": N_("masks that forbid (document, causal) combined with OR instead of AND"),
    "rolling.indexed_by_step": N_("rolling buffer indexed by a step counter instead of the position"),
    "rolling.off_by_one_slot": N_("rolling buffer off by one slot: (p ± 1) mod w"),
    "rolling.slots_reversed": N_("rolling buffer slots counted from the end"),
    "rolling.shifted_queue": N_("rolling buffer shifted like a queue instead of overwriting slot p mod w"),
    "sinks.missing": N_("the attention sinks left out: a plain window"),
    "sinks.off_by_one": N_("one sink too many (key <= sinks)"),
    "documents.see_earlier_documents": N_("packed documents see earlier documents: causal only, no document mask"),
    "documents.not_causal": N_("the document mask is bidirectional inside a document"),
    "documents.assumes_sorted_ids": N_(
        "the document mask assumes ids that increase along the row (sorted, numbered in order)"
    ),
    "kv_cache.every_layer_global": N_("every layer counted as global: local layers' window ignored"),
    "kv_cache.window_not_capped": N_(
        "a local layer counted as holding a whole window even when the sequence is shorter"
    ),
    "kv_cache.every_layer_local": N_("every layer counted as local: the global layers' full length ignored"),
    "kv_cache.layers_left_out": N_("the local or the global layers left out of the count"),
}


def describe(misconception: str) -> str:
    """What the mistake ``misconception`` is, in the current language ("" for an id no check names)."""
    words = MISCONCEPTIONS.get(misconception)
    return translated(words) if words is not None else ""


def family(misconception: str) -> str:
    """``"mask.zero_not_ban"`` -> ``"mask"``: the idea a misconception is about."""
    return misconception.split(".", 1)[0]
