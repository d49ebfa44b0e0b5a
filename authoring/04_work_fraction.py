# %% [markdown]
# # 04 · How much work the causal mask saves, and how to get it for real
#
# A causal mask forbids every key that comes after its query, so roughly half of the n × n score
# matrix is never used. Does that make causal attention twice as cheap? Only if the implementation
# never computes the forbidden half. The usual first implementation, "compute every score, then mask",
# computes all of them and throws half away: the mask saves nothing.
#
# In this notebook you will
#
# 1. count exactly how many scores a causal query/key pair uses, and what share of n² that is;
# 2. see why cutting the matrix into **tiles** (the idea behind FlashAttention's kernels) lets an
#    implementation skip the forbidden half without ever building the n × n matrix, and what the tile
#    size costs;
# 3. write such a tiled causal attention yourself, with a running (online) softmax, counting the work
#    it really does;
# 4. measure it, time and memory for growing n, against full-then-mask and against the honest yardstick:
#    plain full attention with no mask at all.

# %%
import numpy as np

import heads_and_masks as hm
from heads_and_masks.benchmarks import causal_attention_benchmark, format_benchmark, time_by_tile_size
from heads_and_masks.pictures.work_fraction import (
    benchmark_figure, picture, tile_size_figure, used_fraction_figure,
)
from heads_and_masks.widgets.work_fraction import TileGridWidget

np.set_printoptions(precision=3, suppress=True)


# %% [markdown]
# ## 1. Counting the scores the mask keeps
#
# Number the tokens 0, 1, …, n − 1. Query `i` may attend to the keys `0, 1, …, i`: itself and everything
# before it. That is `i + 1` keys. Adding over all queries,
#
# $$1 + 2 + \dots + n = \frac{n(n+1)}{2}$$
#
# entries of the n × n matrix are used. (Pair the first term with the last, the second with the one
# before last: n/2 pairs, each summing to n + 1.) As a share of all n² entries:
#
# $$\frac{n(n+1)/2}{n^2} = \frac{n+1}{2n} = \frac12 + \frac1{2n}.$$
#
# The ½ is the lower triangle; the extra 1/(2n) is the **diagonal**, n entries that are half inside the
# triangle's area. For short sequences the diagonal matters, for long ones it fades (the table below has the numbers),
# and the share falls towards one half, always from above.

# %% [markdown]
# ### Exercise 1: `causal_used_entries(n)`
#
# Return the number of score entries a causal mask allows for a sequence of length `n`, as a Python
# `int` (use `//` if you divide: `/` makes a float). `n = 0` has no entries.
#
# It must work for the contexts of today's models: the tests go up to `n = 1,000,000`. There the n × n
# mask has a million million entries (close to a terabyte even as booleans, and hours of loop), so count
# with a formula, not by building or walking through the matrix.

# %% nbgrader={"grade_id": "causal_used_entries", "schema_version": 3, "locked": false, "solution": true, "grade": false}
def causal_used_entries(n):
    """Entries of the n × n score matrix where key <= query: n(n+1)/2, an int."""
    ### BEGIN SOLUTION
    return n * (n + 1) // 2  # 1 + 2 + ... + n
    ### END SOLUTION


# %% nbgrader={"grade_id": "test_causal_used_entries", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 1}
from heads_and_masks.checks.work_fraction import check_causal_used_entries

check_causal_used_entries(causal_used_entries)
### BEGIN HIDDEN TESTS
check_causal_used_entries(causal_used_entries, thorough=True)
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 2: `causal_used_fraction(n)`
#
# Return the share of the n² entries that the causal mask allows, (n + 1)/(2n), as a float, for `n ≥ 1`.

# %% nbgrader={"grade_id": "causal_used_fraction", "schema_version": 3, "locked": false, "solution": true, "grade": false}
def causal_used_fraction(n):
    """The used share of the n² entries: (n+1)/(2n)."""
    ### BEGIN SOLUTION
    return (n + 1) / (2 * n)
    ### END SOLUTION


# %% nbgrader={"grade_id": "test_causal_used_fraction", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 1}
from heads_and_masks.checks.work_fraction import check_causal_used_fraction

check_causal_used_fraction(causal_used_fraction)
### BEGIN HIDDEN TESTS
check_causal_used_fraction(causal_used_fraction, thorough=True)
### END HIDDEN TESTS

# %% [markdown]
# The lesson's table, computed (by the course's implementation, so it prints even before you solve the
# exercises), and a check that the formula agrees with simply counting the True entries of a causal mask:

# %%
print(f"{'n':>6} {'used':>9} {'of n²':>11} {'share':>8}")
for n in (4, 128, 1024):
    used, total = hm.causal_used_entries(n), n * n
    assert used == np.count_nonzero(hm.causal_mask(n))  # the formula is the count
    print(f"{n:>6,} {used:>9,} {total:>11,} {hm.causal_used_fraction(n):>8.2%}")

# %% [markdown]
# The share against n: it starts at 1 (one token sees itself, one entry of one) and sinks to ½.

# %%
picture(used_fraction_figure(np.unique(np.geomspace(1, 8192, 40).round().astype(int))))

# %% [markdown]
# ## 2. Full-then-mask saves nothing
#
# The straightforward causal attention computes all scores `Q Kᵀ / √d`, an n × n matrix, sets the
# forbidden ones to −∞, and takes the softmax. The mask changes *which* numbers come out, not *how many*
# were computed: all n² dot products are done (each costing d multiply-adds), the exponentials are taken
# over the whole matrix, and the n × n matrix sits in memory, 8 bytes per entry in float64. The
# course's `full_causal_attention` is exactly that, and it reports n² computed entries:

# %%
rng = np.random.default_rng(0)
n, d = 1024, 64
q, k, v = (rng.standard_normal((n, d)) for _ in range(3))

full_out, full_computed = hm.full_causal_attention(q, k, v)
print(f"n = {n}: full-then-mask computed {full_computed:,} scores; the mask needs {hm.causal_used_entries(n):,} "
      f"({hm.causal_used_fraction(n):.2%})")
print(f"the n × n float64 score matrix alone is {n * n * 8 / 2**20:.0f} MiB")

# %% [markdown]
# To get the saving, the forbidden scores must never be computed at all. Computing "only the lower
# triangle" entry by entry would do it, but one dot product at a time is hopelessly slow: fast hardware
# (and numpy) wants whole matrix products. The answer is to cut the matrix into tiles.

# %% [markdown]
# ## 3. Tiles: skip what lies above the diagonal
#
# Cut the queries into groups of `B` consecutive rows and the keys into groups of `B` consecutive
# columns. The score matrix becomes a grid of tiles, each a small `B × B` matrix product
# `Q_tile K_tileᵀ`. Relative to the causal diagonal a tile is one of three kinds:
#
# * **above the diagonal**: every key in it comes after every query in it. Every score would be masked,
#   so the tile is **skipped**: never computed, never stored.
# * **on the diagonal**: some keys are allowed, some are not. The tile is computed whole, then masked
#   inside (its upper triangle set to −∞). Those masked entries are the only wasted work.
# * **below the diagonal**: every key comes before every query: computed, nothing to mask.
#
# A tile is computed exactly when *some key in it is ≤ some query in it*. When `n` is not a multiple of
# `B`, the last row and column of tiles are simply narrower.
#
# This is how FlashAttention (Dao et al., 2022) gets the causal saving on GPUs: its kernels walk over
# tiles held in fast on-chip memory and never launch the work for tiles above the diagonal.
#
# **The widget.** Pick `n` and the tile size `B`. Each small square is one score entry; the colour key
# beside the picture says what the kernel does with it: grey entries sit in skipped tiles, green ones
# in tiles computed in full, and in the diagonal tiles blue entries are used while orange ones are
# computed and then thrown away. The right panel is the share of n² computed for every tile size at
# this `n`, against the ideal (n+1)/(2n). Try `B = 1` (each tile one entry: exactly the ideal), `B = n`
# (one tile: everything, which is full-then-mask again), and an `n` that `B` does not divide.

# %%
tile_widget = TileGridWidget(n=48, block=8)
tile_widget

# %% [markdown]
# **How close do tiles get?** With `n_b = n / B` tiles a side, the computed tiles are a lower triangle
# of tiles, diagonal included: `n_b(n_b + 1)/2` of the `n_b²`. It is the same count as before, one level
# up, so the computed share is
#
# $$\frac{n_b + 1}{2 n_b} = \frac{n + B}{2n},$$
#
# and the waste over the ideal is `n(B − 1)/2` entries: the `n_b` diagonal tiles each throw away their
# `B(B − 1)/2` masked entries. Smaller tiles, less waste. The table checks this formula against a tile
# by tile count:

# %%
n = 1024
print(f"n = {n}, ideal share (n+1)/(2n) = {hm.causal_used_fraction(n):.4%}")
print(f"{'B':>5} {'tiles a side':>13} {'tiles computed':>15} {'computed share':>15} {'(n_b+1)/(2n_b)':>15}")
for block in (1024, 512, 256, 128, 64, 16, 4, 1):
    tiles_a_side = n // block
    kinds = hm.tile_kinds(n, block)  # (n_b, n_b): 0 skipped, 1 diagonal, 2 below
    share = hm.tiled_computed_entries(n, block) / n**2
    assert np.isclose(share, (tiles_a_side + 1) / (2 * tiles_a_side))
    assert hm.tiled_computed_entries(n, block) - hm.causal_used_entries(n) == n * (block - 1) // 2  # the waste
    print(f"{block:>5,} {tiles_a_side:>13,} {np.count_nonzero(kinds):>15,} {share:>15.4%} "
          f"{(tiles_a_side + 1) / (2 * tiles_a_side):>15.4%}")

# %% [markdown]
# **What small tiles cost.** Why not always `B = 1`? Because every tile is work that must be organised:
# on a GPU, one unit of scheduled work that loads its tile from slow memory; in numpy, matrix products
# of `B` rows and trips through the Python loop. The course's kernel (section 5 says how it is built)
# multiplies a strip of queries, a few tiles tall where memory allows, by many key tiles at once; but at a
# small n a strip is a single tile, a thin strip is still a thin matrix product, and a product of 8 rows
# uses the hardware far worse than one of 128. Below, the
# course's tiled kernel is timed at one `n` for several tile sizes: the work falls towards the ideal as
# tiles shrink, the time does not. At the other end, one tile of `n × n` is full-then-mask again: all the
# work, and the whole matrix in memory. In between lies the sweet spot; GPU kernels pick their tiles to
# fit fast on-chip memory, and tiles of 64 or 128 rows are common.

# %%
n = 512
seconds = time_by_tile_size(n, blocks=(8, 16, 32, 64, 128, 256, 512), repeats=3)
picture(tile_size_figure(n, seconds))

# %% [markdown]
# ## 4. Never building the n × n matrix: the online softmax
#
# Skipping tiles saves arithmetic. To also save *memory*, the kernel must never hold a whole row of
# scores: softmax needs every score of the row (for the maximum and for the sum), yet the tiles of a
# row arrive one at a time. The way out is to keep, for each query, three running quantities while its
# key tiles go by:
#
# * `m`, the largest score seen so far;
# * `l`, the sum of `exp(score − m)` over the scores seen so far;
# * `acc`, the sum of `exp(score − m) · value` over the keys seen so far (an unnormalised output).
#
# When a new tile brings a larger maximum `m_new`, everything summed so far was measured against the
# old `m`; multiplying `l` and `acc` by `exp(m − m_new)` re-expresses it against `m_new` (that factor is
# ≤ 1, so nothing overflows). Then the tile's own `exp(score − m_new)` terms are added. After the last
# tile, `acc / l` is exactly the softmax-weighted average of the values. Memory per query strip: one tile
# of scores plus `m`, `l` and `acc`, that is O(B·n) in all instead of O(n²).
#
# Here it is on a single row of 12 scores arriving in chunks of 4, next to the ordinary softmax:

# %%
rng = np.random.default_rng(1)
scores = rng.normal(size=12) * 3  # one query's scores against 12 keys
values = rng.normal(size=(12, 2))  # the keys' values

m, l, acc = -np.inf, 0.0, np.zeros(2)
for start in range(0, 12, 4):
    chunk = scores[start:start + 4]
    m_new = max(m, chunk.max())
    l = l * np.exp(m - m_new) + np.exp(chunk - m_new).sum()  # rescale the old sum, add the new terms
    acc = acc * np.exp(m - m_new) + np.exp(chunk - m_new) @ values[start:start + 4]
    m = m_new
    print(f"after keys {start:>2}-{start + 3:<2}: running max {m:6.3f}, running sum {l:7.4f}")

weights = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()  # the ordinary softmax
print("online:", acc / l, " ordinary:", weights @ values, " equal:", np.allclose(acc / l, weights @ values))


# %% [markdown]
# ### Exercise 3: `blocked_causal_attention(q, k, v, block)`
#
# Write causal attention for one head that works tile by tile:
#
# * `q`, `k` have shape `(n, d)`, `v` has shape `(n, d_v)`; scores are `q kᵀ / √d`; query `i` may attend to
#   keys `0 … i`;
# * tiles are `block` consecutive queries × `block` consecutive keys (the last ones narrower when `block`
#   does not divide `n`); a tile is computed **only if some key in it is ≤ some query in it**, and the
#   diagonal tiles are masked inside;
# * never build an n × n array: keep one tile of scores at a time with a running softmax (as above), or
#   one strip of `block` queries against the keys up to the end of their diagonal tile;
# * return `(out, computed)`: `out` the attention output `(n, d_v)` (the same numbers as full causal
#   attention), and `computed` the number of score entries your code actually computed, an `int`: the
#   sum of the sizes of the tiles it computed, diagonal tiles counted whole;
# * raise `ValueError` if `block < 1` or if `q`, `k`, `v` do not have the same number of rows.
#
# The tests compare `out` and `computed` with the course's implementation for tilings where `block`
# divides `n` and where it does not, for tiny and for very large scores; and they measure the peak memory of
# one call of your function at an n where a single n × n float64 matrix would take tens of MiB, checking the
# output and the count of that same call (the test prints both figures). The memory allowed grows with
# n × block: a few strips of block × n scores. Here `tracemalloc` measures it; when your instructor grades,
# the grader reads your kernel's memory from outside it, for every call alike, and also calls your function at
# n = 16384 in a kernel that cannot hold one n × n matrix (2 GiB in float64), nor every causal score at once even in
# float32 (512 MiB): a tiled kernel needs a few tens of MiB there.

# %% nbgrader={"grade_id": "blocked_causal_attention", "schema_version": 3, "locked": false, "solution": true, "grade": false}
def blocked_causal_attention(q, k, v, block):
    """Causal attention over tiles of `block` queries × `block` keys. Returns (out, computed)."""
    ### BEGIN SOLUTION
    if block < 1:
        raise ValueError(f"block must be at least 1, got {block}")
    if not q.shape[0] == k.shape[0] == v.shape[0]:
        raise ValueError(f"q, k and v must have the same number of rows: got {q.shape}, {k.shape}, {v.shape}")
    n, d = q.shape
    out = np.empty((n, v.shape[1]))
    computed = 0
    for q_start in range(0, n, block):
        q_end = min(q_start + block, n)
        q_tile = q[q_start:q_end] / np.sqrt(d)  # (B, d)
        query_pos = np.arange(q_start, q_end)[:, None]  # (B, 1)
        running_max = np.full((q_end - q_start, 1), -np.inf)  # m
        running_sum = np.zeros((q_end - q_start, 1))  # l
        acc = np.zeros((q_end - q_start, v.shape[1]))  # sum of exp(score - m) * value
        for k_start in range(0, q_end, block):  # key tiles after the last query: skipped
            k_end = min(k_start + block, n)
            scores = q_tile @ k[k_start:k_end].T  # (B, B)
            computed += scores.size
            key_pos = np.arange(k_start, k_end)[None, :]  # (1, B)
            scores = np.where(key_pos <= query_pos, scores, -np.inf)  # masks only inside diagonal tiles
            new_max = np.maximum(running_max, scores.max(axis=1, keepdims=True))
            rescale = np.exp(running_max - new_max)  # re-express the old sums against the new maximum
            probs = np.exp(scores - new_max)  # (B, B), 0 where masked
            running_sum = running_sum * rescale + probs.sum(axis=1, keepdims=True)
            acc = acc * rescale + probs @ v[k_start:k_end]
            running_max = new_max
        out[q_start:q_end] = acc / running_sum
    return out, computed
    ### END SOLUTION


# %% [markdown]
# Try it before the tests: on a small example it must agree with full-then-mask, and its count must be
# the computed share the widget shows for the same `n` and `B`.

# %%
rng = np.random.default_rng(2)
q, k, v = (rng.standard_normal((10, 4)) for _ in range(3))
with hm.if_written("blocked_causal_attention"):
    out, computed = blocked_causal_attention(q, k, v, block=4)
    print("same output as full-then-mask:", np.allclose(out, hm.full_causal_attention(q, k, v)[0]))
    print(f"computed {computed} of {10 * 10} entries; the ideal is {hm.causal_used_entries(10)}")

# %% nbgrader={"grade_id": "test_blocked_causal_attention", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 3}
from heads_and_masks.checks.work_fraction import check_blocked_causal_attention

check_blocked_causal_attention(blocked_causal_attention)
### BEGIN HIDDEN TESTS
check_blocked_causal_attention(blocked_causal_attention, seed=104729, thorough=True)
### END HIDDEN TESTS

# %% nbgrader={"grade_id": "test_blocked_causal_attention_count", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 2}
from heads_and_masks.checks.work_fraction import check_blocked_causal_attention_count

check_blocked_causal_attention_count(blocked_causal_attention)
### BEGIN HIDDEN TESTS
check_blocked_causal_attention_count(blocked_causal_attention, seed=1299709, thorough=True, n=16384)
### END HIDDEN TESTS

# %% nbgrader={"grade_id": "test_blocked_causal_attention_memory", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 1}
from heads_and_masks.checks.work_fraction import check_blocked_causal_attention_memory

check_blocked_causal_attention_memory(blocked_causal_attention)
### BEGIN HIDDEN TESTS
check_blocked_causal_attention_memory(blocked_causal_attention, n=16384, d=8, block=80, seed=17)
### END HIDDEN TESTS

# %% nbgrader={"grade_id": "test_blocked_causal_attention_errors", "schema_version": 3, "locked": true, "solution": false, "grade": true, "points": 1}
from heads_and_masks.checks.work_fraction import check_blocked_causal_attention_errors

check_blocked_causal_attention_errors(blocked_causal_attention)

# %% [markdown]
# ## 5. Measured: what the tiled kernel really saves
#
# Your kernel and the course's compute the same tiles. The course's `blocked_causal_attention` arranges
# the work for numpy, which is fast at large matrix products and slow at anything done one small piece at a
# time from Python:
#
# * it takes a strip of several query tiles at once (up to about 512 queries, and never more scores at a
#   time than one row of tiles, `B` × n) and multiplies it by all the key tiles left of the strip, which
#   are full for every query in it, up to about 1024 keys in one matrix product; then each query tile of
#   the strip takes the strip's own keys up to its diagonal tile. The same tiles (so the same `computed`),
#   in far fewer, larger steps: a tall product uses the processor better than a thin one;
# * it updates the running softmax once per such product, on whole blocks of scores, working in place
#   (`exp` writes over the scores it was given; nothing n × n, nothing new per tile);
# * it keeps the inputs' float type: float32 stays float32, which halves the memory traffic.
#
# Beating full-then-mask proves little: that version also masks all n² entries and pushes several n × n
# arrays through memory, so almost anything beats it. The honest yardstick is **plain attention with no
# mask at all**, written as well as numpy allows, in the same float type: `unmasked_full_attention`
# does the arithmetic of attention once for every query and key, nothing more, with every trick the tiled
# kernel has: the scale folded into q (a pass over n × d numbers, not n²), `exp` or `exp2` (which is
# faster depends on the processor), the whole matrix at once or strips of queries whose scores stay in the
# processor's cache. The benchmark times each of these ways and takes the **fastest** as the yardstick.
#
# Two ceilings bound what skipping tiles can gain over it, and they are not the same:
#
# * **this tiling's ceiling**, n² over the entries it computes: with n_b tiles a side it computes
#   n_b(n_b + 1)/2 whole tiles, the diagonal ones included, so the ceiling is 2 n_b / (n_b + 1);
# * **any causal kernel's ceiling**, 2n/(n+1): only the n(n+1)/2 used entries computed, as if the diagonal
#   tiles cost nothing.
#
# A kernel of this tiling can only approach the first.
#
# `causal_attention_benchmark` runs the three side by side on the same inputs (alternating, so that all
# see the same machine) and keeps the fastest of a few runs of each (other work on the machine only ever
# adds time, so the fastest run is the closest to what a version itself costs). It also times a plain matrix product of
# the same float type: the rate this machine reaches at its best, against which the kernel's rate of useful
# arithmetic (GFLOP/s of the causal work, 2(d + d_v) operations per used entry) is compared. Peak extra
# memory is measured with `tracemalloc`. The tile size is B = 128, d = 64, in float32 (what models run
# in) and float64, and numpy's BLAS gets one thread for all: many matrix products spread over several
# threads spend much of their time synchronising, which says nothing about the work each version does.

# %%
rows = [row for dtype in ("float32", "float64")
        for row in causal_attention_benchmark(sizes=(256, 512, 1024, 2048), d=64, block=128, repeats=3, dtype=dtype)]
print(format_benchmark(rows))
assert all(r["max_abs_difference"] < (1e-5 if r["dtype"] == "float32" else 1e-9) for r in rows)  # same outputs
picture(benchmark_figure(rows))

# %% [markdown]
# The same, in words, at the largest n measured here:

# %%
for r in rows:
    if r["n"] == max(row["n"] for row in rows):
        print(f"{r['dtype']}, n = {r['n']}: tiled {r['tiled_seconds'] * 1000:.1f} ms, "
              f"{r['speedup_over_unmasked']:.2f}× faster than unmasked full attention (its fastest way here: "
              f"{r['unmasked_way']}), against this tiling's ceiling of {r['tiling_ceiling']:.3f}× "
              f"(tiles computed {r['computed_fraction']:.1%} of n²) and any causal kernel's 2n/(n+1) = "
              f"{r['theoretical_speedup']:.3f}×; {r['speedup']:.1f}× faster than full-then-mask; "
              f"{r['tiled_gflops']:.0f} GFLOP/s of causal work, {r['roofline_fraction']:.0%} of a plain matrix "
              f"product's {r['matmul_gflops']:.0f}")

# %% [markdown]
# How to read it:
#
# * **Work.** The tiled kernel computes the share in the *computed* column, which approaches (n+1)/(2n)
#   as n grows (the tile is fixed, so n_b = n/128 grows). The unmasked version and full-then-mask always
#   compute 100%. By arithmetic alone the saving is the *ceiling* column, n² / computed = 2 n_b/(n_b + 1),
#   which tends to 2n/(n+1), just under 2×, as the tiles shrink against n.
# * **Against unmasked full attention**, the honest comparison: for small n the tiled kernel gains little or
#   is even slower (tiles of 128 then cover much of the matrix, see the *computed* column, and every strip
#   has fixed costs); as n grows, its speedup climbs towards its tiling's ceiling. What is left below it is
#   the online softmax's own cost: rescaling the running sums and the accumulator for every group of keys,
#   work the yardstick never does.
# * **Against full-then-mask** the speedup is far larger than 2n/(n+1), and most of it is not the tiles'
#   merit: it is the cost of masking and allocating n × n arrays, which a well-written full attention does
#   not pay either.
# * **Rate.** Most of the kernel's time goes into matrix products, so its rate of useful arithmetic is a
#   good share of a plain matrix product's (the *of matmul* column); the rest goes to `exp`, maxima and
#   sums over the scores, and to the wasted halves of the diagonal tiles.
# * **Memory.** Full-then-mask's peak grows like n² (a few n × n arrays at once); the tiled kernel's like
#   the output plus one block of scores, tiny by comparison. That is the part of FlashAttention that matters
#   most on GPUs: at long contexts the n × n matrix does not fit at all.
#
# Timings vary from run to run, especially on a busy machine: run the cell again and compare. `make bench`
# (in a terminal) runs the same measurement up to n = 4096, and where PyTorch is installed compares the
# tiled kernel with PyTorch's own causal `scaled_dot_product_attention` as well.

# %% [markdown]
# ### Written question (2 points): Why does full-then-mask save nothing?
#
# The causal mask forbids about half the scores. Why does computing all the scores and then masking them save no
# work, and what does the tiled kernel do instead? Answer in two to four sentences in the cell below, in place of
# *YOUR ANSWER HERE*. In a class your teacher grades it by hand; on your own, compare with the model answer in
# `solutions/`.

# %% [markdown] nbgrader={"grade_id": "written_full_then_mask", "schema_version": 3, "locked": false, "solution": true, "grade": true, "points": 2}
# ### BEGIN SOLUTION
# **Model answer.** Full-then-mask computes all n² scores (and their exponentials) and only then replaces the
# forbidden half with −∞: the work is already done, so it costs what attention without a mask costs. Work is saved
# only if the forbidden scores are never computed: the tiled kernel computes only the tiles on or below the
# diagonal, skips the tiles above it, and masks inside the diagonal tiles, about n(n+1)/2 of the n² entries (with
# an online softmax it never holds the n × n matrix either).
#
# **Rubric for the grader (2 points).** 1 point: masking after computing saves nothing: all n² scores were
# computed. 1 point: skip the tiles above the diagonal (compute only on and below it, mask inside the diagonal
# tiles). Half a point for an answer that names the idea without the reason.
# ### END SOLUTION

# %% [markdown]
# ## Summary
#
# * A causal mask allows n(n+1)/2 of the n² scores: a share (n+1)/(2n) that falls to ½ from above.
# * Computing everything and masking afterwards gets none of that saving; only not computing the
#   forbidden scores does.
# * A tiled kernel skips the tiles above the diagonal, masks inside the diagonal tiles and keeps a
#   running softmax: it computes a share (n_b+1)/(2n_b), close to ideal for small tiles, and never
#   holds the n × n matrix. Very small tiles waste less work but cost more steps.
# * Measured honestly, against unmasked full attention in the same float type, a well-built tiled kernel
#   approaches the 2n/(n+1) that the arithmetic promises as n grows; against full-then-mask it looks far
#   better than that, for reasons that have nothing to do with the mask.
# * Next, notebook 05: other masks (padding, sliding windows, block-sparse), whose skipped tiles can be
#   skipped the same way.
