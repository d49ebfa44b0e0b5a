"""Measure what the causal mask saves: the tiled kernel against full attention, in one run.

Three ways to get a causal attention output, or what it saves against, run side by side in one
process on the same inputs, alternating, so that whatever else the machine is doing slows them alike:

* ``full_causal_attention``: every score computed, the future masked afterwards (the naive way);
* ``unmasked_full_attention``: plain attention with no mask at all, as fast as numpy does it, in the
  inputs' float type. It is the honest yardstick: a causal kernel that does half the work should take
  about half of *its* time, not merely beat a slow masked version;
* ``blocked_causal_attention``: the tiled kernel, which never computes the tiles above the diagonal.

Also measured in the same run: a plain square matrix product of the same float type (what the machine's
BLAS reaches, the "roofline" the kernel's arithmetic is compared with) and, where PyTorch is installed and
asked for, PyTorch's causal ``scaled_dot_product_attention`` (PyTorch is not a dependency of the course).
Times are the best (fastest) of ``repeats`` runs: on a shared machine other work only ever adds time to
a run, so the fastest is the closest to what the version itself costs, for every version alike. Memory is
the peak that ``tracemalloc`` sees while one call runs
(numpy reports its buffers to tracemalloc), that is the *extra* memory of the call: the inputs already
exist before it starts.

By default everything runs with one BLAS thread (and one PyTorch thread). A multi-threaded BLAS on a
busy machine can spend far longer synchronising its threads than multiplying (measured here: the
first tiled kernel 3 to 10 times slower with two threads under load, normal with one). One thread for
all compares the work each version does, which is the question.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import glob
import os
import time
import tracemalloc

import numpy as np

from ._validate import whole_number
from .grading import idle_while_grading
from .tiled import UNMASKED_WAYS, blocked_causal_attention, causal_used_fraction, full_causal_attention, unmasked_way


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


@idle_while_grading(list)
def causal_attention_benchmark(
    sizes=(512, 1024, 2048, 4096),
    d=64,
    block=128,
    repeats=5,
    seed=0,
    threads: int | None = 1,
    dtype="float64",
    torch: bool = False,
) -> list[dict]:
    """One row per sequence length n: times, speedups, work rate and peak memory of every version.

    ``threads`` is the number of BLAS threads all versions get (None: leave numpy's setting alone).
    ``dtype`` is the float type of the inputs (every version works in it). ``torch=True`` also times
    PyTorch's causal ``scaled_dot_product_attention`` where PyTorch is installed.
    In grading mode (heads_and_masks.grading) nothing is measured and there are no rows.
    Each row holds
        n, d, block, repeats, threads, dtype
        full_seconds, unmasked_seconds, tiled_seconds   wall time of one call, the best of ``repeats``
        speedup                       full_seconds / tiled_seconds (against full-then-mask)
        speedup_over_unmasked         unmasked_seconds / tiled_seconds (against plain full attention)
        unmasked_way                  which way of writing unmasked attention was fastest (the yardstick)
        unmasked_seconds_by_way       the time of each way (tiled.UNMASKED_WAYS)
        theoretical_speedup           2n / (n + 1): all n² entries against the n(n+1)/2 that are used
        tiling_ceiling                n² / the entries the tiled kernel computed: what skipping tiles can
                                      save at this tile size (2 n_b / (n_b + 1) when B divides n)
        computed_fraction             entries the tiled kernel computed, over n²
        ideal_fraction                (n + 1) / (2n)
        causal_flops                  the arithmetic causal attention needs: 2(d + d_v) per used entry
        tiled_gflops                  causal_flops / tiled_seconds, in GFLOP/s
        matmul_gflops                 a plain square matrix product of the same float type, in GFLOP/s
        roofline_fraction             tiled_gflops / matmul_gflops
        torch_seconds, tiled_over_torch   PyTorch's causal SDPA and tiled / it (None when not measured)
        full_peak_bytes, tiled_peak_bytes   peak extra memory of one call
        memory_ratio                  tiled_peak_bytes / full_peak_bytes
        max_abs_difference            largest difference between the full and tiled outputs (they must agree)
    """
    d = whole_number("d", d, minimum=1)
    block = whole_number("block", block, minimum=1)
    repeats = whole_number("repeats", repeats, minimum=1)
    sizes = [whole_number("n", n, minimum=1) for n in sizes]
    dtype = np.dtype(dtype)
    if not np.issubdtype(dtype, np.floating):
        raise ValueError(f"dtype must be a float type, got {dtype}")
    sdpa = _torch_causal_attention(threads) if torch else None
    with blas_threads(threads), sdpa or contextlib.nullcontext(None) as run_torch:
        return [
            _measure(n, d, block, repeats, np.random.default_rng([seed, n]), threads, dtype, run_torch) for n in sizes
        ]


def torch_version() -> str | None:
    """PyTorch's version where it is installed, else None (it is not a dependency of the course)."""
    try:
        import torch
    except ImportError:
        return None
    return torch.__version__


@contextlib.contextmanager
def _torch_causal_attention(threads: int | None):
    """Within the block: a function (q, k, v) -> PyTorch's causal SDPA output, or None without PyTorch."""
    if torch_version() is None:
        yield None
        return
    import torch

    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(int(threads))
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def run(q, k, v):  # numpy (n, d) arrays, shared with torch without a copy, as (batch 1, head 1, n, d)
        with torch.no_grad():
            return sdpa(*(torch.from_numpy(x)[None, None] for x in (q, k, v)), is_causal=True)[0, 0].numpy()

    try:
        yield run
    finally:
        torch.set_num_threads(before)


MATMUL_SIZE = 1024  # the square product that measures the machine's matrix-multiply rate


def _timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def _measure(n, d, block, repeats, rng, threads, dtype, run_torch) -> dict:
    """One row of the benchmark: every version on the same (n, d) inputs."""
    q, k, v = (rng.standard_normal((n, d)).astype(dtype) for _ in range(3))  # (n, d) each
    a, b = (rng.standard_normal((MATMUL_SIZE, MATMUL_SIZE)).astype(dtype) for _ in range(2))
    versions = {
        "full": lambda: full_causal_attention(q, k, v),
        **{f"unmasked: {way}": functools.partial(unmasked_way(way, n), q, k, v) for way in UNMASKED_WAYS},
        "tiled": lambda: blocked_causal_attention(q, k, v, block),
        "matmul": lambda: a @ b,
    }
    if run_torch is not None:
        versions["torch"] = lambda: run_torch(q, k, v)

    full_out, full_computed = full_causal_attention(q, k, v)  # warm-up, and the outputs to compare
    tiled_out, tiled_computed = blocked_causal_attention(q, k, v, block)
    for name, function in versions.items():
        if name.startswith("unmasked") or name in ("matmul", "torch"):
            function()  # warm-up
    times = {name: [] for name in versions}
    for _ in range(repeats):  # alternate, so all see the same machine
        for name, function in versions.items():
            times[name].append(_timed(function))
    seconds = {name: min(runs) for name, runs in times.items()}  # the run least disturbed by other work
    # the yardstick: the fastest way of writing unmasked attention, on this machine, for this dtype and n
    unmasked = {name.removeprefix("unmasked: "): t for name, t in seconds.items() if name.startswith("unmasked")}
    yardstick = min(unmasked, key=unmasked.get)
    seconds["unmasked"] = unmasked[yardstick]

    full_peak = peak_bytes(full_causal_attention, q, k, v)
    tiled_peak = peak_bytes(blocked_causal_attention, q, k, v, block)
    causal_flops = 2 * (d + v.shape[1]) * (n * (n + 1) // 2)  # q·k and weight·v for each used entry
    tiled_gflops = causal_flops / seconds["tiled"] / 1e9
    matmul_gflops = 2 * MATMUL_SIZE**3 / seconds["matmul"] / 1e9
    torch_seconds = seconds.get("torch")
    return {
        "n": n,
        "d": d,
        "block": block,
        "repeats": repeats,
        "threads": threads,
        "dtype": dtype.name,
        "full_seconds": seconds["full"],
        "unmasked_seconds": seconds["unmasked"],
        "tiled_seconds": seconds["tiled"],
        "speedup": seconds["full"] / seconds["tiled"],
        "speedup_over_unmasked": seconds["unmasked"] / seconds["tiled"],
        "unmasked_way": yardstick,
        "unmasked_seconds_by_way": unmasked,
        "theoretical_speedup": 2 * n / (n + 1),
        "tiling_ceiling": n * n / tiled_computed,
        "full_computed": int(full_computed),
        "tiled_computed": int(tiled_computed),
        "computed_fraction": tiled_computed / n**2,
        "ideal_fraction": causal_used_fraction(n),
        "causal_flops": causal_flops,
        "tiled_gflops": tiled_gflops,
        "matmul_gflops": matmul_gflops,
        "roofline_fraction": tiled_gflops / matmul_gflops,
        "torch_seconds": torch_seconds,
        "tiled_over_torch": seconds["tiled"] / torch_seconds if torch_seconds else None,
        "full_peak_bytes": full_peak,
        "tiled_peak_bytes": tiled_peak,
        "memory_ratio": tiled_peak / full_peak if full_peak else float("nan"),
        "max_abs_difference": float(np.max(np.abs(full_out.astype(np.float64) - tiled_out))),
    }


def format_benchmark(rows: list[dict]) -> str:
    """The rows as a plain-text table (for the notebook and the bench command).

    *vs unmasked* is the measured speedup over the fastest unmasked attention (*yardstick*: which way won);
    *ceiling* is what this tiling can save at most, n² / computed entries; *2n/(n+1)* what any causal
    kernel can save at most, were the diagonal tiles free.
    """
    header = (
        f"{'dtype':>7} {'n':>5} {'full+mask':>10} {'unmasked':>9} {'tiled':>8} {'vs mask':>8} "
        f"{'vs unmasked':>11} {'ceiling':>8} {'2n/(n+1)':>8} {'computed':>8} {'GFLOP/s':>7} {'of matmul':>9} "
        f"{'tiled peak':>10} {'/ full':>7}  yardstick"
    )
    lines = [header, f"{'':>13} {'(ms)':>10} {'(ms)':>9} {'(ms)':>8}"]
    for r in rows:
        lines.append(
            f"{r['dtype']:>7} {r['n']:>5} {r['full_seconds'] * 1e3:>10.1f} {r['unmasked_seconds'] * 1e3:>9.1f} "
            f"{r['tiled_seconds'] * 1e3:>8.1f} {r['speedup']:>7.2f}× {r['speedup_over_unmasked']:>10.2f}× "
            f"{r['tiling_ceiling']:>7.3f}× {r['theoretical_speedup']:>7.3f}× {r['computed_fraction']:>8.1%} "
            f"{r['tiled_gflops']:>7.1f} {r['roofline_fraction']:>9.0%} {r['tiled_peak_bytes'] / 2**20:>6.2f} MiB "
            f"{r['memory_ratio']:>7.4f}  {r['unmasked_way']}"
        )
    return "\n".join(lines)


@idle_while_grading(dict)
def time_by_tile_size(
    n: int, blocks, d: int = 64, repeats: int = 3, seed: int = 0, threads: int | None = 1
) -> dict[int, float]:
    """Seconds (best of ``repeats`` runs) of the tiled kernel at one n for each tile size: the cost of many small tiles.

    Like the benchmark, it runs with ``threads`` BLAS threads (see ``benchmarks.blas_threads``).
    """
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((n, d)) for _ in range(3))
    with blas_threads(threads):
        return _time_each(q, k, v, blocks, repeats)


def _time_each(q, k, v, blocks, repeats) -> dict[int, float]:
    seconds = {}
    for block in blocks:
        runs = []
        for _ in range(repeats):
            start = time.perf_counter()
            blocked_causal_attention(q, k, v, int(block))
            runs.append(time.perf_counter() - start)
        seconds[int(block)] = float(np.min(runs))  # the run least disturbed by other work on the machine
    return seconds
