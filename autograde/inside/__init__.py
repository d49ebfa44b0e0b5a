"""What runs inside the sandbox: the trust boundary of the grader is this folder.

- ``kernel_launch.py``: starts a kernel on its own, under its limits (mounted read-only into its sandbox);
- ``zygote_server.py``: the zygote every kernel is forked from, as root (mounted read-only into its sandbox);
- ``confine.py``: what a kernel does to itself either way (a new session keyring, the seccomp filter);
- ``harness.py``: what answers the judge in a grading kernel, and the one encoding of what crosses the boundary.

Standard library only (the scripts run in the sandbox before anything else is imported, and import each other
by name: ``import confine``); the harness may also use what a grading kernel has (numpy, the course package's
stub, IPython). Nothing here imports the grader's code (tests/test_inside.py).
"""
