"""What 04's tiled kernel costs at a large n, in a real grading kernel of 04: for every correct answer of the
catalog (and the solution) its time and the kernel's *total* memory, and for the answers that hold the whole score
matrix (a ballast among them) whether they fit. The figures behind 04's memory limit (docs/security.md).

    python tools/memory_budget.py                         every answer, n = 4096, 8192, 16384 (d = 16, block = 64)
    python tools/memory_budget.py --answers loops ballast some answers only (a part of the name is enough)
    python tools/memory_budget.py --sizes 8192,8,80       n,d,block: other sizes
    python tools/memory_budget.py --as-mb 1024 --cgroup-mb 512 --data-mb 512    under limits (else 04's own)

Each answer gets a kernel of its own, made as grading makes it (``kernel_client.StudentKernel``: sandbox, uid, cgroup,
zygote as root), runs its answer cell, then one call per size through the judge's ``RemoteFunction`` (the
arguments and the reply travel as in grading). Per call it prints the wall time, the growth the memory test reads
(``MemoryMeter``), and the kernel's totals: as root its memory cgroup's peak during the call (what the cgroup's
limit bounds), and the kernel process's peak virtual size (``VmPeak``, what RLIMIT_AS bounds), peak resident set
(``VmHWM``) and data size after the call (``VmData``, what RLIMIT_DATA bounds). An answer that ran out of memory
says where. Not part of ``make test``: it grades nothing, and it takes minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]

ASSIGNMENT = "04_work_fraction"
SIZES = [(4096, 16, 64), (8192, 16, 64), (16384, 16, 64)]
MIB = 2**20

# Answers that hold every score at once, beyond the catalog's float64 one: the cheapest forms a check accepts.
WHOLE_MATRIX_FLOAT32 = """
def blocked_causal_attention(q, k, v, block):
    if block < 1 or not (len(q) == len(k) == len(v)):
        raise ValueError("bad arguments")
    n, d = q.shape
    scores = q.astype(np.float32) @ k.T.astype(np.float32)     # n x n float32, one matrix, softmax in place
    scores *= np.float32(1 / np.sqrt(d))
    for i in range(n):
        scores[i, i + 1:] = -np.inf
    scores -= scores.max(axis=1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=1, keepdims=True)
    counted = sum((min(s + block, n) - s) * min(s + block, n) for s in range(0, n, block))
    return scores @ v.astype(np.float32), counted
"""

# The causal scores only (row i keeps i + 1 of them), packed in one float32 buffer: half the whole matrix.
PACKED_TRIANGLE_FLOAT32 = """
def blocked_causal_attention(q, k, v, block):
    if block < 1 or not (len(q) == len(k) == len(v)):
        raise ValueError("bad arguments")
    n, d = q.shape
    q32, k32 = q.astype(np.float32) / np.float32(np.sqrt(d)), k.astype(np.float32)
    packed = np.empty(n * (n + 1) // 2, np.float32)             # every allowed score, held at once
    starts = np.concatenate([[0], np.cumsum(np.arange(1, n + 1))])
    for i in range(n):
        np.matmul(k32[: i + 1], q32[i], out=packed[starts[i] : starts[i + 1]])
    out = np.empty((n, v.shape[1]))
    for i in range(n):
        row = packed[starts[i] : starts[i + 1]]
        w = np.exp(row - row.max())
        out[i] = (w / w.sum()) @ v[: i + 1]
    counted = sum((min(s + block, n) - s) * min(s + block, n) for s in range(0, n, block))
    return out, counted
"""

# The same, in a shared mapping (RLIMIT_DATA counts private memory only; the scan marks `mmap` for review).
PACKED_TRIANGLE_FLOAT32_SHARED = PACKED_TRIANGLE_FLOAT32.replace(
    "packed = np.empty(n * (n + 1) // 2, np.float32)",
    "packed = np.frombuffer(__import__('mmap').mmap(-1, 2 * n * (n + 1)), np.float32)",
)

# A tiled kernel with an n x n boolean mask beside its tiles (n / (8 block) strips of memory): honest about its
# work, not about its memory. Measured to show where it stands, not graded here.
TILES_AND_A_BOOL_MASK = """
def blocked_causal_attention(q, k, v, block):
    if block < 1 or not (len(q) == len(k) == len(v)):
        raise ValueError("bad arguments")
    n, d = q.shape
    allowed = np.tril(np.ones((n, n), bool))                   # n x n booleans, beside the tiles
    out = np.zeros((n, v.shape[1]))
    computed = 0
    for qs in range(0, n, block):
        qe = min(qs + block, n)
        s = q[qs:qe] @ k[:qe].T / np.sqrt(d)
        computed += s.size
        s = np.where(allowed[qs:qe, :qe], s, -np.inf)
        w = np.exp(s - s.max(axis=1, keepdims=True))
        out[qs:qe] = w / w.sum(axis=1, keepdims=True) @ v[:qe]
    return out, computed
"""


MATPLOTLIB_FIGURE = """
import matplotlib.pyplot as plt
figure, axes = plt.subplots(figsize=(6, 4))
axes.plot(np.arange(1000), np.random.default_rng(0).normal(size=1000).cumsum())
figure.savefig("/tmp/figure.png")
"""


def solution_source() -> str:
    """The solution notebook's answer cell, its solution markers dropped."""
    notebook = json.loads((REPO / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text())
    for cell in notebook["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "blocked_causal_attention":
            lines = "".join(cell["source"]).splitlines()
            return "\n".join(line for line in lines if "### BEGIN SOLUTION" not in line and "### END" not in line)
    raise LookupError("no blocked_causal_attention cell in the solution notebook")


def answers() -> dict[str, tuple[bool, str]]:
    """name: (correct, the answer cell's source), for every answer measured."""
    from catalog.attacks import BALLAST_ATTACKS
    from catalog.nb04_work_fraction import ANSWERS

    chosen = {"solution": (True, solution_source())}
    chosen.update({a.name: (True, a.source("blocked_causal_attention")) for a in ANSWERS if a.correct})
    # a learner's notebook that also drew with matplotlib (its libraries and its figure stay in the kernel)
    chosen["solution_after_a_matplotlib_figure"] = (True, MATPLOTLIB_FIGURE + solution_source())
    chosen["tiles_and_an_n_by_n_bool_mask"] = (True, TILES_AND_A_BOOL_MASK)
    full = next(a for a in ANSWERS if a.name == "full_score_matrix_built")
    chosen["full_score_matrix_built"] = (False, full.source("blocked_causal_attention"))
    chosen["whole_matrix_float32"] = (False, WHOLE_MATRIX_FLOAT32)
    chosen["packed_triangle_float32"] = (False, PACKED_TRIANGLE_FLOAT32)
    chosen["packed_triangle_float32_shared"] = (False, PACKED_TRIANGLE_FLOAT32_SHARED)
    chosen.update({attack.name: (False, attack.source) for attack in BALLAST_ATTACKS})
    return chosen


def _status(pid: int) -> dict[str, int]:
    """The memory fields of /proc/<pid>/status, in KiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name.startswith("Vm"):
            fields[name] = int(value.split()[0])
    return fields


def cpu_seconds_of(pid: int) -> float:
    """User and system CPU seconds of a process so far (the call's own, unlike its wall time on a busy machine)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def kernel_process(kernel) -> int | None:
    """The pid of the kernel's Python (the largest process under the one the grader started)."""
    meter = kernel.memory_meter()
    found = []
    for pid in meter._processes():
        try:
            found.append((_status(pid).get("VmHWM", 0), pid))
        except OSError:
            continue
    return max(found)[1] if found else None


def measure(name: str, correct: bool, source: str, sizes, seconds: float) -> None:
    """One kernel of 04 for the answer, one call per size; a row per call."""
    import numpy as np

    from autograde.kernel import kernel_client, remote_calls
    from heads_and_masks.tiled import blocked_causal_attention as reference

    memory_mb, cpu_seconds = kernel_client.kernel_limits(2048, 600, ASSIGNMENT)
    kernel = kernel_client.StudentKernel(memory_mb, cpu_seconds, assignment=ASSIGNMENT)
    try:
        ran = kernel.run("import numpy as np\n" + textwrap.dedent(source).strip("\n"), 120)
        if ran.error:
            print(f"| {name} | its cell: {ran.error} |", flush=True)
            return
        kernel.run(kernel_client.HARNESS, 30)
        pid = kernel_process(kernel)
        cgroup = kernel.manager.cgroups.memory_files() if kernel.manager.cgroups else None
        base = _status(pid)
        charged = int(cgroup[0].read_text()) / MIB if cgroup else float("nan")
        print(
            f"| {name} | before | | | | {charged:.0f} | {base['VmPeak'] / 1024:.0f} | {base['VmHWM'] / 1024:.0f} "
            f"| {base['VmData'] / 1024:.0f} | |",
            flush=True,
        )
        for n, d, block in sizes:
            function = remote_calls.RemoteFunction(
                kernel, "blocked_causal_attention", remote_calls.Budget(seconds, seconds)
            )
            rng = np.random.default_rng(n + d + block)
            q, k, v = (rng.normal(size=(n, d)) for _ in range(3))
            started, cpu_before = time.perf_counter(), cpu_seconds_of(pid)
            said, wall, cpu = "returned", None, float("nan")
            try:
                out, computed = function(q, k, v, block)
                wall = time.perf_counter() - started  # the call alone, as the test's budget sees it
                cpu = cpu_seconds_of(pid) - cpu_before
                expected, expected_count = reference(q, k, v, block)
                right = np.allclose(out, expected, rtol=1e-4, atol=1e-6) and computed == expected_count
                said = "right" if right else "WRONG"
            except (Exception, kernel_client.GradingStopped) as error:  # noqa: BLE001 - what the answer ran into is the figure
                said = f"{type(error).__name__}: {str(error)[:50]}"
            wall = wall if wall is not None else time.perf_counter() - started
            grown = function.last_peak_bytes
            peak = int(cgroup[1].read_text()) / MIB if cgroup and kernel.manager.is_alive() else float("nan")
            try:
                now = _status(pid)
            except OSError:
                now = {"VmPeak": 0, "VmHWM": 0, "VmData": 0}
            print(
                f"| {name} | {n}, {d}, {block} | {wall:.2f} s | {cpu:.2f} s | {(grown or 0) / MIB:.1f} | {peak:.0f} "
                f"| {now['VmPeak'] / 1024:.0f} | {now['VmHWM'] / 1024:.0f} | {now['VmData'] / 1024:.0f} | {said} |",
                flush=True,
            )
            if not kernel.usable or not kernel.manager.is_alive():
                print(f"| {name} | the kernel is gone | | | | | | | | |", flush=True)
                break
    finally:
        kernel.shutdown()


def measure_notebook(seconds: float) -> None:
    """The solution notebook's own cells (every code cell but the tests, as grading runs them) in one kernel of
    04: the kernel's totals after each cell, and what a cell ran into. Its peak is the least a limit must allow."""
    from autograde.kernel import kernel_client

    notebook = json.loads((REPO / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text())
    memory_mb, cpu_seconds = kernel_client.kernel_limits(2048, 600, ASSIGNMENT)
    kernel = kernel_client.StudentKernel(memory_mb, cpu_seconds, assignment=ASSIGNMENT)
    try:
        pid = kernel_process(kernel)
        cgroup = kernel.manager.cgroups.memory_files() if kernel.manager.cgroups else None
        for index, cell in enumerate(notebook["cells"]):
            grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
            if cell["cell_type"] != "code" or grade_id.startswith("test_"):
                continue
            lines = "".join(cell["source"]).splitlines()
            source = "\n".join(line for line in lines if "### BEGIN SOLUTION" not in line and "### END" not in line)
            started = time.perf_counter()
            ran = kernel.run(source, seconds)
            wall = time.perf_counter() - started
            peak = int(cgroup[1].read_text()) / MIB if cgroup else float("nan")  # never reset here: since the start
            now = _status(pid)
            print(
                f"| cell {index} {grade_id} | {wall:.2f} s | {peak:.0f} | {now['VmPeak'] / 1024:.0f} "
                f"| {now['VmHWM'] / 1024:.0f} | {now['VmData'] / 1024:.0f} | {ran.error or 'ran'} |",
                flush=True,
            )
    finally:
        kernel.shutdown()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--answers", nargs="*", default=[], help="answers whose name contains one of these")
    parser.add_argument("--sizes", nargs="*", default=[], help="n,d,block (default: 4096, 8192, 16384)")
    parser.add_argument("--seconds", type=float, default=300, help="the most one call may take")
    parser.add_argument("--data-mb", type=int, help="RLIMIT_DATA of the kernels (default: 04's own)")
    parser.add_argument("--as-mb", type=int, help="RLIMIT_AS of the kernels (default: 04's own)")
    parser.add_argument("--cgroup-mb", type=int, help="as root, the kernels' memory cgroup (default: 04's own)")
    parser.add_argument("--no-zygote", action="store_true", help="kernels started as a grader without root starts them")
    parser.add_argument("--notebook", action="store_true", help="the solution notebook's own cells instead")
    args = parser.parse_args()
    sizes = [tuple(int(x) for x in size.split(",")) for size in args.sizes] or SIZES
    from autograde.kernel import kernel_client
    from autograde.kernel.sandbox import sandbox_available

    limits = kernel_client.kernel_memory(ASSIGNMENT)
    limits = kernel_client.KernelMemory(
        data_mb=args.data_mb if args.data_mb is not None else limits.data_mb,
        address_space_mb=args.as_mb if args.as_mb is not None else limits.address_space_mb,
        cgroup_mb=args.cgroup_mb if args.cgroup_mb is not None else limits.cgroup_mb,
    )
    kernel_client.KERNEL_MEMORY[ASSIGNMENT] = limits
    if args.no_zygote:  # each kernel through kernel_launch.py in bubblewrap, as without root (limits and imports)
        import autograde.kernel.sandbox

        autograde.kernel.sandbox.forked_kernels = lambda: False
    print(
        f"# 04's kernels: {limits}; {'root' if os.geteuid() == 0 else 'not root: no cgroup'}; "
        f"sandbox: {sandbox_available()}; {'no zygote' if args.no_zygote else 'zygote if root'}"
    )
    if args.notebook:
        print(
            "| the solution notebook's cell | wall | cgroup peak MiB | VmPeak MiB | VmHWM MiB | VmData MiB | result |"
        )
        print("|---|---|---|---|---|---|---|")
        measure_notebook(args.seconds)
        return 0
    print(
        "| answer | n, d, block | wall | CPU | growth MiB | cgroup peak MiB | VmPeak MiB | VmHWM MiB | VmData MiB | result |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, (correct, source) in answers().items():
        if args.answers and not any(part in name for part in args.answers):
            continue
        measure(name, correct, source, sizes, args.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
