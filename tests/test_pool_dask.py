"""The pool on an existing Dask cluster (``--scheduler``): two worker processes, workers killed mid-run.

A local cluster of two worker processes, made here as an instructor would start one (``allowed-failures``
1 on its scheduler), and two grading runs on it. In the first, a watcher kills the worker process that
holds the submission ``first`` once, mid-run: it must be graded all the same (elsewhere, or after the
worker's restart), like the others. In the second, the watcher kills whichever worker holds the
``kills_its_worker`` submission, every time: it must end as "kernel died" with a plain note after two
tries, not go round forever. And the local cluster (no ``--scheduler``): a worker killed as the first result
comes in costs nothing either.
"""

from __future__ import annotations

import copy
import os
import signal
import threading
import time

import nbformat
import pytest

from course import grade_class, require_sandbox
from submissions import submission

pytestmark = pytest.mark.slow
ASSIGNMENT = "00_start_here"


def _kill_holders(client, victims: dict[str, int], once: set[str], stop: threading.Event) -> None:
    """Kill (SIGKILL) the worker process that holds a victim's task; ``once``: victims killed only once."""
    while not stop.is_set():
        try:
            processing = client.processing()
        except Exception:  # noqa: BLE001 - the cluster is between states: look again
            processing = {}
        for address, keys in processing.items():
            for student in victims:
                if student in once and victims[student]:
                    continue
                if any(f"-{student}-" in str(key) for key in keys):
                    pid = client.run(os.getpid, workers=[address], on_error="ignore").get(address)
                    if pid:
                        os.kill(pid, signal.SIGKILL)
                        victims[student] += 1
                        time.sleep(1.0)  # let the scheduler notice before looking again
        time.sleep(0.1)


def _grade_while_killing(client, hand_ins: dict, victims: dict[str, int], once: set[str], root, scheduler):
    stop = threading.Event()
    watcher = threading.Thread(target=_kill_holders, args=(client, victims, once, stop), daemon=True)
    watcher.start()
    try:
        return grade_class(ASSIGNMENT, hand_ins, root, scheduler=scheduler)
    finally:
        stop.set()
        watcher.join()


def test_a_dying_worker_costs_only_its_submission(tmp_path):
    require_sandbox()
    import dask
    from distributed import Client, LocalCluster
    from distributed.security import Security

    from autograde.cluster import ALLOWED_FAILURES

    solved = submission(ASSIGNMENT, {})
    # The cluster speaks TLS (a plain tcp:// one is refused without --insecure-scheduler); the coordinator
    # finds its certificate in Dask's configuration, as docs/instructors.md tells an instructor to set it.
    security = Security.temporary()
    with dask.config.set(
        {
            "distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
            "distributed.scheduler.worker-saturation": 1.0,
            "distributed.comm.tls.ca-file": security.tls_ca_file,
            "distributed.comm.tls.client.cert": security.tls_client_cert,
            "distributed.comm.tls.client.key": security.tls_client_key,
        }
    ):
        cluster = LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, memory_limit=0, host="127.0.0.1", security=security
        )
        with cluster, Client(cluster, set_as_default=False) as client:
            assert cluster.scheduler_address.startswith("tls://"), cluster.scheduler_address
            _grade_on_an_existing_cluster(tmp_path, solved, cluster, client)


def _grade_on_an_existing_cluster(tmp_path, solved, cluster, client):
    from autograde.cluster import ALLOWED_FAILURES

    # a class: the worker grading `first` is killed once, mid-run
    victims = {"first": 0}
    run = _grade_while_killing(
        client,
        {"first": solved, "second": solved, "third": solved},
        victims,
        {"first"},
        tmp_path / "class",
        cluster.scheduler_address,
    )
    assert victims["first"] == 1, "the watcher never caught `first` on a worker: nothing was tested"
    for student, result in run.results.items():
        log = run.course.path("autograded").parent / "logs" / ASSIGNMENT / f"{student}.log"
        assert result.status == "graded" and result.autograded_total == result.autograded_max > 0, (
            result.line() + "\n" + log.read_text()[-3000:]
        )
    # every worker, restarted ones too, holds its kernel supply (warm kernels), not kernels on demand
    held = client.run(lambda: __import__("autograde.judge", fromlist=["*"]).kernel_supply().prestart)
    assert held and all(held.values()), held

    # a submission whose worker dies every time it is graded ends, with a status that says so
    victims = {"kills_its_worker": 0}
    # a cell of its own that takes 3 s: each try stays on a worker long enough for the watcher to see it
    # (a quick try, retried on a warm kernel, could be graded between two looks: nothing tested)
    slow = copy.deepcopy(solved)
    slow.cells.append(nbformat.v4.new_code_cell("import time\ntime.sleep(3)"))
    run = _grade_while_killing(
        client, {"kills_its_worker": slow}, victims, set(), tmp_path / "poison", cluster.scheduler_address
    )
    poisoned = run.results["kills_its_worker"]
    assert victims["kills_its_worker"] == ALLOWED_FAILURES + 1, victims
    assert poisoned.status == "kernel died" and poisoned.total == 0, poisoned.line()
    assert f"died each of the {ALLOWED_FAILURES + 1} times" in poisoned.line()
    # one submission on a cluster of two: no worker booted a kernel it had nothing to grade with (the worker
    # that graded the last try starts no spare after it; the others were never asked to start one)
    # (the last worker killed may still be coming back: wait for both, or client.run asks nobody)
    client.wait_for_workers(2, timeout=120)
    spares = client.run(lambda: __import__("autograde.judge", fromlist=["*"]).kernel_supply().spare is not None)
    assert spares and not any(spares.values()), f"spare kernels held after a one-submission run: {spares}"


def _local_workers() -> list:
    """The worker processes of this process's local cluster: the forks of its fork server."""
    import psutil

    def command(process) -> str:  # a child that just ended (a zombie, or gone) has none
        try:
            return " ".join(process.cmdline())
        except psutil.Error:
            return ""

    servers = [p for p in psutil.Process().children() if "forkserver" in command(p)]
    return [worker for server in servers for worker in server.children() if command(worker)]


def test_a_dying_local_worker_costs_only_its_submission(tmp_path):
    """The local cluster (no ``--scheduler``): as the first result comes in, a worker process is killed; every
    submission is graded all the same (what the run shares with its workers is not lost with it)."""
    require_sandbox()
    solved = submission(ASSIGNMENT, {})
    killed: list[int] = []

    def kill_a_worker(result) -> None:
        if not killed:
            victim = _local_workers()[0]
            victim.kill()
            killed.append(victim.pid)

    run = grade_class(
        ASSIGNMENT, {f"student{i}": solved for i in range(4)}, tmp_path / "class", on_result=kill_a_worker
    )
    assert killed, "no worker was killed: nothing was tested"
    for result in run.results.values():
        assert result.status == "graded" and result.autograded_total == result.autograded_max > 0, result.line()


def test_a_local_worker_per_core_keeps_to_a_core_of_its_own(tmp_path):
    """One local worker per core: worker i (and its zygote and kernels, which inherit it) runs on core i, so a
    worker and its kernel, which take turns, stay on one core. Fewer workers than cores are not pinned."""
    from autograde.cluster import dask_client

    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip("one core: nothing to pin")

    def affinities(workers: int) -> list:
        with dask_client(None, workers, tmp_path / f"workers-{workers}.log", None, tmp_path) as client:
            client.wait_for_workers(workers, timeout=120)
            return sorted(map(tuple, client.run(every_threads_cores).values()))

    def every_threads_cores() -> list:  # the cores of a worker's threads, which must all agree
        threads = {tuple(sorted(os.sched_getaffinity(int(tid)))) for tid in os.listdir("/proc/self/task")}
        assert len(threads) == 1, f"a worker's threads keep to different cores: {threads}"
        return list(threads.pop())

    assert affinities(len(cores)) == [(core,) for core in cores], "each worker on a core of its own"
    assert affinities(1) == [tuple(cores)], "a lone worker uses every core"


# What ``python -m autograde.grade autograde`` does: the fork server first, started before the nanny sets the
# workers' environment, then the local cluster. Run in a process of its own: this one's fork server, if
# running, was started however an earlier test started it.
BLAS_THREADS_OF_LOCAL_WORKERS = """
import ctypes, sys, tempfile
from pathlib import Path

from autograde.worker import fork_server

fork_server.start()
from autograde.cluster import dask_client


def blas_threads():
    import numpy  # loads OpenBLAS, if numpy uses it

    libraries = {line.split()[-1] for line in open("/proc/self/maps") if "openblas" in line.lower()}
    for library in sorted(libraries):
        for symbol in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_", "openblas_get_num_threads"):
            function = getattr(ctypes.CDLL(library), symbol, None)
            if function is not None:
                return function()
    return None


with tempfile.TemporaryDirectory() as name:
    folder = Path(name)
    with dask_client(None, 2, folder / "workers.log", None, folder) as client:
        client.wait_for_workers(2, timeout=120)
        print(sorted(map(str, client.run(blas_threads).values())))
"""


def test_a_local_worker_has_one_blas_thread():
    """A local worker's numpy runs one BLAS thread (Dask's nanny environment, which the fork server sets before
    distributed imports numpy). With more, OpenBLAS's idle threads spin after each product the judge computes,
    on the core the student's kernel needs: grading 04 with a worker per core took 45 % more CPU."""
    import subprocess
    import sys

    found = subprocess.run(
        [sys.executable, "-c", BLAS_THREADS_OF_LOCAL_WORKERS], capture_output=True, text=True, timeout=300
    )
    assert found.returncode == 0, found.stderr[-2000:]
    threads = found.stdout.strip().splitlines()[-1]
    if threads == "['None', 'None']":
        pytest.skip("numpy here does not use OpenBLAS")
    assert threads == "['1', '1']", f"BLAS threads of the two local workers: {threads}"
