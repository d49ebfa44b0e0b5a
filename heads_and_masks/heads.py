"""Multi-head attention as a block structure: the width D is cut into h heads of d = D/h.

The split is one axis factorised into two, ``b n (h d) -> b h n d``: head i owns the columns
``i*d : (i+1)*d`` of the width. Nothing is computed by the split itself.
"""

from __future__ import annotations

import numpy as np

from ._guard import reference
from ._validate import float_array, whole_number
from .attention import attention


def head_size(width: int, heads: int) -> int:
    """d = D / h, refusing a width that the heads do not divide."""
    width = whole_number("width D", width, minimum=1)
    heads = whole_number("number of heads h", heads, minimum=1)
    if width % heads:
        raise ValueError(f"the width D = {width} is not divisible by h = {heads} heads")
    return width // heads


@reference
def split_heads(x, h):
    """(b, n, D) -> (b, h, n, d): head i is x[..., i*d:(i+1)*d]."""
    x = float_array("x", x, ndim=3)
    b, n, width = x.shape
    d = head_size(width, h)
    return x.reshape(b, n, h, d).transpose(0, 2, 1, 3)  # b n (h d) -> b h n d


@reference
def merge_heads(x):
    """(b, h, n, d) -> (b, n, h*d), the inverse of split_heads."""
    x = float_array("x", x, ndim=4)
    b, h, n, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b, n, h * d)  # b h n d -> b n (h d)


@reference
def mha_cost(n, D, h):
    """Multiply-adds of one MHA forward pass: 4nD² (projections Q, K, V, O) + 2n²D (scores, weighted sum).

    h does not appear in the result: it only decides how the width is cut. It must still divide D.
    """
    n = whole_number("sequence length n", n)
    head_size(D, h)  # validates D and h
    projections = 4 * n * D * D  # four (n, D) @ (D, D) products
    scores = n * n * D  # h heads × (n, d) @ (d, n): h·n²·d = n²D
    weighted_sum = n * n * D  # h heads × (n, n) @ (n, d)
    return projections + scores + weighted_sum


@reference
def multi_head_attention(x, w_q, w_k, w_v, w_o, h, mask=None):
    """MHA(x) = concat(head_1 … head_h) W^O with head_i = attention(x W^Q_i, x W^K_i, x W^V_i).

    x: (b, n, D); weights (D, D), used as x @ w; mask broadcastable to (b, h, n, n). Returns (b, n, D).
    """
    x = float_array("x", x, ndim=3)
    width = x.shape[-1]
    for name, w in (("w_q", w_q), ("w_k", w_k), ("w_v", w_v), ("w_o", w_o)):
        if np.shape(w) != (width, width):
            raise ValueError(f"{name} must have shape ({width}, {width}), got {np.shape(w)}")
    q = split_heads(x @ w_q, h)  # (b, h, n, d)
    k = split_heads(x @ w_k, h)  # (b, h, n, d)
    v = split_heads(x @ w_v, h)  # (b, h, n, d)
    heads = attention(q, k, v, mask)  # (b, h, n, d), scaled by 1/sqrt(d)
    return merge_heads(heads) @ w_o  # (b, n, D)


# How the width D = h·d is read as two axes: (h d), h outer (the right one), or (d h), the silent bug.
ORDERS = ("(h d)", "(d h)")


def head_of_column(width: int, heads: int, order: str = "(h d)") -> np.ndarray:
    """(width,) ints: the head that each column of the width feeds, for the split ``order``."""
    d = head_size(width, heads)
    columns = np.arange(width)
    if order == "(h d)":
        return columns // d  # h outer: columns i*d … (i+1)*d - 1 form head i
    if order == "(d h)":
        return columns % heads  # h inner: columns i, i+h, i+2h, … form head i
    raise ValueError(f"order must be one of {ORDERS}, got {order!r}")


def divisors(number: int) -> list[int]:
    """The possible numbers of heads for a width: every h that divides it."""
    return [k for k in range(1, number + 1) if number % k == 0]


def cost_parts(n, width):
    """(projections 4nD², attention 2n²D) as floats, for arrays of n (the plot's curves)."""
    n = np.asarray(n, dtype=float)
    return 4.0 * n * width**2, 2.0 * n**2 * width
