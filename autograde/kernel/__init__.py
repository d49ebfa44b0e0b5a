"""What starts a student's grading kernel and talks to it: the grader's side of the boundary.

- ``sandbox.py``: what a kernel sees (bubblewrap's view, its environment, its uid) and whether it can be had here;
- ``resources.py``: a kernel's cgroups (memory, processes, CPU share) and the meter of its memory, read from outside;
- ``kernel_manager.py``: jupyter_client's kernel manager that starts a kernel in that sandbox, on its own or
  forked from the zygote (``zygote.py``, the grader's side of ``inside/zygote_server.py``);
- ``allowlist.py`` and ``kernel_package.py``: what a kernel can import of the course package, and the
  cut-down package made of it (``stub_package.py``: made once, shared by a run's workers);
- ``kernel_client.py``: the kernel as the judge sees it (cells, calls, limits), ``kernel_supply.py`` the next
  one started ahead, ``remote_calls.py`` a call of a student's function, ``wire.py`` what comes back.

What runs inside the kernel is in ``inside/``; what judges the answers (``judge.py``, ``verdicts.py``) stays in the
grader, above this folder. Nothing here imports the pipeline's steps (tests/test_import_cycles.py: no cycle).
"""
