"""Argument checks shared by the reference implementations.

Every public function of the course raises ``ValueError`` with a sentence that names the
problem, so a learner who passes the wrong thing reads what was expected and what came back.
"""

from __future__ import annotations

import numbers

import numpy as np


def whole_number(name: str, value, *, minimum: int = 0) -> int:
    """Return ``value`` as a Python int, or raise ValueError naming ``name``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be a whole number, got {value!r} ({type(value).__name__})")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return value


def float_array(name: str, value, *, ndim: int | None = None, min_ndim: int | None = None) -> np.ndarray:
    """Return ``value`` as a float array (never the caller's object), checking its rank."""
    array = np.asarray(value)
    if array.dtype == object or not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
        raise ValueError(f"{name} must be an array of numbers, got dtype {array.dtype}")
    if not np.issubdtype(array.dtype, np.floating):
        array = array.astype(np.float64)
    if ndim is not None and array.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} axes, got shape {array.shape}")
    if min_ndim is not None and array.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} axes, got shape {array.shape}")
    return array


def bool_mask(name: str, value) -> np.ndarray:
    """Return a boolean mask array; refuse float masks, whose meaning (additive? 0/1?) is ambiguous."""
    mask = np.asarray(value)
    if mask.dtype != bool:
        raise ValueError(
            f"{name} must be a boolean array (True = may attend), got dtype {mask.dtype}; "
            "an additive float mask (0 / -inf) is a different convention"
        )
    return mask
