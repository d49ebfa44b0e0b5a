"""The fork server the local cluster's worker processes are forked from.

Every worker of the local cluster (``cluster.dask_client``) is a fork of one server process that
imported distributed, nbgrader and the grading code once (``WORKER_PRELOAD``, about 2 s of CPU),
so a worker starts with them imported, and a worker restarted after a crash is forked the same way.

The server is started as early as possible: ``python -m autograde.grade autograde`` starts it before
it imports anything else, so that the server's imports run on another core while the command
imports its own and reads the course and the submissions. This module imports only the standard
library for that reason.
"""

from __future__ import annotations

WORKER_PRELOAD = [
    "autograde.worker.worker_environ",  # first: the environment Dask's nanny gives a worker process
    "distributed",
    "nbgrader.converters",
    "autograde.judge",
    "autograde.worker.grade_worker",
    "autograde.pool",
    "autograde.worker.warm_up",  # last: what a worker's first submission would do once more than the others
]


def start() -> None:
    """Start the fork server (once per process; a call while it runs does nothing). It imports
    ``WORKER_PRELOAD`` as it starts, while this process goes on."""
    import multiprocessing
    import multiprocessing.forkserver

    multiprocessing.get_context("forkserver").set_forkserver_preload(WORKER_PRELOAD)
    multiprocessing.forkserver.ensure_running()
