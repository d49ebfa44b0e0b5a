"""Warm grading kernels (kernel_supply.KernelSupply): the next submission's kernel boots while one is graded,
with the same limits and nothing of anyone's; kernel_launch's --preload; the grading kernels' options."""

from __future__ import annotations

import subprocess
import sys

import psutil
from course import REPO

from autograde.kernel import kernel_client, kernel_supply, remote_calls
from autograde.kernel import zygote
from autograde.kernel.kernel_manager import KERNEL_OPTIONS, SandboxedKernelManager

LAUNCHER = REPO / "autograde" / "inside" / "kernel_launch.py"


def test_preload_imports_first_then_runs_the_module_in_the_same_process_under_the_limits(tmp_path):
    (tmp_path / "report_kernel.py").write_text(
        "import os, resource, sys\n"
        "print('json' in sys.modules, sys.argv[1:], os.environ['OPENBLAS_NUM_THREADS'],\n"
        "      resource.getrlimit(resource.RLIMIT_DATA)[0] == 300 * 2**20, sep='|')\n"
    )
    run = subprocess.run(
        [
            sys.executable,
            str(LAUNCHER),
            "--memory-mb=300",
            "--preload=json",
            "--",
            sys.executable,
            "-m",
            "report_kernel",
            "-f",
            "conn.json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().split("|") == ["True", "['-f', 'conn.json']", "1", "True"], run.stdout


def test_grading_kernels_keep_no_history_and_build_no_tracebacks():
    manager = SandboxedKernelManager(kernel_name="python3")
    try:
        manager.write_connection_file()
        command = manager.format_kernel_cmd()
        assert all(option in command for option in KERNEL_OPTIONS)
        manager.cgroups.remove()
        manager.preload = kernel_client.PRELOAD
        if manager.forked:  # root: forked from the zygote, which imported them before any kernel
            assert set(kernel_client.PRELOAD) <= set(zygote.PRELOAD)
            manager.format_kernel_cmd()
            assert manager._request["args"][-len(KERNEL_OPTIONS) :] == list(KERNEL_OPTIONS)
            manager.cgroups.remove()
        manager.forked = False  # a kernel started on its own (not root, or no bubblewrap)
        command = manager.format_kernel_cmd()
        assert all(option in command for option in KERNEL_OPTIONS)
        assert f"--preload={','.join(kernel_client.PRELOAD)}" in command
        assert "--no-debugger" in command, "a grading kernel is never debugged"
        manager.cgroups.remove()
        manager.preload = ()
        assert not any(part.startswith("--preload") for part in manager.format_kernel_cmd()), "only when asked"
    finally:
        manager.cleanup_resources()


def _probe(kernel: kernel_client.StudentKernel, code: str) -> str:
    run = kernel.run(code, 60)
    assert run.error is None, run.outputs
    return run.stdout.strip()


def test_each_submission_gets_a_fresh_kernel_started_ahead_with_the_same_limits():
    with kernel_supply.KernelSupply() as supply:
        assert kernel_supply.kernel_supply() is supply
        first = supply.take(memory_mb=1024, cpu_seconds=300)
        spare = supply.spare
        assert spare is not None and spare is not first and spare.limits == (1024, 300)
        assert not spare.usable, "a spare is not connected (and not sealed) before its submission"
        state = (
            "import os, sys; print(os.getuid(), 'numpy' in sys.modules, 'heads_and_masks' in sys.modules, "
            "'secret' in globals(), sorted(os.listdir('/tmp')))"
        )
        uid, numpy_in, package_in, _, _ = _probe(first, state).split(" ", 4)
        assert (numpy_in, package_in) == ("True", "True"), "the kernel starts with numpy and the stub package"
        debugger = "import sys, ipykernel.debugger as d; print(d._is_debugpy_available, sys.modules.get('debugpy'))"
        assert _probe(first, debugger) == "False None", "no debugger: debugpy is never imported"
        _probe(first, "secret = 42\nopen('/tmp/left-by-a-student', 'w').write('x')")
        first.shutdown()

        second = supply.take(memory_mb=1024, cpu_seconds=300)
        assert second is spare and supply.spare is not None and supply.spare is not second
        uid2, _, _, has_secret, files = _probe(second, state).split(" ", 4)
        assert uid2 != uid, "every kernel has a uid of its own"
        assert has_secret == "False" and "left-by-a-student" not in files, "nothing of another submission"
        second.shutdown()

        left = supply.spare
        third = supply.take(memory_mb=512, cpu_seconds=300)  # other limits: the spare is thrown away
        assert third is not left and third.limits == (512, 300) and not left.manager.is_alive()
        third.shutdown()
        last_spare = supply.spare.manager.provisioner.process.pid
    assert kernel_supply.kernel_supply() is not supply and supply.spare is None
    assert not psutil.pid_exists(last_spare) or psutil.Process(last_spare).status() == psutil.STATUS_ZOMBIE


def test_outside_a_supply_the_judge_starts_each_kernel_when_needed():
    supply = kernel_supply.kernel_supply()
    assert supply.prestart is False and supply.spare is None


def test_a_retired_kernel_ends_at_once_and_is_gone_when_the_supply_closes():
    with kernel_supply.KernelSupply() as supply:
        kernel = supply.take(memory_mb=1024, cpu_seconds=300)
        runtime, cgroups = kernel.manager.runtime, list(kernel.manager.cgroups.folders)
        supply.retire(kernel)  # the worker goes on; the kernel's shutdown finishes in the background
        try:
            kernel.run("1", 5)
            raise AssertionError("a retired kernel still ran a cell")
        except kernel_client.KernelGone:
            pass
    assert not runtime.exists(), "its socket folder is removed by the time the supply closes"
    assert not [folder for folder in cgroups if folder.exists()], "and its cgroups"


def test_a_judges_call_leaves_its_arguments_out_of_the_kernels_code():
    """A call's request (its arguments: arrays of tens of kilobytes) reaches the kernel beside the code,
    not in it: IPython keeps the source of every cell it runs (linecache, for tracebacks) for the kernel's
    life, and tokenizes, parses and hashes all of it first. Twenty calls on 20,000 numbers each must
    add about nothing to the kernel's stored sources (in the code they added 4.3 million characters), and still be
    answered, with the arguments intact."""
    import numpy as np

    kernel = kernel_client.StudentKernel(1024, 300)
    try:
        assert kernel.run(kernel_client.HARNESS, 30).error is None
        assert kernel.run("def total(x):\n    return float(x.sum())\n", 30).error is None
        stored = "import linecache\nprint(sum(len(''.join(v[2])) for v in linecache.cache.values() if len(v) > 2))"
        before = int(_probe(kernel, stored))
        function = remote_calls.RemoteFunction(kernel, "total", remote_calls.Budget(120, 60))
        rng = np.random.default_rng(7)
        for _ in range(20):
            x = rng.standard_normal(20_000)
            assert function(x) == float(x.sum())
        grown = int(_probe(kernel, stored)) - before
        assert grown < 20_000, f"the kernel stored {grown:,} more characters of code for 20 calls"
    finally:
        kernel.shutdown()


def test_a_calls_memory_is_read_from_outside_and_memory_freed_earlier_does_not_hide_it():
    """The grader reads how far a kernel's memory grew during a call, from outside the kernel (its cgroup; or, for
    a grader that is not root, its processes' peak resident sets in /proc). A 16 MB array the call makes counts even
    after an earlier cell freed larger ones (glibc, left to raise its mmap threshold, served it from that freed
    memory, unseen: 0.24 MiB measured for a 16 MiB mask); a call that makes nothing grows by about nothing."""
    from autograde.kernel.resources import MemoryMeter

    kernel = kernel_client.StudentKernel(1024, 300)
    try:
        assert kernel.run(kernel_client.HARNESS, 30).error is None
        made = "import numpy as np\ndef make(n):\n    return float(np.ones(n).sum())\ndef same(x):\n    return x\n"
        freed = "big = np.ones(4_000_000)\ndel big\nmiddle = np.ones(3_000_000)\ndel middle\n"  # 30 MiB, then 23 MiB
        assert kernel.run(made + freed, 30).error is None
        budget = remote_calls.Budget(120, 60)
        make, same = (
            remote_calls.RemoteFunction(kernel, "make", budget),
            remote_calls.RemoteFunction(kernel, "same", budget),
        )
        assert make(2_000_000) == 2_000_000.0
        assert make.last_peak_bytes >= 15 * 2**20, f"a 16 MB array measured as {make.last_peak_bytes:,} bytes"
        assert same(1.0) == 1.0
        assert same.last_peak_bytes < 2 * 2**20, f"a call making nothing grew by {same.last_peak_bytes:,} bytes"
        process = kernel.manager.provisioner.process  # and the meter of a grader without cgroups: /proc
        kernel.meter = MemoryMeter(None, process.pid)
        assert make(2_000_000) == 2_000_000.0
        # resident pages, counted from the resident set at the call's start: a little under the array's 16 MB
        assert make.last_peak_bytes >= 14 * 2**20, f"/proc: a 16 MB array measured as {make.last_peak_bytes:,} bytes"
    finally:
        kernel.shutdown()
