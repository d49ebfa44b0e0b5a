# %% [markdown]
# # 05 · Other masks: padding, sliding windows, block-sparse
#
# The causal mask of notebook 03 answers one question: *may this token look at the future?* Real models
# ask more questions of every (query, key) pair, and each question is one more boolean mask:
#
# | mask | what it forbids | where it is used |
# |---|---|---|
# | causal | the future | decoders: every language model that generates text |
# | padding | the filler that makes short sequences as long as the longest in the batch | any batch of sequences of different lengths |
# | sliding window | everything further back than the last w tokens | Longformer, Mistral |
# | block-sparse | everything outside a chosen set of tiles | long-context models |
#
# All four follow the course convention (**True = may attend**, indexed `[query, key]`), and they combine with
# boolean logic. Most often with AND: a key is allowed if it is real *and* not in the future *and* within the
# window *and* in a kept tile. But some rules *grant* attention, and those combine with OR: a prefix LM lets
# the prompt see itself both ways (causal OR key in the prompt), attention sinks keep the first tokens visible
# to every query (window OR key is a sink), and global tokens are seen by every query (local OR global).
# Section 4 builds both kinds.
#
# This notebook draws each mask, has you write the first three, and then shows the one that causes
# real bugs: **forget the padding mask and a sequence's output depends on the batch it was put in.** Nothing
# crashes. The numbers are just different, and worse for short sequences than for long ones.

# %% nbgrader={"grade_id": "setup", "schema_version": 3, "locked": true, "solution": false, "grade": false}
import numpy as np
from IPython.display import display

import heads_and_masks as hm
from heads_and_masks import local_attention as local
from heads_and_masks.i18n import translated
from heads_and_masks import padding as pad
from heads_and_masks.checks import other_masks as checks
from heads_and_masks.pictures import other_masks as plots
from heads_and_masks.widgets.other_masks import MaskWidget

np.set_printoptions(precision=3, suppress=True, linewidth=110)

# %% [markdown]
# ## Four masks, one picture each
#
# Every picture below is a mask for one sequence of 12 tokens: queries down, keys across, **dark = may
# attend**. Grey entries are forbidden by the pattern (the future, outside the window, outside the kept
# tiles); orange entries are forbidden because the *key* is filler. Under each title is the share of the
# 12 × 12 score matrix the mask keeps: the work an honest kernel does.

# %%
n = 12
length = 8  # the padded sequence has 8 real tokens and 4 filler positions
block = 3
layout, block_mask = local.layout_mask("global + local", n, block)
panels = {  # title: (mask, which keys are real (padding only), tile size (block-sparse only))
    "causal": (hm.causal_mask(n), None, None),
    f"padding (length {length} of {n})": (np.broadcast_to(hm.padding_mask([length], n)[0], (n, n)),
                                         hm.padding_mask([length], n)[0], None),
    "sliding window (w = 4)": (hm.sliding_window_mask(n, 4), None, None),
    f"block-sparse (tiles of {block})": (block_mask, None, block),
}
plots.picture(plots.four_masks_figure(panels))  # each title says the share of the matrix its mask keeps

# %% [markdown]
# Read them row by row, a row being one query:
#
# * **causal**: query i sees keys 0 … i, a lower triangle with the diagonal (notebooks 03 and 04).
# * **padding**: every query sees the 8 real keys and none of the 4 filler keys. Notice that the *rows* of
#   the filler are not blank: padding masks keys, not queries (more on that below).
# * **sliding window**: query i sees itself and the 3 tokens before it, a band of width 4 along the diagonal.
# * **block-sparse**: the matrix is cut into 3 × 3 tiles and a small layout decides which tiles are kept
#   (here: the diagonal tiles, the ones just before them, and the first column of tiles, which every query
#   sees). Inside a kept tile the causal rule still applies.

# %% [markdown]
# ## 1 · Padding: a batch is a rectangle
#
# Sequences come in different lengths, but a batch is one array `(b, n, D)`. So every sequence is
# extended to the longest one, `n`, with **filler**: the embedding of a special padding token. The model
# must then be told which positions are real. That is the padding mask: `(b, n)`, True at the real tokens.

# %%
sentences = [["the", "cat", "sat", "on", "the", "mat"],
             ["hello", "world"],
             ["masks", "keep", "attention", "honest"]]
lengths = [len(s) for s in sentences]
n = max(lengths)
for sentence in sentences:
    print(" ".join(f"{token:>9}" for token in sentence + ["·pad·"] * (n - len(sentence))))
print("lengths:", lengths, " n:", n)
print(hm.padding_mask(lengths, n).astype(int))


# %% [markdown]
# ### Exercise 1: `padding_mask(lengths, n)`
#
# * `lengths`: a list or 1-D array of `b` whole numbers; `n`: the padded length.
# * Return a boolean array of shape `(b, n)`, True at position `p` of sequence `i` exactly when
#   `p < lengths[i]`: the real tokens come first (positions `0 … L − 1`), the filler after them.
# * Raise `ValueError` if a length is negative or longer than `n`: such a batch was built wrong, and cutting it
#   silently would hide the mistake.
#
# One comparison does it, with broadcasting: positions as a row `(1, n)` against lengths as a column `(b, 1)`.

# %% nbgrader={"grade_id": "padding_mask", "schema_version": 3, "locked": false, "solution": true, "grade": false}
def padding_mask(lengths, n):
    """(b, n) bool, True at real tokens (position < length)."""
    ### BEGIN SOLUTION
    lengths = np.asarray(lengths)
    if np.any(lengths < 0) or np.any(lengths > n):
        raise ValueError(f"every length must lie between 0 and n = {n}, got {lengths.tolist()}")
    positions = np.arange(n)  # (n,)
    return positions[None, :] < lengths[:, None]  # (b, n)
    ### END SOLUTION


# %%
with hm.if_written("padding_mask"):
    print(padding_mask([3, 1, 4], 4))

# %% nbgrader={"grade_id": "test_padding_mask", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 2}
checks.check_padding_mask(padding_mask)
### BEGIN HIDDEN TESTS
checks.check_padding_mask(padding_mask, seed=5003, thorough=True)
### END HIDDEN TESTS

# %% nbgrader={"grade_id": "test_padding_mask_errors", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 1}
checks.check_padding_mask_errors(padding_mask)
### BEGIN HIDDEN TESTS
checks.check_padding_mask_errors(padding_mask, thorough=True)
### END HIDDEN TESTS

# %% [markdown]
# ### Keys, not queries
#
# A `(b, n)` padding mask becomes an attention mask by deciding which axis it constrains. The scores are
# `[query, key]`, and the filler must never be *looked at*, so the padding mask constrains the **keys**: it is
# broadcast as `(b, 1, 1, n)`, one row copied down every query.
#
# What about the filler's own queries, the bottom rows? They look at the real keys and produce an output,
# which nobody uses: the loss, the pooling and the next token all read real positions only. Masking those rows
# as well buys nothing, and it leaves rows with no allowed key at all, which is exactly where a softmax
# without the guard of notebook 00 returns NaN. The two pictures show the difference, with the causal
# mask combined in.

# %%
n, length = 8, 5
keys_real = hm.padding_mask([length], n)[0]  # (n,)
causal = hm.causal_mask(n)
right = causal & keys_real[None, :]  # the padding constrains the keys (columns)
also_rows = right & keys_real[:, None]  # ... and, needlessly, the queries (rows) too
display(plots.picture(plots.keys_not_queries_figure(right, also_rows, keys_real)))
print("rows with no allowed key:", int((~right.any(axis=1)).sum()), "versus", int((~also_rows.any(axis=1)).sum()))

# %% [markdown]
# ## 2 · The padding bug
#
# Here is the bug the lesson warns about, running. `pad.ToyEncoder` is one attention layer with fixed random
# projections (width 16), bidirectional like an encoder (BERT and its relatives: no causal mask). We take one
# sentence of 5 tokens and compute its output four ways: alone, and inside three batches whose other sentence
# has 5, 9 and 20 tokens. Each time we compare with the output it gets alone.

# %%
encoder = pad.ToyEncoder(d=16, seed=0)
sentence = encoder.tokens(5)
alone = encoder.alone(sentence)
print("neighbour length | batch n | max difference without mask | with mask")
for neighbour_length in [5, 9, 20]:
    batch = [sentence, encoder.tokens(neighbour_length)]
    without = encoder.attend(batch, use_mask=False)[0]
    with_mask = encoder.attend(batch, use_mask=True)[0]
    print(f"{neighbour_length:>16} | {max(5, neighbour_length):>7} | "
          f"{np.abs(without - alone).max():>27.3f} | {np.abs(with_mask - alone).max():.1e}")

# %% [markdown]
# Without the padding mask the same sentence gets a different result in every batch: next to a sentence of its
# own length nothing changes (there is no filler), next to a longer one its queries spread part of their
# attention over the filler keys, and the more filler, the more they spread. With the mask the difference is
# zero up to rounding: the sentence cannot tell which batch it is in. No error, no warning, no NaN: only numbers
# that depend on something they should not depend on.
#
# ### Who gets hurt: short sequences
#
# How much attention leaks to the filler? A query's weights are spread over all `n` keys; `L` of them are real
# and `n − L` are filler. If the filler keys score about as well as real ones, the filler takes roughly a
# share `(n − L) / n` of the attention. Below, sentences of every length from 1 to 32 are batched with a
# sentence of 32 tokens (so `n = 32`) without the mask, and two things are measured, averaged over 20 random
# sentences per length: the share of attention spent on filler, and the error of each output vector
# `|wrong − right|`, measured in units of a typical value vector (the mean length of the real tokens' values,
# so 1.0 means "off by as much as a whole value vector").

# %%
lengths_tried, filler_share, output_error = pad.padding_damage(n=32, d=16, trials=20, seed=0)
display(plots.picture(plots.padding_damage_figure(lengths_tried, filler_share, output_error, n=32)))
for L in [1, 4, 16, 31]:
    print(f"L = {L:>2}: {filler_share[L - 1]:.0%} of the attention on filler, "
          f"output off by {output_error[L - 1]:.2f} value-vector lengths")

# %% [markdown]
# This is the lesson's observation, measured: the bug costs little on the longest sequences of a batch and a
# great deal on the short ones. In a real model it shows up as "quality is worse on short inputs", which looks
# like a property of the data, not like a bug, and a model *trained* with the bug even learns to live with its
# own filler. That is why it survives so long.
#
# ### Why decoders often get away with it (and when they do not)
#
# With the filler *after* the real tokens (right padding) and a causal mask, a real query at position `i < L`
# only sees keys `≤ i`, which are all real. The causal mask hides the filler by accident:

# %%
sentence = encoder.tokens(5)
batch = [sentence, encoder.tokens(20)]
without = encoder.attend(batch, use_mask=False, causal=True)[0]
print("decoder, right padding, padding mask forgotten: max difference",
      np.abs(without - encoder.alone(sentence, causal=True)).max())


# %% [markdown]
# The luck runs out as soon as filler sits *before* real tokens. Batched generation usually pads on the
# left (so that every sequence's next token lands in the same column), and then the causal mask lets every real
# query see the filler in front of it. Encoders, classifiers that average over all positions, and anything
# bidirectional have no causal mask to hide behind. The habit that is always right: **build the padding mask
# and combine it with every other mask.**

# %% [markdown]
# ## 3 · Sliding windows
#
# A sliding window limits how far back a query looks. In this course, a window of size `w` means **the query
# itself and the `w − 1` tokens before it**: query `i` may attend to key `j` when `i − w < j ≤ i`. That is
# `w` keys once the sequence is long enough (fewer at the start, where there are fewer tokens before).
#
# Two models made it famous. **Longformer** (Beltagy et al., 2020) is an encoder: its window is symmetric,
# half before and half after each token, and a few chosen tokens attend globally. **Mistral 7B** (Jiang et al.,
# 2023) is a decoder: its window looks only backwards, and that is the kind you write here. Mind the count,
# though: Mistral's paper and reference code count one more key than this course does (see "The off-by-one"
# below).
#
# ### Exercise 2: `sliding_window_mask(n, w)`
#
# * Return an `(n, n)` boolean mask, True where `query − w < key ≤ query`.
# * `w ≥ n` is allowed (the window then covers everything before: it is the causal mask).
# * Raise `ValueError` for `w < 1`: a window must contain at least the query itself.

# %% nbgrader={"grade_id": "sliding_window_mask", "schema_version": 3, "locked": false, "solution": true, "grade": false}
def sliding_window_mask(n, w):
    """(n, n) bool, True where query - w < key <= query."""
    ### BEGIN SOLUTION
    if w < 1:
        raise ValueError(f"the window must hold at least one key (the query itself), got w = {w}")
    query = np.arange(n)[:, None]  # (n, 1)
    key = np.arange(n)[None, :]  # (1, n)
    return (key <= query) & (key > query - w)  # (n, n)
    ### END SOLUTION


# %%
with hm.if_written("sliding_window_mask"):
    window = sliding_window_mask(7, 3)
    print(window.astype(int))
    print("keys per query:", window.sum(axis=1))

# %% nbgrader={"grade_id": "test_sliding_window_mask", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 2}
checks.check_sliding_window_mask(sliding_window_mask)
### BEGIN HIDDEN TESTS
checks.check_sliding_window_mask(sliding_window_mask, thorough=True)
### END HIDDEN TESTS

# %% nbgrader={"grade_id": "test_sliding_window_mask_errors", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 1}
checks.check_sliding_window_mask_errors(sliding_window_mask)
### BEGIN HIDDEN TESTS
checks.check_sliding_window_mask_errors(sliding_window_mask, thorough=True)
### END HIDDEN TESTS

# %% [markdown]
# ### w keys or w + 1? The off-by-one
#
# "The last `w` tokens" is ambiguous: does it count the query itself? Write the condition as
# `query − w ≤ key ≤ query` and each query sees itself *and* `w` before it, `w + 1` keys. Both counts are in
# real use, for the same model:
#
# * **Mistral's paper** describes the window as the positions from `i − W` to `i`, which is `W + 1` keys, and
#   **Mistral's reference code** as released (`one_file_ref.py`, at
#   [commit 3dc8aed of mistral-inference](https://github.com/mistralai/mistral-inference/blob/3dc8aed1835d26cbff9ef26a12cbeb2ec8873a0b/one_file_ref.py))
#   builds it as `torch.triu(mask, diagonal=-sliding_window)`: `W + 1` keys too. (A commit of March 2024,
#   cad0f614499e04855035c6665903aff87498f68b, changed it to `W` keys; the file was removed in 2025.)
# * **xformers**' local attention masks (`diagonal=-window_size + 1`), which Mistral's own inference code
#   calls (`make_local_attention(sliding_window)`), **Hugging Face transformers**, and **FlashAttention**
#   called with `window_size=(W − 1, 0)` keep **`W`** keys. This course does the same: `w` keys.
#
# FlashAttention's `window_size=(left, right)` counts the keys on each side of the query (`[i − left, i + right]`,
# inclusive), so `W` keys need `left = W − 1`; passing `W` silently makes the window one key wider. Hugging Face
# transformers has had exactly this disagreement between its attention back-ends (issues #29623 and #39408,
# fixed in pull request #40163), and vLLM's issue #3385 shows people arguing over which count is the right one.
# Which convention a model was *trained* with is part of the model: read its attention code, not only the number
# in its config. Here are the two codebases' lines, transcribed to NumPy, against the course's mask:

# %%
n, w = 10, 4
mistral_reference = local.window_as_in_mistral_reference(n, w)  # np.triu(np.tril(ones), -w)
xformers = local.window_as_in_xformers(n, w)  # np.triu(np.tril(ones), -w + 1)
print("keys per query, this course (query − w < key ≤ query):", hm.sliding_window_mask(n, w).sum(axis=1))
print("keys per query, as xformers / Hugging Face           :", xformers.sum(axis=1))
print("keys per query, as Mistral's paper and reference code:", mistral_reference.sum(axis=1))
print("xformers' band is the course's:", np.array_equal(xformers, hm.sliding_window_mask(n, w)))

# %% [markdown]
# ### What the window saves
#
# A causal mask keeps `n(n + 1)/2` entries, which grows like `n²/2`. A window keeps at most `w` per query:
# `n·w − w(w − 1)/2` entries (the first `w − 1` queries see fewer), which grows like `n·w`, linearly. The
# table uses Mistral 7B's window; the ratio is the work a windowed kernel saves over a causal one.

# %%
w = local.MISTRAL_7B["sliding_window"]
print(f"window w = {w:,} ({local.MISTRAL_7B['name']})")
print(f"{'n':>8} | {'causal entries':>16} | {'window entries':>16} | causal / window")
for n in [1024, 4096, 8192, 32768, 131072]:
    causal_entries = hm.causal_used_entries(n)
    window_entries = local.sliding_window_entries(n, w)
    print(f"{n:>8,} | {causal_entries:>16,} | {window_entries:>16,} | {causal_entries / window_entries:.2f}")

# %% [markdown]
# Up to `n = w` the two are identical: a window only starts to save once the sequence is longer than it.
#
# The window does something just as important to **generation**. To produce token `t`, a model needs the keys
# and values of every token it may attend to, kept in the *KV cache* (notebook 06 sizes it). With a causal
# mask that is all `t` earlier tokens, so the cache grows without bound. With a window it is at most `w`
# tokens: older entries can be overwritten (Mistral calls it a rolling buffer). With Mistral 7B's shape
# (32 layers, 8 key/value heads of size 128, 2 bytes per number, from its paper and its `config.json`):

# %%
config = local.MISTRAL_7B
per_token = local.kv_cache_bytes_per_token(config["n_layers"], config["n_kv_heads"], config["head_dim"])
context = 32768
full_cache = per_token * local.keys_in_cache(context)[-1]
window_cache = per_token * local.keys_in_cache(context, config["sliding_window"])[-1]
print(f"one cached token: {per_token:,} bytes ({per_token / 2**10:.0f} KiB)")
print(f"cache at token {context:,}: {full_cache / 2**30:.2f} GiB with a causal mask, "
      f"{window_cache / 2**30:.2f} GiB with the window: {full_cache / window_cache:.0f}× smaller")
plots.picture(plots.cache_growth_figure(per_token, context, config["sliding_window"], config["name"]))

# %% [markdown]
# ### A window per layer, a long reach in total
#
# Doesn't a window make the model blind to anything older than `w` tokens? Only within one layer. Layer 2 reads
# the outputs of layer 1, and each of those already mixed `w` tokens, so after two layers information can travel
# `2(w − 1)` positions, after `L` layers `L(w − 1)`. Composing masks across layers is a boolean matrix product.
# Below: which tokens can influence the last one, for `n = 16` and `w = 3`, after 1, 2 and 4 layers.

# %%
n, w = 16, 3
reach = {layers: local.receptive_field(n, w, layers) for layers in [1, 2, 4]}  # (n, n) each
display(plots.picture(plots.receptive_field_figure(reach)))  # titles: how far back the last token reaches
span = config["n_layers"] * config["sliding_window"]
print(f"{config['name']}: {config['n_layers']} layers × a window of {config['sliding_window']:,} "
      f"≈ {span:,} tokens of theoretical reach")

# %% [markdown]
# That last number is the "about 131K tokens" of attention span that the Mistral paper quotes for its last layer.
# (Theoretical: information can travel that far; whether it usefully does is another matter.)

# %% [markdown]
# ## 4 · Composing masks
#
# Each mask answers one yes/no question about a (query, key) pair. When every question must be answered yes,
# the combined mask is their AND; that is how padding, causal and window combine. The shapes make it work
# through broadcasting, each mask carrying only the axes it depends on:
#
# | mask | depends on | shape to broadcast as |
# |---|---|---|
# | padding | sequence, key | `(b, 1, 1, n)` |
# | causal, window | query, key | `(n, n)`, that is `(1, 1, n, n)` |
# | combined | | `(b, 1, n, n)`, and against the scores `(b, h, n, n)` the 1 covers every head |

# %%
b, h, n = 3, 4, 6
keys_real = hm.padding_mask([6, 2, 4], n)[:, None, None, :]  # (b, 1, 1, n_k)
pattern = hm.causal_mask(n) & hm.sliding_window_mask(n, 3)  # (n_q, n_k)
combined = keys_real & pattern
print("padding", keys_real.shape, "AND pattern", pattern.shape, "->", combined.shape)
print("against the scores:", np.broadcast_shapes(combined.shape, (b, h, n, n)))

# %% [markdown]
# Some rules *grant* attention instead of forbidding it, and those combine with **OR**: a key is allowed if one
# rule or the other allows it.
#
# * **Prefix LM** (as in T5's prefix language modelling and UniLM): the prompt, the first `p` tokens, is read
#   both ways, and the rest is generated causally: `causal OR (key < p)`.
# * **Attention sinks** (Xiao et al., 2023, StreamingLLM): a sliding window alone loses the first tokens, on which
#   many heads park their attention; keeping them visible to every query repairs it: `(window OR key < s) AND causal`.
# * **Global tokens** (Longformer, BigBird): a few tokens every query sees, beside a local window: `local OR global`.
#   The block-sparse layout "global + local" of section 6 is exactly this, tile by tile.

# %%
n = 12
prefix_lm = local.prefix_lm_mask(n, 4)
sinks = local.window_with_sinks_mask(n, 3, 2)
global_local = local.global_local_layout(n, width=3, n_global=1)
display(plots.picture(plots.granting_masks_figure({"prefix LM:\ncausal OR key < 4": prefix_lm,
                                                   "window 3 OR 2 sinks\n(and causal)": sinks,
                                                   "local 3 OR global\nfirst (and causal)": global_local})))
causal, window = hm.causal_mask(n), hm.sliding_window_mask(n, 3)
print("prefix LM is more than the causal mask:", int(prefix_lm.sum() - causal.sum()), "extra entries;",
      "an AND with the prefix rule would be less:", int((causal & (np.arange(n) < 4)[None, :]).sum()), "entries")
print("sinks add to the window:", int(sinks.sum() - window.sum()), "entries")


# %% [markdown]
# ### Exercise 3: `attention_mask(lengths, n, causal=True, window=None)`
#
# Return the `(b, 1, n, n)` boolean mask that is True where
#
# * the **key** is real (`key < lengths[i]` for sequence `i`), and
# * if `causal` is true, `key ≤ query`, and
# * if `window` is given, `query − window < key ≤ query` (the window of exercise 2, which never includes
#   the future, even with `causal=False`).
#
# Do not mask the query rows of the filler. Raise `ValueError` for lengths that are negative or longer than `n`
# (your `padding_mask` already does: you may call your functions from exercises 1 and 2).

# %% nbgrader={"grade_id": "attention_mask", "schema_version": 3, "locked": false, "solution": true, "grade": false}
def attention_mask(lengths, n, causal=True, window=None):
    """(b, 1, n, n) bool: the key is real, and causal, and within the window, as asked."""
    ### BEGIN SOLUTION
    lengths = np.asarray(lengths)
    if np.any(lengths < 0) or np.any(lengths > n):
        raise ValueError(f"every length must lie between 0 and n = {n}, got {lengths.tolist()}")
    query = np.arange(n)[:, None]  # (n_q, 1)
    key = np.arange(n)[None, :]  # (1, n_k)
    allowed = key[None, :, :] < lengths[:, None, None]  # (b, 1, n_k): the key is real
    if causal:
        allowed = allowed & (key <= query)  # (b, n_q, n_k)
    if window is not None:
        allowed = allowed & (key <= query) & (key > query - window)
    allowed = np.broadcast_to(allowed, (len(lengths), n, n))
    return allowed[:, None, :, :].copy()  # (b, 1, n_q, n_k)
    ### END SOLUTION


# %%
with hm.if_written("attention_mask"):
    print(attention_mask([4, 2], 4, causal=True).astype(int))

# %% nbgrader={"grade_id": "test_attention_mask", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 3}
checks.check_attention_mask(attention_mask)
### BEGIN HIDDEN TESTS
checks.check_attention_mask(attention_mask, seed=2719, thorough=True)
### END HIDDEN TESTS

# %% [markdown]
# ## 5 · Batching must not change the answer
#
# Here is the property all of this is for. Put a sequence in a batch, padded to the longest neighbour,
# and its real outputs must be **exactly** what it gets alone, whoever the neighbours are and whatever the
# filler holds. That is a test you can run on any attention implementation, and the one that catches a
# forgotten padding mask.
#
# ### Exercise 4: `batched_attention(q, k, v, lengths, causal=True, window=None)`
#
# * `q`, `k`: `(b, n, d)` and `v`: `(b, n, d_v)`, one padded batch (single head); `lengths`: the real length
#   of each sequence. The filler positions may hold anything.
# * Return the `(b, n, d_v)` output of masked attention, such that for every sequence `i` the rows
#   `out[i, :lengths[i]]` equal the attention of that sequence alone (`q[i, :L]`, `k[i, :L]`, `v[i, :L]`) with
#   the same `causal` and `window`.
# * Every output must be finite, the filler rows included (a NaN there would poison the next layer, where
#   `0 · NaN = NaN`).
#
# Build on your own work, as everywhere in the course: your `attention_mask` of exercise 3 for the mask, and
# the softmax of notebook 00 written again here (scores over √d, −∞ where the mask forbids, a row with no
# allowed key all zeros). The course's `hm.attention` and `hm.attention_mask` are not there when the notebook
# is graded. Mind the shapes: the mask is `(b, 1, n, n)` and single-head scores are `(b, n, n)`. What does
# broadcasting make of those two?

# %% nbgrader={"grade_id": "batched_attention", "schema_version": 3, "locked": false, "solution": true, "grade": false}
def batched_attention(q, k, v, lengths, causal=True, window=None):
    """Masked single-head attention over a padded batch: (b, n, d) -> (b, n, d_v)."""
    ### BEGIN SOLUTION
    n, d = q.shape[1], q.shape[-1]
    allowed = attention_mask(lengths, n, causal=causal, window=window)[:, 0]  # (b, n_q, n_k): drop the head axis
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d)  # (b, n_q, n_k)
    scores = np.where(allowed, scores, -np.inf)
    top = scores.max(axis=-1, keepdims=True)  # (b, n_q, 1); -inf on a row with no allowed key
    weights = np.exp(scores - np.where(np.isfinite(top), top, 0.0))  # exactly 0 where forbidden
    total = weights.sum(axis=-1, keepdims=True)
    weights = np.divide(weights, total, out=np.zeros_like(weights), where=total > 0)  # empty rows stay 0
    return weights @ v  # (b, n, d_v)
    ### END SOLUTION


# %% [markdown]
# Try the property yourself before running the tests: one sequence of 3 tokens, alone and in a batch next to a
# sequence of 6, with huge values in the filler.

# %%
rng = np.random.default_rng(1)
short = rng.normal(size=(3, 4))
batch = np.full((2, 6, 4), 50.0)  # filler everywhere...
batch[0, :3] = short  # ...then the short sequence
batch[1] = rng.normal(size=(6, 4))  # and its longer neighbour
with hm.if_written("batched_attention"):
    in_batch = batched_attention(batch, batch, batch, [3, 6], causal=False)[0, :3]
    by_itself = batched_attention(short[None], short[None], short[None], [3], causal=False)[0]
    print("largest difference, in the batch vs alone:", np.abs(in_batch - by_itself).max())

# %% nbgrader={"grade_id": "test_batched_attention", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 3}
checks.check_batched_attention(batched_attention, attention_mask)
### BEGIN HIDDEN TESTS
checks.check_batched_attention(batched_attention, attention_mask, seed=8191, thorough=True)
### END HIDDEN TESTS

# %% [markdown]
# ## 6 · Block-sparse masks
#
# A GPU kernel does not work entry by entry but tile by tile (notebook 04's tiled attention skips whole tiles
# above the diagonal). Block-sparse attention takes this literally: the mask is decided per tile of
# `block × block` entries by a small boolean **layout** of shape `(n / block, n / block)`, and only the kept
# tiles are ever computed. The layout is expanded to a token mask by repeating each cell `block` times along
# both axes (`hm.block_sparse_mask`), and the causal rule still applies inside the diagonal tiles.
#
# Three layouts from the long-context literature, on 48 tokens in tiles of 6: **local** (its own tile and the
# one before: a blocky sliding window), **global + local** (also the first tile, which every query sees, like
# the global tokens of Longformer and BigBird), and **strided** (local plus every third tile back, after
# the Sparse Transformer of Child et al., 2019).

# %%
n, block = 48, 6
layouts = {kind: local.layout_mask(kind, n, block) for kind in ["local", "global + local", "strided"]}  # (layout, mask)
plots.picture(plots.block_sparse_figure(layouts, block))  # above: the layout of tiles; below: the token mask

# %% [markdown]
# The two percentages over each picture of tokens differ: a kernel computes kept tiles whole, including the half of each
# diagonal tile that the causal rule then throws away. The *work* is the number of kept tiles times `block²`.
#
# What matters is how that work grows. The causal layout keeps about half of all tiles at any length. A
# local layout keeps a fixed number of tiles *per row*, so its share of the `n²` matrix falls like `1/n`: the
# cost grows linearly in `n`, like the sliding window's. A few global tiles add one column, still linear.
# A strided layout with a *fixed* stride keeps a fixed share of the tiles (about `1/(2·stride)`), so it only
# divides the quadratic cost; the Sparse Transformer grows its stride like `√n`, for work of order `n√n`.

# %%
block = 64
names = [translated(kind) for kind in local.LAYOUTS]  # the layouts' names, in the notebook's language
print(f"{'n':>7} | " + " | ".join(f"{name:>22}" for name in names))
for n in [512, 2048, 8192, 32768]:
    n_blocks = n // block
    shares = [local.block_sparse_work(make(n_blocks), block) / n**2 for make in local.LAYOUTS.values()]
    print(f"{n:>7,} | " + " | ".join(f"{share:>22.2%}" for share in shares))

# %% [markdown]
# ## 7 · The widget: compose your own mask
#
# Tick the masks to combine (these four are all ANDed: each forbids something) and move their parameters: the sequence length `n`, the real
# `length` of the sequence for the padding mask, the window `w`, the tile size and layout for the block-sparse
# mask (each mask's own controls stay greyed out until the mask is ticked). On the left is the mask; on the
# right, how many keys each query attends to, which is also how many keys and values must be cached to
# generate that token. The readouts give the kept entries and their share of
# the full `n²` matrix and of the causal `n(n + 1)/2`. Things to try:
#
# * causal with a window: the right-hand curve stops growing at `w` (the bounded cache);
# * padding alone, then with causal: filler columns go orange, filler rows stay;
# * padding with a small window and a short length: the last filler queries end with *no* allowed key
#   (rows that a correct softmax turns into zeros);
# * block-sparse with growing `n`: the kept fraction falls, the causal one does not.

# %%
mask_widget = MaskWidget()
mask_widget

# %% [markdown]
# ### Written question (2 points): Why mask the filler keys and not the filler queries?
#
# The padding mask forbids the filler *keys* (columns) and leaves the filler *queries* (rows) alone. Why is that
# the right choice? Answer in two to four sentences in the cell below, in place of *YOUR ANSWER HERE*. In a class
# your teacher grades it by hand; on your own, compare with the model answer in `solutions/`.

# %% [markdown] nbgrader={"grade_id": "written_keys_not_queries", "schema_version": 3, "locked": false, "solution": true, "grade": true, "points": 2}
# ### BEGIN SOLUTION
# **Model answer.** A row of the mask is one query, a column one key. A filler key must get weight 0, or a real
# token averages in filler values and its output depends on how much padding its batch has. A filler query's
# output is thrown away later (its position is padding), so it need not be masked; masking its row as well would
# leave it with no allowed key at all, a fully masked row that invites NaN.
#
# **Rubric for the grader (2 points).** 1 point: filler keys must get weight 0, so the real tokens' outputs do not
# depend on the padding. 1 point: filler queries' outputs are ignored anyway; masking their rows too creates fully
# masked rows (NaN risk). Half a point for an answer that names the idea without the reason.
# ### END SOLUTION

# %% [markdown]
# ## What to remember
#
# * Masks are booleans (True = may attend) indexed `[query, key]`; rules that forbid combine with AND, rules
#   that grant (prefix, sinks, global tokens) with OR; they broadcast to `(b, h, n, n)`, each carrying only
#   the axes it depends on.
# * Padding masks **keys**. Forget it and outputs depend on the batch: no crash, just worse results, and worst
#   for the shortest sequences. A causal mask with right padding hides the bug; left padding and encoders do not.
# * A window of `w` is, in this course (and in xformers, Hugging Face, FlashAttention's `(w − 1, 0)`), the query
#   and the `w − 1` tokens before it: `w` keys. Mistral's paper and reference code count `w + 1`: check which
#   count a model was trained with. A window makes the work linear in `n` and bounds the KV cache at `w`
#   tokens, while stacked layers still reach `L(w − 1)` back.
# * Block-sparse masks are chosen per tile; the work is the kept tiles, and with local layouts it grows linearly.
#
# Next, notebook 06: how many keys and values a model keeps per head, and what the KV cache of real models weighs.
