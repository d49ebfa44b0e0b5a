"""Counting the work of one multi-head attention layer, one matrix product at a time.

The unit is the **multiply-add**: one multiplication and the addition that accumulates it
(``total += a * b``). A product of an ``(m, k)`` matrix by a ``(k, p)`` matrix takes ``m·k·p`` of
them. FLOP counts are twice as large, since a multiply-add is two floating-point operations.

Only the matrix products are counted: the scaling by 1/sqrt(d) and the softmax touch each of the
``h·n²`` scores a few times, which is lower order than the ``n²·D`` of the products.
:func:`counted_multi_head_attention` runs a real forward pass and records every product it makes,
so the formula ``4nD² + 2n²D`` is checked against what was actually computed.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .attention import masked_softmax
from .grading import idle_while_grading
from .heads import head_size, merge_heads, split_heads


@dataclasses.dataclass(frozen=True)
class Product:
    """One batched matrix product ``left @ right`` and its multiply-adds."""

    name: str
    left_shape: tuple[int, ...]
    right_shape: tuple[int, ...]

    @property
    def multiply_adds(self) -> int:
        """m·k·p for each of the stacked (..., m, k) @ (..., k, p) products."""
        *stack_left, m, k = self.left_shape
        *stack_right, k_right, p = self.right_shape
        if k != k_right:
            raise ValueError(f"{self.name}: inner sizes differ, {self.left_shape} @ {self.right_shape}")
        stack = np.broadcast_shapes(tuple(stack_left), tuple(stack_right))
        return math.prod(stack) * m * k * p


class ProductLog:
    """Computes ``left @ right`` and remembers the shapes of every product it made."""

    def __init__(self):
        self.products: list[Product] = []

    def matmul(self, name: str, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        self.products.append(Product(name, tuple(left.shape), tuple(right.shape)))
        return left @ right

    def total(self) -> int:
        return sum(p.multiply_adds for p in self.products)


def counted_multi_head_attention(x, w_q, w_k, w_v, w_o, h, mask=None):
    """The MHA forward pass of :func:`heads_and_masks.multi_head_attention`, counting its products.

    Returns ``(output, products)``; ``products`` lists the six matrix products in the order they
    were made, with their shapes and multiply-adds.
    """
    x = np.asarray(x, dtype=float)
    b, n, width = x.shape
    d = head_size(width, h)
    log = ProductLog()
    q = split_heads(log.matmul("Q = x W^Q", x, w_q), h)  # (b, h, n, d)
    k = split_heads(log.matmul("K = x W^K", x, w_k), h)  # (b, h, n, d)
    v = split_heads(log.matmul("V = x W^V", x, w_v), h)  # (b, h, n, d)
    scores = log.matmul("scores Q Kᵀ", q, np.swapaxes(k, -1, -2)) / np.sqrt(d)  # (b, h, n, n)
    weights = masked_softmax(scores, mask)  # (b, h, n, n)
    heads = log.matmul("weighted sum A V", weights, v)  # (b, h, n, d)
    output = log.matmul("output concat(heads) W^O", merge_heads(heads), w_o)  # (b, n, D)
    return output, log.products


@idle_while_grading(list)
def cost_table(n: int, width: int, heads: int, seed: int = 0) -> list[dict]:
    """Run one counted forward pass on a single random sequence and tabulate its products.

    Each row: the product, the shapes multiplied, the multiply-adds counted, and the same piece
    from the formula (nD² for a projection, n²D for each of the two n×n products).
    In grading mode (heads_and_masks.grading) nothing is run and there are no rows: only a printed
    table uses them.
    """
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(1, n, width))
    w_q, w_k, w_v, w_o = rng.normal(size=(4, width, width)) / np.sqrt(width)
    _, products = counted_multi_head_attention(x, w_q, w_k, w_v, w_o, heads)
    # what the formula says for each product: nD² per projection, n²D per n×n product
    formula = {
        "Q": ("n·D²", n * width**2),
        "K": ("n·D²", n * width**2),
        "V": ("n·D²", n * width**2),
        "s": ("n²·D", n * n * width),
        "w": ("n²·D", n * n * width),
        "o": ("n·D²", n * width**2),
    }
    rows = []
    for product in products:
        text, value = formula[product.name[0]]
        rows.append(
            {
                "product": product.name,
                "shapes": f"{product.left_shape} @ {product.right_shape}",
                "counted": product.multiply_adds,
                "formula": text,
                "formula value": value,
            }
        )
    return rows
