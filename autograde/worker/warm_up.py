"""What a grading worker would otherwise do on its first submission only, done once in the fork server.

Imported last by the fork server (``fork_server.WORKER_PRELOAD``), before any worker is forked from it:
every worker then starts with it done, and the first submission of a run costs what the others cost
(it cost 0.25-0.3 s more: the course's checks imported, nbformat's schema compiled, SQLAlchemy's mappers
configured). Nothing here starts a thread (a fork copies only the thread that forks)
or touches a course: it is the same for every run.
"""

from __future__ import annotations

import gc
import importlib
import pkgutil

import nbformat
import nbgrader.api  # noqa: F401 - the gradebook's tables and mappers
import sqlalchemy.dialects.sqlite  # the gradebook's database (imported on the first connection)
import sqlalchemy.orm

import heads_and_masks.checks
from autograde import grading_key  # noqa: F401 - read for each run's first submission


def warm_up() -> None:
    # what the graded test cells import in the worker (the judge runs them there): every assignment's checks
    for module in pkgutil.iter_modules(heads_and_masks.checks.__path__):
        importlib.import_module(f"heads_and_masks.checks.{module.name}")
    sqlalchemy.orm.configure_mappers()
    blank = nbformat.v4.new_notebook()
    for relaxed in (False, True):  # nbformat.write validates strictly; nbconvert's preprocessors relaxed
        nbformat.validate(blank, relax_add_props=relaxed)


warm_up()
# Everything the fork server holds now is kept for its life: frozen (out of the collector's sight), it is
# never walked again, neither by the collections of each worker forked from it (nor copied page by page
# into them as a collection touches it) nor as the server ends with the run: unfrozen, its last collection
# took 0.5 s, with the run's output still open (the command's caller waits for it).
gc.freeze()
