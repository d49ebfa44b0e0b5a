"""The lesson's sentence and the queries and keys of its tokens (notebook 03 and its widget).

The queries and keys are not from a trained model: each token gets a fixed random query and key of
512 numbers (seeded, so every run shows the same picture), and a head of size d uses their first d
numbers. A dot product of d such numbers has a spread of about sqrt(d), which is exactly the growth
the division by sqrt(d) is there to cancel.
"""

from __future__ import annotations

import numpy as np

TOKENS = ("<s>", "cat", "sat", "on", "mat", ".")  # the lesson's "<s> кот сел на коврик ." token for token
MAX_HEAD_SIZE = 512
SEED = 2017  # the year of "Attention Is All You Need"

_generator = np.random.default_rng(SEED)
QUERIES = _generator.standard_normal((len(TOKENS), MAX_HEAD_SIZE))  # (n, 512), one row per token
KEYS = _generator.standard_normal((len(TOKENS), MAX_HEAD_SIZE))  # (n, 512)
del _generator


def sentence_queries_keys(head_size: int) -> tuple[np.ndarray, np.ndarray]:
    """The queries and keys of the sentence for a head of size d: the first d numbers of each."""
    if not 1 <= head_size <= MAX_HEAD_SIZE:
        raise ValueError(f"head size must lie in [1, {MAX_HEAD_SIZE}], got {head_size}")
    return QUERIES[:, :head_size], KEYS[:, :head_size]  # (n, d), (n, d)


def sentence_logits(head_size: int, *, scale_by_sqrt_d: bool = True, temperature: float = 1.0) -> np.ndarray:
    """What enters the softmax: q·k / (sqrt(d) · T), or q·k / T without the division.   -> (n, n)"""
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    q, k = sentence_queries_keys(head_size)
    scores = q @ k.T  # (n_q, n_k)
    if scale_by_sqrt_d:
        scores = scores / np.sqrt(head_size)
    return scores / temperature
