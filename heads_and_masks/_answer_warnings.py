"""Which warnings of a graded call are the answer's own: one policy for every place a learner's function is called.

Two places call a learner's function and judge its warnings ("a correct answer computes without warnings"):

* the checks, in the learner's own notebook and in the grader (``checks.core.call``);
* the grading kernel, where the function really runs while a notebook is graded (the harness of
  ``autograde/judge.py``, which imports this module from the kernel's stub copy of the package: only
  ``checks/`` is emptied there). The grader then warns again with what the kernel recorded, inside
  ``checks.core.call``, so both apply this policy.

The answer's own: numpy's floating-point warnings on division by zero, overflow and invalid operations
(NaN from inf - inf or 0/0), and every warning the code raises. Not the answer's:

* underflow: a softmax of very negative scores rounds to an exact 0, correctly;
* ``ResourceWarning``: a finalizer's, whenever the garbage collector runs (an unclosed event loop of
  the kernel, collected during the call): it says nothing about the answer's computation.
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np

NOT_THE_ANSWERS: tuple[type[Warning], ...] = (ResourceWarning,)
NUMERICS = {"divide": "warn", "over": "warn", "invalid": "warn", "under": "ignore"}  # numpy's floating-point errors

# Bound at import time: code that patches warnings or numpy afterwards does not reach these.
_catch_warnings, _simplefilter, _errstate = warnings.catch_warnings, warnings.simplefilter, np.errstate


@contextlib.contextmanager
def answer_warnings():
    """Record (never print) the answer's own warnings while the code inside runs; yields their list."""
    with _catch_warnings(record=True) as caught, _errstate(**NUMERICS):
        _simplefilter("always")
        for category in NOT_THE_ANSWERS:
            _simplefilter("ignore", category)
        yield caught
