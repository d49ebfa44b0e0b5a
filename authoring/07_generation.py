# %% [markdown]
# # 07 · Generation: the mask meets the KV cache
#
# Notebooks 03 and 05 built masks for a whole sequence at once; notebook 06 sized the KV cache. A model
# that *generates* uses both at the same time, and that is where the bugs of practitioners live: a mask
# aligned to the wrong corner, a cache that forgets the newest token, a rolling buffer written to the
# wrong slot, packed documents reading one another. None of them crashes. The numbers are just wrong.
#
# | section | what you build | the silent bug it prevents |
# |---|---|---|
# | 1 | `decode_step`: one token at a time, appending K and V | a cache that forgets the new token's own K/V |
# | 2 | `bottom_right_causal_mask`: several new queries against the cache | the top-left alignment |
# | 3 | `rolling_cache_write`: Mistral's buffer of w slots | a buffer indexed by step, or off by one slot |
# | 4 | `sinks_window_mask`: attention sinks, a mask made with OR | AND where OR is needed |
# | 5 | `document_mask`: several documents packed in one row | documents that see earlier documents |
# | 6 | `mixed_cache_bytes`: models whose layers differ | every layer counted as global |
#
# Conventions as always: shapes `(b, h, n, d)`, masks boolean with **True = may attend**, indexed
# `[query, key]`, scores divided by √d, inputs never modified in place.

# %%
import numpy as np
from IPython.display import display

import heads_and_masks as hm
from heads_and_masks import generation as gen
from heads_and_masks.pictures.generation import (
    bytes_per_token_figure,
    composed_masks_figure,
    decode_masks_figure,
    picture,
)
from heads_and_masks.model_configs import KiB, model
from heads_and_masks.widgets.generation import GenerationStepper

np.set_printoptions(precision=3, suppress=True, linewidth=110)


# %% [markdown]
# ## 1 · Generating with a cache
#
# A model writes token *t* after reading tokens 0 … *t* − 1. In causal attention, the output at position *t*
# depends only on the query of *t* and the keys and values of positions 0 … *t*, and those keys and values
# never change once computed. So generation runs in two phases:
#
# * **prefill**: the prompt goes through in one pass (ordinary causal attention); its keys and values are
#   kept: the cache, `(b, h, n, d)` for K and the same for V;
# * **decode**: each new token computes its own q, k, v, **appends** its k and v to the cache, and its query
#   attends over the whole cache, its own key included.
#
# Here is the attention of notebook 00 again (any leading axes, a boolean mask, zero weights for a row with
# no allowed key):

# %% nbgrader={"grade_id": "given_attention", "schema_version": 3, "locked": true, "solution": false, "grade": false}
def attention(q, k, v, mask=None):
    """softmax(q kᵀ / sqrt(d), masked) v over the last two axes (notebook 00)."""
    d = q.shape[-1]
    scores = q @ np.swapaxes(k, -1, -2) / d**0.5  # (..., n_q, n_k)
    allowed = np.ones(scores.shape, bool) if mask is None else np.broadcast_to(mask, scores.shape)
    top = np.max(np.where(allowed, scores, -np.inf), axis=-1, keepdims=True, initial=-np.inf)
    top = np.where(np.isfinite(top), top, 0.0)  # a row with nothing allowed
    exps = np.where(allowed, np.exp(np.where(allowed, scores - top, 0.0)), 0.0)
    totals = exps.sum(axis=-1, keepdims=True)
    weights = np.divide(exps, totals, out=np.zeros_like(exps), where=totals > 0)
    return weights @ v  # (..., n_q, d_v)


# %% [markdown]
# ### Exercise 1: one decoding step
#
# Write `decode_step(q_new, k_new, v_new, k_cache, v_cache)`:
#
# * `q_new`, `k_new`, `v_new` have shape `(b, h, 1, d)`: the newest token;
# * `k_cache`, `v_cache` have shape `(b, h, n, d)`: the n tokens before it (n may be 0: nothing cached yet);
# * return `(out, k_cache, v_cache)`: the new token's output `(b, h, 1, d)` and the two caches with the new
#   token's key and value **appended at the end**, `(b, h, n + 1, d)`, new arrays (do not change the inputs).
#
# With a single new query nothing needs masking: every cached key is in its past. The tests run one step on
# a given cache and one from an empty cache (the output: 2 points), the caches you return (appended at the
# end: 1 point), and a whole generation that feeds your returned caches back into your function, step after
# step, comparing every output with full causal attention (1 point).

# %% nbgrader={"grade_id": "decode_step", "schema_version": 3, "locked": false, "solution": true, "grade": false}
def decode_step(q_new, k_new, v_new, k_cache, v_cache):
    """One generation step: append the new K and V to the cache, attend over all of it."""
    ### BEGIN SOLUTION
    k_cache = np.concatenate([k_cache, k_new], axis=2)  # (b, h, n + 1, d): the new token sees itself
    v_cache = np.concatenate([v_cache, v_new], axis=2)  # (b, h, n + 1, d)
    return attention(q_new, k_cache, v_cache), k_cache, v_cache  # (b, h, 1, d)
    ### END SOLUTION


# %% [markdown]
# Try it: prefill a prompt of 4 tokens, then generate 8 more one by one, and compare with causal attention
# over the whole sequence at once.

# %%
rng = np.random.default_rng(0)
b, h, n, d = 1, 2, 12, 8
q, k, v = rng.normal(size=(3, b, h, n, d))
full = hm.attention(q, k, v, hm.causal_mask(n))  # (b, h, n, d): the whole sequence at once
prompt = 4
with hm.if_written("decode_step"):
    k_cache, v_cache = k[:, :, :prompt], v[:, :, :prompt]  # prefill: the prompt's keys and values
    outputs = [full[:, :, :prompt]]  # prefill's outputs are ordinary causal attention
    for t in range(prompt, n):
        out, k_cache, v_cache = decode_step(q[:, :, t:t + 1], k[:, :, t:t + 1], v[:, :, t:t + 1], k_cache, v_cache)
        outputs.append(out)
    generated = np.concatenate(outputs, axis=2)
    print("cache after generation:", k_cache.shape)
    print("largest difference from full causal attention:", np.abs(generated - full).max())

# %% nbgrader={"grade_id": "test_decode_step", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 2}
from heads_and_masks.checks.generation import check_decode_step

check_decode_step(decode_step)
### BEGIN HIDDEN TESTS
check_decode_step(decode_step, seed=707, thorough=True)
### END HIDDEN TESTS

# %% nbgrader={"grade_id": "test_decode_step_cache", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 1}
from heads_and_masks.checks.generation import check_decode_step_cache

check_decode_step_cache(decode_step)
### BEGIN HIDDEN TESTS
check_decode_step_cache(decode_step, seed=708, thorough=True)
### END HIDDEN TESTS

# %% nbgrader={"grade_id": "test_decode_step_generation", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 1}
from heads_and_masks.checks.generation import check_decode_step_generation

check_decode_step_generation(decode_step)
### BEGIN HIDDEN TESTS
check_decode_step_generation(decode_step, seed=709, thorough=True)
### END HIDDEN TESTS

# %% [markdown]
# ### What the cache saves: count it
#
# One step with a cache compares 1 query with t keys and averages t values: **2·t·d** multiply-adds per head,
# O(n·d). Without a cache, the model would run causal attention over the whole sequence again at every step:
# t(t + 1)/2 query-key pairs, each twice d, O(n²·d) per step. Over a whole generation of n tokens that is
# O(n²·d) against O(n³·d):

# %%
d_head = 128
print(f"{'tokens':>8} {'one step, cached':>18} {'one step, recomputed':>22} {'ratio':>8}")
for n_tokens in (1024, 8192, 32768):
    work = gen.step_work(n_tokens - 1, d_head)
    print(f"{n_tokens:>8,} {work['with cache']:>18,} {work['without cache']:>22,} "
          f"{work['without cache'] / work['with cache']:>8,.0f}")
n_tokens = 8192
cached_total = sum(gen.step_work(t, d_head)["with cache"] for t in range(n_tokens))
recomputed_total = sum(gen.step_work(t, d_head)["without cache"] for t in range(n_tokens))
print(f"a whole generation of {n_tokens:,} tokens: {cached_total:.3g} vs {recomputed_total:.3g} multiply-adds "
      f"per head ({recomputed_total / cached_total:,.0f}× more without the cache)")

# %% [markdown]
# The ratio of one step is (n + 1)/2: the cache turns a square into a row. The price is memory, the subject of
# notebook 06 and of section 6.
#
# That count is of attention alone, and attention is not most of a step. By notebook 01's split, every token
# also goes through the four projections (4·D² multiply-adds per layer, D the model's width) and then the
# MLP (8·D² with the usual hidden width of 4·D); for one new token attention costs 2·t·D, so until the
# context reaches t = 6·D (where 2·t·D = 12·D²) the projections and the MLP are most of a step. Without a
# cache they too run again for every earlier token, because its K and V must be recomputed in every layer.
# Counted for a whole layer of width D = 4096 (Llama-2-7B's), the cache saves more than attention alone
# suggests:

# %%
width = 4096
print(f"{'tokens':>8} {'cached step, whole layer':>25} {'attention share':>16} {'recomputed':>12} "
      f"{'ratio':>7} {'attention only':>15}")
for n_tokens in (1024, 8192, 32768):
    layer = gen.layer_step_work(n_tokens - 1, width)
    attention_only = gen.step_work(n_tokens - 1, width)
    print(f"{n_tokens:>8,} {layer['with cache']:>25.3g} {layer['attention with cache'] / layer['with cache']:>16.0%} "
          f"{layer['without cache']:>12.3g} {layer['without cache'] / layer['with cache']:>7,.0f} "
          f"{attention_only['without cache'] / attention_only['with cache']:>15,.0f}")

# %% [markdown]
# At short contexts the whole layer's ratio is close to n, twice attention's alone: recomputing the
# projections and the MLP of every earlier token is the larger part of what the cache avoids. Past t = 6·D
# attention takes over the cached step, and the layer's ratio falls back towards attention's (n + 1)/2.
#
# ## 2 · The mask at decode time
#
# With one new query, nothing is masked. But servers often feed **several** new tokens at once: a long prompt
# in chunks (*chunked prefill*), or a few guessed tokens to verify in one pass (*speculative decoding*). Then
# n_new queries meet n_keys keys, the new tokens being the **last** n_new of them, and the causal mask is a
# rectangle `(n_new, n_keys)`. New query i sits at position n_keys − n_new + i, so it sees keys
# 0 … n_keys − n_new + i: the diagonal is aligned to the **bottom right**, and the last query sees every key.
#
# `np.tril` of the rectangle aligns it to the **top left** instead: query i sees keys 0 … i, as if the new
# tokens came first. The two most used attention kernels disagree on this, and that is the trap:
#
# * **PyTorch**'s `scaled_dot_product_attention(..., is_causal=True)` is top-left. The documentation of
#   `torch.nn.attention.bias.causal_upper_left` says: "This equivalent to the is_causal=True argument in
#   scaled_dot_product_attention." The bottom-right variant is a separate bias, `causal_lower_right`, and the
#   page of `torch.nn.attention.bias.CausalVariant` adds: "Note that these variants are equivalent to each
#   other when the sequence lengths of the query and key/value tensors are equal since the triangular matrix
#   is square."
# * **FlashAttention**'s `flash_attn_func(..., causal=True)` is bottom-right since version 2.1. Its docstring
#   (in `flash_attn/flash_attn_interface.py`) says: "If causal=True, the causal mask is aligned to the bottom
#   right corner of the attention matrix." The README's section "2.1: Change behavior of causal flag" shows
#   the 2.0 mask, top-left, beside it (both files at
#   [commit 0251105 of the README](https://github.com/Dao-AILab/flash-attention/blob/0251105a2fb19d2957484b7f023cd8c115286ced/README.md)
#   and the same commit's `flash_attn/flash_attn_interface.py`).
#
# So code that is right with one kernel is wrong with the other as soon as the queries are fewer than the keys,
# and a cache makes them fewer.

# %%
picture(decode_masks_figure(n_new=3, n_keys=8))


# %% [markdown]
# ### Exercise 2: the bottom-right causal mask
#
# Write `bottom_right_causal_mask(n_new, n_keys)`: a boolean `(n_new, n_keys)` array, True where new query i
# may attend key j, i.e. j ≤ n_keys − n_new + i. `n_keys` counts every key, the new tokens' own included, so
# `n_new > n_keys` is impossible: raise `ValueError`. `n_new` may be 0 (an empty chunk): the mask then has no
# row, an empty boolean array of shape `(0, n_keys)`. (`np.tril` has a `k` argument for the diagonal.) The tests
# give 2 points to the alignment, 1 to the empty chunk and 1 to the `ValueError`.

# %% nbgrader={"grade_id": "bottom_right_causal_mask", "schema_version": 3, "locked": false, "solution": true, "grade": false}
def bottom_right_causal_mask(n_new, n_keys):
    """(n_new, n_keys) bool: new query i (position n_keys - n_new + i) sees keys 0 ... n_keys - n_new + i."""
    ### BEGIN SOLUTION
    if n_new > n_keys:
        raise ValueError(f"{n_new} new queries need at least {n_new} keys (their own), got {n_keys}")
    return np.tril(np.ones((n_new, n_keys), dtype=bool), k=n_keys - n_new)
    ### END SOLUTION


# %% nbgrader={"grade_id": "test_bottom_right_causal_mask", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 2}
from heads_and_masks.checks.generation import check_bottom_right_causal_mask

check_bottom_right_causal_mask(bottom_right_causal_mask)
### BEGIN HIDDEN TESTS
check_bottom_right_causal_mask(bottom_right_causal_mask, seed=2024, thorough=True)
### END HIDDEN TESTS

# %% nbgrader={"grade_id": "test_bottom_right_causal_mask_no_new_queries", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 1}
from heads_and_masks.checks.generation import check_bottom_right_causal_mask_no_new_queries

check_bottom_right_causal_mask_no_new_queries(bottom_right_causal_mask)
### BEGIN HIDDEN TESTS
check_bottom_right_causal_mask_no_new_queries(bottom_right_causal_mask, thorough=True)
### END HIDDEN TESTS

# %% nbgrader={"grade_id": "test_bottom_right_causal_mask_errors", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 1}
from heads_and_masks.checks.generation import check_bottom_right_causal_mask_errors

check_bottom_right_causal_mask_errors(bottom_right_causal_mask)
### BEGIN HIDDEN TESTS
check_bottom_right_causal_mask_errors(bottom_right_causal_mask, thorough=True)
### END HIDDEN TESTS

# %% [markdown]
# ### The wrong corner, numerically
#
# Process the same 12 tokens as a prompt of 6, then chunks of 3 new tokens, with each alignment. The
# bottom-right mask reproduces full causal attention; the top-left one hides most of the cache from the new
# queries (the first new query of a chunk sees only key 0).

# %%
def chunked(q, k, v, prompt, chunk, make_mask):
    """Causal attention computed in chunks against a growing cache, with a given rectangular mask."""
    outputs, n = [], q.shape[2]
    for start in [0] + list(range(prompt, n, chunk)):
        stop = prompt if start == 0 else min(start + chunk, n)
        outputs.append(hm.attention(q[:, :, start:stop], k[:, :, :stop], v[:, :, :stop],
                                    make_mask(stop - start, stop)))
    return np.concatenate(outputs, axis=2)


right = chunked(q, k, v, 6, 3, gen.bottom_right_causal_mask)
wrong = chunked(q, k, v, 6, 3, gen.top_left_causal_mask)
print("bottom right vs full causal attention, largest difference:", np.abs(right - full).max())
error = np.abs(wrong - full).max(axis=(0, 1, 3))  # (n,): per position
print("top left vs full causal attention, largest difference per position:\n", error)
print("positions with a wrong output:", np.flatnonzero(error > 1e-12).tolist())

# %% [markdown]
# The prompt (positions 0 … 5, a square) is right either way, which is why the bug survives the first test:
# the error appears only once a chunk meets a cache. With one new token per step the top-left mask is
# `[[True, False, …]]`: the new token sees only position 0.
#
# ## 3 · Sliding windows at decode: the rolling buffer
#
# With a sliding window of w (notebook 05), a query sees itself and the w − 1 tokens before it. The cache
# then never needs more than w tokens: Mistral 7B keeps a **rolling buffer** of w slots and writes position
# p into slot **p mod w**, overwriting the token that just left the window. Memory is constant however long
# the generation runs. The order of the slots does not matter to attention: a weighted average does not care
# where its terms are stored, and in Mistral the rotary positions are applied to each key *before* it is
# written into the buffer, so a key carries its own position wherever it sits. What matters is that the slot
# overwritten is the oldest one, and p mod w is exactly that.
#
# Notebook 05's off-by-one reappears here. Mistral's reference code as released (`one_file_ref.py`, at
# [commit 3dc8aed of mistral-inference](https://github.com/mistralai/mistral-inference/blob/3dc8aed1835d26cbff9ef26a12cbeb2ec8873a0b/one_file_ref.py))
# bands the prompt's mask with `torch.triu(mask, diagonal=-sliding_window)`, `W + 1` keys per query at prefill,
# while its rolling buffer has `sliding_window` slots, so a decoded token sees `W` keys, itself included: the
# same model attended over one key more in the prompt than in the generation. A contributor's commit changed
# the prefill band to `W` keys in March 2024 (commit cad0f614499e04855035c6665903aff87498f68b).

# %%
for p in range(10):
    print(f"position {p} -> slot {p % 4}", end="   " if p % 4 != 3 else "\n")
print("\nafter 10 tokens, slot s holds position:", gen.slot_positions(4, 10))


# %% [markdown]
# ### Exercise 3: write into the rolling buffer
#
# Write `rolling_cache_write(cache, new, position)`:
#
# * `cache` has shape `(..., w, d)`: w slots (the tokens axis is the second to last);
# * `new` has shape `(..., t, d)`: the keys (or values) of positions `position`, …, `position + t − 1`;
# * return a **new** buffer of the same shape, where position p was written into slot p mod w, and every
#   other slot keeps what it held. (The course's convention: do not change `cache` in place; copy it first.)
#
# You may assume t ≤ w. The tests write one token and then three that wrap around the end of the buffer
# (2 points), then a prompt and one token per step into your own buffer (1 point).

# %% nbgrader={"grade_id": "rolling_cache_write", "schema_version": 3, "locked": false, "solution": true, "grade": false}
def rolling_cache_write(cache, new, position):
    """A new buffer where position p (position ... position + t - 1) is written into slot p mod w."""
    ### BEGIN SOLUTION
    w, t = cache.shape[-2], new.shape[-2]
    out = cache.copy()
    slots = np.arange(position, position + t) % w  # (t,): where each new token goes
    out[..., slots, :] = new
    return out
    ### END SOLUTION


# %% nbgrader={"grade_id": "test_rolling_cache_write", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 2}
from heads_and_masks.checks.generation import check_rolling_cache_write

check_rolling_cache_write(rolling_cache_write)
### BEGIN HIDDEN TESTS
check_rolling_cache_write(rolling_cache_write, seed=4096, thorough=True)
### END HIDDEN TESTS

# %% nbgrader={"grade_id": "test_rolling_cache_write_generation", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 1}
from heads_and_masks.checks.generation import check_rolling_cache_write_generation

check_rolling_cache_write_generation(rolling_cache_write)
### BEGIN HIDDEN TESTS
check_rolling_cache_write_generation(rolling_cache_write, seed=4097, thorough=True)
### END HIDDEN TESTS

# %% [markdown]
# ### The buffer gives sliding-window attention exactly
#
# `gen.rolling_window_attention` generates with a buffer of w slots (a step attends over the filled slots
# still inside its window, and over its own tokens, then writes them). Its outputs equal sliding-window
# attention over the whole sequence, for one token per step and for chunks:

# %%
n_long, window = 40, 6
q, k, v = rng.normal(size=(3, 1, 2, n_long, d))
windowed = hm.attention(q, k, v, hm.sliding_window_mask(n_long, window))
for chunk in (1, 4):
    rolled = gen.rolling_window_attention(q, k, v, window, chunk)
    print(f"chunks of {chunk}: largest difference from sliding-window attention {np.abs(rolled - windowed).max():.1e}")

# %% [markdown]
# And its memory, for Mistral 7B (w = 4096) generating ever longer texts, against a cache that keeps
# every token:

# %%
mistral = model("Mistral-7B-v0.1")
per_token = mistral.kv_bytes_per_token(2)  # bf16
for tokens in (4096, 32768, 262144, 1048576):
    full_cache = gen.cache_tokens("full", tokens) * per_token
    buffer = gen.cache_tokens("window", tokens, mistral.sliding_window) * per_token
    print(f"{tokens:>9,} tokens: full cache {full_cache / 2**30:7.2f} GiB, rolling buffer {buffer / 2**30:5.2f} GiB "
          f"({full_cache / buffer:,.0f}×)")


# %% [markdown]
# ## 4 · Masks that grant: attention sinks and prefix LM
#
# A window forgets the first tokens, and models turn out to rely on them: StreamingLLM (Xiao et al., 2023)
# found that attention piles up on the first few tokens whatever they say (*attention sinks*), and that a
# window alone breaks generation once they leave it. The fix keeps them: a key is allowed if it is in the
# window **OR** it is one of the first s tokens, and, as always, not in the future. The cache keeps the
# s sinks plus a rolling buffer of w slots: still constant memory.
#
# The mask is the easy half. StreamingLLM gives positions *inside the cache*, not in the text: it caches keys
# before the rotary rotation and rotates them when attending, by their place in the cache (the sinks at
# 0 … s − 1, the window after them), so the distances the model sees never exceed what it was trained on. A
# rolling buffer built as in section 3, with keys rotated by their text position before caching, gives the
# sinks and the window their true, ever-growing distances instead, which soon exceed anything the model saw in
# training: StreamingLLM's design exists to avoid exactly that (Xiao et al. 2023, arXiv:2309.17453, section
# 3.2). The mask below and the widget at the end show *which* keys are kept, not where they are placed: a
# sinks-plus-buffer cache needs both.
#
# A **prefix LM** grants too: the prompt reads itself in both directions (causal **OR** the key is in the
# prompt). Masks compose with AND when each rule *forbids* (padding, causal, window) and with **OR** when a
# rule *grants*; mixing them up gives a mask that looks plausible and is wrong.

# %% [markdown]
# ### Exercise 4: sinks + window
#
# Write `sinks_window_mask(n, window, sinks)`: an `(n, n)` boolean mask where query i may attend key j when
# j ≤ i and (i − j < window, the query and the window − 1 tokens before it, OR j < sinks).

# %% nbgrader={"grade_id": "sinks_window_mask", "schema_version": 3, "locked": false, "solution": true, "grade": false}
def sinks_window_mask(n, window, sinks):
    """(n, n) bool: causal AND (in the window OR a sink)."""
    ### BEGIN SOLUTION
    query = np.arange(n)[:, None]
    key = np.arange(n)[None, :]
    in_window = (query - key) < window
    is_sink = key < sinks
    return (key <= query) & (in_window | is_sink)
    ### END SOLUTION


# %% nbgrader={"grade_id": "test_sinks_window_mask", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 2}
from heads_and_masks.checks.generation import check_sinks_window_mask

check_sinks_window_mask(sinks_window_mask)
### BEGIN HIDDEN TESTS
check_sinks_window_mask(sinks_window_mask, seed=31, thorough=True)
### END HIDDEN TESTS

# %%
n_small = 12
sinks_and = hm.sliding_window_mask(n_small, 4) & (np.arange(n_small)[None, :] < 2)
masks = {
    "window 4 OR 2 sinks\n(causal AND)": gen.sinks_window_mask(n_small, 4, 2),
    "window 4 AND 2 sinks\n(the bug)": sinks_and,
    "prefix LM, prompt of 5:\ncausal OR key < 5": gen.prefix_lm_mask(n_small, 5),
}
display(picture(composed_masks_figure(masks)))
print("entries kept: OR", int(gen.sinks_window_mask(n_small, 4, 2).sum()), "· AND", int(sinks_and.sum()),
      "· the window alone", int(hm.sliding_window_mask(n_small, 4).sum()))


# %% [markdown]
# With AND, every query after position 4 sees nothing at all: its row is empty and its output is zero.
#
# ## 5 · Packed sequences: the document mask
#
# Training batches are rectangles too. Instead of padding every document to the longest (notebook 05), most
# pre-training pipelines **pack** documents one after another into rows of fixed length. That wastes almost
# nothing, and it raises a question of design: with a plain causal mask a document reads the documents packed
# before it. Whether to allow that has been decided both ways:
#
# * **GPT-3** allowed it. Its training rows were packed documents "not masked in any special way", delimited
#   only by an end-of-text token from which the model is left to infer that what precedes is unrelated
#   (Brown et al. 2020, arXiv:2005.14165, appendix B).
# * **Megatron-LM**, the training code behind many large models, does the same by default: its attention mask
#   is reset at each end-of-document token only when `--reset-attention-mask` is passed (off by default).
# * **Llama 3** masks across documents, and reports that the mask had limited impact in standard
#   pre-training but was important in continued pre-training on very long sequences (Llama Team 2024,
#   arXiv:2407.21783, section 3.2).
#
# So cross-document attention is a choice with a cost that grows with the context, not a bug in itself; what
# *is* a bug is to believe documents are isolated when they are not. The isolating mask is block-diagonal
# **and** causal: query i may see key j when both belong to the same document and j ≤ i. Each token carries a
# document id: `[0, 0, 0, 1, 1, 2, 2, 2]`.

# %% [markdown]
# ### Exercise 5: the document mask
#
# Write `document_mask(doc_ids)`: `doc_ids` is an integer array of shape `(n,)` or `(b, n)`; return a boolean
# mask of shape `(n, n)` or `(b, n, n)`, True where query i may attend key j: same id AND j ≤ i. Ids need not
# be sorted or consecutive; they only name documents. The tests check one row (1 point), then a batch of rows
# (1 point).

# %% nbgrader={"grade_id": "document_mask", "schema_version": 3, "locked": false, "solution": true, "grade": false}
def document_mask(doc_ids):
    """(..., n, n) bool: same document AND causal."""
    ### BEGIN SOLUTION
    doc_ids = np.asarray(doc_ids)
    n = doc_ids.shape[-1]
    same = doc_ids[..., :, None] == doc_ids[..., None, :]  # (..., n, n)
    return same & np.tril(np.ones((n, n), dtype=bool))
    ### END SOLUTION


# %% nbgrader={"grade_id": "test_document_mask", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 1}
from heads_and_masks.checks.generation import check_document_mask

check_document_mask(document_mask)
### BEGIN HIDDEN TESTS
check_document_mask(document_mask, seed=8, thorough=True)
### END HIDDEN TESTS

# %% nbgrader={"grade_id": "test_document_mask_batch", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 1}
from heads_and_masks.checks.generation import check_document_mask_batch

check_document_mask_batch(document_mask)
### BEGIN HIDDEN TESTS
check_document_mask_batch(document_mask, seed=9, thorough=True)
### END HIDDEN TESTS

# %% [markdown]
# Three documents of 3, 5 and 4 tokens packed in one row of 12: the causal mask alone, and the document mask.

# %%
packed_ids = np.repeat([0, 1, 2], [3, 5, 4])
picture(composed_masks_figure({
    "causal only: documents\nsee earlier documents": hm.causal_mask(12),
    "document mask:\nsame id AND causal": gen.document_mask(packed_ids),
}))

# %% [markdown]
# ### Without it, a document depends on its neighbours
#
# Pack the same document (5 tokens) after two different neighbours. With the document mask its outputs are the
# same as when it is alone; with only the causal mask (GPT-3's choice) they change with whatever was packed
# before it, which is what the end-of-text token asks the model to learn to ignore.

# %%
doc = rng.normal(size=(3, 1, 1, 5, d))  # q, k, v of one document
alone = hm.attention(*doc, hm.causal_mask(5))
for neighbour_length in (3, 7):
    neighbour = rng.normal(size=(3, 1, 1, neighbour_length, d))
    q_row, k_row, v_row = (np.concatenate([a, b_], axis=2) for a, b_ in zip(neighbour, doc))
    ids = np.array([0] * neighbour_length + [1] * 5)
    with_mask = gen.packed_attention(q_row, k_row, v_row, ids)[..., neighbour_length:, :]
    without = gen.packed_attention(q_row, k_row, v_row, ids, mask_documents=False)[..., neighbour_length:, :]
    print(f"after a neighbour of {neighbour_length} tokens: with the document mask the document differs from "
          f"alone by {np.abs(with_mask - alone).max():.1e}; without it by {np.abs(without - alone).max():.3f}")

# %% [markdown]
# ### Packing against padding, counted
#
# Document lengths in real corpora are very uneven: most are short, a few are long. Draw 2,000 lengths from
# a log-normal distribution (median 300 tokens, cut at 4,096), then count the wasted slots: padding each batch
# of 16 documents to its longest (in the order they come, then sorted by length so that a batch holds
# similar lengths), or packing them (first-fit, longest first) into rows of 4,096 tokens.

# %%
lengths = gen.document_lengths(2000, seed=7)
print(f"lengths: median {np.median(lengths):.0f}, mean {lengths.mean():.0f}, longest {lengths.max():,}")
padded = gen.padding_waste(lengths, batch=16)
padded_sorted = gen.padding_waste(np.sort(lengths), batch=16)  # batches of similar lengths ("bucketing")
packed = gen.packing_waste(lengths, row=4096)
for name, counts in (("padding, batches of 16", padded), ("padding, sorted by length", padded_sorted),
                     ("packing into rows of 4,096", packed)):
    print(f"{name:>28}: {counts['slots']:>10,} slots for {counts['real tokens']:,} real tokens, "
          f"{counts['wasted'] / counts['slots']:.1%} wasted")


# %% [markdown]
# ## 6 · The cache beyond GQA: layers that differ, latent caches
#
# Notebook 06 priced every layer alike: 2 · g · head size bytes per token per layer. Two recent designs break
# that rule.
#
# * **Local and global layers** (Gemma 2: alternating 1 : 1, window 4,096; Gemma 3: five local layers for each
#   global one, window 1,024). A local layer keeps a rolling buffer of at most w tokens; only the global layers
#   keep everything. The cache of a long context is then set by the global layers alone.
# * **Multi-head latent attention** (MLA, DeepSeek-V2 and V3): instead of K and V for each head, every layer
#   caches one compressed vector per token (512 values) from which all heads' keys and values are rebuilt, plus
#   a small key of 64 values that carries the rotary position: 576 values per token and layer, against
#   2 × 128 heads × 128 = 32,768 for the same heads in MHA.
#
# ### Exercise 6: cache bytes with local and global layers
#
# Write `mixed_cache_bytes(n_local, n_global, window, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_value=2)`:
# the bytes of the K and V cache when `n_local` layers keep at most `window` tokens and `n_global` layers keep
# all `seq_len`. Return an int.

# %% nbgrader={"grade_id": "mixed_cache_bytes", "schema_version": 3, "locked": false, "solution": true, "grade": false}
def mixed_cache_bytes(n_local, n_global, window, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_value=2):
    """Bytes of K and V when local layers keep min(seq_len, window) tokens and global layers keep seq_len."""
    ### BEGIN SOLUTION
    per_token_per_layer = 2 * n_kv_heads * head_dim * bytes_per_value  # K and V
    tokens_held = n_local * min(seq_len, window) + n_global * seq_len  # summed over the layers
    return int(per_token_per_layer * tokens_held * batch)
    ### END SOLUTION


# %% nbgrader={"grade_id": "test_mixed_cache_bytes", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 2}
from heads_and_masks.checks.generation import check_mixed_cache_bytes

check_mixed_cache_bytes(mixed_cache_bytes)
### BEGIN HIDDEN TESTS
check_mixed_cache_bytes(mixed_cache_bytes, seed=62, thorough=True)
### END HIDDEN TESTS

# %% [markdown]
# The configurations come from `data/layered_models.csv` (each row names its `config.json` and the paper
# that describes its layer pattern). For Gemma 3 27B at its 128K context:

# %%
layouts = gen.cache_layouts()
gemma3 = layouts["Gemma-3-27B"]
context = gemma3.context
as_is = gemma3.cache_bytes(context)
all_global = gen.mixed_cache_bytes(0, gemma3.layers, 1, gemma3.kv_heads, gemma3.head_dim, context)
print(f"Gemma 3 27B, {gemma3.local_layers} local + {gemma3.global_layers} global layers, {context:,} tokens: "
      f"{as_is / 2**30:.1f} GiB; counted as if every layer were global: {all_global / 2**30:.1f} GiB "
      f"({all_global / as_is:.1f}× too much)")
for name in ("DeepSeek-V2", "DeepSeek-V3"):
    layout = layouts[name]
    as_mha = 2 * layout.kv_heads * layout.head_dim * layout.layers * 2  # bytes per token if K, V per head
    print(f"{name}: {layout.bytes_per_token(1) / KiB:.1f} KiB per token (latent {layout.latent_dim} + rotary "
          f"{layout.rope_dim} values × {layout.layers} layers × 2 bytes); the same heads with MHA: "
          f"{as_mha / KiB:,.0f} KiB ({as_mha / layout.bytes_per_token(1):.0f}× more)")

# %% [markdown]
# Every model of the course in one picture: the cache each token of context costs, at a 4K and at a 128K
# context. Models whose layers are all global cost the same at any length; local layers and rolling buffers
# cost less the longer the context; latent caches are small from the first token. (128K tokens is more than
# most of these models were released for, see notebook 06: the filled bar says what their layout would cost.)

# %%
picture(bytes_per_token_figure(layouts))

# %% [markdown]
# ## Step through a generation
#
# The widget generates 20 tokens: a prompt of 4 in one step, then a chosen number of new tokens per step.
# Choose the cache: **full** (one slot per token), **sliding window** (a rolling buffer of 6 slots) or
# **sinks + window** (2 sinks and 6 slots). Left, the mask of the whole generation, the current step's rows in
# dark (may attend) and grey (masked); right, the cache's slots after the step with the position each holds
# (orange: written by this step), and the tokens the cache holds as the generation goes on: growing, or flat.
# Readouts: the positions of the step, how many keys its queries see, the tokens in the cache, and what that
# is at Mistral 7B's scale (128 KiB per token), now and after 32K tokens with Mistral's real window of 4,096
# (and StreamingLLM's 4 sinks).
#
# Things to try: several tokens per step with the full cache (the bottom-right rectangle); the window at step
# 3, 4, 5 (which slot is overwritten?); sinks + window: the two left columns stay dark forever. The widget
# shows which keys are kept, not the positions they are given: a working sinks-plus-buffer cache also needs
# StreamingLLM's positions inside the cache (section 4).

# %%
stepper = GenerationStepper()
stepper

# %%
print(stepper.readouts_text())

# %% [markdown]
# ### Written question (2 points): Why can the keys and values be cached?
#
# Generation keeps the keys and values of the earlier tokens and computes only the new token's q, k, v. Why does
# causal attention make that possible, and why must the mask of several new tokens at once be aligned to the
# bottom right of the (new queries, all keys) rectangle? Answer in two to four sentences in the cell below, in
# place of *YOUR ANSWER HERE*. In a class your teacher grades it by hand; on your own, compare with the model
# answer in `solutions/`.

# %% [markdown] nbgrader={"grade_id": "written_why_cache", "schema_version": 3, "locked": false, "solution": true, "grade": true, "points": 2}
# ### BEGIN SOLUTION
# **Model answer.** With the causal mask, position s only ever looks at positions 0 … s, so its output, and with
# it the keys and values computed from it, never depend on the tokens that come later: once computed they stay
# right, and a new token only adds its own row. (Without the mask every new token would change all the earlier
# positions, and nothing could be kept.) The new tokens are the last ones of the sequence: new query i sits at
# position n_keys − n_new + i and must see every cached key and the new keys up to itself, so the last query sees
# every key. np.tril aligns the triangle to the top left, as if the new tokens came first, and hides from them
# keys that are in their past.
#
# **Rubric for the grader (2 points).** 1 point: causal: earlier positions never see later tokens, so their keys
# and values never change once computed. 1 point: the new queries are the last positions: each sees every cached
# key (bottom-right alignment); top-left hides part of its past. Half a point for an answer that names the idea
# without the reason.
# ### END SOLUTION

# %% [markdown]
# ## Summary
#
# * With a cache, each new token appends its own K and V and attends over all of them: the outputs are full
#   causal attention's, at O(n·d) per step instead of O(n²·d).
# * Several new queries against a cache need a **bottom-right** causal rectangle; `np.tril` (and PyTorch's
#   `is_causal` on non-square inputs) aligns it top-left, which is right only for a square. FlashAttention's
#   `causal=True` is bottom-right (since 2.1): the two kernels disagree.
# * A rolling buffer writes position p into slot p mod w: constant memory, and exactly sliding-window
#   attention.
# * Rules that grant attention (sinks, a prompt read both ways) compose with **OR**; rules that forbid, with
#   AND. Packed documents are kept apart only by a same-document AND causal mask, a choice that GPT-3 made
#   one way and Llama 3 the other.
# * A cache's size depends on each layer: local layers stop growing at their window, and latent attention
#   caches one small vector per token instead of K and V per head.
