"""Trying out a learner's function right after its exercise, before it is written.

Every exercise is followed by a cell that runs the learner's function on a small example. Until the
exercise is written, the function is still its stub (``raise NotImplementedError()``), and "Run All"
must go on past it: the try-out says so in one line instead of failing::

    with hm.if_written("causal_mask"):
        print(causal_mask(4))
"""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def if_written(name: str):
    """Run the block; if the learner's ``name`` (or an earlier answer it calls) is not written yet, say so."""
    try:
        yield
    except NotImplementedError:
        print(f"{name} is not written yet")
