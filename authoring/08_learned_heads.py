# %% [markdown]
# # 08 · Learned heads: train attention in NumPy and watch the heads split the work
#
# Every head so far was random or built by hand. Notebook 02 argued that one head is one weighted
# average, so a job that needs two rules needs two heads. Here a model **learns** its heads, and you
# watch them take the two jobs apart.
#
# Everything runs in NumPy, with the backward pass written out: the model is small enough to train in a
# few seconds, and you will write the one gradient at its heart, the gradient of masked scaled
# dot-product attention. Then you will
#
# 1. watch two heads specialise during training, one on the previous token and one on the first token,
#    and measure it;
# 2. switch heads off one at a time (*zero-ablation*) and see that they are not interchangeable;
# 3. train one head of size D against h heads of size D / h, at the same cost, over several seeds;
# 4. meet notebook 01's `(d h)` bug again: harmless when a model is trained with it, fatal when trained
#    weights are loaded with it.

# %%
import dataclasses

import numpy as np

import heads_and_masks as hm
from heads_and_masks import training
from heads_and_masks.pictures.learned_heads import head_count_figure, head_maps_figure, loss_curves_figure, picture
from heads_and_masks.widgets.learned_heads import LearnedHeadsWidget

np.set_printoptions(precision=3, suppress=True)

# %% [markdown]
# ## A task that needs two rules
#
# Each sequence is `n = 8` random tokens out of a vocabulary of `V = 16`. At every position t ≥ 1 the
# model must predict **two** tokens: the one just before it (`ids[t - 1]`, a rule by *relative* position)
# and the first token of the sequence (`ids[0]`, a rule by *absolute* position). Position 0 has no
# previous token and is not scored. The data come from a seeded generator, so every run sees the same
# sequences:

# %%
config = training.Config(vocab=16, n=8, width=16, heads=2)  # d = D / h = 8
ids, targets = training.make_batch(np.random.default_rng(0), batch=2, n=config.n, vocab=config.vocab)
for row in range(2):
    print("tokens         ", ids[row])
    print("previous token ", np.where(np.arange(config.n) >= 1, targets[row, :, 0], -1), "(-1: not scored)")
    print("first token    ", targets[row, :, 1])
    print()

# %% [markdown]
# ## The model: attention and nothing else
#
# One layer of causal multi-head attention with a residual connection, and no MLP, so that whatever the
# model learns, its heads learned it. With the course's `split_heads` and `merge_heads` (notebook 01):
#
# ```
# x      = token[ids] + position             # (b, n, D)  embeddings of the token and of its position
# q      = split_heads(x @ w_q, h)           # (b, h, n, d)   and k, v the same way
# heads  = attention(q, k, v, causal)        # (b, h, n, d)
# y      = x + merge_heads(heads) @ w_o      # (b, n, D)   the residual stream
# logits = y @ unembed                       # (b, n, 2V): a guess at the previous token, one at the first
# ```
#
# The loss is the cross-entropy of both guesses, averaged over the positions t ≥ 1. A model that knows
# nothing guesses uniformly and scores ln V ≈ 2.77 on each. One head cannot do both jobs: its output is one
# weighted average of value vectors, and a blend of the previous token and the first token does not say
# which is which. Two heads can.
#
# Cutting the width into more heads costs nothing (notebook 01): the weights and the multiply-adds are the
# same for every h.

# %%
for h in (1, 2, 4):
    cut = dataclasses.replace(config, heads=h)
    params = training.init_params(cut, np.random.default_rng(0))
    count = sum(p.size for p in params.values())
    print(f"h = {h}, d = {cut.head_size:2d}: {count} parameters, "
          f"{hm.mha_cost(config.n, config.width, h):,} multiply-adds per sequence in the attention layer")


# %% [markdown]
# ## The gradient of attention
#
# Training needs the gradient of the loss with respect to every weight. Most of it is the matrix calculus
# of `y = x @ w` (the gradient of `x` is `dy @ w.T`, that of `w` is `x.T @ dy`). The interesting part is
# attention itself. For one head, with q `(n_q, d)`, k `(n_k, d)`, v `(n_k, d_v)` and a boolean mask:
#
# $$s = \frac{q k^\top}{\sqrt d},\qquad p = \operatorname{softmax}_{\text{masked}}(s)\ \text{(row by row)},\qquad
# \text{out} = p\, v .$$
#
# Given `dout`, the gradient of the loss with respect to `out`, go backwards one step at a time:
#
# * `out = p v`: so `dv = pᵀ dout` and `dp = dout vᵀ`.
# * `p = softmax(s)`, row by row. Each weight of a row depends on **every** score of that row: the
#   Jacobian of one row is `diag(p) − p pᵀ`, not just its diagonal. Multiplying it by the row of `dp` gives
#   `ds = p ⊙ (dp − Σⱼ pⱼ dpⱼ)`, where the sum runs over the row.
# * A forbidden entry has `p = 0`, so `ds = 0` there: no gradient flows through a masked entry. A row with
#   no allowed key has all-zero weights (the course's convention), so its query gets a zero gradient.
# * `s = q kᵀ / √d`: so `dq = ds k / √d` and `dk = dsᵀ q / √d`. The rows of `ds` are queries, its columns
#   keys; and the `1/√d` of the forward pass is in the gradient too.
#
# Here is the attention of notebook 00, given so you can use it (for example to check your gradients
# numerically); it gives all-zero weights to a row with no allowed key:

# %% nbgrader={"grade_id": "given_attention", "schema_version": 3, "locked": true, "solution": false, "grade": false}
def attention(q, k, v, mask=None):
    """softmax(q kᵀ / sqrt(d), masked) v over the last two axes (notebook 00)."""
    d = q.shape[-1]
    scores = q @ np.swapaxes(k, -1, -2) / d**0.5  # (..., n_q, n_k)
    allowed = np.ones(scores.shape, bool) if mask is None else np.broadcast_to(mask, scores.shape)
    top = np.max(np.where(allowed, scores, -np.inf), axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)  # a row with nothing allowed
    exps = np.where(allowed, np.exp(np.where(allowed, scores - top, 0.0)), 0.0)
    totals = exps.sum(axis=-1, keepdims=True)
    weights = np.divide(exps, totals, out=np.zeros_like(exps), where=totals > 0)
    return weights @ v  # (..., n_q, d_v)


# %% [markdown]
# ## Exercise 1: the backward pass of masked attention
#
# Write `attention_backward(q, k, v, mask, dout)` for one head: q `(n_q, d)`, k `(n_k, d)`, v `(n_k, d_v)`,
# `mask` a boolean `(n_q, n_k)` array (True = may attend) or `None`, `dout` `(n_q, d_v)`. Return the tuple
# `(dq, dk, dv)`, each with the shape of what it is the gradient of. A row of the mask with no allowed key
# gives zero gradients, without NaN and without a warning.
#
# The tests compare your gradients with the course's and with finite differences of the forward pass, on
# inputs of their own, with causal and random masks (some with a row and a column all False). They name
# five mistakes: the `1/√d` forgotten in the gradient, only the diagonal of the softmax Jacobian, gradient
# flowing through forbidden entries, the transposes of dq and dk swapped, NaN on a fully masked row.

# %% nbgrader={"grade_id": "attention_backward", "schema_version": 3, "locked": false, "solution": true, "grade": false}
def attention_backward(q, k, v, mask, dout):
    """Gradients (dq, dk, dv) of out = softmax(q kᵀ / sqrt(d), masked) v, given dout = dL/dout."""
    ### BEGIN SOLUTION
    scale = 1 / np.sqrt(q.shape[-1])
    scores = q @ k.T * scale  # (n_q, n_k)
    allowed = np.full(scores.shape, True) if mask is None else np.broadcast_to(mask, scores.shape)
    row_max = np.where(allowed, scores, -np.inf).max(axis=-1, keepdims=True)
    row_max = np.where(allowed.any(axis=-1, keepdims=True), row_max, 0.0)  # a row with no allowed key
    e = np.exp(np.where(allowed, scores - row_max, -np.inf))  # forbidden entries: exp(-inf) = 0
    total = e.sum(axis=-1, keepdims=True)
    p = e / np.where(total > 0, total, 1.0)  # (n_q, n_k) weights, 0 where forbidden and on empty rows
    dv = p.T @ dout  # (n_k, d_v)
    dp = dout @ v.T  # (n_q, n_k)
    ds = p * (dp - np.sum(p * dp, axis=-1, keepdims=True))  # the full Jacobian of each softmax row
    dq = ds @ k * scale  # (n_q, d)
    dk = ds.T @ q * scale  # (n_k, d)
    return dq, dk, dv
    ### END SOLUTION


# %% [markdown]
# Check it yourself the way the tests do: nudge one input by ±ε along a random direction δ and compare the
# change of `Σ out ⊙ dout` with `⟨gradient, δ⟩`. Here with a causal mask whose row 2 allows nothing:

# %%
rng = np.random.default_rng(3)
q, k, v, dout = rng.normal(size=(4, 5, 3))
mask = np.tril(np.ones((5, 5), bool))
mask[2] = False  # query 2 may attend to nothing
with hm.if_written("attention_backward"):
    grads = attention_backward(q, k, v, mask, dout)
    eps = 1e-6
    for name, grad, which in zip(("dq", "dk", "dv"), grads, range(3)):
        delta = rng.normal(size=grad.shape)
        up, down = [q, k, v], [q, k, v]
        up[which], down[which] = up[which] + eps * delta, down[which] - eps * delta
        numeric = (np.sum(attention(*up, mask) * dout) - np.sum(attention(*down, mask) * dout)) / (2 * eps)
        print(f"{name}: finite differences {numeric:+.8f}, yours {np.sum(grad * delta):+.8f}")
    print("dq of the fully masked query 2:", grads[0][2])

# %% nbgrader={"grade_id": "test_attention_backward", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 3}
from heads_and_masks.checks.learned_heads import check_attention_backward

check_attention_backward(attention_backward)
### BEGIN HIDDEN TESTS
check_attention_backward(attention_backward, seed=808, thorough=True)
### END HIDDEN TESTS

# %% nbgrader={"grade_id": "test_attention_backward_masks", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 2}
from heads_and_masks.checks.learned_heads import check_attention_backward_masks

check_attention_backward_masks(attention_backward)
### BEGIN HIDDEN TESTS
check_attention_backward_masks(attention_backward, seed=1808, thorough=True)
### END HIDDEN TESTS

# %% [markdown]
# ## The whole model's gradient, checked
#
# The course's `training.backward` runs the forward pass backwards: the output projection, the residual
# stream, `merge_heads` read backwards (which is `split_heads`), the attention backward of every head at
# once (the same formulas as yours, over the leading axes `(b, h)`), the three projections, and the
# embeddings. On a tiny model, every entry of every gradient against central finite differences:

# %%
tiny = training.Config(vocab=5, n=5, width=8, heads=2)
params = training.init_params(tiny, np.random.default_rng(1))
ids, targets = training.make_batch(np.random.default_rng(2), 3, tiny.n, tiny.vocab)
logits, cache = training.forward(params, ids, tiny)
loss, dlogits, _ = training.loss_and_dlogits(logits, targets)
grads = training.backward(params, cache, dlogits, tiny)
names = list(params)
numeric = training.numerical_gradients(
    lambda *arrays: training.loss_of(dict(zip(names, arrays)), ids, targets, tiny)[0], [params[n] for n in names])
for name, approx in zip(names, numeric):
    print(f"{name:9s} {str(params[name].shape):9s} largest difference from finite differences: "
          f"{np.abs(grads[name] - approx).max():.1e}")

# %% [markdown]
# ## Training
#
# Adam, 250 steps of 64 fresh sequences each, everything drawn from the seed. The loss is measured on 256
# held-out sequences the model never trains on:

# %%
run = training.train(config, seed=0, steps=250, batch=64, probe_batch=256)
loss, per_rule = run.evaluate()
print(f"held-out loss after {run.snapshot_steps[-1]} steps: previous token {per_rule[0]:.2g}, "
      f"first token {per_rule[1]:.2g} (knowing nothing: {training.chance_loss(config):.2f} each)")
again = training.train(config, seed=0, steps=30)  # the same seed, stopped early: the same first 30 steps
print("the same seed gives the same curve:", np.array_equal(again.losses, run.losses[:30]))
picture(loss_curves_figure(run))

# %% [markdown]
# ## The heads specialise
#
# The attention map of each head, averaged over the held-out sequences, at the start, when the loss has
# halved, and at the end (rows are queries, columns keys; dark is weight 1). At the start both heads
# spread their weight over the past. Training turns one into a **previous-token head** (the band just
# below the diagonal) and the other into a **first-token head** (column 0). In between, watch the order:
# in this run both heads first lean towards the first token, the easier rule (the same key for every
# query), and only then does one of them move to the previous token (the table after Exercise 2 gives
# the numbers, step by step):

# %%
picture(head_maps_figure(run))


# %% [markdown]
# ## Exercise 2: which head does which job, measured
#
# A picture is not a measurement. Write `rule_weights(weights)`: given the attention weights of a causal
# model, `(b, h, n, n)` (batch, heads, queries, keys), return an `(h, 2)` array whose row i says how much
# head i looks where each rule needs:
#
# * column 0: the mean weight on the **previous** position, `weights[:, i, t, t - 1]`;
# * column 1: the mean weight on the **first** position, `weights[:, i, t, 0]`;
#
# both averaged over the batch and over the queries t = 2, …, n − 1 (at t = 1 the previous token *is* the
# first token, and t = 0 has only itself: those rows cannot tell the rules apart). The tests use heads
# built by hand and random causal maps.

# %% nbgrader={"grade_id": "rule_weights", "schema_version": 3, "locked": false, "solution": true, "grade": false}
def rule_weights(weights):
    """(b, h, n, n) causal attention weights -> (h, 2): mean weight on key t - 1 and on key 0, over t = 2 … n - 1."""
    ### BEGIN SOLUTION
    n = weights.shape[-1]
    t = np.arange(2, n)
    previous = weights[:, :, t, t - 1].mean(axis=(0, 2))  # (h,)
    first = weights[:, :, t, 0].mean(axis=(0, 2))  # (h,)
    return np.stack([previous, first], axis=-1)  # (h, 2)
    ### END SOLUTION


# %% [markdown]
# Now read the trained model with it, snapshot by snapshot. `run.maps(i)` gives the attention weights of
# snapshot i on the held-out sequences:

# %%
with hm.if_written("rule_weights"):
    print("step   " + "   ".join(f"head {i}: t-1  first" for i in range(config.heads)))
    for index, step in enumerate(run.snapshot_steps):
        scores = rule_weights(run.maps(index))
        print(f"{step:4d}   " + "   ".join(f"      {prev:4.2f}  {first:4.2f}" for prev, first in scores))
    final = rule_weights(run.maps())
    for rule, column in zip(training.RULES, final.T):
        print(f"the {rule} head is head {np.argmax(column)} ({column.max():.3f} of its weight on that position)")

# %% nbgrader={"grade_id": "test_rule_weights", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 2}
from heads_and_masks.checks.learned_heads import check_rule_weights

check_rule_weights(rule_weights)
### BEGIN HIDDEN TESTS
check_rule_weights(rule_weights, seed=8, thorough=True)
### END HIDDEN TESTS

# %% [markdown]
# ## Ablation: the heads are not interchangeable
#
# Switch one head off (its output set to zero before the output projection) and measure the held-out loss
# of each rule again. This is **zero-ablation**. The other common choice, **mean-ablation**, replaces the
# head's output by its average over many inputs: the layers after it still receive the typical signal, so
# only what the head says about *this* input is removed, whereas zeroing can also hurt by feeding the next
# layer something it never saw in training. If the heads were copies of each other, losing one would barely matter. Instead each
# head carries one rule alone: without it, that rule is worse than guessing (the model stays confident,
# now about the wrong token), while the other rule does not notice.

# %%
table = training.ablation_table(run)  # rows: nothing removed, then each head removed
print(f"{'':18s}{'loss':>8s}{'previous token':>16s}{'first token':>13s}")
for row, (total, previous, first) in enumerate(table):
    label = "all heads" if row == 0 else f"without head {row - 1}"
    print(f"{label:18s}{total:8.3f}{previous:16.3f}{first:13.3f}")

# %% [markdown]
# ## One head of size D against h heads of size D / h
#
# Notebook 02 argued it; now train it. The same width D = 16, cut into 1, 2 or 4 heads: the same
# parameters and the same multiply-adds (above). Five seeds each, 80 steps each; the final held-out loss:

# %%
head_counts = training.compare_head_counts((1, 2, 4), seeds=range(5), steps=80)
for h, losses in head_counts.items():
    print(f"h = {h} (d = {config.width // h:2d}): median {np.median(losses):.2g}, "
          f"from {losses.min():.2g} to {losses.max():.2g} over {len(losses)} seeds")
picture(head_count_figure(head_counts, config.width))

# %% [markdown]
# One head stays far behind on every seed. It is not helpless: its weights depend on the tokens too, so a
# lopsided blend of the two positions carries a little of which is which, and it beats guessing. But two
# heads solve the task outright, and four heads of size 4 still do: this task needs two rules, and each
# rule needs only enough numbers to tell 16 tokens apart.
#
# ## The `(d h)` bug, revisited
#
# Notebook 01's bug splits the width as `(d h)`: head i gets the columns `i, i + h, i + 2h, …` instead of
# the block `i·d … (i+1)·d − 1`. Train models from scratch with that split, on the same five seeds as the
# comparison above, 250 steps each: they learn too, because the split only permutes the columns of `w_q`,
# `w_k` and `w_v`, which the model learns anyway. (A curve is not the same as the right split's on the same
# seed: the same random initial weights, cut differently, are another starting point, like another seed. So
# compare the spread over seeds, not one run against one run.)

# %%
wrong = dataclasses.replace(config, split="(d h)")
chance = training.chance_loss(config)
print(f"held-out loss after 250 steps (knowing nothing: {chance:.2f}), seeds {list(training.SEEDS)}:")
split_runs = {split: training.runs_over_seeds(dataclasses.replace(config, split=split)) for split in ("(h d)", "(d h)")}
for split, runs in split_runs.items():
    losses = training.final_losses(runs)
    print(f"{split} split: median {np.median(losses):.2g}, from {losses.min():.2g} to {losses.max():.2g}; "
          "each seed's loss over knowing nothing's: " + ", ".join(f"{x / chance:.1e}" for x in losses))
# a model trained with (d h), its columns put back in (h d) order, gives the same loss with the right split
scratch = split_runs["(d h)"][0]
d = config.head_size
order = np.arange(config.width).reshape(d, config.heads).T.ravel()  # column of (d h) for each (h d) column
permuted = {name: (p[:, order] if name in ("w_q", "w_k", "w_v") else p) for name, p in scratch.params.items()}
print(f"seed 0 trained with (d h): {scratch.evaluate()[0]:.2g}; its weights with the columns reordered, under "
      f"the right split: {scratch.evaluate(params=permuted, config=config)[0]:.2g}")

# %% [markdown]
# With either split every seed learns the task, each final loss a small fraction of knowing nothing; one seed
# can end slower than the others, which is why a single run would prove little either way.
#
# Now take the model trained with the right split and **load its weights** into code with the `(d h)`
# split. Nothing crashes and every shape fits, but each head now computes its queries, keys and values
# from columns that belong to both heads:

# %%
loss, per_rule = run.evaluate(config=wrong)
print(f"trained weights, right split: held-out loss {run.evaluate()[0]:.2g}")
print(f"the same weights, (d h) split: held-out loss {loss:.2f} (previous token {per_rule[0]:.2f}, "
      f"first token {per_rule[1]:.2f}; knowing nothing: {training.chance_loss(config):.2f})")

# %% [markdown]
# That is why the bug is silent in toy code, which trains its own weights, and fatal with real
# checkpoints, whose weights were trained with the `(h d)` split every library uses.
#
# ## The widget
#
# Move through the snapshots recorded during training: every head's attention map (averaged over the
# held-out sequences) and the loss curve follow. Switch heads off with the toggles: the readouts give the
# held-out loss of each rule at that step without them. Things to try: the first steps (when does each head
# pick its rule?), each head off at the end, both off.

# %%
widget = LearnedHeadsWidget(run)
widget

# %%
print(widget.readouts_text())

# %% [markdown]
# ### Written question (2 points): Why does one head not do both jobs?
#
# The same width D cut into one head or into two heads has the same parameters and the same multiply-adds, yet on
# this task one head stays far behind two. Why can one head not learn both rules, and what do the two heads do
# instead? Answer in two to four sentences in the cell below, in place of *YOUR ANSWER HERE*. In a class your
# teacher grades it by hand; on your own, compare with the model answer in `solutions/`.

# %% [markdown] nbgrader={"grade_id": "written_one_head", "schema_version": 3, "locked": false, "solution": true, "grade": true, "points": 2}
# ### BEGIN SOLUTION
# **Model answer.** A head's output at position t is one weighted average of value vectors. To serve both rules
# one head must put weight on the previous position and on position 0, and a blend of two tokens' values does not
# say which token was where: the unembedding cannot tell the previous token from the first one (a lopsided blend
# helps only a little). Two heads make two separate averages that end up in separate columns of the merged output:
# training turns one into a previous-token head (the band below the diagonal) and the other into a first-token
# head (column 0), and switching either off breaks its rule alone. Cutting the width is free (a reshape), so the
# second head costs nothing.
#
# **Rubric for the grader (2 points).** 1 point: one head = one weighted average per position; a blend of the two
# positions loses which token is which. 1 point: two heads = two separate averages (separate columns after
# merging): one previous-token head, one first-token head. Half a point for an answer that names the idea without
# the reason.
# ### END SOLUTION

# %% [markdown]
# ## Summary
#
# * The gradient of masked attention: `dv = pᵀ dout`, `ds = p ⊙ (dp − Σⱼ pⱼ dpⱼ)` with `dp = dout vᵀ`,
#   `dq = ds k / √d`, `dk = dsᵀ q / √d`. Masked entries have `p = 0` and pass no gradient; a row with no
#   allowed key gets zero gradients.
# * Trained on a task with two rules, two heads split the work: one becomes a previous-token head, the
#   other a first-token head, and the weight each puts on its rule's position measures it.
# * Zero-ablation shows the heads are not interchangeable: each carries one rule alone.
# * At the same cost, one head of size D cannot do what two heads of size D / 2 do.
# * The `(d h)` split only renumbers what a model learns from scratch, and breaks a model whose weights were
#   trained with the right split.
