# %% [markdown]
# # 01 · Heads are a block structure
#
# A transformer layer of width D sees each token as a vector of D numbers. Multi-head attention does
# not add anything to that vector and does not add work: it **cuts** the D numbers into h groups of
# d = D/h and runs the attention of notebook 00 inside each group, independently. Everything in this
# notebook follows from that one cut.
#
# You will
#
# 1. cut a width into heads with `reshape` and `transpose`, then with einops, in the index notation
#    `b n (h d) -> b h n d`;
# 2. meet the one-word mistake `(d h)`, which runs without an error and hands every head the wrong
#    numbers, and write the test that catches it;
# 3. write multi-head attention from the cut;
# 4. count what one layer costs, product by product, and see why the count does not contain h.
#
# Graded exercises: `split_heads`, `merge_heads`, `multi_head_attention`, `mha_cost`.

# %%
import numpy as np
from einops import rearrange

import heads_and_masks as hm
from heads_and_masks.cost import cost_table
from heads_and_masks.pictures.heads import picture, score_sum_figure, split_orders_figure
from heads_and_masks.widgets.heads import HeadSplitWidget

np.set_printoptions(precision=3, suppress=True, linewidth=110)

# %% [markdown]
# ## 1. One width, h heads
#
# Stack the n token vectors of a sequence as the rows of a matrix `X` of shape `(n, D)`. Single-head
# attention projects it three times, `Q = X W^Q`, `K = X W^K`, `V = X W^V`, with `(D, D)` weight
# matrices, and compares every query with every key through the dot products `Q Kᵀ`.
#
# Multi-head attention uses the *same* three projections. It only reads the D columns of `Q`, `K` and
# `V` as h consecutive blocks of d columns:
#
# * head `i` owns the columns `i·d … (i+1)·d − 1` of `Q`, `K` and `V`;
# * each head runs ordinary attention on its own block, scaled by `1/√d` since its dot products add up
#   d terms: `head_i = softmax(Q_i K_iᵀ / √d) V_i`, an `(n, d)` matrix;
# * the h outputs are put back side by side (concatenated) into an `(n, D)` matrix, and one more
#   `(D, D)` projection `W^O` mixes what the heads found:
#
# $$\mathrm{MHA}(X) = \mathrm{concat}(\mathrm{head}_1, \dots, \mathrm{head}_h)\, W^O .$$
#
# Why is this a *block structure* and not new machinery? A dot product of two D-vectors is the sum of
# the dot products of their h blocks. So the single-head score matrix `Q Kᵀ` is exactly the sum of the
# h per-head matrices `Q_i K_iᵀ`: multi-head attention computes the same products, and only decides not
# to add them up. Each head keeps its partial sum and gets its own softmax, its own way of
# distributing attention. Here is that identity, checked on random numbers:

# %%
rng = np.random.default_rng(0)
n, D, h = 5, 8, 2
d = D // h
Q, K = rng.normal(size=(2, n, D))
single_head_scores = Q @ K.T  # (n, n): dot products over all D columns
head_scores = [Q[:, i * d:(i + 1) * d] @ K[:, i * d:(i + 1) * d].T for i in range(h)]  # h × (n, n)
print("Q Kᵀ equals the sum of the heads' Q_i K_iᵀ:", np.allclose(single_head_scores, sum(head_scores)))
print("largest difference:", np.abs(single_head_scores - sum(head_scores)).max())

# %% [markdown]
# The three pictures below are those matrices. The two heads see different patterns; their sum is the
# single head's pattern. After the softmax the difference matters: one head would turn the sum into one
# distribution over the keys, two heads turn each part into its own.

# %%
picture(score_sum_figure(head_scores, single_head_scores))

# %% [markdown]
# ## 2. The cut in index notation: `b n (h d) -> b h n d`
#
# In code the cut acts on a batch: `x` has shape `(b, n, D)`, b sequences of n tokens of width D. We
# want shape `(b, h, n, d)`: for every sequence and every head, an `(n, d)` matrix that attention can
# treat on its own (attention works on the last two axes; every axis in front is a batch axis).
#
# The notation `b n (h d) -> b h n d` says it all: the last axis of length D *is* a pair of axes
# `(h d)`, h outer and d inner, exactly as the digits of a two-digit number: column `c` of the width
# is head `c // d`, position `c % d` inside it. Then the axis h moves in front of n. Two numpy steps:
#
# 1. `x.reshape(b, n, h, d)` splits the last axis; it moves no number, it only reads the same memory
#    with one more index;
# 2. `.transpose(0, 2, 1, 3)` swaps the axes n and h.
#
# To *see* which number goes where, build an `x` whose entries tell where they came from: the
# hundreds digit is the sequence, the tens the token, the units the column.

# %%
b, n, D, h = 2, 3, 8, 2
d = D // h
sequence, token, column = np.meshgrid(np.arange(b), np.arange(n), np.arange(D), indexing="ij")
x = 100 * sequence + 10 * token + column  # (b, n, D); x[s, t, c] = stc as digits
print("sequence 0 of x, one row per token:\n", x[0])

heads = x.reshape(b, n, h, d).transpose(0, 2, 1, 3)  # (b, h, n, d)
print("\nshape after the cut:", heads.shape)
for i in range(h):
    print(f"head {i} of sequence 0 (tokens down, its d = {d} columns across):\n", heads[0, i])

# %% [markdown]
# Head 0 holds the columns 0–3 of every token and head 1 the columns 4–7: the units digits show it.
#
# **Why the transpose?** A bare `x.reshape(b, h, n, d)` has the right shape, but `reshape` only re-reads
# the numbers in memory order, and in memory the numbers of one token are next to each other. The
# "head 0" it produces is the first n·d numbers of the sequence: whole tokens, not a block of columns.
# Look at the tens digits:

# %%
wrong = x.reshape(b, h, n, d)  # right shape, wrong meaning
print("'head 0' of a bare reshape:\n", wrong[0, 0])
print("same shape as the real cut:", wrong.shape == heads.shape, "| same numbers:", np.array_equal(wrong, heads))

# %% [markdown]
# Its "head 0" holds all eight columns of token 0 and half of token 1. Nothing fails; the attention of
# this "head" would compare pieces of different tokens.
#
# ### The same cut with einops
#
# [einops](https://einops.rocks) writes the index notation as code. `rearrange` takes the pattern, and
# the size of one factor when it cannot be inferred:

# %%
heads_einops = rearrange(x, "b n (h d) -> b h n d", h=h)
print("einops gives the same array:", np.array_equal(heads_einops, heads))

try:
    rearrange(np.zeros((2, 3, 6)), "b n (h d) -> b h n d", h=4)
except Exception as error:  # einops refuses a width that the heads do not divide
    print(f"{type(error).__name__}: {str(error).strip().splitlines()[-1]}")


# %% [markdown]
# The einops version says more than the numpy one, for the reader and for the machine:
#
# * every axis has a name, so the pattern documents the shapes that the numpy version leaves to
#   comments; `transpose(0, 2, 1, 3)` says *which positions* move, the pattern says *what* moves;
# * the parentheses say that h and d are two factors of one axis, and in which order; that order is the
#   whole difference between a correct and a wrong split (next section);
# * it checks what it reads: a width that h does not divide, or an input of the wrong rank, is an error
#   with the pattern in the message, not a silent reshape;
# * read backwards, the same pattern is the inverse: `b h n d -> b n (h d)` merges the heads again.
#
# The numpy version has one advantage: it needs no extra library, and it shows what happens in memory.
# Use whichever you like below; the tests accept both.

# %% [markdown]
# ### Exercise 1: `split_heads(x, h)`
#
# Cut `x` of shape `(b, n, D)` into h heads: return shape `(b, h, n, d)` with `d = D // h`, where head
# `i` is `x[..., i*d:(i+1)*d]`.
#
# * Work for any batch size b, any n ≥ 1 and any h that divides D (h = 1 and h = D included).
# * If h does not divide D, raise `ValueError` with a sentence that says so. (A reshape would fail too,
#   with a message about array sizes; say what is actually wrong.)
# * Do not modify `x`.
#
# The tests use b > 1, n ≠ h, and widths where a wrong order of `h` and `d` changes the heads, and they
# check the `ValueError` in a separate cell.

# %% nbgrader={"grade_id": "split_heads", "schema_version": 3, "locked": false, "solution": true, "grade": false}
def split_heads(x, h):
    """(b, n, D) -> (b, h, n, d): head i is x[..., i*d:(i+1)*d]."""
    ### BEGIN SOLUTION
    b, n, width = x.shape
    if h < 1 or width % h != 0:
        raise ValueError(f"the width D = {width} cannot be cut into h = {h} heads: h must divide D")
    d = width // h
    return x.reshape(b, n, h, d).transpose(0, 2, 1, 3)  # b n (h d) -> b h n d
    ### END SOLUTION


# %% [markdown]
# Try it on the labelled `x` (the units digits say which columns each head got):

# %%
with hm.if_written("split_heads"):
    print(split_heads(x, 2)[0])

# %% nbgrader={"grade_id": "test_split_heads", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 3}
from heads_and_masks.checks.heads import check_split_heads

check_split_heads(split_heads)
### BEGIN HIDDEN TESTS
check_split_heads(split_heads, seed=2024, thorough=True)
### END HIDDEN TESTS

# %% nbgrader={"grade_id": "test_split_heads_errors", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 1}
from heads_and_masks.checks.heads import check_split_heads_errors

check_split_heads_errors(split_heads)
### BEGIN HIDDEN TESTS
check_split_heads_errors(split_heads, thorough=True)
### END HIDDEN TESTS

# %% [markdown]
# ## 3. The silent bug: `(d h)` instead of `(h d)`
#
# Swap the two letters inside the parentheses and einops reads the width with d outer and h inner.
# Everything still runs and every shape is still right:

# %%
heads_dh = rearrange(x, "b n (d h) -> b h n d", h=h)  # the bug: one pair of letters swapped
print("shape:", heads_dh.shape, "same as the correct split:", heads_dh.shape == heads.shape)
for i in range(h):
    print(f"head {i} under (d h), sequence 0:\n", heads_dh[0, i])

# %% [markdown]
# Read the units digits: under `(d h)` head 0 gets the columns 0, 2, 4, 6 and head 1 the columns
# 1, 3, 5, 7. Every head still gets d numbers per token, but the wrong ones, scattered across the width
# instead of one block. (The numpy version of the same mistake is `x.reshape(b, n, d, h)` followed by
# moving the last axis forward.) The picture shows the two readings of the same eight columns; the number in
# each cell is the head that column feeds:

# %%
picture(split_orders_figure(8, 2))

# %% [markdown]
# How much damage does it do? If a model were trained from scratch with the same wrong reading
# everywhere, the bug would only relabel the columns of the weight matrices, and training would adapt
# to it. It bites whenever the reading disagrees with anything else, and in practice something always
# disagrees: pretrained weights (every checkpoint stores head i in the columns `i·d …`), a merge written
# the correct way, a per-head mask or a KV cache built by other code, a probe that looks at head 3. Then
# the output is simply wrong, with no error anywhere. Here is the same layer with the same weights, run
# once with the correct cut and once with the `(d h)` cut (merge and everything else unchanged):

# %%
rng = np.random.default_rng(1)
b, n, D, h = 2, 6, 8, 2
x_real = rng.normal(size=(b, n, D))
w_q, w_k, w_v, w_o = rng.normal(size=(4, D, D)) / np.sqrt(D)  # scale 1/√D keeps the scores moderate
correct = hm.multi_head_attention(x_real, w_q, w_k, w_v, w_o, h)
q_dh, k_dh, v_dh = (rearrange(x_real @ w, "b n (d h) -> b h n d", h=h) for w in (w_q, w_k, w_v))
with_bug = rearrange(hm.attention(q_dh, k_dh, v_dh), "b h n d -> b n (h d)") @ w_o
print("largest difference between the outputs:", np.abs(correct - with_bug).max())
print("typical size of an output entry:       ", np.abs(correct).mean())


# %% [markdown]
# ### Catching it
#
# A shape test cannot catch this bug: the shapes are right. A test must check the *meaning* of a head,
# the definition itself: **head i is the i-th slice of the width**. For that the test needs inputs on
# which the two readings differ. With h = 1 or d = 1 they agree (one head, or one column per head, is
# the same either way), so a test with such sizes passes the bug. Here is the test, run on both readings
# and on sizes that can and cannot tell them apart:

# %%
def heads_are_slices(split, x, h):
    """True when split(x, h)[:, i] is x[..., i*d:(i+1)*d] for every head i."""
    d = x.shape[-1] // h
    result = split(x, h)
    return all(np.array_equal(result[:, i], x[..., i * d:(i + 1) * d]) for i in range(h))


readings = {"(h d)": lambda x, h: rearrange(x, "b n (h d) -> b h n d", h=h),
            "(d h)": lambda x, h: rearrange(x, "b n (d h) -> b h n d", h=h)}
for D_test, h_test in [(8, 2), (8, 1), (8, 8)]:
    x_test = np.arange(2 * 3 * D_test).reshape(2, 3, D_test)
    verdicts = {name: heads_are_slices(split, x_test, h_test) for name, split in readings.items()}
    print(f"D = {D_test}, h = {h_test}, d = {D_test // h_test}:  passes the test: {verdicts}")


# %% [markdown]
# The graded tests of this notebook do the same: they compare every head with its slice of the width,
# on widths where `(h d)` and `(d h)` differ, and they name the bug when they see it.
#
# ## 4. Merging the heads back
#
# After attention every head has produced an `(n, d)` matrix: together `(b, h, n, d)`. To apply `W^O`
# the heads go back side by side into the width: `b h n d -> b n (h d)`, the split read backwards. In
# numpy the steps come in the reverse order: first the transpose, putting the tokens back in front of
# the heads, then the reshape joining the last two axes. A reshape *without* the transpose back has the
# right shape again and mixes tokens again.

# %% [markdown]
# ### Exercise 2: `merge_heads(x)`
#
# Return the inverse of `split_heads`: `x` of shape `(b, h, n, d)` becomes `(b, n, h*d)`, head i landing
# in the columns `i*d … (i+1)*d − 1`. So `merge_heads(split_heads(x, h))` is `x` again, for any b.

# %% nbgrader={"grade_id": "merge_heads", "schema_version": 3, "locked": false, "solution": true, "grade": false}
def merge_heads(x):
    """(b, h, n, d) -> (b, n, h*d), the inverse of split_heads."""
    ### BEGIN SOLUTION
    b, h, n, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, n, h * d)  # b h n d -> b n (h d)
    ### END SOLUTION


# %%
with hm.if_written("merge_heads"):
    print("merge_heads undoes the correct split:", np.array_equal(merge_heads(heads), x))

# %% nbgrader={"grade_id": "test_merge_heads", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 2}
from heads_and_masks.checks.heads import check_merge_heads

check_merge_heads(merge_heads)
### BEGIN HIDDEN TESTS
check_merge_heads(merge_heads, seed=2024, thorough=True)
### END HIDDEN TESTS

# %% [markdown]
# ## 5. Multi-head attention
#
# Now the whole layer, for a batch `x` of shape `(b, n, D)`:
#
# ```
# q, k, v = x @ w_q, x @ w_k, x @ w_v        # (b, n, D) each: the same projections as one head
# q, k, v = cut each into h heads              # (b, h, n, d)
# heads   = attention(q, k, v, mask)           # (b, h, n, d): every head on its own, scaled by 1/√d
# out     = merge the heads, then @ w_o        # (b, n, D)
# ```
#
# The attention you wrote in notebook 00 already does the middle line for all heads and sequences at
# once: it works on the last two axes and treats the axes `(b, h)` in front as a batch, and it reads d
# from the last axis of q, so a head is scaled by `1/√d`, not `1/√D`. Graded answers are your own
# code, so this layer uses *your* `attention`, and the next cell brings it from notebook 00: it reads
# your notebook 00 (save it first), defines your function here and, in JupyterLab, replaces its own
# text by your code, so that this notebook carries it when you hand it in. (The course's `hm.attention`
# drives the demonstrations of this notebook, but graded code may not call it.) Prefer to write the
# scores and the softmax inline in your `multi_head_attention`? That works as well.
#
# The mask (boolean, True = may attend) must reach every head. It broadcasts against the scores
# `(b, h, n, n)`: a causal mask `(n, n)` is the same for every sequence and head, a padding mask
# `(b, 1, 1, n)` differs by sequence, a mask `(b, h, n, n)` may even differ by head. Passing it on to
# the attention is all it takes.

# %%
from heads_and_masks.earlier_answers import bring_answer

bring_answer("attention", from_notebook="00_start_here")  # your own attention, from ../00_start_here


# %% [markdown]
# ### Exercise 3: `multi_head_attention(x, w_q, w_k, w_v, w_o, h, mask=None)`
#
# `x` has shape `(b, n, D)`, the four weights `(D, D)` and are used as `x @ w`; return `(b, n, D)`.
# You may call your `attention` (brought above), your `split_heads` and `merge_heads`, or use einops,
# loops over the heads or `np.einsum`: every correct style gets full marks. (Not allowed: the course's own `hm.multi_head_attention`,
# `hm.attention`, `hm.split_heads` or `hm.merge_heads`; the tests refuse an answer that calls them.)
#
# The tests compare with the course's reference on several batches, with no mask, a causal mask and a
# padding mask, and the hidden ones also with a different mask for every head, h = 1 and h = D.

# %% nbgrader={"grade_id": "multi_head_attention", "schema_version": 3, "locked": false, "solution": true, "grade": false}
def multi_head_attention(x, w_q, w_k, w_v, w_o, h, mask=None):
    """MHA(x) = concat(head_1 … head_h) W^O, head_i = attention on the i-th block of columns."""
    ### BEGIN SOLUTION
    q = rearrange(x @ w_q, "b n (h d) -> b h n d", h=h)  # (b, h, n, d)
    k = rearrange(x @ w_k, "b n (h d) -> b h n d", h=h)  # (b, h, n, d)
    v = rearrange(x @ w_v, "b n (h d) -> b h n d", h=h)  # (b, h, n, d)
    d = q.shape[-1]
    scores = q @ np.swapaxes(k, -1, -2) / d**0.5  # (b, h, n, n): every head scaled by 1/sqrt(d)
    allowed = np.broadcast_to(True if mask is None else mask, scores.shape)  # the mask reaches every head
    row_max = np.max(np.where(allowed, scores, -np.inf), axis=-1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)  # a row with nothing allowed stays all zero
    exps = np.where(allowed, np.exp(np.where(allowed, scores - row_max, 0.0)), 0.0)
    totals = exps.sum(axis=-1, keepdims=True)
    weights = np.divide(exps, totals, out=np.zeros_like(exps), where=totals > 0)  # (b, h, n, n)
    heads = weights @ v  # (b, h, n, d)
    return rearrange(heads, "b h n d -> b n (h d)") @ w_o  # (b, n, D)
    ### END SOLUTION


# %%
with hm.if_written("multi_head_attention"):
    mine = multi_head_attention(x_real, w_q, w_k, w_v, w_o, h)
    print("shape:", mine.shape, "| largest difference from the course's version:",
          np.abs(mine - hm.multi_head_attention(x_real, w_q, w_k, w_v, w_o, h)).max())

# %% nbgrader={"grade_id": "test_multi_head_attention", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 2}
from heads_and_masks.checks.heads import check_multi_head_attention

check_multi_head_attention(multi_head_attention)
### BEGIN HIDDEN TESTS
check_multi_head_attention(multi_head_attention, seed=2024, thorough=True)
### END HIDDEN TESTS

# %% nbgrader={"grade_id": "test_multi_head_attention_masked", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 2}
from heads_and_masks.checks.heads import check_multi_head_attention_masked

check_multi_head_attention_masked(multi_head_attention)
### BEGIN HIDDEN TESTS
check_multi_head_attention_masked(multi_head_attention, seed=2024, thorough=True)
### END HIDDEN TESTS

# %% [markdown]
# ## 6. What one layer costs, and why h is not in it
#
# **Convention.** We count *multiply-adds*: one multiplication and the addition that accumulates it,
# `total += a * b`. Multiplying an `(m, k)` matrix by a `(k, p)` matrix takes `m·k·p` of them (each of
# the m·p results is a sum of k products). Many papers count FLOPs instead, two per multiply-add, so
# their numbers are twice ours. We count the matrix products only; the scaling and the softmax touch each
# score a few times, which is small next to the products (see the end of this section).
#
# For one sequence of n tokens, piece by piece:
#
# | product | shapes | multiply-adds |
# |---|---|---|
# | `Q = X W^Q`, and the same for K, V | `(n, D) @ (D, D)` | `n·D·D` each |
# | scores of head i, `Q_i K_iᵀ` | `(n, d) @ (d, n)` | `n·d·n`, times h heads: `n²·h·d = n²D` |
# | weighted sum of head i, `A_i V_i` | `(n, n) @ (n, d)` | `n·n·d`, times h heads: `n²D` |
# | output `concat(heads) W^O` | `(n, D) @ (D, D)` | `n·D·D` |
#
# In total **4nD² + 2n²D**: 4nD² for the four projections, 2n²D for the scores and the weighted sum.
# The number of heads appears only as h·d, which is D. More heads means more, smaller products; the
# multiply-adds are the same.
#
# The table below is not typed: `cost_table` runs a real forward pass of one sequence and records the
# shape of every matrix product it makes. First 12 heads of 64 at D = 768, then 24 heads of 32 (a short
# sequence keeps the run quick; the formula holds for every n):

# %%
n, D = 32, 768
for h in (12, 24):
    rows = cost_table(n, D, h)
    print(f"n = {n}, D = {D}, h = {h} heads of d = {D // h}")
    for row in rows:
        print(f"  {row['product']:<26} {row['shapes']:<34} {row['counted']:>12,}   = {row['formula']}")
    total = sum(row["counted"] for row in rows)
    print(f"  {'total counted':<61} {total:>12,}   formula 4nD² + 2n²D = {4 * n * D**2 + 2 * n**2 * D:,}\n")


# %% [markdown]
# Same total, to the last multiply-add: only the shapes of the two per-head products changed (more heads,
# each thinner). That is the sense in which multi-head attention "adds no computation".

# %% [markdown]
# ### Exercise 4: `mha_cost(n, D, h)`
#
# Return the multiply-adds of one MHA layer's forward pass for one sequence of n tokens: the four
# projections, the scores and the weighted sum, as a Python `int` (use `//` if you divide).
#
# * Raise `ValueError` if h does not divide D, or if n is negative. `n = 0` costs nothing.
# * The tests compare exact integers, for small and very large models (where a float would round), and
#   they know the usual slips: counting FLOPs, multiplying the attention part by h, forgetting `W^O`.

# %% nbgrader={"grade_id": "mha_cost", "schema_version": 3, "locked": false, "solution": true, "grade": false}
def mha_cost(n, D, h):
    """Multiply-adds of one MHA forward pass: projections + scores + weighted sum, an int."""
    ### BEGIN SOLUTION
    if n < 0:
        raise ValueError(f"the sequence length n must not be negative, got {n}")
    if h < 1 or D % h != 0:
        raise ValueError(f"h = {h} heads do not divide the width D = {D}")
    d = D // h
    projections = 4 * n * D * D  # Q, K, V and W^O: one (n, D) @ (D, D) product each
    scores = h * n * n * d  # per head (n, d) @ (d, n)
    weighted_sum = h * n * n * d  # per head (n, n) @ (n, d)
    return projections + scores + weighted_sum
    ### END SOLUTION


# %%
with hm.if_written("mha_cost"):
    print("24 heads of 32 cost what 12 heads of 64 do:", mha_cost(1024, 768, 24) == mha_cost(1024, 768, 12))

# %% nbgrader={"grade_id": "test_mha_cost", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 2}
from heads_and_masks.checks.heads import check_mha_cost

check_mha_cost(mha_cost)
### BEGIN HIDDEN TESTS
check_mha_cost(mha_cost, seed=2024, thorough=True)
### END HIDDEN TESTS

# %% nbgrader={"grade_id": "test_mha_cost_errors", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 1}
from heads_and_masks.checks.heads import check_mha_cost_errors

check_mha_cost_errors(mha_cost)
### BEGIN HIDDEN TESTS
check_mha_cost_errors(mha_cost, thorough=True)
### END HIDDEN TESTS

# %% [markdown]
# ### Which term dominates
#
# The two terms trade places as the sequence grows: the projections grow like n, the attention part like
# n². They are equal when 4nD² = 2n²D, that is at **n = 2D**. Below that length most of the work is in
# the four projections; above it, in the n × n products. For the width of the tables above:

# %%
D = 768
n_equal = 2 * D
print(f"D = {D}: the two terms are equal at n = 2D = {n_equal:,}")
for n in (n_equal // 8, n_equal, n_equal * 8):
    projections, attention_part = 4 * n * D**2, 2 * n**2 * D
    print(f"  n = {n:>6,}: projections {projections / (projections + attention_part):6.1%}, "
          f"scores + weighted sum {attention_part / (projections + attention_part):6.1%}")

# %% [markdown]
# **What does change with h.** The count above is of matrix products, and those do not depend on h. Two
# smaller things do: each head has its own n × n score matrix, so the softmax handles h·n² entries and
# those scores take h·n² numbers of memory. Next to the 2n²D multiply-adds of the products, the h·n²
# softmax entries are a share of about h/(2D) (computed here for D = 768), which is why the formula
# leaves them out:

# %%
for h in (1, 12, 24, 96):
    print(f"h = {h:>2}: softmax entries / attention multiply-adds = h·n² / 2n²D = {h / (2 * 768):.2%}")

# %% [markdown]
# ## 7. The widget: the width cut, the cost unchanged
#
# Choose a width D and a number of heads h (only divisors of D are offered). The top strip is the whole
# width, one cell per column, coloured by the head it feeds; the middle strip shows the first columns
# with the number of their head. Switch the split to `(d h)` and watch the blocks fall apart into
# stripes. The plot below is the cost of one layer against n, for h = 1, for your h and for h = D: the
# three curves lie exactly on top of each other, and the readouts give the numbers for the chosen n.

# %%
widget = HeadSplitWidget()
widget

# %% [markdown]
# The readouts are computed from the controls. The widget starts at the lesson's comparison, D = 768
# and n = 1024 with h = 12; this cell reads them, moves the widget above to h = 24 and reads them again:

# %%
print("h = 12:\n" + widget.readouts_text())
widget.controls["heads"].value = 24
print("h = 24:\n" + widget.readouts_text())

# %% [markdown]
# ### Written question (2 points): Why is h not in the cost?
#
# The cost of one layer is 4nD² + 2n²D multiply-adds, and the number of heads h does not appear in it. Explain
# why, for the projections and for the attention. Answer in two to four sentences in the cell below, in place of
# *YOUR ANSWER HERE*. In a class your teacher grades it by hand; on your own, compare with the model answer in
# `solutions/`.

# %% [markdown] nbgrader={"grade_id": "written_cost_without_h", "schema_version": 3, "locked": false, "solution": true, "grade": true, "points": 2}
# ### BEGIN SOLUTION
# **Model answer.** The projections are four (n, D) @ (D, D) products whatever h is: cutting the width into heads
# is only a reshape of the same numbers, so 4nD². In the attention, each head computes its n × n scores over d =
# D/h columns (n²d) and its weighted sum (n²d); h heads together cost h · 2n²d = 2n²D. The h cancels.
#
# **Rubric for the grader (2 points).** 1 point: the projections do not depend on h (splitting into heads is a
# reshape, not extra work). 1 point: each head costs n²d for scores (and for the weighted sum), so h heads cost h
# · n²(D/h) = n²D. Half a point for an answer that names the idea without the reason.
# ### END SOLUTION

# %% [markdown]
# ## Summary
#
# * Multi-head attention cuts the width D into h blocks of d = D/h columns and runs attention in each
#   block: `b n (h d) -> b h n d`, then `concat(heads) W^O`. A single head's scores are the sum of the
#   heads' scores; the heads just keep them apart.
# * In numpy the cut is `reshape(b, n, h, d)` then `transpose(0, 2, 1, 3)`; without the transpose, or
#   with `(d h)` instead of `(h d)`, the shapes are right and the heads are wrong. Test the meaning:
#   head i is the i-th slice of the width, on sizes where the mistakes would show (h > 1, d > 1, b > 1).
# * One layer costs 4nD² + 2n²D multiply-adds (twice that in FLOPs), whatever h. The projections dominate
#   below n = 2D, the n × n products above.
#
# Next, notebook 02 asks why several heads are worth having at all, and what makes a head too small.
