"""The benchmark behind `make bench` and notebook 04: its rows say what they claim (no timing asserts)."""
from __future__ import annotations

import math

import numpy as np
import pytest

import heads_and_masks as hm
from heads_and_masks.benchmarks import blas_threads, causal_attention_benchmark, format_benchmark, peak_bytes

FIELDS = {"n", "d", "block", "repeats", "threads", "full_seconds", "tiled_seconds", "speedup",
          "theoretical_speedup", "full_computed", "tiled_computed", "computed_fraction", "ideal_fraction",
          "full_peak_bytes", "tiled_peak_bytes", "memory_ratio", "max_abs_difference"}


@pytest.fixture(scope="module")
def rows():
    return causal_attention_benchmark(sizes=(64, 200, 256), d=8, block=32, repeats=2)


def test_one_row_per_size_with_every_field(rows):
    assert [r["n"] for r in rows] == [64, 200, 256]
    for r in rows:
        assert set(r) == FIELDS
        assert (r["d"], r["block"], r["repeats"], r["threads"]) == (8, 32, 2, 1)


def test_times_and_speedup_are_consistent(rows):
    for r in rows:
        assert r["full_seconds"] > 0 and r["tiled_seconds"] > 0
        assert math.isclose(r["speedup"], r["full_seconds"] / r["tiled_seconds"])


def test_work_fields_follow_the_formulas(rows):
    for r in rows:
        n = r["n"]
        assert math.isclose(r["theoretical_speedup"], 2 * n / (n + 1))
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
    assert len(text.splitlines()) == len(rows) + 1
    assert "200" in text.splitlines()[2]


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError):
        causal_attention_benchmark(sizes=(0,), repeats=1)
    with pytest.raises(ValueError):
        causal_attention_benchmark(sizes=(16,), block=0, repeats=1)
