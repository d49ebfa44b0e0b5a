"""Imported first by the fork server (``fork_server.WORKER_PRELOAD``), never by the coordinator:
sets the environment Dask's nanny gives each worker process it starts
(``distributed.nanny.pre-spawn-environ``: one BLAS thread, malloc trimming). The nanny sets it in
the process that starts workers; with a fork server, the workers inherit the server's environment,
so it is set here, in the server, once."""

import os

import dask
import distributed  # noqa: F401 - loads distributed's configuration defaults into dask.config

for _name, _value in dask.config.get("distributed.nanny.pre-spawn-environ").items():
    if _value is not None:
        os.environ.setdefault(_name, str(_value))
