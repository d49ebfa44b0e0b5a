"""Heads & Masks: reference implementations, widgets, pictures and checks for the course.

The graded functions of the course (the course map in README.md) live here, tested against slow
obvious versions. Notebooks import them for widgets and pictures; graded answers must be the
learner's own code.

While a notebook is graded (``HEADS_AND_MASKS_GRADING=1``, set by the grader in every grading
kernel), widgets, pictures and timing experiments do nothing: see :mod:`heads_and_masks.grading`.
"""

from .grading import GRADING_ENV, grading_mode
from .stand_ins import stand_in_for_display_modules
from .attention import attention, attention_weights, masked_softmax, row_entropy_bits
from .heads import head_size, merge_heads, mha_cost, multi_head_attention, split_heads
from .kv_heads import grouped_query_attention, kv_cache_bytes
from .masks import (
    attention_mask,
    block_sparse_mask,
    causal_mask,
    kept_fraction,
    padding_mask,
    sliding_window_mask,
)
from .tiled import (
    blocked_causal_attention,
    causal_used_entries,
    causal_used_fraction,
    full_causal_attention,
    tile_kinds,
    tiled_computed_entries,
)
from .trying import if_written

stand_in_for_display_modules()  # grading mode: widgets and pictures are not imported at all

__all__ = [
    "grading_mode",
    "GRADING_ENV",
    "if_written",
    "attention",
    "attention_weights",
    "masked_softmax",
    "row_entropy_bits",
    "head_size",
    "split_heads",
    "merge_heads",
    "mha_cost",
    "multi_head_attention",
    "grouped_query_attention",
    "kv_cache_bytes",
    "causal_mask",
    "padding_mask",
    "sliding_window_mask",
    "attention_mask",
    "block_sparse_mask",
    "kept_fraction",
    "causal_used_entries",
    "causal_used_fraction",
    "blocked_causal_attention",
    "full_causal_attention",
    "tile_kinds",
    "tiled_computed_entries",
]
