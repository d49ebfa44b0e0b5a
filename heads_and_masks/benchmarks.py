"""Measure what the causal mask saves: full-then-mask attention against the tiled kernel.

Both versions run side by side in one process on the same inputs, alternating, so that whatever
else the machine is doing slows both alike. Times are medians over ``repeats`` runs; memory is the
peak that ``tracemalloc`` sees while one call runs (numpy reports its buffers to tracemalloc), that
is the *extra* memory of the call: the inputs already exist before it starts.

By default both run with one BLAS thread. The tiled kernel makes many small matrix products, and a
multi-threaded BLAS on a busy machine can spend far longer synchronising its threads than
multiplying (measured here: the tiled kernel 3 to 10 times slower with two threads under load,
normal with one). One thread for both compares the work each version does, which is the question.
"""
from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import statistics
import time
import tracemalloc

import numpy as np

from ._validate import whole_number
from .tiled import blocked_causal_attention, causal_used_fraction, full_causal_attention


def _openblas():
    """numpy's bundled OpenBLAS (already loaded by numpy), or None if numpy uses another BLAS."""
    folder = os.path.join(os.path.dirname(np.__file__) + ".libs")
    for path in sorted(glob.glob(os.path.join(folder, "libscipy_openblas*.so*"))):
        library = ctypes.CDLL(path)
        for prefix in ("scipy_openblas", "openblas"):
            for suffix in ("64_", "_64_", ""):
                setter = getattr(library, f"{prefix}_set_num_threads{suffix}", None)
                getter = getattr(library, f"{prefix}_get_num_threads{suffix}", None)
                if setter is not None and getter is not None:
                    return setter, getter
    return None


@contextlib.contextmanager
def blas_threads(count: int | None):
    """Within the block numpy's OpenBLAS uses ``count`` threads (no change if None or not OpenBLAS)."""
    found = _openblas() if count is not None else None
    if found is None:
        yield
        return
    setter, getter = found
    before = getter()
    setter(int(count))
    try:
        yield
    finally:
        setter(before)


def peak_bytes(function, *args) -> int:
    """Peak memory allocated while ``function(*args)`` runs, in bytes (inputs not counted)."""
    already_tracing = tracemalloc.is_tracing()
    if not already_tracing:
        tracemalloc.start()
    tracemalloc.reset_peak()
    start, _ = tracemalloc.get_traced_memory()
    try:
        function(*args)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        if not already_tracing:
            tracemalloc.stop()
    return max(0, peak - start)


def causal_attention_benchmark(sizes=(512, 1024, 2048, 4096), d=64, block=128, repeats=5, seed=0,
                               threads: int | None = 1) -> list[dict]:
    """One row per sequence length n: times, speedup, work and peak memory of both versions.

    ``threads`` is the number of BLAS threads both versions get (None: leave numpy's setting alone).
    Each row holds
        n, d, block, repeats, threads
        full_seconds, tiled_seconds   median wall time of one call
        speedup                       full_seconds / tiled_seconds
        theoretical_speedup           2n / (n + 1): all n² entries against the n(n+1)/2 that are used
        computed_fraction             entries the tiled kernel computed, over n²
        ideal_fraction                (n + 1) / (2n)
        full_peak_bytes, tiled_peak_bytes   peak extra memory of one call
        memory_ratio                  tiled_peak_bytes / full_peak_bytes
        max_abs_difference            largest difference between the two outputs (they must agree)
    """
    d = whole_number("d", d, minimum=1)
    block = whole_number("block", block, minimum=1)
    repeats = whole_number("repeats", repeats, minimum=1)
    sizes = [whole_number("n", n, minimum=1) for n in sizes]
    with blas_threads(threads):
        return [_measure(n, d, block, repeats, np.random.default_rng([seed, n]), threads) for n in sizes]


def _measure(n, d, block, repeats, rng, threads) -> dict:
    """One row of the benchmark: both versions on the same (n, d) inputs."""
    q, k, v = (rng.standard_normal((n, d)) for _ in range(3))  # (n, d) each

    full_out, full_computed = full_causal_attention(q, k, v)  # warm-up, and the outputs to compare
    tiled_out, tiled_computed = blocked_causal_attention(q, k, v, block)
    full_times, tiled_times = [], []
    for _ in range(repeats):  # alternate, so both see the same machine
        start = time.perf_counter()
        full_causal_attention(q, k, v)
        full_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        blocked_causal_attention(q, k, v, block)
        tiled_times.append(time.perf_counter() - start)

    full_seconds, tiled_seconds = statistics.median(full_times), statistics.median(tiled_times)
    full_peak = peak_bytes(full_causal_attention, q, k, v)
    tiled_peak = peak_bytes(blocked_causal_attention, q, k, v, block)
    return {
        "n": n, "d": d, "block": block, "repeats": repeats, "threads": threads,
        "full_seconds": full_seconds,
        "tiled_seconds": tiled_seconds,
        "speedup": full_seconds / tiled_seconds,
        "theoretical_speedup": 2 * n / (n + 1),
        "full_computed": int(full_computed),
        "tiled_computed": int(tiled_computed),
        "computed_fraction": tiled_computed / n**2,
        "ideal_fraction": causal_used_fraction(n),
        "full_peak_bytes": full_peak,
        "tiled_peak_bytes": tiled_peak,
        "memory_ratio": tiled_peak / full_peak if full_peak else float("nan"),
        "max_abs_difference": float(np.max(np.abs(full_out - tiled_out))),
    }


def format_benchmark(rows: list[dict]) -> str:
    """The rows as a plain-text table (for the notebook and the bench command)."""
    header = (f"{'n':>6} {'full s':>9} {'tiled s':>9} {'speedup':>8} {'2n/(n+1)':>9} {'computed':>9} "
              f"{'(n+1)/2n':>9} {'full peak':>10} {'tiled peak':>11} {'ratio':>7}")
    lines = [header]
    for r in rows:
        lines.append(
            f"{r['n']:>6} {r['full_seconds']:>9.4f} {r['tiled_seconds']:>9.4f} {r['speedup']:>7.2f}× "
            f"{r['theoretical_speedup']:>8.3f}× {r['computed_fraction']:>9.2%} {r['ideal_fraction']:>9.2%} "
            f"{r['full_peak_bytes'] / 2**20:>7.1f} MiB {r['tiled_peak_bytes'] / 2**20:>8.2f} MiB {r['memory_ratio']:>7.4f}")
    return "\n".join(lines)
