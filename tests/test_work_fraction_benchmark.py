"""The benchmark behind `make bench` and notebook 04: its rows say what they claim (no timing asserts)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import heads_and_masks as hm
from heads_and_masks import tiled
from heads_and_masks.benchmarks import (
    blas_threads,
    causal_attention_benchmark,
    format_benchmark,
    peak_bytes,
    torch_version,
)

FIELDS = {
    "n",
    "d",
    "block",
    "repeats",
    "threads",
    "dtype",
    "full_seconds",
    "unmasked_seconds",
    "tiled_seconds",
    "speedup",
    "speedup_over_unmasked",
    "theoretical_speedup",
    "tiling_ceiling",
    "unmasked_way",
    "unmasked_seconds_by_way",
    "full_computed",
    "tiled_computed",
    "computed_fraction",
    "ideal_fraction",
    "causal_flops",
    "tiled_gflops",
    "matmul_gflops",
    "roofline_fraction",
    "torch_seconds",
    "tiled_over_torch",
    "full_peak_bytes",
    "tiled_peak_bytes",
    "memory_ratio",
    "max_abs_difference",
}


@pytest.fixture(scope="module")
def rows():
    return causal_attention_benchmark(sizes=(64, 200, 256), d=8, block=32, repeats=2)


def test_one_row_per_size_with_every_field(rows):
    assert [r["n"] for r in rows] == [64, 200, 256]
    for r in rows:
        assert set(r) == FIELDS
        assert (r["d"], r["block"], r["repeats"], r["threads"], r["dtype"]) == (8, 32, 2, 1, "float64")


def test_times_and_speedup_are_consistent(rows):
    for r in rows:
        assert r["full_seconds"] > 0 and r["tiled_seconds"] > 0
        assert math.isclose(r["speedup"], r["full_seconds"] / r["tiled_seconds"])
        assert r["unmasked_seconds"] > 0
        assert math.isclose(r["speedup_over_unmasked"], r["unmasked_seconds"] / r["tiled_seconds"])
        # the yardstick is the fastest of every way of writing unmasked attention, timed in the same run
        assert set(r["unmasked_seconds_by_way"]) == set(tiled.UNMASKED_WAYS)
        assert r["unmasked_seconds"] == min(r["unmasked_seconds_by_way"].values())
        assert r["unmasked_seconds_by_way"][r["unmasked_way"]] == r["unmasked_seconds"]
        assert r["torch_seconds"] is None and r["tiled_over_torch"] is None  # not asked for


def test_work_rate_is_the_causal_arithmetic_over_the_time(rows):
    for r in rows:
        n, d = r["n"], r["d"]
        assert r["causal_flops"] == 4 * d * (n * (n + 1) // 2)  # q·k and weight·v (d_v = d) per used entry
        assert math.isclose(r["tiled_gflops"], r["causal_flops"] / r["tiled_seconds"] / 1e9)
        assert r["matmul_gflops"] > 0
        assert math.isclose(r["roofline_fraction"], r["tiled_gflops"] / r["matmul_gflops"])


def test_float32_inputs_are_measured_in_float32():
    (row,) = causal_attention_benchmark(sizes=(96,), d=8, block=32, repeats=1, dtype="float32")
    assert row["dtype"] == "float32"
    assert 0 < row["max_abs_difference"] < 1e-5
    assert row["full_peak_bytes"] >= 96 * 96 * 4, "full-then-mask holds at least one n × n float32 matrix"
    (row64,) = causal_attention_benchmark(sizes=(96,), d=8, block=32, repeats=1, dtype="float64")
    assert row64["max_abs_difference"] < 1e-12 < row["max_abs_difference"]  # float32 really was used


def test_pytorch_is_compared_where_it_is_installed():
    (row,) = causal_attention_benchmark(sizes=(64,), d=8, block=32, repeats=1, torch=True)
    if torch_version() is None:
        assert row["torch_seconds"] is None and row["tiled_over_torch"] is None
    else:
        assert row["torch_seconds"] > 0
        assert math.isclose(row["tiled_over_torch"], row["tiled_seconds"] / row["torch_seconds"])


def test_work_fields_follow_the_formulas(rows):
    for r in rows:
        n = r["n"]
        assert math.isclose(r["theoretical_speedup"], 2 * n / (n + 1))
        assert math.isclose(r["tiling_ceiling"], n * n / r["tiled_computed"])
        n_b = n // r["block"]
        if n % r["block"] == 0:  # whole tiles: the ceiling is 2 n_b / (n_b + 1), below 2n / (n + 1)
            assert math.isclose(r["tiling_ceiling"], 2 * n_b / (n_b + 1)) and r["tiling_ceiling"] < 2 * n / (n + 1)
        assert math.isclose(r["ideal_fraction"], (n + 1) / (2 * n))
        assert r["full_computed"] == n * n
        assert r["tiled_computed"] == hm.tiled_computed_entries(n, r["block"])
        assert math.isclose(r["computed_fraction"], r["tiled_computed"] / n**2)
        assert r["ideal_fraction"] <= r["computed_fraction"] < 1


def test_both_versions_agree_and_memory_is_measured(rows):
    for r in rows:
        assert r["max_abs_difference"] < 1e-9
        n = r["n"]
        assert r["full_peak_bytes"] >= n * n * 8, "full-then-mask holds at least one n × n float64 matrix"
        assert 0 < r["tiled_peak_bytes"] < r["full_peak_bytes"]
        assert math.isclose(r["memory_ratio"], r["tiled_peak_bytes"] / r["full_peak_bytes"])


def test_peak_bytes_sees_an_allocation_and_not_the_inputs():
    big = np.ones(1_000_000)  # exists before: not counted
    assert peak_bytes(lambda a: a.sum(), big) < 100_000
    assert peak_bytes(lambda: np.ones(1_000_000).sum()) >= 8_000_000


def test_blas_threads_restores_the_setting():
    from heads_and_masks.benchmarks import _openblas

    found = _openblas()
    if found is None:
        pytest.skip("numpy does not use its bundled OpenBLAS here")
    setter, getter = found
    before = getter()
    with blas_threads(1):
        assert getter() == 1
    assert getter() == before


def test_table_has_a_line_per_row(rows):
    text = format_benchmark(rows)
    assert len(text.splitlines()) == len(rows) + 2  # a header and a line of units
    assert "200" in text.splitlines()[3]


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError):
        causal_attention_benchmark(sizes=(0,), repeats=1)
    with pytest.raises(ValueError):
        causal_attention_benchmark(sizes=(16,), block=0, repeats=1)
    with pytest.raises(ValueError):
        causal_attention_benchmark(sizes=(16,), repeats=1, dtype="int64")
