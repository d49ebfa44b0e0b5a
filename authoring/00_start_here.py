# %% [markdown]
# # 00 · Start here
#
# Welcome to **Heads & Masks**, a short course on two pieces of every transformer: *multi-head
# attention* (why the width of a model is cut into heads) and *attention masks* (how a model is kept from
# looking where it must not). Nine notebooks, each one idea, each with pictures you can move and
# exercises that are checked on the spot.
#
# This notebook explains how the course works, fixes the conventions that every later notebook uses,
# and warms you up with the one function everything else is built on: scaled dot-product attention.

# %% [markdown]
# ## How the course works
#
# * **Read, run, move.** Run the cells from top to bottom (*Run → Run All Cells* works too, before you
#   have written anything). The widgets are live: move a slider and the picture is recomputed by the
#   course's own implementation.
# * **Exercises.** A cell that says `# YOUR CODE HERE` and `raise NotImplementedError()` is yours: replace
#   those two lines with your code. Keep the function's name and arguments: the tests call it by name.
# * **Check your answer.** The cell right after an exercise runs *visible tests*. Until you have written
#   the function it says so in one line (`✗ attention is not written yet`). When it prints ✓ lines you
#   pass them; when it fails it prints a message starting with ✗: what was expected, what came back,
#   by how much they differ and what the likely mistake is. *Run All* goes on past it, so the rest of the
#   notebook still runs; the test still counts as failed when you press *Validate*.
# * **Hidden tests.** When a teacher grades the notebook with nbgrader, the same cells also run *hidden
#   tests*: other inputs and edge cases. Passing the visible tests is a good sign, not a guarantee: write
#   the function for every input its description allows, not for the examples.
# * **Validate.** The *Validate* button in the notebook's toolbar saves the notebook, runs it in a fresh
#   kernel and lists every test cell that fails (an exercise not written yet fails too), and each written
#   question still unanswered ("You did not provide a response"). In a terminal,
#   `nbgrader validate` does the same: the terminals of `make lab` start in `my-work/`, so
#   `nbgrader validate 00_start_here/00_start_here.ipynb`. In a class, validate before you hand in.
# * **Solutions.** If you study on your own, the worked solutions are in `solutions/<notebook>/` of the
#   course repository. Try first: the tests teach more than the answers do.
# * **Your own code.** Graded functions must be your code. The course package `heads_and_masks` holds the
#   reference implementations that drive the widgets; an answer that merely calls them is refused.

# %% [markdown]
# ## The conventions of the whole course
#
# | symbol | meaning |
# |---|---|
# | `b` | batch: how many sequences are processed together |
# | `n` | sequence length (number of tokens) |
# | `D` | model width: the size of one token's vector |
# | `h` | number of query heads |
# | `d = D / h` | head size |
# | `g` | number of key/value heads (notebook 06) |
#
# * **Masks are boolean, True = may attend.** `mask[i, j]` says whether query `i` may look at key `j`.
#   A mask broadcasts against the scores `(..., n_queries, n_keys)`. This is the convention of PyTorch's
#   `scaled_dot_product_attention`, whose boolean `attn_mask` is True where attention is allowed. PyTorch's
#   own `nn.MultiheadAttention` and `nn.Transformer` use the opposite one: there a True in a boolean mask
#   means the position is *not* allowed. Two conventions in one library: always check which one you hold.
# * **Scores are divided by √d**, where `d` is the size of the vectors being multiplied: the head size.
# * **A query with no allowed key** gets all-zero weights, so its output is zero, never NaN.
# * **Bad arguments raise `ValueError`** with a sentence that names the problem.
# * **Inputs are never modified in place.**

# %%
import numpy as np

import heads_and_masks as hm
from heads_and_masks.widgets.start_here import QueryWidget

np.set_printoptions(precision=3, suppress=True)

# %% [markdown]
# ## Attention in one picture
#
# A query `q` is compared with every key `k_j` by a dot product, the *score* `s_j = q·k_j / √d`. The
# scores go through a softmax, `w_j = exp(s_j) / Σ_i exp(s_i)`, which makes them positive and makes them
# sum to one: these are the *attention weights*. The output is the weighted average of the values,
# `Σ_j w_j v_j`.
#
# The widget below has four keys pointing east, north, west and south, and a value (a dot) for each.
# Turn the query around: the key it points to gets the largest weight. Make the query longer: the
# scores spread apart, the softmax sharpens, and the output (the star) slides towards one value. It can
# never leave the region spanned by the values: a weighted average with positive weights that sum to one
# stays inside their convex hull. (Notebook 02 makes a lot of this fact.)

# %%
query_widget = QueryWidget()
query_widget

# %% [markdown]
# The readouts under the picture are computed, not typed: *max weight* is the largest of the four weights,
# *entropy* measures how spread out they are, in bits: 2 bits for four equal weights, 0 bits when one
# key takes everything. For the default query:

# %%
print(query_widget.readouts_text())
uniform = np.full(4, 0.25)
print("entropy of four equal weights:", hm.row_entropy_bits(uniform), "bits")


# %% [markdown]
# ## Warm-up exercise: scaled dot-product attention
#
# Write `attention(q, k, v, mask=None)`:
#
# * `q` has shape `(..., n_q, d)`, `k` has shape `(..., n_k, d)`, `v` has shape `(..., n_k, d_v)`; the
#   `...` are any leading axes (batch, heads), the same for all three;
# * scores `q kᵀ / √d` of shape `(..., n_q, n_k)`; use `np.swapaxes(k, -1, -2)` for the transpose of the
#   last two axes, so leading axes are left alone;
# * if `mask` is given (boolean, True = may attend, broadcastable to the scores), forbidden scores must get
#   weight exactly 0;
# * softmax over the **keys** (the last axis); a row with no allowed key gets all-zero weights;
# * return the weights times `v`, shape `(..., n_q, d_v)`.
#
# Two numerical details decide whether your function works on every input:
#
# 1. `np.exp(1000.0)` overflows to `inf` and `inf / inf` is NaN. Subtracting the row's largest score
#    before `exp` changes nothing mathematically (the factor cancels) and keeps every exponent ≤ 0.
# 2. A fully masked row has no largest allowed score, and `0 / 0` is NaN with a warning. Handle that row
#    explicitly (for example with `np.where`, or `np.divide(..., where=...)`).
#
# The tests check the values against the course's reference on several shapes, with and without masks,
# on a fully masked row and on very large scores, and they fail on any numpy warning.

# %% nbgrader={"grade_id": "attention", "schema_version": 3, "locked": false, "solution": true, "grade": false}
def attention(q, k, v, mask=None):
    """softmax(q kᵀ / sqrt(d), masked) v over the last two axes."""
    ### BEGIN SOLUTION
    d = q.shape[-1]
    scores = q @ np.swapaxes(k, -1, -2) / d**0.5  # (..., n_q, n_k); d**0.5, a Python float, keeps float32 float32
    if mask is None:
        mask = np.ones(scores.shape, dtype=bool)
    mask = np.broadcast_to(mask, scores.shape)
    # subtract the largest allowed score of each row (0 for a row with nothing allowed)
    row_max = np.max(np.where(mask, scores, -np.inf), axis=-1, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    exps = np.where(mask, np.exp(np.where(mask, scores - row_max, 0.0)), 0.0)
    totals = exps.sum(axis=-1, keepdims=True)
    weights = np.divide(exps, totals, out=np.zeros_like(exps), where=totals > 0)
    return weights @ v  # (..., n_q, d_v)
    ### END SOLUTION


# %% [markdown]
# Try it on a tiny example before running the tests: three queries, three keys, a causal mask (each
# query sees itself and the keys before it). The first query may only look at the first key, so its
# output must be exactly the first value.

# %%
rng = np.random.default_rng(0)
q, k, v = rng.normal(size=(3, 3, 2))
causal = np.tril(np.ones((3, 3), dtype=bool))
with hm.if_written("attention"):
    print(attention(q, k, v, causal))
    print("first value:", v[0])

# %% nbgrader={"grade_id": "test_attention", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 4}
from heads_and_masks.checks.start_here import check_attention

check_attention(attention)
### BEGIN HIDDEN TESTS
check_attention(attention, seed=7919, thorough=True)
### END HIDDEN TESTS

# %% [markdown]
# ### Written question (2 points): Why subtract the largest score?
#
# Before exp, the warm-up subtracts each row's largest allowed score, and the notebook says this changes nothing
# mathematically. Show why the weights do not change, and say what goes wrong without it. Answer in two to four
# sentences in the cell below, in place of *YOUR ANSWER HERE*. In a class your teacher grades it by hand; on your
# own, compare with the model answer in `solutions/`.

# %% [markdown] nbgrader={"grade_id": "written_largest_score", "schema_version": 3, "locked": false, "solution": true, "grade": true, "points": 2}
# ### BEGIN SOLUTION
# **Model answer.** With m the row's largest score, exp(s_j − m) = exp(s_j) · exp(−m): every term of the row,
# numerator and denominator alike, is multiplied by the same factor exp(−m), which cancels, so the weights are the
# same. Without it a large score overflows: np.exp(1000.0) is inf, and inf / inf is NaN, so a row of large scores
# gives NaN weights. After the subtraction every exponent is ≤ 0, so no exp exceeds 1, and the largest term is
# exp(0) = 1, so the sum is at least 1 and never 0 or inf.
#
# **Rubric for the grader (2 points).** 1 point: the same factor exp(−m) multiplies every term of the row, above
# and below the fraction bar, and cancels. 1 point: without it large scores overflow (exp gives inf, inf / inf is
# NaN); with it every exponent is ≤ 0 and the sum is ≥ 1. Half a point for an answer that names the idea without
# the reason.
# ### END SOLUTION

# %% [markdown]
# ## What comes next
#
# | notebook | idea |
# |---|---|
# | 01 heads | the width cut into heads; `b n (h d) -> b h n d`; the cost does not depend on h |
# | 02 why heads | one head is one weighted average; two rules need two heads; why heads cannot be tiny |
# | 03 causal mask | −∞ versus zero, masking before softmax, and the lesson's widget |
# | 04 work fraction | how much of the score matrix the causal mask really needs, and a tiled kernel that saves it |
# | 05 other masks | padding, sliding windows, block-sparse; the padding bug |
# | 06 KV heads | MHA, MQA, GQA, and the size of the KV cache of real models |
# | 07 generation | one token at a time: the KV cache, the bottom-right mask, rolling windows, sinks and packed documents |
# | 08 learned heads | a tiny attention-only model trained in NumPy whose heads find the two rules by themselves |
