"""Batches of sequences of different lengths: padding, batched attention, and the padding bug.

A batch is rectangular, so shorter sequences are filled up to the longest one with *filler* (the
embedding of a padding token). The padding mask keeps every query from attending to filler keys.
Forget it and a sequence's output depends on how long its neighbours in the batch are: nothing
crashes, the numbers are just different, and short sequences suffer most.
"""

from __future__ import annotations

import numpy as np

from ._guard import reference
from ._validate import float_array, whole_number
from .attention import attention, masked_softmax
from .masks import attention_mask, causal_mask, sliding_window_mask


def pad_batch(sequences, n=None, filler=0.0):
    """Stack sequences of shape (n_i, d) into one (b, n, d) batch, filling the tail of each with ``filler``.

    ``filler`` is a number or a (d,) vector (a padding token's embedding). Returns ``(batch, lengths)``.
    """
    sequences = [float_array(f"sequence {i}", s, ndim=2) for i, s in enumerate(sequences)]
    if not sequences:
        raise ValueError("pad_batch needs at least one sequence")
    widths = {s.shape[1] for s in sequences}
    if len(widths) != 1:
        raise ValueError(f"all sequences must have the same width d, got {sorted(widths)}")
    lengths = np.array([s.shape[0] for s in sequences])
    n = int(lengths.max()) if n is None else whole_number("n", n)
    if lengths.max() > n:
        raise ValueError(f"n = {n} is shorter than the longest sequence ({lengths.max()})")
    batch = np.empty((len(sequences), n, widths.pop()))  # (b, n, d)
    batch[:] = filler
    for row, sequence in zip(batch, sequences):
        row[: len(sequence)] = sequence
    return batch, lengths


def _check_batch(q, k, v, lengths):
    q = float_array("q", q, ndim=3)
    k = float_array("k", k, ndim=3)
    v = float_array("v", v, ndim=3)
    if q.shape != k.shape or v.shape[:2] != q.shape[:2]:
        raise ValueError(
            f"q, k must be (b, n, d) and v (b, n, d_v) with the same b and n: got {q.shape}, {k.shape}, {v.shape}"
        )
    if len(np.atleast_1d(lengths)) != q.shape[0]:
        raise ValueError(f"lengths must give one length per sequence (b = {q.shape[0]}), got {lengths!r}")
    return q, k, v


@reference
def batched_attention(q, k, v, lengths, causal=True, window=None):
    """Single-head attention over a padded batch, each sequence seeing only its own real tokens.

    q, k: (b, n, d)   v: (b, n, d_v)   lengths: (b,)   returns (b, n, d_v)
    Row i of sequence j equals what sequence j alone (its first lengths[j] tokens) gives for row i.
    """
    q, k, v = _check_batch(q, k, v, lengths)
    n = q.shape[1]
    mask = attention_mask(lengths, n, causal=causal, window=window)  # (b, 1, n, n)
    return attention(q, k, v, mask[:, 0])  # the head axis dropped: (b, n, n) against (b, n, n) scores


def unmasked_batched_attention(q, k, v, causal=True, window=None):
    """The buggy version: the same batch without the padding mask (only causal / window)."""
    n = np.shape(q)[1]
    allowed = np.ones((n, n), dtype=bool)
    if causal:
        allowed &= causal_mask(n)
    if window is not None:
        allowed &= sliding_window_mask(n, window)
    return attention(q, k, v, allowed)


def filler_weight(q, k, lengths, causal=False):
    """(b, n): the share of each query's attention that lands on filler keys when the mask is forgotten."""
    q, k, _ = _check_batch(q, k, k, lengths)
    n = q.shape[1]
    allowed = causal_mask(n) if causal else np.ones((n, n), dtype=bool)
    weights = masked_softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]), allowed)  # (b, n, n)
    is_filler = np.arange(n)[None, :] >= np.asarray(lengths)[:, None]  # (b, n_k)
    return np.sum(weights * is_filler[:, None, :], axis=-1)  # (b, n_q)


class ToyEncoder:
    """One attention layer with fixed random projections, to watch padding matter.

    Tokens are random vectors of width ``d``; the filler is one fixed vector (the embedding of a
    padding token), the same in every batch. ``attend(batch, lengths, use_mask)`` projects the batch
    to q, k, v and runs bidirectional (encoder-style) attention, with or without the padding mask.
    """

    def __init__(self, d=16, seed=0):
        rng = np.random.default_rng(seed)
        self.d = d
        self.w_q, self.w_k, self.w_v = rng.normal(size=(3, d, d)) / np.sqrt(d)  # each (d, d)
        self.pad_token = rng.normal(size=d)  # the filler's embedding
        self._rng = rng

    def tokens(self, length):
        """A random sequence of ``length`` token embeddings, (length, d)."""
        return self._rng.normal(size=(length, self.d))

    def attend(self, sequences, use_mask=True, causal=False):
        """Outputs for a list of sequences processed as one padded batch: a list of (n_i, d) arrays."""
        batch, lengths = pad_batch(sequences, filler=self.pad_token)  # (b, n, d)
        q, k, v = batch @ self.w_q, batch @ self.w_k, batch @ self.w_v  # each (b, n, d)
        if use_mask:
            out = batched_attention(q, k, v, lengths, causal=causal)
        else:
            out = unmasked_batched_attention(q, k, v, causal=causal)
        return [out[i, :length] for i, length in enumerate(lengths)]  # real rows only

    def alone(self, sequence, causal=False):
        """The output of one sequence processed by itself (no padding at all)."""
        return self.attend([sequence], use_mask=True, causal=causal)[0]


def padding_damage(n=32, d=16, trials=20, seed=0):
    """How much forgetting the padding mask hurts, for each real length 1..n in a batch padded to n.

    Returns ``(lengths, filler_share, output_error)``: for each length L, averaged over ``trials`` random
    sequences, the share of attention spent on filler, and the error of the outputs
    ``|out_bug - out_true|`` measured in units of a typical value vector's length (the mean ``|v_j|``).
    """
    encoder = ToyEncoder(d=d, seed=seed)
    lengths = np.arange(1, n + 1)
    share = np.zeros(n)
    error = np.zeros(n)
    for index, length in enumerate(lengths):
        for _ in range(trials):
            sequence = encoder.tokens(length)
            longest = encoder.tokens(n)  # a neighbour that sets the batch length to n
            true = encoder.alone(sequence)
            buggy = encoder.attend([sequence, longest], use_mask=False)[0]
            typical_value = np.linalg.norm(sequence @ encoder.w_v, axis=-1).mean()
            error[index] += np.linalg.norm(buggy - true, axis=-1).mean() / typical_value / trials
            batch, batch_lengths = pad_batch([sequence, longest], filler=encoder.pad_token)
            weights_on_filler = filler_weight(batch @ encoder.w_q, batch @ encoder.w_k, batch_lengths)
            share[index] += weights_on_filler[0, :length].mean() / trials
    return lengths, share, error
