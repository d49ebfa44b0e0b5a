"""The Dask pool a class run grades on: a local cluster of its own, or an existing one reached over TLS, and the
plugin that makes each of its workers ready to grade (``GradingWorker``). What the run sends it and does with what
comes back is ``pool.py``'s.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

from distributed.diagnostics.plugin import WorkerPlugin

from .run_folder import GradingStopped, run_folder, worker_folders
from .worker import fork_server

# A submission is graded at most this many times more when the worker grading it dies (Dask's
# ``distributed.scheduler.allowed-failures``, set for the local cluster; an existing cluster has its own).
ALLOWED_FAILURES = 1


class GradingWorker(WorkerPlugin):
    """Makes a Dask worker ready to grade, as it starts (a worker plugin: each local worker is made with it,
    before it joins the scheduler; an existing cluster has it registered):
    nbgrader imported and the course package without its reference implementations made
    (``stub_package.shared_stub_package``), once per worker process, before its first submission; and
    the worker's kernel supply (``kernel_supply.KernelSupply``), held until the worker stops (on an existing
    cluster, or until a later run registers the plugin again). On the local cluster (``log``), what the
    worker and its kernels print goes to the course's log instead of the instructor's terminal; with
    ``pin`` (a local worker per core), worker *i* and everything it starts (its zygote, its kernels) keep
    to core *i*."""

    name = "heads-and-masks-grading-worker"

    def __init__(
        self,
        log: Path | None = None,
        kernel_limits: tuple[int, int] | None = None,
        pin: bool = False,
        assignment: str | None = None,
    ):
        self.log = str(log) if log else None
        self.kernel_limits = kernel_limits  # the run's (kernel_client.kernel_limits): its first kernel starts at once
        self.assignment = assignment  # the run's: its kernels import that notebook's allowlist (kernel_package.py)
        self.kernels = None
        self.pin = pin

    def setup(self, worker) -> None:
        import nbgrader.converters  # noqa: F401 - imported once per worker, not per submission

        from .course import share_gradebook_engines
        from .kernel.kernel_supply import KernelSupply
        from .kernel.stub_package import shared_stub_package

        share_gradebook_engines()
        worker_folders()  # a worker of an existing cluster: folders of its own, as a run's (run_folder.py)
        if self.pin and isinstance(worker.name, int):
            # A worker and its kernel take turns (one waits while the other computes): on a core of their own,
            # the pair neither migrates nor collides with the other pair (7 % less wall time on two cores).
            # Only a local worker per core is pinned; a lone worker uses every core.
            cores = sorted(os.sched_getaffinity(0))
            core = {cores[worker.name % len(cores)]}
            for thread in os.listdir("/proc/self/task"):  # every thread: affinity is a thread's, not a process's
                with contextlib.suppress(OSError):
                    os.sched_setaffinity(int(thread), core)

        if self.log:
            descriptor = os.open(self.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            os.dup2(descriptor, 1)
            os.dup2(descriptor, 2)
            os.close(descriptor)
        shared_stub_package(self.assignment)
        # Warm kernels: each submission's sandboxed kernel boots while the one before is graded. One
        # supply per worker process, for its lifetime (a worker grades one submission at a time).
        self.kernels = KernelSupply()
        self.kernels.__enter__()
        if self.kernel_limits:  # it boots while the worker receives its first submission and nbgrader starts
            self.kernels.prepare(*self.kernel_limits, self.assignment)

    def teardown(self, worker) -> None:
        import gc

        from distributed.core import Status as WorkerStatus

        if self.kernels is not None:
            kernels, self.kernels = self.kernels, None
            kernels.__exit__(None, None, None)  # the spare kernel shut down
        if worker.status in (WorkerStatus.closing, WorkerStatus.closing_gracefully):
            # The worker is exiting (not just replacing this plugin for the next run): frozen, the heap
            # nbgrader's imports built is not collected again on the way out (2 s in
            # the old pool's workers).
            gc.freeze()


class InsecureScheduler(ValueError):
    pass


def scheduler_security(address: str, insecure: bool = False):
    """The TLS settings to reach an existing cluster at ``address``: Dask's configuration
    (``distributed.comm.tls.*``, docs/instructors.md). A plain TCP address is refused unless ``insecure``:
    anyone who reaches it (on a shared JupyterHub host, every student, over loopback too) would run code as
    the instructor and receive the grading key and the hidden tests sent to the workers."""
    from distributed.comm import parse_address
    from distributed.security import Security

    scheme, _rest = parse_address(address)
    security = Security()  # from dask's configuration
    if scheme == "tls":
        if not (security.tls_ca_file and security.tls_client_cert):
            raise InsecureScheduler(
                f"{address} speaks TLS, but no TLS settings are configured for this client: set "
                "distributed.comm.tls.ca-file, distributed.comm.tls.client.cert and .key (see docs/instructors.md)"
            )
        return security
    if not insecure:
        raise InsecureScheduler(
            f"{address} is plain {scheme.upper()}: whoever can reach it, on this machine or the network, can run "
            "code as you and read the grading key and hidden tests the run sends its workers. Start the cluster "
            "with TLS and pass its tls:// address (docs/instructors.md), or pass --insecure-scheduler if every "
            "user and machine that can reach it is trusted."
        )
    return security


@contextlib.contextmanager
def dask_client(
    scheduler: str | None,
    workers: int,
    log: Path,
    kernel_limits: tuple[int, int] | None = None,
    stub_folder: Path | None = None,
    security=None,
    submissions: int | None = None,
    assignment: str | None = None,
):
    """A Dask client: on an existing cluster at ``scheduler``, or on a local cluster of ``workers`` processes
    (whose workers print into ``log``); each worker starts a kernel with ``kernel_limits`` as it joins (on an
    existing cluster, only when the run's ``submissions`` are at least its worker threads).
    The local workers' kernels import the stub package of ``assignment`` kept in ``stub_folder`` (else one made
    for this run).

    Whoever can talk to a cluster's scheduler, nannies or workers runs code as the instructor (Dask runs the
    functions it is sent): the local cluster speaks only mutual TLS with a certificate made in memory for this
    run (no other process has it, even on this machine), and has no dashboard (its pages name the students and
    answer anyone). An existing cluster must speak TLS too: ``security`` is what ``scheduler_security`` gave."""
    import dask
    from distributed import Client, LocalCluster
    from distributed.utils import get_mp_context

    from .kernel.stub_package import STUB_ENV, kept_stub_package, shared_stub_package
    from .tool_env import tool_env

    if scheduler:
        with Client(
            scheduler,
            security=security if security is not None else scheduler_security(scheduler),
            set_as_default=False,
        ) as client:
            # A worker boots a kernel as the plugin reaches it: worth it only when every worker will have a
            # submission to grade, not on a cluster of a hundred workers for a handful of submissions.
            slots = sum(client.nthreads().values())
            warm = submissions is None or submissions >= slots
            client.register_plugin(GradingWorker(kernel_limits=kernel_limits if warm else None, assignment=assignment))
            yield client
        return
    environment = tool_env(headless=True)
    env = {
        "PATH": environment["PATH"],
        "MPLBACKEND": environment["MPLBACKEND"],
        STUB_ENV: str(kept_stub_package(stub_folder, assignment) if stub_folder else shared_stub_package(assignment)),
    }  # the stub package made once here (or kept from the last run), for every worker
    # Every temporary file of the run, in every process of the cluster, goes in one folder of this process's,
    # removed when the run ends, however it ends (run_folder.py): the workers' temporary folder is in it.
    # Dask's scratch folder is in it too, ours alone (0700, a name no one can guess). Dask's default is
    # <tmp>/dask-scratch-space, used as found when we may write there, and put on the module path of
    # every process of the cluster: a student who made it first, writable by all, runs code as us.
    with (
        run_folder() as run,
        dask.config.set(
            {
                "temporary-directory": str(run.files / "dask"),
                "distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
                "distributed.scheduler.worker-saturation": 1.0,
                "distributed.worker.profile.enabled": False,  # no stack sampling next to the kernels
                # Each process of the cluster wakes 50 times a second to see whether its event loop is blocked
                # (a diagnostic), and samples the machine's use twice a second; a worker on a core of its own
                # takes it from its kernel. Idle, a cluster of 2 workers took 0.07 cores with the defaults and
                # 0.011 with these; stealing work does nothing where the scheduler queues the submissions.
                "distributed.admin.tick.interval": "1s",
                "distributed.admin.system-monitor.interval": "5s",
                "distributed.scheduler.work-stealing": False,
                # Each scheduler and worker still serves HTTP (no dashboard is not no server): its pages list the
                # tasks, named after the students, and its metrics, to anyone on the machine. Nothing is served.
                "distributed.scheduler.http.routes": [],
                "distributed.worker.http.routes": [],
                # for as long as the cluster lives: a worker restarted after a crash is forked the same way
                "distributed.worker.multiprocessing-method": "forkserver",
            }
        ),
    ):
        env.update(run.environ())  # (the workers' private course roots, with the hidden tests; kernels' sockets)
        # (after Dask's own choice, made on its first call) what the fork server imports as it starts,
        # if it is not running yet (``fork_server.start``)
        get_mp_context().set_forkserver_preload(fork_server.WORKER_PRELOAD)
        # Every worker at once, each forked from the fork server as soon as its imports are done: they start
        # side by side, and the cluster is up when they all are (the scheduler queues every submission and
        # hands them out one at a time). One worker first and the others once it was up started the second
        # 0.3-0.4 s later, on a core left idle meanwhile. Each worker is made ready to grade (GradingWorker:
        # its zygote and first kernel booting) as it starts, before it joins the scheduler: not a round trip
        # later, once the cluster is up (0.15-0.3 s of every run's start-up), and a worker restarted after a
        # crash is made ready the same way.
        one_per_core = 1 < workers == len(os.sched_getaffinity(0))
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            memory_limit=0,
            host="127.0.0.1",
            # mutual TLS, a key and certificate made in memory for this run (distributed.Security.temporary):
            # every comm between the coordinator, the scheduler, the nannies and the workers needs them
            security=True,
            dashboard_address=None,
            # The scheduler starts its HTTP server (serving nothing, routes above) even without a dashboard,
            # on Dask's port 8787 when none is given: taken by another run or a notebook's cluster, that printed
            # "Port 8787 is already in use" on the grading run's output. A port of the system's choosing, on
            # loopback, asks for no port anyone else may hold; ``dashboard`` stays False.
            scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
            silence_logs=logging.ERROR,
            env=env,
            plugins=(GradingWorker(log, kernel_limits, pin=one_per_core, assignment=assignment),),
        )
        dask_logger = logging.getLogger("distributed")
        level = dask_logger.level
        try:
            with cluster, Client(cluster, set_as_default=False) as client:
                try:
                    yield client
                except (KeyboardInterrupt, GradingStopped):
                    # Stopped (Ctrl-C reaches the workers too): as the cluster closes, each nanny logs its worker's
                    # end, cancelled half way, as an error with a traceback. The user is told what happened.
                    dask_logger.setLevel(logging.CRITICAL)
                    raise
        finally:
            dask_logger.setLevel(level)
