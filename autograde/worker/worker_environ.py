"""Imported first by the fork server (``fork_server.WORKER_PRELOAD``), never by the coordinator:
sets the environment Dask's nanny gives each worker process it starts
(``distributed.nanny.pre-spawn-environ``: one BLAS thread, malloc trimming). The nanny sets it in
the process that starts workers; with a fork server, the workers inherit the server's environment,
so it is set here, in the server, once.

It must be set before numpy is imported, and importing ``distributed`` imports numpy: OpenBLAS reads
``OPENBLAS_NUM_THREADS`` once, as numpy loads it. So distributed's defaults are read from its
``distributed.yaml`` (what ``distributed.config`` does) without importing the package. Set too late,
a worker's numpy kept one BLAS thread per core, and those threads spin for a while after each
matrix product the judge computes, on the core the student's kernel needs: grading 04 with 2
workers took 45 % more CPU when each worker shared its core with them."""

import importlib.util
import os
from pathlib import Path

import dask
import yaml

_package = importlib.util.find_spec("distributed")  # finds it without importing it
with open(Path(_package.origin).with_name("distributed.yaml")) as _file:
    dask.config.update_defaults(yaml.safe_load(_file))

for _name, _value in dask.config.get("distributed.nanny.pre-spawn-environ").items():
    if _value is not None:
        os.environ.setdefault(_name, str(_value))
