"""What a grading kernel can import of the course package: an allowlist, one per assignment.

A grading kernel runs the student's cells and the instructor's cells of one notebook. Of the course
package it gets exactly what those cells use while they are graded, and nothing else:

* :data:`EVERY_KERNEL`: the machinery every notebook needs (grading mode, ``if_written``, the judge's
  warnings policy, the exception a reference raises);
* :data:`NOTEBOOK_NAMES`: per assignment, the names its student-visible cells (every code cell but the
  test cells, which run in the grader) import or read from the package: widgets and pictures (idle while
  grading), data loading, readable numbers, small helpers of the demonstrations;
* every registered reference (``heads_and_masks._guard.references``, the graded functions) where the
  package defines and exports it, as a function that only raises ``ReferenceUsedError``: a student who
  calls one is told so, by name.

What is on the list must not compute a graded answer, nor one a step from it (tests/test_kernel_package.py
calls every callable a kernel can reach on the graded functions' inputs). A helper that does, which a notebook's
cells use or which a listed function needs (:data:`WITHHELD`, each with why), is left off the list and, where a
listed function refers to it, only raises: the demonstration cell that uses it fails while the notebook is
graded, as cells that call a reference already do, and nothing of the grade depends on it.
tests/test_kernel_package.py also checks that the list is what the notebooks' cells use.

:mod:`kernel_package` (``build``) writes the package a kernel sees from this list.
"""

from __future__ import annotations

PACKAGE = "heads_and_masks"

EVERY_KERNEL: dict[str, tuple[str, ...]] = {
    PACKAGE: ("grading_mode", "GRADING_ENV", "if_written", "stand_in_for_display_modules"),
    f"{PACKAGE}.grading": ("*",),  # grading mode itself: idle results
    f"{PACKAGE}.stand_ins": ("*",),  # grading mode's import hook: stand-ins for the display modules
    f"{PACKAGE}._guard": ("ReferenceUsedError",),
    f"{PACKAGE}._answer_warnings": ("answer_warnings",),  # the judge's harness: which warnings are the answer's
    f"{PACKAGE}.trying": ("if_written",),
    f"{PACKAGE}.widgets": ("CourseWidget",),
    f"{PACKAGE}.widgets.base": ("CourseWidget",),  # what an idle widget is
}

# Per assignment: {module: names} its cells use beyond EVERY_KERNEL and the references (a submodule named
# under its package is importable as ``from heads_and_masks import model_configs``).
NOTEBOOK_NAMES: dict[str, dict[str, tuple[str, ...]]] = {
    "00_start_here": {
        f"{PACKAGE}.widgets.start_here": ("QueryWidget",),
    },
    "01_heads": {
        f"{PACKAGE}.cost": ("cost_table",),
        f"{PACKAGE}.earlier_answers": ("bring_answer",),
        f"{PACKAGE}.pictures.heads": ("picture", "score_sum_figure", "split_orders_figure"),
        f"{PACKAGE}.widgets.heads": ("HeadSplitWidget",),
    },
    "02_why_heads": {
        PACKAGE: ("head_size", "model_configs", "retrieval", "score_noise"),
        f"{PACKAGE}.model_configs": ("load_models",),
        f"{PACKAGE}.pictures": ("why_heads",),
        f"{PACKAGE}.pictures.why_heads": (
            "head_weights_figure",
            "hull_figure",
            "picture",
            "recovery_figure",
            "spread_figure",
            "winning_figure",
        ),
        f"{PACKAGE}.retrieval": (
            "convex_hull",
            "head_weights",
            "heads_output",
            "inside_hull",
            "one_head_mix",
            "one_head_recovery",
            "reachable_outputs",
            "token_vectors",
            "wanted_output",
        ),
        f"{PACKAGE}.score_noise": ("estimate_spread", "simulated_spreads"),
        f"{PACKAGE}.widgets.why_heads": ("ScoreNoiseWidget",),
    },
    "03_causal_mask": {
        f"{PACKAGE}.attention_stats": ("gradient_scale", "max_entropies", "row_entropies", "score_spread"),
        f"{PACKAGE}.pictures.causal_mask": ("four_ways_figure", "mask_figure", "picture", "readouts_versus_d_figure"),
        f"{PACKAGE}.sentence": ("TOKENS", "sentence_logits", "sentence_queries_keys"),
        f"{PACKAGE}.widgets.causal_mask": ("LessonWidget",),
    },
    "04_work_fraction": {
        f"{PACKAGE}.benchmarks": ("causal_attention_benchmark", "format_benchmark", "time_by_tile_size"),
        f"{PACKAGE}.pictures.work_fraction": (
            "benchmark_figure",
            "picture",
            "tile_size_figure",
            "used_fraction_figure",
        ),
        f"{PACKAGE}.widgets.work_fraction": ("TileGridWidget",),
    },
    "05_other_masks": {
        PACKAGE: ("local_attention", "padding"),
        f"{PACKAGE}.checks": ("other_masks",),
        f"{PACKAGE}.local_attention": (
            "LAYOUTS",
            "MISTRAL_7B",
            "block_sparse_work",
            "global_local_layout",
            "keys_in_cache",
            "layout_mask",
            "prefix_lm_mask",
            "receptive_field",
            "window_with_sinks_mask",
        ),
        f"{PACKAGE}.i18n": ("translated",),
        f"{PACKAGE}.padding": ("ToyEncoder", "padding_damage"),
        f"{PACKAGE}.pictures": ("other_masks",),
        f"{PACKAGE}.pictures.other_masks": (
            "block_sparse_figure",
            "cache_growth_figure",
            "four_masks_figure",
            "granting_masks_figure",
            "keys_not_queries_figure",
            "padding_damage_figure",
            "picture",
            "receptive_field_figure",
        ),
        f"{PACKAGE}.widgets.other_masks": ("MaskWidget",),
    },
    "06_kv_heads": {
        PACKAGE: ("model_configs",),
        f"{PACKAGE}.model_configs": (
            "GiB",
            "KiB",
            "context_limits",
            "data_dir",
            "load_gpus",
            "load_models",
            "longest_context",
            "model",
            "nominal_gb",
            "parameters_with_kv_heads",
        ),
        f"{PACKAGE}.pictures.kv_heads": (
            "cache_per_token_figure",
            "cache_vs_context_figure",
            "head_mapping_figure",
            "picture",
        ),
        f"{PACKAGE}.widgets.kv_heads": ("KVCacheCalculator",),
    },
    "07_generation": {
        PACKAGE: ("generation",),
        f"{PACKAGE}.generation": (
            "cache_layouts",
            "cache_tokens",
            "document_lengths",
            "layer_step_work",
            "packed_attention",
            "packing_waste",
            "padding_waste",
            "prefix_lm_mask",
            "rolling_window_attention",
            "slot_positions",
            "step_work",
        ),
        f"{PACKAGE}.model_configs": ("KiB", "model"),
        f"{PACKAGE}.pictures.generation": (
            "bytes_per_token_figure",
            "composed_masks_figure",
            "decode_masks_figure",
            "picture",
        ),
        f"{PACKAGE}.widgets.generation": ("GenerationStepper",),
    },
    "08_learned_heads": {
        PACKAGE: ("training",),
        f"{PACKAGE}.pictures.learned_heads": ("head_count_figure", "head_maps_figure", "loss_curves_figure", "picture"),
        f"{PACKAGE}.training": (
            "Config",
            "RULES",
            "SEEDS",
            "ablation_table",
            "chance_loss",
            "compare_head_counts",
            "final_losses",
            "forward",
            "init_params",
            "loss_and_dlogits",
            "loss_of",
            "make_batch",
            "runs_over_seeds",
            "train",
        ),
        f"{PACKAGE}.widgets.learned_heads": ("LearnedHeadsWidget",),
    },
}

# Helpers that compute a graded answer, or one a step from it, which a notebook's cells use or which a function
# its cells use needs: in a kernel each only raises, saying why (a demonstration cell that uses one fails while
# its notebook is graded, as the cells that call a reference do; nothing of the grade depends on it).
WITHHELD: dict[str, str] = {
    f"{PACKAGE}.local_attention.window_as_in_xformers": "it is sliding_window_mask (05)",
    f"{PACKAGE}.local_attention.window_as_in_mistral_reference": "it is sliding_window_mask (05) with w + 1",
    f"{PACKAGE}.local_attention.kv_cache_bytes_per_token": "it is kv_cache_bytes (06) without seq_len · batch",
    f"{PACKAGE}.local_attention.strided_layout": "it is causal_mask (03) with stride 1",
    f"{PACKAGE}.local_attention.sliding_window_entries": "it is causal_used_entries (04) with w = n",
    f"{PACKAGE}.generation.top_left_causal_mask": "it is causal_mask (03) when n_new = n_keys",
    f"{PACKAGE}.training.causal": "it is causal_mask (03)",
    f"{PACKAGE}.training.backward": "it holds attention_backward (08)",
    f"{PACKAGE}.training._backward_from_weights": "it is attention_backward (08) given the weights",
    f"{PACKAGE}.training.attention_backward_slow": "it is attention_backward (08)",
    f"{PACKAGE}.training.numerical_gradients": "it gives attention_backward (08) from the learner's own forward pass",
}


def assignments() -> list[str]:
    return sorted(NOTEBOOK_NAMES)


def wanted_names(assignment: str | None) -> dict[str, set[str]]:
    """{module: names} a kernel of ``assignment`` is given (before what those names need); None: any notebook's
    common part only (a kernel started for no notebook, as some tests do)."""
    if assignment is not None and assignment not in NOTEBOOK_NAMES:
        raise ValueError(
            f"no allowlist of the course package for the assignment {assignment!r} in autograde/kernel/allowlist.py "
            f"(NOTEBOOK_NAMES: what its notebook's cells use); known: {', '.join(assignments())}"
        )
    wanted: dict[str, set[str]] = {}
    for table in (EVERY_KERNEL, NOTEBOOK_NAMES.get(assignment, {})):
        for module, names in table.items():
            wanted.setdefault(module, set()).update(names)
    return wanted
