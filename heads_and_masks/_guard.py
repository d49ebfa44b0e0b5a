"""The registry of the course's reference implementations, and the lock that keeps them out of graded answers.

Every graded function of the course has a reference implementation in this package, marked
``@reference``. The registry records each one (its name and the module that defines it) and is the
one list of graded functions; nothing else lists them:

* while a check runs a learner's function, every registered reference is *locked*
  (:func:`locked`): calling one raises :class:`ReferenceUsedError`, and the check names the mistake;
* the package a grading kernel imports (``autograde/kernel/allowlist.py``, an allowlist per notebook) has
  every reference in :func:`references` as a function that only raises.

Why every reference, whatever the exercise: no correct answer calls one. Each notebook builds on the
learner's own earlier functions (``bring_answer``), and in a grading kernel no reference exists at
all; locking them all in the learner's own notebook gives the verdict the grader will give. A
reference imported while the lock holds is locked too. Everywhere else (widgets, pictures, the
learner's own experiments) the reference implementations work normally.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import pkgutil


class ReferenceUsedError(RuntimeError):
    """Raised when graded code calls the course's own implementation of the exercise."""


@dataclasses.dataclass(frozen=True)
class Reference:
    """One reference implementation: ``name`` is defined at the top level of ``module``."""

    name: str
    module: str


_registry: dict[str, Reference] = {}
_locks = 0  # how many `locked()` blocks we are in: while > 0 every reference refuses


def reference(function):
    """Register ``function`` as the course's reference for the graded function of that name."""
    name = function.__name__
    entry = Reference(name, function.__module__)
    if _registry.get(name, entry) != entry:  # one name, one graded function: the lock and the stub go by name
        raise ValueError(f"two references named `{name}`: {_registry[name].module} and {entry.module}")

    @functools.wraps(function)
    def guarded(*args, **kwargs):
        if _locks:
            raise ReferenceUsedError(
                f"your answer called the course's reference `{name}`; graded exercises must be "
                "your own code (the package is there for the widgets and for checking, not for answers)"
            )
        return function(*args, **kwargs)

    _registry[name] = entry
    del guarded.__wrapped__  # keep the unguarded function out of easy reach
    return guarded


# Modules that cannot define a reference: the checks compare with references, widgets and pictures
# show them (computations live in the package's topic modules, never there).
_NOT_TOPICS = (".checks", ".widgets", ".pictures")


def references() -> dict[str, Reference]:
    """Every reference of the package, by name (each topic module is imported first, so none is missed)."""
    package = importlib.import_module(__package__)
    for module in pkgutil.walk_packages(package.__path__, f"{__package__}."):
        if not any(part in module.name for part in _NOT_TOPICS):
            importlib.import_module(module.name)
    return dict(_registry)


@contextlib.contextmanager
def locked():
    """Within the block, calling any reference function (registered before or during it) raises ReferenceUsedError."""
    global _locks
    _locks += 1
    try:
        yield
    finally:
        _locks -= 1
