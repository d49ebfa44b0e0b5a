# %% [markdown]
# # 06 · How many key/value heads? MHA, MQA, GQA and the KV cache
#
# A language model writes one token at a time. To write token number *t + 1*, every layer lets the new
# token's queries look at the keys and values of all *t* tokens before it. Those keys and values never
# change once computed, so a model keeps them in memory instead of recomputing them: the **KV cache**.
# It grows by one entry per token, per layer, per sequence of the batch, and it is the reason long
# contexts and large batches run out of GPU memory.
#
# Multi-head attention gives every query head its own keys and values. Nothing forces that. This
# notebook is about letting several query heads **share** one set of keys and values:
#
# | scheme | query heads | key/value heads | who shares |
# |---|---|---|---|
# | MHA, multi-head attention | h | h | nobody: head i has its own K and V |
# | MQA, multi-query attention | h | 1 | all h query heads read the same K and V |
# | GQA, grouped-query attention | h | g, with 1 < g < h | each group of h / g consecutive query heads shares one K and V |
#
# You will write **one** function that does all three (`grouped_query_attention`), check that g = h
# is MHA and g = 1 is MQA, meet the silent bug that gives a query head the wrong KV head, and then
# count bytes: the size of the cache (`kv_cache_bytes`) for real models, next to the size of their
# weights and of a GPU's memory.

# %%
import numpy as np
from IPython.display import Markdown, display

import heads_and_masks as hm
from heads_and_masks import model_configs
from heads_and_masks.model_configs import GiB, KiB
from heads_and_masks.pictures.kv_heads import cache_per_token_figure, cache_vs_context_figure, head_mapping_figure, picture
from heads_and_masks.widgets.kv_heads import KVCacheCalculator

np.set_printoptions(precision=3, suppress=True)

# %% [markdown]
# ## Which KV head does query head i read?
#
# Shapes first. Queries keep their h heads: `q` is `(b, h, n, d)`. Keys and values have only g heads:
# `k` and `v` are `(b, g, n, d)`. The h query heads are cut into g groups of `h // g` **consecutive**
# heads, and group j reads KV head j. So query head i reads
#
# $$\text{KV head of query head } i = i \,//\, (h \,//\, g).$$
#
# This is a convention, but it is the one every published checkpoint was trained with (it is what
# `repeat_kv` in Hugging Face's Llama code and `repeat_interleave` in PyTorch produce), so a model
# only works if you follow it. In NumPy, `np.repeat` produces that order; `np.tile` produces another:

# %%
h, g = 8, 2
print("np.repeat(range(g), h // g):", np.repeat(np.arange(g), h // g), " <- KV head of query heads 0..7")
print("np.tile(range(g), h // g):  ", np.tile(np.arange(g), h // g), " <- i % g: the wrong order")
print("i // (h // g):              ", np.arange(h) // (h // g))

# %%
picture(head_mapping_figure(h=8, g=2))


# %% [markdown]
# With `np.tile` query head 1 reads KV head 1 instead of 0: nothing crashes, the shapes are right,
# and every output number is plausible. Below you will see exactly when this bug is invisible and
# when it changes the output.
#
# ## Exercise 1: one function for MHA, GQA and MQA
#
# Here is the attention of notebook 00, given so you can reuse it (it works over any leading axes, takes
# a boolean mask with True = may attend, and gives all-zero weights to a row with no allowed key):

# %% nbgrader={"grade_id": "given_attention", "schema_version": 3, "locked": true, "solution": false, "grade": false}
def attention(q, k, v, mask=None):
    """softmax(q kᵀ / sqrt(d), masked) v over the last two axes (notebook 00)."""
    d = q.shape[-1]
    scores = q @ np.swapaxes(k, -1, -2) / d**0.5  # (..., n_q, n_k); a Python float keeps float32 float32
    allowed = np.ones(scores.shape, bool) if mask is None else np.broadcast_to(mask, scores.shape)
    top = np.max(np.where(allowed, scores, -np.inf), axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)  # a row with nothing allowed
    exps = np.where(allowed, np.exp(np.where(allowed, scores - top, 0.0)), 0.0)
    totals = exps.sum(axis=-1, keepdims=True)
    weights = np.divide(exps, totals, out=np.zeros_like(exps), where=totals > 0)
    return weights @ v  # (..., n_q, d_v)


# %% [markdown]
# Write `grouped_query_attention(q, k, v, mask=None)`:
#
# * `q` has shape `(b, h, n_q, d)`; `k` and `v` have shape `(b, g, n_k, d)`. Usually `n_q = n_k = n`,
#   but during generation one new query looks at all the cached keys: `n_q = 1`. Your function should
#   not care.
# * If `h` is not divisible by `g`, raise `ValueError` (the heads cannot be split into equal groups).
# * Query head i uses KV head `i // (h // g)`.
# * `mask` (boolean, True = may attend) broadcasts against the scores of all query heads,
#   `(b, h, n_q, n_k)`: it may be `(n_q, n_k)`, `(b, 1, n_q, n_k)` or `(b, h, n_q, n_k)`.
# * Return `(b, h, n_q, d)`, one output per query head, like multi-head attention before the heads are
#   merged.
#
# Two styles work. The simple one copies each KV head `h // g` times (`np.repeat(k, h // g, axis=1)`)
# and calls `attention`. The frugal one never copies: reshape the queries to `(b, g, h // g, n_q, d)`
# so that each group sits over its own KV head, and let broadcasting (or `np.einsum`) share `k` and `v`
# across the group. If you choose the second, remember that the mask belongs to the *query* heads.
#
# The tests compare your outputs with the course's on MHA, GQA and MQA shapes, with masks of every
# allowed shape and on a generation step; they fail on any numpy warning.

# %% nbgrader={"grade_id": "grouped_query_attention", "schema_version": 3, "locked": false, "solution": true, "grade": false}
def grouped_query_attention(q, k, v, mask=None):
    """q (b, h, n_q, d); k, v (b, g, n_k, d) with g dividing h; query head i reads KV head i // (h // g)."""
    ### BEGIN SOLUTION
    h, g = q.shape[1], k.shape[1]
    if g < 1 or h % g != 0:
        raise ValueError(f"the {h} query heads must be divisible by the {g} KV heads")
    group = h // g  # query heads per KV head
    k = np.repeat(k, group, axis=1)  # (b, h, n_k, d): KV head j serves query heads j*group ... (j+1)*group - 1
    v = np.repeat(v, group, axis=1)  # (b, h, n_k, d)
    return attention(q, k, v, mask)  # (b, h, n_q, d)
    ### END SOLUTION


# %% [markdown]
# Try it: with g = h every query head has its own KV head, so the result must be ordinary multi-head
# attention (plain `attention` over the heads axis); with g = 1 every query head reads the same one.

# %%
rng = np.random.default_rng(0)
b, h, n, d = 2, 4, 5, 8
q = rng.normal(size=(b, h, n, d))
k_all, v_all = rng.normal(size=(2, b, h, n, d))
causal = np.tril(np.ones((n, n), dtype=bool))
with hm.if_written("grouped_query_attention"):
    mha = attention(q, k_all, v_all, causal)
    print("g = h vs MHA, largest difference:", np.abs(grouped_query_attention(q, k_all, v_all, causal) - mha).max())
    k_one, v_one = k_all[:, :1], v_all[:, :1]  # (b, 1, n, d)
    mqa = attention(q, k_one, v_one, causal)  # broadcasting shares the single KV head
    print("g = 1 vs MQA, largest difference:", np.abs(grouped_query_attention(q, k_one, v_one, causal) - mqa).max())

# %% nbgrader={"grade_id": "test_grouped_query_attention", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 4}
from heads_and_masks.checks.kv_heads import check_grouped_query_attention

check_grouped_query_attention(grouped_query_attention)
### BEGIN HIDDEN TESTS
check_grouped_query_attention(grouped_query_attention, seed=2027, thorough=True)
### END HIDDEN TESTS

# %% nbgrader={"grade_id": "test_grouped_query_attention_masks", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 2}
from heads_and_masks.checks.kv_heads import check_grouped_query_attention_masks

check_grouped_query_attention_masks(grouped_query_attention)
### BEGIN HIDDEN TESTS
check_grouped_query_attention_masks(grouped_query_attention, seed=4051, thorough=True)
### END HIDDEN TESTS

# %% nbgrader={"grade_id": "test_grouped_query_attention_errors", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 1}
from heads_and_masks.checks.kv_heads import check_grouped_query_attention_errors

check_grouped_query_attention_errors(grouped_query_attention)
### BEGIN HIDDEN TESTS
check_grouped_query_attention_errors(grouped_query_attention, seed=11, thorough=True)
### END HIDDEN TESTS

# %% [markdown]
# ## The two ends of the family, numerically
#
# The course's own `hm.grouped_query_attention` is the same function. One implementation covers all
# three schemes: MHA is the case g = h and MQA the case g = 1. With 12 query heads, every divisor of 12
# is a valid number of KV heads:

# %%
rng = np.random.default_rng(1)
b, h, n, d = 1, 12, 6, 16
q = rng.normal(size=(b, h, n, d))
causal = np.tril(np.ones((n, n), dtype=bool))
for g in [12, 6, 4, 3, 2, 1]:
    k, v = rng.normal(size=(2, b, g, n, d))
    grouped = hm.grouped_query_attention(q, k, v, causal)
    # the long way: give each query head its KV head explicitly, then plain attention
    kv_of_head = np.arange(h) // (h // g)
    explicit = hm.attention(q, k[:, kv_of_head], v[:, kv_of_head], causal)
    kind = "MHA" if g == h else "MQA" if g == 1 else "GQA"
    print(f"g = {g:2d} ({kind}): groups of {h // g:2d} query heads, "
          f"difference from the explicit version {np.abs(grouped - explicit).max():.1e}")


# %% [markdown]
# ### The `tile` bug: silent exactly where you would test first
#
# Now the wrong order, `i % g`. At the two ends of the family it cannot go wrong: with g = h, `i % h =
# i // 1 = i`; with g = 1, both give 0. So a test on MHA or MQA shapes alone never sees it. In between,
# the outputs differ:

# %%
def gqa_with_tile(q, k, v, mask=None):
    """The bug: np.tile makes query head i read KV head i % g."""
    repeats = q.shape[1] // k.shape[1]
    return hm.attention(q, np.tile(k, (1, repeats, 1, 1)), np.tile(v, (1, repeats, 1, 1)), mask)


for g in [12, 4, 2, 1]:
    k, v = rng.normal(size=(2, b, g, n, d))
    gap = np.abs(gqa_with_tile(q, k, v, causal) - hm.grouped_query_attention(q, k, v, causal)).max()
    print(f"g = {g:2d}: largest difference tile vs repeat = {gap:.3f}")

# %% [markdown]
# Why is it *silent*, even in a model? With `tile`, query head i simply plays the part of another
# query head: the set of outputs is the same, in a different order of heads. Check it: permuting the
# query heads turns one into the other exactly.

# %%
g = 4
k, v = rng.normal(size=(2, b, g, n, d))
group = h // g
tile_kv = np.arange(h) % g  # KV head read by each query head under tile
# a permutation of the query heads that puts them in the order repeat expects
order = np.argsort(tile_kv, kind="stable")
same = hm.grouped_query_attention(q[:, order], k, v, causal)
print("tile output, heads reordered, vs repeat on reordered queries:",
      np.abs(gqa_with_tile(q, k, v, causal)[:, order] - same).max())

# %% [markdown]
# So a model *trained from scratch* with `tile` learns just as well: its query heads are merely
# numbered differently. The bug bites when code and weights disagree: load a published checkpoint
# (trained with the `repeat` order) into an implementation that tiles, and most query heads read the
# keys of a head they were never trained with. Nothing crashes; the text is just worse. That is why the
# tests of this notebook use 1 < g < h.
#
# ## The arithmetic barely changes
#
# Count the work of one attention layer with g KV heads, in multiply-adds, for n tokens of width D
# and head size d:
#
# * projections: Q and O stay `n·D·(h·d)` each; K and V become `n·D·(g·d)` each instead of `n·D·(h·d)`;
# * scores and weighted sum: `2·n²·h·d`, **unchanged**: every query head still compares itself with
#   every key and averages every value; it merely shares them.
#
# Only the K and V projections shrink, and the rest of the layer (the MLP) does not change at all.
# So a whole model's arithmetic changes by the parameters of the K and V projections alone, while
# its cache shrinks by h / g. For the 70-billion-parameter Llama models (h = 64, g = 8):

# %%
llama70 = model_configs.model("Llama-2-70B")
as_mha = model_configs.parameters_with_kv_heads(llama70, llama70.query_heads)
as_mqa = model_configs.parameters_with_kv_heads(llama70, 1)
print(f"parameters (≈ multiply-adds per token): GQA {llama70.parameters / 1e9:.1f} B, "
      f"as MHA {as_mha / 1e9:.1f} B ({as_mha / llama70.parameters - 1:+.1%}), "
      f"as MQA {as_mqa / 1e9:.1f} B ({as_mqa / llama70.parameters - 1:+.1%})")
mha_per_token = llama70.kv_bytes_per_token(2, llama70.query_heads)
for g in (llama70.query_heads, llama70.kv_heads, 1):
    per_token = llama70.kv_bytes_per_token(2, g)
    saving = "(MHA)" if g == llama70.query_heads else f"({mha_per_token // per_token}× less than MHA)"
    print(f"KV cache per token with g = {g:2d}: {per_token / KiB:6,.0f} KiB {saving}")


# %% [markdown]
# ## The size of the KV cache
#
# For every token of every sequence, every layer stores one key vector and one value vector for each
# KV head. Each vector has `head_dim` numbers, each number takes `bytes_per_value` bytes (4 in fp32, 2 in
# bf16 or fp16, 1 in fp8). So
#
# $$\text{cache bytes} = 2 \cdot \text{layers} \cdot g \cdot \text{head\_dim} \cdot \text{tokens} \cdot
# \text{batch} \cdot \text{bytes per value},$$
#
# where the 2 counts K and V. The number of *query* heads does not appear: only KV heads are cached.
# That is the whole point of GQA and MQA.
#
# ## Exercise 2: `kv_cache_bytes`
#
# Write `kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_value=2)`: the
# bytes of the K and V cache, **as an int**. Raise `ValueError` if a count is negative. (Zero tokens is
# fine: an empty cache has 0 bytes.) Three mistakes are common: forgetting that K and V are two
# tensors, counting bits instead of bytes, and forgetting that each sequence of the batch has its own
# cache. The tests check exact byte counts.

# %% nbgrader={"grade_id": "kv_cache_bytes", "schema_version": 3, "locked": false, "solution": true, "grade": false}
def kv_cache_bytes(n_layers, n_kv_heads, head_dim, seq_len, batch=1, bytes_per_value=2):
    """Bytes of the K and V cache: 2 · layers · KV heads · head size · tokens · batch · bytes per value."""
    ### BEGIN SOLUTION
    counts = {"n_layers": n_layers, "n_kv_heads": n_kv_heads, "head_dim": head_dim,
              "seq_len": seq_len, "batch": batch}
    for name, count in counts.items():
        if count < 0:
            raise ValueError(f"{name} must not be negative, got {count}")
    values = 2 * n_layers * n_kv_heads * head_dim * seq_len * batch  # K and V
    return values * bytes_per_value
    ### END SOLUTION


# %% [markdown]
# A first real number: Llama-2-7B (32 layers, 32 KV heads of 128) at its full context of 4096 tokens,
# one sequence, 16-bit values.

# %%
with hm.if_written("kv_cache_bytes"):
    size = kv_cache_bytes(32, 32, 128, 4096)
    print(f"{size:,} bytes = {size / 2**30:g} GiB")

# %% nbgrader={"grade_id": "test_kv_cache_bytes", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 3}
from heads_and_masks.checks.kv_heads import check_kv_cache_bytes

check_kv_cache_bytes(kv_cache_bytes)
### BEGIN HIDDEN TESTS
check_kv_cache_bytes(kv_cache_bytes, seed=99, thorough=True)
### END HIDDEN TESTS

# %% nbgrader={"grade_id": "test_kv_cache_bytes_errors", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 1}
from heads_and_masks.checks.kv_heads import check_kv_cache_bytes_errors

check_kv_cache_bytes_errors(kv_cache_bytes)
### BEGIN HIDDEN TESTS
check_kv_cache_bytes_errors(kv_cache_bytes, thorough=True)
### END HIDDEN TESTS

# %% [markdown]
# ## Real models
#
# `data/models.csv` holds the attention shape of ten real models. Each number comes from a public
# source, named in the file: the model's `config.json` on the Hugging Face hub, or its paper where the
# weights are not public (GPT-3). Each was checked against a second source (the paper, a public
# re-implementation, or the layer shapes of the checkpoint); the `second_source` column says which.
# The course reads the file through the package, so it works wherever the notebook runs:

# %%
models = model_configs.load_models()
print("read from", model_configs.data_dir() / "models.csv")
header = ("| model | scheme | layers | query heads h | KV heads g | h / g | head size | width | parameters | context |\n"
          "|---|---|---|---|---|---|---|---|---|---|\n")
rows = "".join(
    f"| {m.model} | {m.attention} | {m.layers} | {m.query_heads} | {m.kv_heads} | {m.group_size} | {m.head_dim} "
    f"| {m.hidden:,} | {m.parameters / 1e9:.3g} B | {m.context:,}"
    + (f" (window {m.sliding_window:,})" if m.sliding_window else "") + " |\n"
    for m in models.values())
display(Markdown(header + rows))

# %%
for m in models.values():
    print(f"{m.model:16s} {m.config_source}")

# %% [markdown]
# Three rows deserve a closer look.
#
# * **Gemma-7B** sets its head size explicitly: 16 heads of 256 make 4096, *wider* than the model's
#   width of 3072. A calculator that derives the head size as width / heads gets the cache wrong.
# * **Falcon-7B** has 71 query heads, a prime number: its only possible KV-head counts are 71 (MHA) and
#   1 (MQA). Its head size, 4544 / 71 = 64, is not in its `config.json`; it follows from the width.
# * **OPT-13B** is here because the vLLM paper (PagedAttention) published its cache per token, so the
#   formula can be checked against a number someone else computed.

# %%
gemma7 = models["Gemma-7B"]
derived = gemma7.hidden // gemma7.query_heads
print(f"Gemma-7B head size: {gemma7.head_dim} (config) vs width / heads = {derived}")
print(f"  cache per token: {gemma7.kv_bytes_per_token() / KiB:.0f} KiB, with the derived head size "
      f"{hm.kv_cache_bytes(gemma7.layers, gemma7.kv_heads, derived, 1) / KiB:.0f} KiB "
      f"({1 - derived / gemma7.head_dim:.0%} too little)")
falcon = models["Falcon-7B"]
print(f"Falcon-7B: divisors of h = {falcon.query_heads}:",
      [g for g in range(1, falcon.query_heads + 1) if falcon.query_heads % g == 0],
      f"; head size {falcon.hidden} / {falcon.query_heads} = {falcon.hidden / falcon.query_heads:g}")
opt = models["OPT-13B"]
print(f"OPT-13B cache per token: ours {opt.kv_bytes_per_token():,} bytes, published "
      f"{opt.published_kv_bytes_per_token:,} bytes (= {opt.published_kv_bytes_per_token / 1024:g} KiB, "
      f"the paper's '800 KB'); a full {opt.context:,}-token request: "
      f"{hm.kv_cache_bytes(opt.layers, opt.kv_heads, opt.head_dim, opt.context) / GiB:.2f} GiB")

# %% [markdown]
# Cache per token, across the models. MHA models (red-orange) pay for every query head; GQA (blue) divides
# by the group size; MQA (green) keeps a single KV head per layer (each bar names its kind on the right):

# %%
picture(cache_per_token_figure(models))

# %% [markdown]
# ## Cache, weights and a GPU
#
# The cache shares the GPU's memory with the weights. The weights have a fixed size (parameters ×
# bytes per value); the cache grows with every token of every sequence. So for a given GPU, batch and
# number format there is a **longest context that fits**:
#
# $$\text{longest context} = \left\lfloor \frac{\text{GPU memory} - \text{weights}}{\text{cache per token}
# \cdot \text{batch}} \right\rfloor .$$
#
# (Real servers fit somewhat less: activations, the framework and fragmentation also take memory.)
#
# **Units, and which memory.** Memory is built in powers of two: 1 GiB = 2³⁰ bytes = 1,073,741,824 bytes,
# and this notebook counts every size in GiB (and KiB = 2¹⁰ bytes). The GPU memory it uses is what the
# driver reports to programs (`nvidia-smi`'s total, in `data/gpus.csv`), not the size on the box, which no
# program gets whole (printed first below). Both ways of misreading the box matter (below: Llama-3.1-70B on an
# H200): the nominal size taken as GiB promises more than any program gets, and taken as 10⁹ bytes it promises
# too little.
#
# **Two limits.** Memory is not the only limit on the context: a model handles at most the context it was
# released with (the `context` column above; beyond it, its positions are untrained). The usable context is
# the smaller of the two. For one sequence in bf16, on an H100 and an H200:

# %%
gpus = model_configs.load_gpus()
for name, memory in gpus.items():
    print(f"{name}: sold as {model_configs.nominal_gb()[name]} GB, the driver reports {memory / GiB:.1f} GiB")
shown = [name for name in gpus if name != "RTX 4090"]
binds = {"weights": "the weights do not fit", "memory": "**memory**", "model": "model"}  # the limit that binds
table = ("| model | weights (GiB) | cache per 1K tokens (GiB) | its own context | "
         + " | ".join(f"{name} ({gpus[name] / GiB:.1f} GiB): memory allows | usable (binding limit)" for name in shown)
         + " |\n")
table += "|---|---|---|---|" + "---|---|" * len(shown) + "\n"
for m in models.values():
    cells = []
    for name in shown:
        limits = model_configs.context_limits(m, gpus[name])
        cells += [f"{limits.memory:,}", f"{limits.usable:,} ({binds[limits.binding]})"]
    table += (f"| {m.model} | {m.weights_bytes() / GiB:.1f} | {m.kv_bytes_per_token() * 1024 / GiB:.3f} | "
              f"{m.context:,} | " + " | ".join(cells) + " |\n")
display(Markdown(table))

# %% [markdown]
# For one sequence the model's own context binds almost everywhere: a single cache is small. Memory binds
# for the 70B models, whose weights leave little room. The H200 case in numbers, and what each misreading of
# its "141 GB" would have said:

# %%
llama31 = models["Llama-3.1-70B"]
h200 = gpus["H200"]
print(f"Llama-3.1-70B weights in bf16: {llama31.weights_bytes():,} bytes = {llama31.weights_bytes() / GiB:.1f} GiB")
print(f"H200 as the driver reports it: {h200:,} bytes = {h200 / GiB:.1f} GiB; free beside the weights "
      f"{(h200 - llama31.weights_bytes()) / GiB:.1f} GiB, a cache of {model_configs.longest_context(llama31, h200):,} tokens")
nominal = model_configs.nominal_gb()["H200"]
for reading, memory in ((f"{nominal} GiB (the box, in binary units)", nominal * GiB),
                        (f"{nominal} × 10⁹ bytes (the box, in decimal units)", nominal * 10**9)):
    misread = model_configs.longest_context(llama31, memory)
    print(f"counted as {reading}: "
          + ("the weights alone would not fit" if misread == 0 else f"a cache of {misread:,} tokens"))

# %% [markdown]
# Llama-2-70B and Llama-3.1-70B have the same attention shape, so the same cache per token; only the
# context they were trained for differs (4K and 128K). Here is what GQA buys the 70B model, compared
# with the MHA and MQA versions of the same shape, on two H100s:

# %%
picture(cache_vs_context_figure(llama70, memory_bytes=2 * gpus["H100"]))

# %%
llama31 = models["Llama-3.1-70B"]  # the same shape, trained for 128K tokens: here memory is what binds
for label, g in llama31.variants().items():
    limits = model_configs.context_limits(llama31, 2 * gpus["H100"], kv_heads=g)
    print(f"{label:14s}: on 2 × H100 the memory allows {limits.memory:>9,} tokens "
          f"(the model's own context: {limits.model:,}; the {limits.binding}'s limit binds)")

# %% [markdown]
# ## Why the cache, and not the arithmetic, limits generation
#
# While a model reads a prompt, it processes all its tokens at once: plenty of arithmetic per byte
# read. While it *generates*, each step handles one new token per sequence, and that step must read
# every weight once (shared by the whole batch) and **each sequence's entire cache**. The arithmetic on
# the cache is tiny: each cached key or value is used by the `h / g` query heads of its group, one
# multiply-add each. A data-centre GPU does on the order of a hundred multiply-adds or more in the time
# it takes to read one byte from its memory (divide the compute on its data sheet by its memory
# bandwidth), so generation waits for memory, and the number to shrink is the bytes read, the cache:

# %%
for name in ["Llama-2-7B", "Llama-3-8B", "Falcon-7B"]:
    m = models[name]
    per_value = m.query_heads // m.kv_heads  # multiply-adds per cached number, per generated token
    print(f"{name:11s} ({m.attention}): each cached number feeds {per_value:2d} multiply-add(s) per step, "
          f"{per_value / 2:4.1f} per byte in bf16")

# %% [markdown]
# And memory decides the **batch**: how many sequences one GPU can serve at once, which sets its
# throughput. Llama-3-8B on one H100 at 8K tokens of context, as it is (g = 8) and as MHA or MQA
# versions of the same shape would be:

# %%
llama3 = models["Llama-3-8B"]
free = gpus["H100"] - llama3.weights_bytes()
for label, g in llama3.variants().items():
    per_sequence = hm.kv_cache_bytes(llama3.layers, g, llama3.head_dim, 8192)
    print(f"{label:14s}: {per_sequence / GiB:5.2f} GiB per 8K-token sequence, at most {free // per_sequence:4d} "
          f"sequences beside the {llama3.weights_bytes() / GiB:.1f} GiB of weights")

# %% [markdown]
# ### A sliding window bounds the cache
#
# Mistral-7B attends only to the last 4096 tokens in each layer (notebook 05's sliding window). Keys
# older than the window will never be read again, so its paper keeps the cache in a *rolling buffer* of
# 4096 positions, overwriting the oldest. The paper reports that at 32K tokens this makes the cache 8
# times smaller:

# %%
mistral = models["Mistral-7B-v0.1"]
full = hm.kv_cache_bytes(mistral.layers, mistral.kv_heads, mistral.head_dim, 32 * 1024)
rolling = hm.kv_cache_bytes(mistral.layers, mistral.kv_heads, mistral.head_dim,
                            mistral.cached_tokens(32 * 1024, rolling_buffer=True))
print(f"32K tokens: full cache {full / GiB:.2f} GiB, rolling buffer {rolling / GiB:.2f} GiB, ratio {full / rolling:g}×")

# %% [markdown]
# ## The calculator
#
# Pick a model, a context length (tokens per sequence), a batch (sequences at once), the number format
# of weights and cache (fp32 = 4 bytes, bf16 = 2, fp8 = 1) and a GPU. Left: the weights (gray) and the
# cache (orange) against the GPU's memory (black line); the cache gets a red edge when they overflow.
# Right: the cache of this model against the context (thick line, the black dot is your choice) and
# of its MHA / GQA / MQA variants; the black dashed line is the memory left after the weights.
#
# Readouts, all sizes in binary units: *KV cache per token* (one more token of one sequence, KiB);
# *KV cache* (the whole batch at this context, GiB); *weights* (parameters × bytes per value, GiB);
# *fits* (weights + cache ≤ GPU memory); *context the memory allows* (the formula above, for this batch);
# the *model's own context*; and *the limit that binds*, the smaller of the two. For Mistral-7B an extra
# line gives the cache with the rolling buffer.
#
# Things to try: Llama-2-7B against Llama-3-8B at the same context (same width, 4× smaller cache); the
# 70B models on an H100 (the weights alone do not fit: switch to fp8, or to the H200); OPT-13B with a
# batch of 1, then 64 (which limit binds?); Gemma-2B at 1M tokens; the batch slider at 8K tokens.

# %%
calculator = KVCacheCalculator()
calculator

# %%
print(calculator.readouts_text())

# %% [markdown]
# ### Written question (2 points): Why does GQA shrink the cache and not the arithmetic?
#
# Grouped-query attention keeps h query heads but only g key/value heads. Why does it divide the KV cache by h/g
# while the arithmetic barely changes? Answer in two to four sentences in the cell below, in place of *YOUR ANSWER
# HERE*. In a class your teacher grades it by hand; on your own, compare with the model answer in `solutions/`.

# %% [markdown] nbgrader={"grade_id": "written_kv_cache", "schema_version": 3, "locked": false, "solution": true, "grade": true, "points": 2}
# ### BEGIN SOLUTION
# **Model answer.** The arithmetic is done per query head: each of the h query heads still computes its n × n
# scores and its weighted sum, only reading a KV head it shares with others; just the K and V projections shrink.
# The cache stores K and V for each KV head: 2 × layers × g × d × tokens × bytes, proportional to g, so it is h/g
# times smaller. In generation, reading that cache from memory is what limits the speed, not the arithmetic.
#
# **Rubric for the grader (2 points).** 1 point: the cache holds K and V per KV head, so its size is proportional
# to g (h/g times smaller than MHA). 1 point: the scores and weighted sums are per query head (h of them,
# unchanged); only the K/V projections shrink. Half a point for an answer that names the idea without the reason.
# ### END SOLUTION

# %% [markdown]
# ## Summary
#
# * MHA, GQA and MQA differ in one number, g, the count of KV heads; one function computes all three:
#   repeat each KV head `h // g` times along the heads axis (or group the query heads over it), so
#   query head i reads KV head `i // (h // g)`.
# * `np.tile` gives head i the KV head `i % g`: identical at g = h and g = 1, wrong in between, and
#   silent: it only renumbers heads, which matters as soon as the weights were trained with the other
#   order. Test GQA code with 1 < g < h.
# * Fewer KV heads barely change the arithmetic (only the K and V projections shrink) but divide the
#   cache by h / g: `2 · layers · g · head_dim · tokens · batch · bytes`.
# * During generation the cache, read in full at every step, limits context length, batch size and
#   speed; that is why most recent models use GQA, a compromise between MHA's separate heads and MQA's
#   memory.
