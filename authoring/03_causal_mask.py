# %% [markdown]
# # 03 · The causal mask: −∞ versus zero
#
# A language model writes a sentence one token at a time, and each new token may depend only on the
# tokens already written. Attention, left alone, lets every token look at every other token, the
# later ones included. The **causal mask** is what takes the future away.
#
# This notebook is about getting that one operation exactly right. You will:
#
# * see why a token must not see the future, by changing a future word and watching what moves;
# * write the causal mask as a boolean array (True = may attend);
# * run the four ways one might forbid a score (fill with −∞, fill with 0, delete it, zero it after
#   softmax) and watch three of them fail, each in its own way;
# * learn why real code writes −1e9 or the dtype's minimum instead of −∞, where a pure −∞ gives NaN,
#   and what happens when the fill value is not negative enough;
# * play with the lesson's widget, where the lesson has it: the division by √d, the mask, the head size
#   and the temperature, with four readouts that say how peaked the attention is and how much gradient
#   still flows;
# * write a masked softmax that never returns NaN, and the entropy of a row in bits;

# %%
import time
import warnings

import numpy as np

import heads_and_masks as hm
from heads_and_masks.attention_stats import gradient_scale, max_entropies, row_entropies, score_spread
from heads_and_masks.pictures.causal_mask import four_ways_figure, mask_figure, picture, readouts_versus_d_figure
from heads_and_masks.sentence import TOKENS, sentence_logits, sentence_queries_keys
from heads_and_masks.widgets.causal_mask import LessonWidget
from IPython.display import display

np.set_printoptions(precision=3, suppress=True, linewidth=110)


def caught_warnings(compute):
    """Run compute() and return (its result, the texts of the numpy warnings it raised)."""
    with warnings.catch_warnings(record=True) as caught, np.errstate(divide="warn", over="warn", invalid="warn"):
        warnings.simplefilter("always")
        result = compute()
    return result, sorted({str(w.message) for w in caught})


# %% [markdown]
# ## Why a token must not see the future
#
# A language model is trained to predict the next token: from `<s>` predict `cat`, from `<s> cat`
# predict `sat`, and so on. It does not run once per prefix. The whole sentence goes through the
# network in one pass, and position *t* produces the prediction of token *t + 1*. That is what makes
# training fast: every position of every sentence is a training example, all computed by the same
# matrix products.
#
# The price is a temptation. If position *t* could attend to position *t + 1*, the cheapest way to
# "predict" the next token would be to copy it from the input. The model would learn to cheat, and at
# generation time, when the next token does not exist yet, it would have nothing to copy.
#
# So the rule: **query *q* may attend to key *k* only if *k ≤ q*** (itself and the past). Let us check
# that the rule does what it says. Below, the lesson's sentence `<s> cat sat on mat .` gets random
# queries, keys and values (seeded, the same every run). Then we change the last token's key and value
# (as if the sentence ended differently) and measure how much each position's attention output moves.

# %%
n = len(TOKENS)
d = 16
q, k = sentence_queries_keys(d)  # (n, d) each: fixed random vectors, one per token
v = np.random.default_rng(3).normal(size=(n, d))  # (n, d)

k_changed, v_changed = k.copy(), v.copy()
k_changed[-1] = np.random.default_rng(4).normal(size=d)  # "." replaced by another token
v_changed[-1] = np.random.default_rng(5).normal(size=d)

causal = hm.causal_mask(n)  # (n, n) bool, True = may attend
for label, mask in [("no mask    ", None), ("causal mask", causal)]:
    before = hm.attention(q, k, v, mask)  # (n, d)
    after = hm.attention(q, k_changed, v_changed, mask)
    moved = np.abs(after - before).max(axis=-1)  # (n,) how far each position's output moved
    print(label, " ".join(f"{t}:{m:.3f}" for t, m in zip(TOKENS, moved)))

# %% [markdown]
# Without a mask, changing the last token moves the output of *every* position: `<s>`, which should
# know nothing yet, already "knows" how the sentence ends. With the causal mask only the last
# position moves, the only one that is allowed to see that token.

# %% [markdown]
# ## The causal mask as a boolean array
#
# Throughout the course a mask is a boolean array with **True = may attend**: `mask[q, k]` says
# whether query *q* may look at key *k*. Queries are rows, keys are columns. For the causal mask the
# allowed cells are on and below the diagonal, a lower triangle. In the pictures the forbidden cells
# are hatched: *forbidden* is not the same thing as *weight 0*, and the pictures keep them apart.

# %%
display(picture(mask_figure(hm.causal_mask(n), TOKENS)))


# %% [markdown]
# ### Exercise 1: `causal_mask(n)`
#
# Write `causal_mask(n)`: an `(n, n)` array of dtype `bool`, True exactly where key ≤ query.
#
# * Row *q* is a query, column *k* a key; row 0 has one True (the diagonal), the last row is all True.
# * `n = 0` gives an empty `(0, 0)` array; a negative `n` must raise `ValueError` (some numpy
#   functions quietly return an empty array for negative sizes: check).
# * Return booleans, not 0/1 numbers and not an additive mask of 0 and −∞: the convention is boolean.
#
# `np.tril`, `np.tri`, a comparison of `np.arange` grids and a loop all work.

# %% nbgrader={"grade_id": "causal_mask", "schema_version": 3, "locked": false, "solution": true, "grade": false}
def causal_mask(n):
    """(n, n) bool, True where key <= query: each token sees itself and the past."""
    ### BEGIN SOLUTION
    if n < 0:
        raise ValueError(f"a sequence length cannot be negative, got n = {n}")
    query = np.arange(n)[:, None]  # (n, 1)
    key = np.arange(n)[None, :]  # (1, n)
    return key <= query  # (n, n), True on and below the diagonal
    ### END SOLUTION


# %%
with hm.if_written("causal_mask"):
    print(causal_mask(4))

# %% nbgrader={"grade_id": "test_causal_mask", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 2}
from heads_and_masks.checks.causal_mask import check_causal_mask

check_causal_mask(causal_mask)
### BEGIN HIDDEN TESTS
check_causal_mask(causal_mask, thorough=True)
### END HIDDEN TESTS

# %% nbgrader={"grade_id": "test_causal_mask_negative", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 1}
from heads_and_masks.checks.causal_mask import check_causal_mask_bad_n

check_causal_mask_bad_n(causal_mask)

# %% [markdown]
# ## Four ways to forbid a score
#
# Attention turns a row of scores into weights with a softmax,
# `w_k = exp(s_k) / Σ_j exp(s_j)`. We want the weights of the forbidden keys to be exactly 0 and the
# allowed weights to be a proper distribution over the allowed keys alone. Here are four candidate
# ways, each run on the same scores: the causal attention scores of our sentence (head size 16).

# %%
scores = sentence_logits(16)  # (n, n) = q kᵀ / √d
print(scores)

# %% [markdown]
# ### 1. Fill with −∞ before softmax
#
# Replace every forbidden score by −∞, then apply an ordinary softmax. Since `exp(−∞) = 0` exactly,
# a forbidden key contributes 0 to the numerator *and* 0 to the denominator. The allowed weights are
# then exactly the softmax of the allowed scores alone: normalisation stays right without any extra
# step.

# %%
print("exp(-inf) =", np.exp(-np.inf))
filled = np.where(causal, scores, -np.inf)
e = np.exp(filled - filled.max(axis=-1, keepdims=True))  # every row has an allowed key here
minus_inf = e / e.sum(axis=-1, keepdims=True)
print(minus_inf)
print("row sums:", minus_inf.sum(axis=-1))
row = 3  # the allowed part of a row is the softmax of its allowed scores only
allowed_only = np.exp(scores[row, : row + 1]) / np.exp(scores[row, : row + 1]).sum()
print(f"row {row}, allowed part:", minus_inf[row, : row + 1], " softmax of its allowed scores:", allowed_only)

# %% [markdown]
# ### 2. Fill with 0 before softmax
#
# A score of 0 is not a ban. It becomes `exp(0) = 1` before normalising, an entirely ordinary weight:
# a forbidden key whose score is set to 0 counts about as much as an allowed key with score 0, and
# *more* than every allowed key with a negative score.

# %%
print("exp(0) =", np.exp(0.0))
zero_filled = np.where(causal, scores, 0.0)
e = np.exp(zero_filled - zero_filled.max(axis=-1, keepdims=True))
zero_fill = e / e.sum(axis=-1, keepdims=True)
leak = np.where(causal, 0.0, zero_fill).sum(axis=-1)  # weight that went to the future, per query
print(zero_fill)
print("weight on forbidden keys per query:", leak)
print(f"query '{TOKENS[0]}' gives {leak[0]:.0%} of its attention to tokens it must not see")


# %% [markdown]
# The future leaks back. Replaying the experiment of the first section with zero-filled scores:

# %%
def attend_zero_fill(q, k, v, mask):
    s = np.where(mask, q @ k.T / np.sqrt(q.shape[-1]), 0.0)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) @ v

moved = np.abs(attend_zero_fill(q, k_changed, v_changed, causal) - attend_zero_fill(q, k, v, causal)).max(axis=-1)
print("zero fill  ", " ".join(f"{t}:{m:.3f}" for t, m in zip(TOKENS, moved)))

# %% [markdown]
# ### 3. Delete the forbidden entries
#
# Why not simply leave the forbidden scores out? Mathematically that is exactly right: query *q* takes
# a softmax over its first *q + 1* scores. But the rows now have lengths 1, 2, …, n: the score "matrix"
# is a triangle, not a rectangle, and numpy (like every GPU library) computes on rectangles.

# %%
rows = [scores[i, : i + 1] for i in range(n)]  # query i keeps keys 0..i
print("row lengths:", [len(r) for r in rows])
try:
    np.array(rows)
except ValueError as error:
    print("np.array(rows) ->", type(error).__name__ + ":", str(error).split(".")[0])

# %% [markdown]
# Without a rectangle there is no single `weights @ v` for the whole sequence, and no batch of
# sequences and heads `(b, h, n, n)` either. What remains is a Python loop, one row at a time. It gives
# the right numbers, only slowly. A small batch (4 sequences × 4 heads × 128 tokens) is enough to see
# the difference:

# %%
rng = np.random.default_rng(0)
batch_scores = rng.normal(size=(4, 4, 128, 128))  # (b, h, n, n)
batch_mask = hm.causal_mask(128)  # (n, n), broadcast over b and h


def softmax_deleting_entries(scores):
    out = np.zeros_like(scores)
    for index in np.ndindex(*scores.shape[:-2]):  # every sequence and head
        for i in range(scores.shape[-2]):  # every query: a row of its own length
            kept = scores[index + (i, slice(0, i + 1))]
            e = np.exp(kept - kept.max())
            out[index + (i, slice(0, i + 1))] = e / e.sum()
    return out


start = time.perf_counter()
looped = softmax_deleting_entries(batch_scores)
loop_seconds = time.perf_counter() - start
start = time.perf_counter()
batched = hm.masked_softmax(batch_scores, batch_mask)
batch_seconds = time.perf_counter() - start
print(f"same weights: {np.allclose(looped, batched)};  row by row {loop_seconds * 1e3:.1f} ms, "
      f"one masked array operation {batch_seconds * 1e3:.1f} ms ({loop_seconds / batch_seconds:.0f}× faster)")

# %% [markdown]
# ### 4. Mask after softmax
#
# Take an ordinary softmax over all keys, then multiply the forbidden weights by 0. The forbidden
# weights are 0, but the future has already taken its share of the denominator: the allowed weights
# are too small, and the rows no longer sum to 1.

# %%
e = np.exp(scores - scores.max(axis=-1, keepdims=True))
after = e / e.sum(axis=-1, keepdims=True) * causal
print("row sums after masking:", after.sum(axis=-1))

# %% [markdown]
# Renormalising afterwards (dividing each row by its new sum) repairs it *on paper*, and on these
# moderate scores it even works:

# %%
renormalised = after / after.sum(axis=-1, keepdims=True)
print("largest difference from the −∞ version:", np.abs(renormalised - minus_inf).max())

# %% [markdown]
# It breaks when a forbidden score dwarfs the allowed ones, which is exactly the case the mask is for.
# Take one query with two allowed keys (scores −2 and 1) and one forbidden key with score 800: the
# first softmax gives the forbidden key weight 1 and the allowed keys `exp(−799)` and `exp(−802)`,
# which round to 0. After masking nothing is left, and renormalising divides 0 by 0.

# %%
row_scores = np.array([-2.0, 1.0, 800.0])
row_mask = np.array([True, True, False])


def mask_after_softmax_then_renormalise():
    e = np.exp(row_scores - row_scores.max())
    w = e / e.sum() * row_mask
    return w / w.sum()


weights, problems = caught_warnings(mask_after_softmax_then_renormalise)
print("mask after softmax, renormalised:", weights, " numpy warned:", problems)
print("−∞ before softmax:              ", hm.masked_softmax(row_scores, row_mask))

# %% [markdown]
# All four, side by side (forbidden cells hatched; each row's sum on the right):

# %%
display(picture(four_ways_figure(scores, causal, TOKENS)))

# %% [markdown]
# | way | forbidden weight | allowed weights | works batched | fails how |
# |---|---|---|---|---|
# | −∞ before softmax | exactly 0 | softmax of the allowed scores | yes | (see the next section) |
# | 0 before softmax | `e⁰`-sized, often large | diluted by the future | yes | the future leaks in |
# | delete entries | absent | right | no | ragged rows: loops only |
# | after softmax | 0 | too small; renormalised: NaN when the future dwarfs the past | yes | wrong sums, or 0 / 0 |

# %% [markdown]
# ## −∞ in practice: −1e9, or the dtype's minimum
#
# On paper the fill value is −∞. In code, a pure −∞ has two traps.
#
# **A row with no allowed key.** It happens: a padding query, or a sliding window that has slid past
# every real token. Every entry is −∞, the row maximum is −∞, and `−∞ − (−∞)` is NaN. One NaN row
# then spreads NaN through everything computed from it.

# %%
empty_row_mask = np.array([[True, True, False], [False, False, False]])  # the second query may see nothing
two_rows = np.array([[0.5, 1.0, 2.0], [0.3, 0.1, 0.2]])


def naive_minus_inf():
    s = np.where(empty_row_mask, two_rows, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


weights, problems = caught_warnings(naive_minus_inf)
print(weights, "\nnumpy warned:", problems)

# %% [markdown]
# **−∞ times 0.** Masks are often turned into an *additive* mask, 0 where allowed and −∞ where
# forbidden, and added to the scores. Building it by multiplication, `(1 − mask) · (−∞)`, looks
# harmless, but at every allowed cell it computes `0 · (−∞)`, which is NaN:

# %%
additive, problems = caught_warnings(lambda: (1.0 - causal[:3, :3]) * -np.inf)
print(additive, "\nnumpy warned:", problems)

# %% [markdown]
# A large finite negative number avoids both traps: `(1 − mask) · (−1e9)` is 0 or −1e9, and a fully
# masked row is merely uniform instead of NaN (our convention then zeroes it explicitly). That is why
# much real code writes −1e9, or the most negative number of the dtype, `np.finfo(dtype).min`. The
# dtype matters: in half precision −1e9 does not even exist.

# %%
for dtype in (np.float16, np.float32, np.float64):
    print(f"{np.dtype(dtype).name:>8}: most negative number {np.finfo(dtype).min:.4g}")
value, problems = caught_warnings(lambda: np.float16(-1e9))
print("float16(-1e9) =", value, " numpy warned:", problems)

# %% [markdown]
# **Too small a fill value.** Mathematically the fill value stands for −∞, so it must lie far below
# every score that can occur, by enough that `exp` of the gap is 0 next to 1. Some older code used
# −1e4 (safe in half precision, where −1e9 overflows). Scores are usually small, but nothing
# guarantees it: without the division by √d, with large weights, or late in training, they can reach
# thousands. Then −1e4 is no longer a ban:

# %%
print("exp of the gap that makes a weight negligible next to 1:", np.exp(-40.0))
large = np.array([[-2.0e4, -1.99e4, 5.0e3, 7.0e3]])  # a query whose allowed scores are very negative
allowed = np.array([[True, True, False, False]])
for fill in (-1e4, -1e9):
    s = np.where(allowed, large, fill)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    print(f"fill {fill:>6.0e}: weights {e / e.sum(axis=-1, keepdims=True)}")
print("correct        :", hm.masked_softmax(large, allowed))

# %% [markdown]
# With −1e4 the two forbidden keys (filled with −1e4, which is *larger* than −2e4) take all the
# weight. An additive −1e4 fails the same way from the other side: a forbidden score of 5e3 minus
# 1e4 is still far above the allowed −2e4.
#
# The recipe that survives all of this, and that exercise 2 (after the lesson's widget) asks for:
#
# 1. fill the forbidden scores with −∞ (or the dtype's minimum), never 0;
# 2. subtract each row's largest *allowed* score before `exp` (so `exp` never overflows, and the
#    largest allowed term is exactly 1, so it cannot underflow to 0);
# 3. set the forbidden terms to exactly 0 (automatic with −∞; explicit with a finite fill);
# 4. divide by the row sum only where it is positive, and leave a row with nothing allowed at 0.

# %% [markdown]
# ## The lesson's widget
#
# The lesson showed this widget right here, after the −∞ argument: the attention weights over its
# sentence `<s> кот сел на коврик .`, which is `<s> cat sat on mat .` token for token (Russian has no
# articles: six tokens, the full stop included). Keys across, queries down. The queries and keys are
# fixed random vectors of 512 numbers per token (seeded, not a trained model), and a head of size *d*
# uses their first *d* numbers. The controls:
#
# * **divide by √d**: the scores are `q·k / √d` (on) or the raw `q·k` (off);
# * **causal mask**: the future is forbidden (hatched) or not;
# * **head size d**: 8 to 512;
# * **temperature T**: every score is divided by *T* before softmax; `T > 1` flattens the rows, `T < 1`
#   sharpens them.
#
# What enters the softmax is therefore `z = q·k / (√d · T)` (or `q·k / T`). The readouts are defined on
# `z` and on the weights `w`:
#
# | readout | definition |
# |---|---|
# | score spread | the range of the allowed entries of `z`: largest minus smallest (forbidden ones do not exist for the softmax) |
# | row entropy (bits) | the entropy `H = −Σ w log₂ w` of each query row (0 for a one-hot row, `log₂ m` for *m* equal weights; exercise 3 below has you write it), **averaged over the six rows** |
# | first row entropy (bits) | the entropy of row `<s>` alone: 0 whenever the mask is on |
# | max weight | the largest weight anywhere in the matrix (with the mask on, the first row pins it at 1) |
# | gradient scale | for each row, the largest eigenvalue of softmax's Jacobian `J = diag(w) − w wᵀ` (how much the weights can move per unit move of `z`), averaged over the rows |
#
# The Jacobian needs a word. A small change `δz` of a row's inputs changes its weights by `J δz`. `J` is
# symmetric and positive semi-definite; its largest eigenvalue is at most ½ (two keys sharing the
# weight), `1/m` for *m* equal weights, and **0 for a one-hot row**: a saturated softmax passes no
# gradient back to its scores, so training cannot move them. Here are the definitions as code,
# recomputed by hand for the widget's default state and compared with what the widget shows:

# %%
lesson = LessonWidget()  # defaults: divide by √d, causal mask, d = 64, T = 1

z = sentence_logits(64, scale_by_sqrt_d=True, temperature=1.0)  # (n, n)
w = hm.masked_softmax(z, causal)  # (n, n)
entropies = hm.row_entropy_bits(w) + 0.0  # (n,) bits; + 0.0 turns -0.0 (from -1·log2 1) into 0.0
jacobians = w[:, :, None] * np.eye(n) - w[:, :, None] * w[:, None, :]  # (n, n_k, n_k): diag(w) - w wᵀ per row
by_hand = {
    "score spread": z[causal].max() - z[causal].min(),
    "row entropy (bits)": entropies.mean(),
    "max weight": w.max(),
    "gradient scale": np.linalg.eigvalsh(jacobians)[:, -1].mean(),
    "first row entropy (bits)": entropies[0],
}
for name, value in by_hand.items():
    print(f"{name:>26}: by hand {value:.4f}   widget {lesson.readouts[name]:.4f}")

# %% [markdown]
# ### Why its numbers are not the lesson's
#
# The lesson's widget, at these same settings (d = 64, T = 1, the mask on), read *score spread 4.38, row
# entropy 1.209 bits, max weight 1, gradient scale 2.47e-1*. Its queries and keys were its own (a model's,
# or its author's random draw) and are not published, so ours cannot give the same numbers. Two things
# can be checked all the same.
#
# **What the structure fixes.** Max weight is 1 (the first row, always), and the entropy and the gradient
# scale must lie between 0 and the most a causal 6-token matrix allows:

# %%
lesson_snapshot = {"score spread": 4.38, "row entropy (bits)": 1.209, "max weight": 1.0, "gradient scale": 2.47e-1}
ours = lesson.readouts
most_entropy = max_entropies(causal).mean()  # every row uniform over its allowed keys
most_gradient = (0.0 + 0.5 * (n - 1)) / n  # row 0 is one-hot (0); at best ½ for each other row
print(f"max weight forced by the first row: {ours['max weight']:.0f} (lesson: {lesson_snapshot['max weight']:.0f})")
print(f"row entropy: lesson {lesson_snapshot['row entropy (bits)']}, ours {ours['row entropy (bits)']:.3f}, "
      f"possible range [0, {most_entropy:.3f}]")
print(f"gradient scale: lesson {lesson_snapshot['gradient scale']}, ours {ours['gradient scale']:.3f}, "
      f"possible range [0, {most_gradient:.3f}]")
print(f"score spread: lesson {lesson_snapshot['score spread']}, ours {ours['score spread']:.2f}")

# %% [markdown]
# **What kind of number the spread is.** "Spread" could mean a standard deviation or a range. The lesson's
# own numbers decide: stretch our scores until their spread is the lesson's 4.38, once as a standard
# deviation and once as a range, and look at the entropy each gives. Only the range lands near the
# lesson's 1.209 bits; a standard deviation of 4.38 saturates the rows far below it:

# %%
allowed_z = z[causal]
for kind, spread in [("range (max − min)", np.ptp(allowed_z)), ("standard deviation", allowed_z.std())]:
    stretched = z * (lesson_snapshot["score spread"] / spread)  # same scores, spread = 4.38 of this kind
    entropy = row_entropies(hm.masked_softmax(stretched, causal)).mean()
    print(f"spread 4.38 as a {kind:<18}: row entropy {entropy:.3f} bits (lesson: {lesson_snapshot['row entropy (bits)']})")

# %% [markdown]
# So the widget's *score spread* is the range, the lesson's kind, and with it the lesson's spread and entropy
# go together as ours do. What remains between the two widgets (the lines printed above: our spread, entropy
# and gradient scale beside the lesson's) is the difference between two sets of six vectors: other
# embeddings, other numbers, the same behaviour. Now the widget:

# %%
lesson

# %% [markdown]
# Things to try, and what you should see:
#
# 1. **Switch off "divide by √d"** and drag *d* from 8 to 512: the score spread grows like √d, the rows
#    saturate into one-hot rows (entropy towards 0, every row's top weight towards 1) and the gradient
#    scale collapses. Switch it back on: the spread stays about the same for every *d*.
# 2. **Toggle the causal mask**: the upper triangle is hatched, the first row becomes `1.00` followed by
#    nothing, and *first row entropy* reads 0 whatever else you do. With the mask on, *max weight* is
#    always 1 (the first row); switch the mask off to watch max weight saturate on its own.
# 3. **Move T**: a high temperature flattens every row (entropy up, towards the limits marked `|`), a low
#    one sharpens them. Dividing by √d is a temperature of √d, chosen so that the spread does not
#    depend on the head size.

# %% [markdown]
# ## The first row: one key, weight 1, entropy 0
#
# Under the causal mask the first query, `<s>`, has exactly one allowed key: itself. A softmax over one
# number is 1, whatever that number is. So the first row is always one-hot and its entropy is always
# 0, at any scale of the scores:

# %%
one_hot = np.eye(n)[0]
for scale in (0.01, 1.0, 100.0, 1e4):
    s = np.random.default_rng(1).normal(size=(n, n)) * scale
    w = hm.masked_softmax(s, causal)
    print(f"scores × {scale:>7,g}: first row {w[0]}, entropy {row_entropies(w[0]):.1f} bits, "
          f"one-hot: {np.array_equal(w[0], one_hot)}")

# %% [markdown]
# That is not a defect. The first token has nothing earlier to look at; its output is its own value,
# and the model's first prediction has to rest on `<s>` alone. The row carries no information about
# the scores, and its scores get no gradient from this softmax (a one-hot softmax does not change
# when its inputs move a little; the widget's *gradient scale* measures exactly that). It is how
# autoregression works: the second token sees two, the last sees all of them. The most entropy
# row *q* can have is `log₂(q + 1)`:

# %%
print("most entropy per row (bits):", max_entropies(causal))

# %% [markdown]
# ## Without √d, in numbers
#
# The first experiment of the widget, computed for every head size with the mask on (readouts as defined
# above):

# %%
head_sizes = [8, 16, 32, 64, 128, 256, 512]
table = {True: {}, False: {}}
for scaled in (True, False):
    for name in ("score spread", "row entropy (bits)", "gradient scale", "max weight"):
        table[scaled][name] = []
    for size in head_sizes:
        z = sentence_logits(size, scale_by_sqrt_d=scaled)
        w = hm.masked_softmax(z, causal)
        table[scaled]["score spread"].append(score_spread(z, causal))
        table[scaled]["row entropy (bits)"].append(row_entropies(w).mean())
        table[scaled]["gradient scale"].append(gradient_scale(w))
        table[scaled]["max weight"].append(w[1:].max(axis=-1).mean())  # "top w": mean top weight of rows 2..n

print(f"{'':>4} | {'not divided by √d':<40} | {'divided by √d':<30}")
print(f"{'d':>4} | {'spread':>7} {'spread/√d':>9} {'entropy':>8} {'top w':>6} {'grad':>7} | "
      f"{'spread':>7} {'entropy':>8} {'top w':>6} {'grad':>7}")
for i, size in enumerate(head_sizes):
    raw, scaled = ({key: values[i] for key, values in table[flag].items()} for flag in (False, True))
    print(f"{size:>4} | {raw['score spread']:>7.2f} {raw['score spread'] / np.sqrt(size):>9.2f} "
          f"{raw['row entropy (bits)']:>8.3f} {raw['max weight']:>6.3f} {raw['gradient scale']:>7.4f} | "
          f"{scaled['score spread']:>7.2f} {scaled['row entropy (bits)']:>8.3f} {scaled['max weight']:>6.3f} "
          f"{scaled['gradient scale']:>7.4f}")
growth = table[False]["score spread"][-1] / table[False]["score spread"][0]
exponent = np.polyfit(np.log(head_sizes), np.log(table[False]["score spread"]), 1)[0]  # spread ∝ d^exponent
print(f"spread without √d grew {growth:.1f}× from d = {head_sizes[0]} to d = {head_sizes[-1]} "
      f"(√({head_sizes[-1]}/{head_sizes[0]}) = {np.sqrt(head_sizes[-1] / head_sizes[0]):.0f}); "
      f"fitted over all seven sizes it grows like d^{exponent:.2f}, and √d is d^0.5")

display(picture(readouts_versus_d_figure(head_sizes, table[True], table[False])))


# %% [markdown]
# Without the division, `spread / √d` stays within a narrow band while the spread itself grows several-fold:
# the spread grows like √d, as it must for a sum of d random products (the range of a few dozen scores is a
# noisy measure, hence a band and not a constant). The rows
# saturate with it: the entropy falls towards 0, the top weight of a row ("top w", the mean over the
# rows after the first, which the mask does not pin at 1) climbs towards 1, and the gradient scale
# collapses. With the division, the spread, the entropy and the gradient scale stay where they are
# whatever the head size: that is the whole purpose of the √d.

# %% [markdown]
# ### Exercise 2: `masked_softmax(scores, mask)`
#
# Write `masked_softmax(scores, mask)`:
#
# * `scores` is a float array `(..., n_keys)` (any number of leading axes), `mask` a boolean array
#   that broadcasts against it (for example an `(n, n)` causal mask against `(b, h, n, n)` scores);
#   True = may attend;
# * return the softmax over the **last axis** among the allowed keys, the shape of
#   `np.broadcast_shapes(scores.shape, mask.shape)`: forbidden weights **exactly 0**, the allowed
#   weights of a row summing to 1;
# * a row with no allowed key comes back as **all zeros**;
# * no NaN and **no numpy warning** for any finite scores, including scores in the thousands (or
#   far below zero);
# * do not modify `scores` in place.
#
# `np.where(mask, scores, -np.inf)` is a good start; the four steps of the recipe above do the rest.
# The tests run ordinary scores, a fully masked row, and very large and very negative scores,
# each in its own test cell.

# %% nbgrader={"grade_id": "masked_softmax", "schema_version": 3, "locked": false, "solution": true, "grade": false}
def masked_softmax(scores, mask):
    """Softmax over the last axis among the allowed keys (mask: True = may attend)."""
    ### BEGIN SOLUTION
    filled = np.where(mask, scores, -np.inf)  # (..., n_k), broadcast shape
    allowed = np.broadcast_to(mask, filled.shape)
    row_max = filled.max(axis=-1, keepdims=True)  # -inf for a row with nothing allowed
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)
    exps = np.exp(np.where(allowed, filled - row_max, -np.inf))  # forbidden: exp(-inf) = 0
    totals = exps.sum(axis=-1, keepdims=True)
    return np.divide(exps, totals, out=np.zeros_like(exps), where=totals > 0)
    ### END SOLUTION


# %%
with hm.if_written("masked_softmax"):
    print(masked_softmax(two_rows, empty_row_mask))
    print(masked_softmax(large, allowed))

# %% nbgrader={"grade_id": "test_masked_softmax", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 3}
from heads_and_masks.checks.causal_mask import check_masked_softmax

check_masked_softmax(masked_softmax)
### BEGIN HIDDEN TESTS
check_masked_softmax(masked_softmax, seed=2, thorough=True)
### END HIDDEN TESTS

# %% nbgrader={"grade_id": "test_masked_softmax_empty_rows", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 1}
from heads_and_masks.checks.causal_mask import check_masked_softmax_empty_rows

check_masked_softmax_empty_rows(masked_softmax)
### BEGIN HIDDEN TESTS
check_masked_softmax_empty_rows(masked_softmax, seed=5, thorough=True)
### END HIDDEN TESTS

# %% nbgrader={"grade_id": "test_masked_softmax_large_scores", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 2}
from heads_and_masks.checks.causal_mask import check_masked_softmax_large_scores

check_masked_softmax_large_scores(masked_softmax)
### BEGIN HIDDEN TESTS
check_masked_softmax_large_scores(masked_softmax, seed=11, thorough=True)
### END HIDDEN TESTS

# %% [markdown]
# ## How peaked is a row? Entropy in bits
#
# A row of attention weights is a probability distribution over the keys. Its **entropy**
#
# `H = −Σ_k w_k · log₂ w_k`
#
# measures how spread it is, in bits: 0 when one key takes all the weight, `log₂ m` when *m* keys share
# it equally (1 bit for two, 2 bits for four). A forbidden key has weight 0, and its term is
# `0 · log₂ 0`, which by convention (and as the limit of `p log p` when `p → 0`) is 0: numpy, left to
# itself, computes `0 · (−∞)` = NaN there.

# %%
for m in (1, 2, 4, 6):
    print(f"{m} equal weights: {row_entropies(np.full(m, 1 / m)):.3f} bits (log2 {m} = {np.log2(m):.3f})")
value, problems = caught_warnings(lambda: 0.0 * np.log2(0.0))
print("0 * log2(0) computed naively:", value, " numpy warned:", problems)


# %% [markdown]
# ### Exercise 3: `row_entropy_bits(weights)`
#
# Write `row_entropy_bits(weights)`: `weights` has shape `(..., n_keys)`, each row a distribution
# (or all zeros, for a row with nothing allowed); return the entropy of each row **in bits**, shape
# `(...)` (one number per row, no kept axis), with `0 · log 0 = 0`. Use `np.log2` (or divide natural
# logarithms by `ln 2`), and take the logarithm only where the weight is positive.

# %% nbgrader={"grade_id": "row_entropy_bits", "schema_version": 3, "locked": false, "solution": true, "grade": false}
def row_entropy_bits(weights):
    """Entropy of each row in bits, with 0·log 0 = 0.   (..., n_k) -> (...)"""
    ### BEGIN SOLUTION
    positive = weights > 0
    logs = np.log2(np.where(positive, weights, 1.0))  # log2(1) = 0 where the weight is 0
    return 0.0 - (weights * logs).sum(axis=-1)  # 0.0 - x rather than -x: a one-hot row gives 0.0, not -0.0
    ### END SOLUTION


# %%
with hm.if_written("row_entropy_bits"):
    print(row_entropy_bits(minus_inf))

# %% nbgrader={"grade_id": "test_row_entropy_bits", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 2}
from heads_and_masks.checks.causal_mask import check_row_entropy_bits

check_row_entropy_bits(row_entropy_bits)
### BEGIN HIDDEN TESTS
check_row_entropy_bits(row_entropy_bits, seed=3, thorough=True)
### END HIDDEN TESTS

# %% [markdown]
# ### Written question (2 points): Why −∞ and not 0?
#
# To forbid a key, its score is set to −∞ before softmax. Why does setting it to 0 not forbid it? Answer in two to
# four sentences in the cell below, in place of *YOUR ANSWER HERE*. In a class your teacher grades it by hand; on
# your own, compare with the model answer in `solutions/`.

# %% [markdown] nbgrader={"grade_id": "written_minus_infinity", "schema_version": 3, "locked": false, "solution": true, "grade": true, "points": 2}
# ### BEGIN SOLUTION
# **Model answer.** Softmax turns each score into exp(score) and divides by their sum. A score of 0 is an ordinary
# score: it gets exp(0) = 1, a real weight (larger than that of any negative allowed score), so the forbidden key
# still enters the average. A score of −∞ gets exp(−∞) = 0 exactly: the key drops out of the numerator and of the
# denominator, and the weights of the allowed keys still sum to 1.
#
# **Rubric for the grader (2 points).** 1 point: 0 is a score like any other: exp(0) = 1 is a real weight, so the
# key is not forbidden. 1 point: −∞ gives weight exactly 0, and the allowed weights renormalise among themselves
# (rows sum to 1). Half a point for an answer that names the idea without the reason.
# ### END SOLUTION

# %% [markdown]
# ## Summary
#
# * The causal mask is `mask[q, k] = (k ≤ q)`, boolean, True = may attend: a lower triangle with its
#   diagonal.
# * Forbid a score by filling it with −∞ **before** softmax: its weight is exactly 0 and it leaves the
#   denominator, so the allowed weights normalise by themselves. Zero is not a ban (`e⁰ = 1`); deleting
#   entries breaks the rectangle that batched code needs; masking after softmax breaks the row sums,
#   and renormalising fails when the future dwarfs the past.
# * In code, −∞ becomes −1e9 or `np.finfo(dtype).min` to avoid NaN from a fully masked row or from
#   `0 · (−∞)`, plus explicit zeros; a fill value must lie far below every possible score (−1e4 does
#   not, once scores are large).
# * Under the mask the first row is one-hot with entropy 0, always: autoregression, not a bug.
# * Without √d the spread of the scores grows like √d, the softmax saturates, and its gradient
#   vanishes; dividing by √d keeps the spread, the entropy and the gradient independent of the head size.
#
# Next, notebook 04: the mask throws away almost half of the score matrix. How much work could an
# implementation save by never computing it?
