"""Numbers that describe one attention matrix: how spread its scores are, how peaked its rows are,
and how much gradient can still flow through its softmax.

These are the readouts of the lesson's widget (notebook 03). Each is defined on the *logits*, the
numbers that actually enter the softmax: ``q·k / (sqrt(d) · T)`` (or ``q·k / T`` when the division
by sqrt(d) is switched off), and on the weights the masked softmax makes of them.
"""

from __future__ import annotations

import numpy as np

from ._validate import bool_mask, float_array
from .attention import row_entropy_bits
from .i18n import N_


def score_spread(logits, mask) -> float:
    """The range of the allowed logits, largest minus smallest (forbidden entries do not exist for the softmax).

    A range, not a standard deviation: that is the kind of number the lesson's widget shows (its spread of
    4.38 goes with a row entropy of 1.209 bits, which a standard deviation of 4.38 would drive far lower).
    """
    logits = float_array("logits", logits, min_ndim=2)
    allowed = np.broadcast_to(bool_mask("mask", mask), logits.shape)
    return float(np.ptp(logits[allowed])) if allowed.any() else 0.0


def softmax_jacobian(weights) -> np.ndarray:
    """d weights / d logits of each row: ``diag(p) - p pᵀ``.   (..., n_k) -> (..., n_k, n_k)

    Forbidden keys (weight 0) get zero rows and columns: moving their logit changes nothing.
    """
    p = float_array("weights", weights, min_ndim=1)
    return p[..., :, None] * np.eye(p.shape[-1]) - p[..., :, None] * p[..., None, :]


def gradient_scale(weights) -> float:
    """Mean over the rows of the largest eigenvalue of the softmax Jacobian.

    The Jacobian of one row is symmetric and positive semi-definite, so its largest eigenvalue is
    also its spectral norm: the most a unit change of the logits can change the weights. It is 1/2
    at best (two keys sharing the weight equally), 1/n for n equal weights, and 0 for a one-hot row:
    a saturated softmax passes no gradient back to its scores.
    """
    jacobians = softmax_jacobian(weights)  # (..., n_q, n_k, n_k)
    largest = np.linalg.eigvalsh(jacobians)[..., -1]  # (..., n_q)
    return float(np.clip(largest, 0.0, None).mean())


def row_entropies(weights) -> np.ndarray:
    """Entropy of every row in bits: 0 for a one-hot row, log2(m) for m equal weights."""
    return np.clip(row_entropy_bits(weights), 0.0, None)  # clip -0.0 and rounding below zero


def max_entropies(mask) -> np.ndarray:
    """The most entropy each row can have: log2 of its number of allowed keys (0 if none)."""
    allowed = bool_mask("mask", mask).sum(axis=-1)
    return np.log2(np.maximum(allowed, 1))


def lesson_readouts(weights: np.ndarray, logits: np.ndarray, mask: np.ndarray) -> dict[str, float]:
    """The widget's readouts, each defined in one line (notebook 03 explains them)."""
    entropies = row_entropies(weights)  # (n_q,), bits
    return {
        N_("score spread"): score_spread(logits, mask),  # max - min of the allowed logits, the lesson's kind
        N_("row entropy (bits)"): float(entropies.mean()),  # mean over the query rows
        N_("max weight"): float(weights.max()),  # the largest weight anywhere in the matrix
        N_("gradient scale"): gradient_scale(weights),  # mean spectral norm of softmax's Jacobian
        N_("first row entropy (bits)"): float(entropies[0]),  # the query "<s>"
    }
