# %% [markdown]
# # 02 · Why several heads, and why not too many
#
# Notebook 01 showed that cutting the width D into h heads costs nothing: one layer does the same
# number of multiply-adds for every h. So why cut at all? And if cutting is free, why not cut D = 768
# into 768 heads of size 1?
#
# This notebook answers both questions with experiments you can run and change:
#
# 1. **One head is one weighted average.** Its output is a single point inside the convex hull of its
#    values. A job that needs two pieces of information chosen by two different rules cannot be done by
#    one average; it needs two heads. You will build the two heads.
# 2. **Small heads are noisy.** A head compares a query with a key by a dot product over its d numbers.
#    With few numbers, that comparison is a noisy estimate of how similar the two really are, and the
#    wrong key often wins. You will measure how often, against d.
#
# Between the two sits the trade-off every transformer design makes: more heads means more rules at once,
# but each rule is judged with fewer numbers. That is why almost every model uses heads of 32 to 128.

# %%
import numpy as np
from IPython.display import Markdown

import heads_and_masks as hm
from heads_and_masks import model_configs, retrieval, score_noise
from heads_and_masks.pictures import why_heads as plots
from heads_and_masks.widgets.why_heads import ScoreNoiseWidget

np.set_printoptions(precision=3, suppress=True)

# %% [markdown]
# ## 1. One head, one weighted average
#
# For one query, a head computes weights `w_1 … w_n` with a softmax, so every weight is positive (or
# exactly zero where a mask forbids the key) and they add up to one. Its output is `Σ_j w_j v_j`. A sum
# of points with weights of that kind is called a *convex combination*, and the set of all convex
# combinations of some points is their *convex hull*: the smallest convex polygon (in higher dimensions, a
# polytope) around them. Whatever its query and keys, a head can only put its output somewhere in that
# region, and it puts it at **one** place.
#
# The picture below makes it concrete with six tokens whose values are 2-D points. The grey cloud is what
# one head outputs for thousands of random weight vectors: it fills the hull and never leaves it.
#
# Now suppose the query at position 5 needs two things: the value of the previous token (`v4`) and the
# value of the first token (`v0`). One head can output `v4` (all weight on token 4), or `v0`, or any blend
# on the red segment between them, or other points of the hull. It cannot output "`v4` *and* `v0`":
# that is two points, and a head outputs one. Two heads, each with its own weights, can: one lands
# exactly on `v4`, the other exactly on `v0` (green circles), and the layer concatenates the two results.

# %%
values = np.array([[0.2, 2.0], [1.8, 1.4], [2.2, -0.4], [0.6, -1.6], [-1.6, -0.9], [-1.4, 1.1]])  # v0 … v5
cloud = retrieval.reachable_outputs(values, samples=4000, seed=1)
hull = retrieval.convex_hull(values)
corners = [int(np.flatnonzero((values == corner).all(axis=1))[0]) for corner in hull]
print(f"{len(cloud):,} random weight vectors: {retrieval.inside_hull(cloud, hull).mean():.0%} of the outputs lie "
      f"inside the hull of the values, whose corners are {', '.join(f'v{i}' for i in corners)}")
plots.picture(plots.hull_figure(values, previous=4, first=0))

# %% [markdown]
# ## 2. A job for two rules
#
# Here is a task with two rules, small enough to build by hand. A sequence has `n` tokens. Token `t` is
# the vector
#
# $$x_t = [\,\text{content}_t \;|\; \text{one-hot}(t)\,]$$
#
# its first `c` numbers are its *content* (what the token says), the next `n` numbers mark its *position*
# (a 1 in place `t`, zeros elsewhere). At every position `t ≥ 1` we want two things: the content of the
# **previous** token, `content_{t−1}`, and the content of the **first** token, `content_0`. Both rules are
# real: trained transformers have "previous-token heads" (Elhage et al., 2021; Olsson et al., 2022), and
# many heads put much of their attention on the first token (Clark et al., 2019, for BERT; Xiao et al.,
# 2023, who call it an *attention sink*).
#
# ### What one head can do
#
# One head that puts weight `a` on the previous token and `1 − a` on the first outputs the blend
# `a·content_{t−1} + (1 − a)·content_0` (passed through its value matrix). The two contents are added into
# one vector of `c` numbers, and the task asks for `2c` numbers. Information is lost, whatever `a` is:
# with `a = ½` the pair (A, B) gives exactly the same output as the pair (B, A).
#
# How much is lost? Below, random contents go through the best single head we can imagine, one that
# gives exactly `a` to the previous token and `1 − a` to the first, and then a least-squares fit finds the
# best linear readout of each wanted content from the blend. The figure shows the fraction of each
# content's variance the readout recovers. Moving `a` moves the loss from one content to the other, but on
# average **half** is always lost. (The contents here are normal random numbers, and for those the best
# readout of any kind is a linear one: no cleverer decoder could do better.) Two heads recover everything.

# %%
c = 4
weights_on_previous = np.linspace(0.0, 1.0, 11)
# 5000 random (previous, first) pairs of contents; per weight a: the mean R² of each wanted content
recovered_previous, recovered_first, two_heads = retrieval.one_head_recovery(weights_on_previous, c, pairs=5000)

A, B = np.random.default_rng(1).normal(size=(2, c))
print("one head, a = ½:  (A, B) and (B, A) give the same output:",
      np.allclose(retrieval.one_head_mix(A, B, 0.5), retrieval.one_head_mix(B, A, 0.5)))
print(f"one head: on average {((recovered_previous + recovered_first) / 2).min():.3f} to "
      f"{((recovered_previous + recovered_first) / 2).max():.3f} of the variance recovered, for every a;"
      f" two heads: {two_heads:.3f}")
plots.picture(plots.recovery_figure(weights_on_previous, recovered_previous, recovered_first))


# %% [markdown]
# ## Exercise 1: build the two heads
#
# Write `retrieval_heads(n, c)`, returning three arrays `(w_q, w_k, w_v)` for two heads over the tokens
# above (the tests call it with `n` from 2 to 32 and `c` from 1 to 7):
#
# * `w_q` and `w_k` have shape `(2, c + n, d)`: one matrix per head, used as `x @ w_q[h]` for the queries
#   and `x @ w_k[h]` for the keys. You choose the head size `d ≥ 1` (the same for both heads).
#   Rows `0 … c−1` of each matrix read the content, rows `c … c+n−1` read the position.
# * `w_v` has shape `(2, c + n, c)`: the values `x @ w_v[h]`, `c` numbers per token and head.
# * **Head 0, "previous token":** at every query `t ≥ 1`, at least 98% of its weight goes to key `t − 1`.
# * **Head 1, "first token":** at every query `t ≥ 1`, at least 98% of its weight goes to key `0`.
# * Each head hands back the **content** of the token it fetches, exactly.
#
# The tests run your heads through the course's attention exactly as a transformer would: scores
# `q·k / √d`, a causal mask (query `t` sees keys `0 … t`), softmax over the keys. They use random contents,
# so a rule must depend on the positions only.
#
# Two things to think about. First, *which* query matches *which* key: with `x @ w`, row `c + t` of `w_q`
# is what the query of token `t` is made of. Second, *how sharp* the rule is: a query and key that match
# give a score that is larger than the others, but softmax only turns a lead of `g` into a weight of
# about `1 / (1 + (n − 1)·e^{−g})`. A lead of 1 is hopeless; aim for a lead of about 20 *after* the
# division by `√d`.

# %% nbgrader={"grade_id": "retrieval_heads", "schema_version": 3, "locked": false, "solution": true, "grade": false}
def retrieval_heads(n, c):
    """Head 0 attends to the previous token, head 1 to the first; both hand back the content."""
    ### BEGIN SOLUTION
    d = n  # queries and keys are one-hot positions
    lead = 20.0 * np.sqrt(d)  # after the division by sqrt(d), the wanted key leads by 20
    w_q, w_k, w_v = np.zeros((2, c + n, d)), np.zeros((2, c + n, d)), np.zeros((2, c + n, c))
    w_k[:, c:, :] = np.eye(n)  # every key announces its own position
    w_q[0, c:, :] = lead * np.eye(n, k=-1)  # the query of token t asks for position t - 1
    w_q[1, c:, 0] = lead  # every query asks for position 0
    w_v[:, :c, :] = np.eye(c)  # the values copy the content, ignore the position
    return w_q, w_k, w_v
    ### END SOLUTION


# %% [markdown]
# Look at your heads before the tests: the two weight patterns (queries down, keys across) and the
# output of the pair against what the task asks for. Head 0 should draw a line just below the diagonal,
# head 1 a column on the left. (Query 0 sees only itself: the causal mask leaves it no other choice.)

# %%
demo_n, demo_c = 8, 3
demo_contents = np.random.default_rng(1).uniform(-1, 1, size=(demo_n, demo_c))
demo_x = retrieval.token_vectors(demo_contents)  # (n, c + n)
try:
    heads = retrieval_heads(demo_n, demo_c)
    source = "your heads"
except NotImplementedError:
    heads = retrieval.retrieval_heads(demo_n, demo_c)
    source = "the course's heads (yours are not written yet)"
demo_weights = retrieval.head_weights(demo_x, heads[0], heads[1])  # (2, n, n)
demo_output = retrieval.heads_output(demo_x, *heads)  # (n, 2c): [head 0 | head 1]
print(f"{source}: largest difference from [content of t-1 | content of 0] over t = 1 … {demo_n - 1}:",
      f"{np.abs(demo_output[1:] - retrieval.wanted_output(demo_contents)).max():.2e}")
plots.picture(plots.head_weights_figure(demo_weights, ["head 0: previous token", "head 1: first token"]))

# %% nbgrader={"grade_id": "test_retrieval_heads", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 3}
from heads_and_masks.checks.why_heads import check_retrieval_heads

check_retrieval_heads(retrieval_heads)
### BEGIN HIDDEN TESTS
check_retrieval_heads(retrieval_heads, seed=2027, thorough=True)
### END HIDDEN TESTS

# %% nbgrader={"grade_id": "test_retrieval_heads_values", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 1}
from heads_and_masks.checks.why_heads import check_retrieval_heads_values

check_retrieval_heads_values(retrieval_heads)
### BEGIN HIDDEN TESTS
check_retrieval_heads_values(retrieval_heads, seed=2027, thorough=True)
### END HIDDEN TESTS

# %% [markdown]
# Each head needed only a few of the numbers it reads: the position part, for the rule. That is the
# general picture: a head is one question ("where is the previous token?", "where is the subject of this
# verb?") asked with its own `d` numbers, and a layer with `h` heads asks `h` questions at once.
#
# ## 3. The price: the head size
#
# The width is fixed by the model, so more heads means smaller heads: `d = D / h`. At `D = 768` (the
# width of GPT-2 small and BERT-base) the lesson compares three ways to cut it. The cost of the layer is
# the same for all three (notebook 01's formula, here for 1024 tokens); what changes is how many rules run
# at once and with how many numbers each rule compares a query with a key.

# %%
D, n_tokens = 768, 1024
noise, n_keys = 1.0, 16  # the noise model of section 4
rows = ["| heads h | head size d | multiply-adds of the layer | rules at once | spread of q·k/d | match wins |",
        "|---:|---:|---:|---:|---:|---:|"]
for h in (1, 12, 96):
    d = hm.head_size(D, h)
    spread = score_noise.estimate_spread(d, noise)[1]  # an unrelated key's estimate
    wins = score_noise.exact_winning_rate(d, noise, n_keys)
    rows.append(f"| {h} | {d} | {hm.mha_cost(n_tokens, D, h):,} | {h} | {spread:.3f} | {wins:.1%} |")
Markdown("\n".join(rows))

# %% [markdown]
# The last two columns come from the experiment of the next section (noise σ = 1, 16 keys). Read the
# table row by row:
#
# * **h = 1, d = 768:** one rule; each comparison uses 768 numbers, so it is very precise, but the layer
#   can only follow one distribution per token.
# * **h = 12, d = 64:** the usual compromise: twelve rules, each still precise.
# * **h = 96, d = 8:** ninety-six rules, but each compares a query with a key over eight numbers; the
#   similarity estimate is so noisy that the right key wins only about a third of the time here.
#
# ## 4. Why a tiny head is noisy
#
# A head decides whom to attend to by `q·k`, a sum of `d` products, one per component. Each product is a
# small, unreliable piece of evidence of how similar the query and the key are; the sum pools `d` pieces.
# A toy model makes this measurable:
#
# * every token has a hidden *meaning*: `d` independent numbers from N(0, 1);
# * a head sees a noisy view of it, `meaning + σ·ε`, with fresh N(0, 1) noise `ε` in each view;
# * the query and one key, the *match*, share the same meaning (their true similarity is 1); the other
#   keys have unrelated meanings (true similarity 0).
#
# The average of the `d` products, `q·k / d`, is then an *estimate* of the true similarity: it is 1 on
# average for the match and 0 for an unrelated key, at every `d`. What changes with `d` is its spread.
# One product has a variance of `(1 + σ²)² + 1` for the match and `(1 + σ²)²` for an unrelated key; an
# average of `d` independent products has `d` times less, so the spread (standard deviation) shrinks like
# `1/√d`. Below, simulated spreads against that formula.

# %%
d_grid = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512])
simulated = score_noise.simulated_spreads(d_grid, noise, pairs=2000, seed=3)  # (d, 2): the match's, unrelated keys'
formula = np.array([score_noise.estimate_spread(d, noise) for d in d_grid])
print("largest relative difference between simulation and formula:",
      f"{np.abs(simulated / formula - 1).max():.1%} (2000 pairs per point)")
print(f"spread of an unrelated key's estimate: {formula[3, 1]:.3f} at d = 8, {formula[6, 1]:.3f} at d = 64;"
      f" the true similarities differ by 1")
plots.picture(plots.spread_figure(d_grid, simulated[:, 0], simulated[:, 1], formula[:, 0], formula[:, 1], noise))


# %% [markdown]
# A note on the `1/√d` in attention. Dividing the scores by `√d` keeps their spread the same at every
# head size, so the softmax is neither flat nor saturated by default. It divides *every* score of a query
# by the same number, so it changes no ranking: it cannot make a noisy comparison reliable. Only more
# components can.
#
# ## Exercise 2: how often does the match win?
#
# What matters in attention is not the spread itself but whether the right key gets the highest score.
# Write `winning_rate(d, noise, n_keys, trials, seed)` that estimates, by simulation, the probability
# that the match outscores every other key:
#
# * in each of `trials` independent trials, draw the meaning of the match and the meanings of the
#   `n_keys − 1` other keys (each `d` numbers from N(0, 1));
# * the query is the match's meaning plus `noise · ε`; every key (the match included) is its own meaning
#   plus `noise · ε`, with fresh noise `ε` from N(0, 1) in every view (`noise` is a standard deviation);
# * the match **wins** a trial if its score `q·k` is larger than the score of every other key
#   (dividing all scores by `√d` would change nothing);
# * return the fraction of trials won, a float between 0 and 1;
# * take every random number from `np.random.default_rng(seed)`: the same seed must give the same rate;
# * raise `ValueError` if `d < 1`, `noise < 0`, `n_keys < 2` or `trials < 1`.
#
# The tests compare your rate with the exact probability, which the course computes by integration
# (`score_noise.exact_winning_rate`; its docstring has the derivation). With 4000 trials a correct
# simulation lands within six standard errors of it (about ±0.05 at most) except with probability about
# 2·10⁻⁹, so a correct answer does not fail by bad luck. The tests call your function about a dozen
# times with 4000 trials and up to 128 components: work on whole arrays, for example of shape
# `(trials, n_keys, d)`, rather than one number at a time.

# %% nbgrader={"grade_id": "winning_rate", "schema_version": 3, "locked": false, "solution": true, "grade": false}
def winning_rate(d, noise, n_keys=16, trials=4000, seed=0):
    """Fraction of trials in which the matching key's score q·k beats every other key's."""
    ### BEGIN SOLUTION
    if d < 1 or noise < 0 or n_keys < 2 or trials < 1:
        raise ValueError(f"need d >= 1, noise >= 0, n_keys >= 2 and trials >= 1; got {d}, {noise}, {n_keys}, {trials}")
    rng = np.random.default_rng(seed)
    meaning = rng.normal(size=(trials, n_keys, d))  # (trials, keys, d); key 0 is the match
    query = meaning[:, 0] + noise * rng.normal(size=(trials, d))  # (trials, d)
    keys = meaning + noise * rng.normal(size=(trials, n_keys, d))  # (trials, keys, d)
    scores = np.einsum("td,tkd->tk", query, keys)  # (trials, keys)
    return float(np.mean(scores[:, 0] > scores[:, 1:].max(axis=1)))
    ### END SOLUTION


# %% [markdown]
# Compare your simulation with the exact probability before running the tests:

# %%
with hm.if_written("winning_rate"):
    for d, sigma in [(8, 1.0), (64, 1.0), (32, 1.5)]:
        mine = winning_rate(d, sigma, 16, 4000, 0)
        exact = score_noise.exact_winning_rate(d, sigma, 16)
        print(f"d = {d:>3}, noise = {sigma}: yours {mine:.3f}, exact {exact:.3f}, "
              f"allowed ±{6 * np.sqrt(max(exact * (1 - exact), 0.0099) / 4000):.3f}")

# %% nbgrader={"grade_id": "test_winning_rate", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 3}
from heads_and_masks.checks.why_heads import check_winning_rate

check_winning_rate(winning_rate)
### BEGIN HIDDEN TESTS
check_winning_rate(winning_rate, seed=4099, thorough=True)
### END HIDDEN TESTS

# %% nbgrader={"grade_id": "test_winning_rate_errors", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 1}
from heads_and_masks.checks.why_heads import check_winning_rate_errors

check_winning_rate_errors(winning_rate)

# %% [markdown]
# ## 5. The winning rate against d, and the range [32, 128]
#
# The curves below are exact; the triangles are your simulation (or the course's, if yours is not written
# yet). Small heads are bad at picking the right key for every noise level; even with no noise at all
# (σ = 0, the query *is* the match's key) an unrelated key often wins at small `d`, because a dot product
# over a few random numbers is large or small by chance. The rate climbs steeply up to a few dozen
# components and then has little left to gain: that is the practical range `d ∈ [32, 128]` of almost every
# model (GPT-2 and BERT use 64, Llama 128). Below it, heads are unreliable; above it, each extra component
# buys little, while the same width could pay for more heads.

# %%
d_curve = np.unique(np.geomspace(1, 1024, 31).astype(int))
noises = (0.0, 0.5, 1.0, 1.5)
curves = {sigma: [score_noise.win_probability(d, sigma, sigma, n_keys - 1, grid=121, nodes=32) for d in d_curve]
          for sigma in noises}  # a coarser integration grid than exact_winning_rate's: still within 0.001
d_points = [2, 8, 32, 128]
try:
    points = [winning_rate(d, noise, n_keys, 4000, 5) for d in d_points]
    label = "your winning_rate, σ = 1"
except NotImplementedError:
    points = [score_noise.winning_rate(d, noise, n_keys, 4000, 5) for d in d_points]
    label = "course's simulation, σ = 1"
for d in (8, 32, 64, 128, 768):
    print(f"d = {d:>3}: the match wins {score_noise.exact_winning_rate(d, noise, n_keys):.1%} of the time (σ = 1)")
plots.picture(plots.winning_figure(d_curve, curves, n_keys, marks=[(8, "h = 96"), (64, "h = 12"), (768, "h = 1")],
                                   simulated=(d_points, points, label)))

# %% [markdown]
# "Almost every model" is not every model. Here are the head sizes of the ten real models whose
# configurations notebook 06 uses (`data/models.csv`, each number with its public source):

# %%
by_head_size = {}
for m in model_configs.load_models().values():
    by_head_size.setdefault(m.head_dim, []).append(m.model)
for size, names in sorted(by_head_size.items()):
    where = "inside" if 32 <= size <= 128 else "outside"
    print(f"d = {size:>3} ({where} [32, 128]): {', '.join(names)}")

# %% [markdown]
# The two Gemma models use heads of **256**, twice the top of the range. The curve above says what that
# buys: at d = 128 the match already wins nearly every time, so a larger head adds little reliability; it
# costs width, which is why so few models do it (Gemma-7B even makes its 16 heads of 256 wider together,
# 4096, than the model itself, 3072: notebook 06 comes back to it). The range is the usual choice, where
# heads are reliable and still cheap enough to have many, not a law.

# %% [markdown]
# ## 6. Move d and the noise yourself
#
# Left: how the similarity estimates `q·k / d` of the match (orange, true similarity 1) and of the
# unrelated keys (blue, true similarity 0) are spread over a fixed set of random trials (both histograms
# scaled alike, the tallest bar to 1). Right: how often the match wins, against `d`, for the chosen noise:
# the exact curve and the simulated dots; the black circle is the current `d`. All head sizes reuse the same random draws (the first
# `d` components of each), so what you see change is `d`, not luck. Things to try:
#
# * `d = 8`, noise 1: the two humps overlap heavily; the match wins about a third of the time.
# * Move to `d = 32`, then `64`: the humps narrow (the spread readouts halve each time `d` grows four-fold)
#   and separate; the winning rate climbs into the green band.
# * Noise 0, `d = 1`: no noise at all, and still the match rarely wins. One number cannot tell similar
#   from dissimilar.
# * Noise 3: the curve shifts right: noisier views need more components for the same reliability.

# %%
noise_widget = ScoreNoiseWidget()
noise_widget

# %% [markdown]
# The readouts for the widget's starting position (d = 8, noise 1), computed:

# %%
print(noise_widget.readouts_text())

# %% [markdown]
# ### Written question (2 points): Why can a head not be tiny?
#
# More heads of the same width D means smaller heads, d = D/h. Using what this notebook measured, explain why a
# head cannot be made tiny. Answer in two to four sentences in the cell below, in place of *YOUR ANSWER HERE*. In
# a class your teacher grades it by hand; on your own, compare with the model answer in `solutions/`.

# %% [markdown] nbgrader={"grade_id": "written_tiny_head", "schema_version": 3, "locked": false, "solution": true, "grade": true, "points": 2}
# ### BEGIN SOLUTION
# **Model answer.** A head's score q·k adds up d noisy products. The match's advantage grows like d while the
# noise of the other keys' scores grows only like √d, so the match stands out by a margin that grows like √d. With
# a tiny d an unrelated key often beats the match by chance: the winning rate falls, as the notebook's curve
# shows. So heads are kept at some tens of dimensions (about 32 to 128 in real models), which bounds h = D/d.
#
# **Rubric for the grader (2 points).** 1 point: q·k is a sum of d noisy terms: the signal grows like d, the noise
# like √d (the margin grows with √d). 1 point: with small d the match often loses to an unrelated key (the winning
# rate drops), so d must stay large enough. Half a point for an answer that names the idea without the reason.
# ### END SOLUTION

# %% [markdown]
# ## Summary
#
# * A head's output is one convex combination of its values: one point in their hull, one distribution
#   over the keys. Two rules need two distributions, so two heads; you built them, and one head provably
#   recovers only half of what the two-rule task asks for.
# * Heads cost nothing extra, but they share the width: `d = D / h`. At `D = 768`, 1 head of 768, 12 of
#   64, or 96 of 8.
# * A head compares query and key through `d` products; the spread of that estimate falls like `1/√d`,
#   and below a few dozen components the right key loses often. Above about 128, little is left to gain.
#   Hence `d ∈ [32, 128]` in most models and as many heads as the width then allows (Gemma's heads of 256
#   are the exception in our data).
#
# Next, notebook 03 turns to masks: how a head is kept from looking at the future.
