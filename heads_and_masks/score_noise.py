"""Why a head cannot be tiny: a dot product over d components is a noisy measure of similarity.

The toy model of notebook 02 (its pictures, its widget and its graded check all use it):

* every token has a hidden *meaning*, a vector of d independent N(0, 1) components;
* a head sees noisy views of it: ``q = meaning_query + noise·ε`` and ``k_j = meaning_j + noise·ε_j``,
  every ε an independent N(0, 1) vector (``noise`` is a standard deviation, per component);
* one key, the *match*, has exactly the query's meaning; the other ``n_keys − 1`` keys have unrelated
  meanings;
* the head scores each key by ``q·k_j`` (dividing every score by √d changes no ranking).

The match *wins* when its score is higher than every other key's. ``winning_rate`` estimates how often
by simulation; ``exact_winning_rate`` computes the same probability by integration (derivation in
:func:`win_probability`), so the two check each other.
"""

from __future__ import annotations

import math

import numpy as np

from ._guard import reference
from ._validate import whole_number
from .grading import grading_mode


def _noise_level(noise) -> float:
    if isinstance(noise, (bool, np.bool_)) or not isinstance(noise, (int, float, np.integer, np.floating)):
        raise ValueError(f"noise must be a number (a standard deviation), got {noise!r}")
    noise = float(noise)
    if not math.isfinite(noise) or noise < 0:
        raise ValueError(f"noise is a standard deviation: it must be finite and ≥ 0, got {noise}")
    return noise


def normal_cdf(x):
    """Φ(x), the standard normal distribution function, elementwise (absolute error below 1e-7).

    numpy has no erf; this is the Chebyshev fit of erfc from *Numerical Recipes* (2nd ed., §6.2).
    """
    z = np.abs(np.asarray(x, dtype=float)) / math.sqrt(2.0)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -1.26551223 + t * (
        1.00002368
        + t
        * (
            0.37409196
            + t
            * (
                0.09678418
                + t
                * (
                    -0.18628806
                    + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))
                )
            )
        )
    )
    erfc = t * np.exp(-z * z + poly)  # erfc(|x| / √2)
    return np.where(np.asarray(x) >= 0, 1.0 - 0.5 * erfc, 0.5 * erfc)


@reference
def winning_rate(d, noise, n_keys=16, trials=4000, seed=0):
    """Fraction of ``trials`` in which the matching key gets the highest score q·k (simulated)."""
    d = whole_number("head size d", d, minimum=1)
    noise = _noise_level(noise)
    n_keys = whole_number("number of keys n_keys", n_keys, minimum=2)
    trials = whole_number("number of trials", trials, minimum=1)
    rng = np.random.default_rng(seed)
    per_chunk = max(1, 2_000_000 // (n_keys * d))  # bounded memory, whatever the arguments
    wins = 0
    for start in range(0, trials, per_chunk):
        t = min(per_chunk, trials - start)
        meaning = rng.normal(size=(t, n_keys, d))  # (t, keys, d); key 0 is the match
        query = meaning[:, 0] + noise * rng.normal(size=(t, d))  # (t, d): the match's meaning, seen noisily
        keys = meaning + noise * rng.normal(size=(t, n_keys, d))  # (t, keys, d)
        scores = np.einsum("td,tkd->tk", query, keys)  # (t, keys)
        wins += int(np.count_nonzero(scores[:, 0] > scores[:, 1:].max(axis=1)))
    return wins / trials


@reference
def win_probability(d, query_noise, key_noise, rivals, *, match_noise=None, grid=401, nodes=64) -> float:
    """P(the match outscores ``rivals`` unrelated keys), by integration.

    The noises may differ (the checks use that to recognise mistakes): ``query_noise`` on the query,
    ``key_noise`` on the unrelated keys, ``match_noise`` (default ``key_noise``) on the matching key.
    Condition on the query q. With s_q² = 1 + query_noise² and s_k² = 1 + key_noise²:

    * an unrelated key is N(0, s_k² I) and independent of q, so q·k ~ N(0, s_k² |q|²), independently
      for every rival;
    * the match's meaning given q is N(q / s_q², query_noise²/s_q² I), so its key is
      N(q / s_q², τ² I) with τ² = query_noise²/s_q² + match_noise², and q·k_match ~ N(|q|²/s_q², τ²|q|²).

    Writing |q| = s_q·t (t has the chi distribution with d degrees of freedom) and the match's score
    through a standard normal Z, the probability that one rival loses is Φ((t/s_q + τ Z) / s_k), and
    the rivals are independent given (t, Z):  P = E_{t, Z}[Φ((t/s_q + τ Z)/s_k)^rivals].
    The expectation over Z uses Gauss–Hermite nodes, the one over t a fine grid of the chi density.
    """
    s_q, s_k = math.sqrt(1 + query_noise**2), math.sqrt(1 + key_noise**2)
    match_noise = key_noise if match_noise is None else match_noise
    tau = math.sqrt(query_noise**2 / s_q**2 + match_noise**2)
    centre = math.sqrt(d)
    t = np.linspace(max(0.0, centre - 12.0), centre + 12.0, grid)  # the chi density lives near √d
    safe_t = np.where(t > 0, t, 1.0)
    log_density = (
        np.where(t > 0, (d - 1) * np.log(safe_t), 0.0 if d == 1 else -np.inf) - t**2 / 2
    )  # chi, up to a constant
    t_weights = np.exp(log_density - log_density.max())
    t_weights[[0, -1]] *= 0.5  # the trapezoid rule
    t_weights /= t_weights.sum()
    z, z_weights = np.polynomial.hermite_e.hermegauss(nodes)  # nodes for E over a standard normal
    z_weights = z_weights / z_weights.sum()
    one_rival_loses = normal_cdf((t[:, None] / s_q + tau * z[None, :]) / s_k)  # (grid, nodes)
    return float(t_weights @ one_rival_loses**rivals @ z_weights)


@reference
def exact_winning_rate(d, noise, n_keys=16):
    """The probability that ``winning_rate`` estimates, computed by integration (no sampling error)."""
    d = whole_number("head size d", d, minimum=1)
    noise = _noise_level(noise)
    n_keys = whole_number("number of keys n_keys", n_keys, minimum=2)
    return win_probability(d, noise, noise, n_keys - 1)


def estimate_spread(d, noise):
    """Standard deviation of the similarity estimate q·k/d: ``(match, unrelated)``.

    For one component, a product of two N(0, 1 + noise²) numbers with covariance c has variance
    (1 + noise²)² + c²: c = 1 for the match, 0 for an unrelated key. Averaging d of them divides the
    variance by d. The *means* are 1 and 0, whatever d: only the spread shrinks, like 1/√d.
    """
    power = 1 + noise**2
    return math.sqrt((power**2 + 1) / d), math.sqrt(power**2 / d)


def similarity_estimates(d, noise, pairs=4000, seed=0):
    """Simulated q·k/d for ``pairs`` matching pairs and as many unrelated pairs: ``(match, unrelated)``."""
    rng = np.random.default_rng(seed)
    meaning = rng.normal(size=(pairs, d))  # (pairs, d)
    query = meaning + noise * rng.normal(size=(pairs, d))
    match = meaning + noise * rng.normal(size=(pairs, d))
    unrelated = rng.normal(size=(pairs, d)) + noise * rng.normal(size=(pairs, d))
    return np.einsum("pd,pd->p", query, match) / d, np.einsum("pd,pd->p", query, unrelated) / d


def simulated_spreads(d_values, noise, pairs: int = 2000, seed: int = 0) -> np.ndarray:
    """Spread (standard deviation) of the simulated ``q·k/d`` at each d: shape ``(len(d_values), 2)``, the
    match's then an unrelated key's, each from :func:`similarity_estimates` with ``pairs`` pairs.

    In grading mode (``heads_and_masks.grading``) nothing is simulated: all NaN ("not computed"), since only
    a picture and a printed line use it.
    """
    if grading_mode():
        return np.full((len(d_values), 2), np.nan)
    return np.array(
        [[estimates.std() for estimates in similarity_estimates(d, noise, pairs=pairs, seed=seed)] for d in d_values]
    )  # (d, 2)


@reference
def bank_partial_sums(d_values, n_keys, trials, seed):
    """The three partial sums of :class:`ScoreBank`, shape (3, len(d_values), trials, n_keys)."""
    rng = np.random.default_rng(seed)
    width = max(d_values)
    starts = np.concatenate([[0], np.array(d_values[:-1])])  # block i holds components d_values[i-1] .. d_values[i]
    if np.any(np.diff(d_values) <= 0):
        raise ValueError(f"d_values must increase, got {d_values}")
    parts = np.zeros((3, len(d_values), trials, n_keys))  # (piece, d, trial, key)
    chunk = max(1, 400_000 // (n_keys * width))
    for start in range(0, trials, chunk):
        t = slice(start, min(trials, start + chunk))
        size = t.stop - t.start
        meaning = rng.normal(size=(size, n_keys, width))  # (trials, keys, width); key 0 is the match
        key_noise = rng.normal(size=(size, n_keys, width))
        query_meaning, query_noise = meaning[:, :1], rng.normal(size=(size, 1, width))
        pieces = (
            query_meaning * meaning,  # ab
            query_meaning * key_noise + query_noise * meaning,  # ae' + eb
            query_noise * key_noise,
        )  # ee'
        for index, piece in enumerate(pieces):
            blocks = np.add.reduceat(piece, starts, axis=-1)  # (trials, keys, len(d_values))
            parts[index, :, t] = np.cumsum(blocks, axis=-1).transpose(2, 0, 1)
    return parts


class ScoreBank:
    """Scores of the same random trials at many head sizes and any noise, for a fast widget.

    A trial's score q·k_j is a sum over components of (a + σe)(b + σe') = ab + σ(ae' + eb) + σ²ee'.
    The bank stores the three partial sums at each head size in ``d_values`` (the first d components of
    one set of draws), so ``scores(d, σ)`` is two multiply-adds: every d and σ reuses the same draws
    and the pictures move smoothly instead of jumping with fresh noise.
    """

    def __init__(self, d_values, n_keys=16, trials=1000, seed=0):
        self.d_values = [int(v) for v in d_values]
        self.n_keys, self.trials = n_keys, trials
        self._parts = bank_partial_sums(self.d_values, n_keys, trials, seed)  # (piece, d, trial, key)

    def scores(self, d, noise) -> np.ndarray:
        """(trials, n_keys) scores q·k at head size d (one of ``d_values``); column 0 is the match."""
        i = self.d_values.index(int(d))
        return self._parts[0, i] + noise * self._parts[1, i] + noise**2 * self._parts[2, i]

    def winning_rate(self, d, noise) -> float:
        scores = self.scores(d, noise)
        return float(np.mean(scores[:, 0] > scores[:, 1:].max(axis=1)))
