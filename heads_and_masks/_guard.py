"""Marks the reference implementations, so graded checks can refuse answers that merely call them.

While a check runs a learner's function it *locks* the reference functions of that exercise: calling
one of them then raises :class:`ReferenceUsedError`. Everywhere else (widgets, plots, the learner's
own experiments) the reference implementations work normally.
"""

from __future__ import annotations

import contextlib
import functools

_locked: set[str] = set()
_names: set[str] = set()  # every guarded function's name


class ReferenceUsedError(RuntimeError):
    """Raised when graded code calls the course's own implementation of the exercise."""


def reference(function):
    name = function.__name__

    @functools.wraps(function)
    def guarded(*args, **kwargs):
        if name in _locked:
            raise ReferenceUsedError(
                f"your answer called the course's reference `{name}`; graded exercises must be "
                "your own code (the package is there for the widgets and for checking, not for answers)"
            )
        return function(*args, **kwargs)

    _names.add(name)
    del guarded.__wrapped__  # keep the unguarded function out of easy reach
    return guarded


@contextlib.contextmanager
def locked(*names: str):
    """Within the block, calling any of the named reference functions raises ReferenceUsedError."""
    unknown = set(names) - _names
    if unknown:
        raise KeyError(f"not reference functions: {sorted(unknown)}")
    before = set(_locked)
    _locked.update(names)
    try:
        yield
    finally:
        _locked.clear()
        _locked.update(before)
