"""The grading worker processes of a class run (the pool, ``pool.py``, hands them submissions).

- ``fork_server.py``: the process every local worker is forked from, started first by the grading command;
- ``worker_environ.py``: imported first by it, the environment Dask's nanny gives a worker;
- ``warm_up.py``: imported last by it, what a worker's first submission would otherwise do once more;
- ``grade_worker.py``: what a worker does with one submission.

Nothing is imported here: ``fork_server`` is started before anything else of the grader is imported.
"""
