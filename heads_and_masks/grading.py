"""Grading mode: while a notebook is graded, pictures, widgets and timing experiments do nothing.

The grader starts every grading kernel with ``HEADS_AND_MASKS_GRADING=1`` in its environment
(``autograde/kernel/sandbox.py`` builds that environment). The package reads it through
:func:`grading_mode`, so the notebooks need no special code: in grading mode

* a course widget (``widgets.base.CourseWidget``) builds no figure and no controls; its ``readouts``
  give NaN for any name, its ``controls`` accept any value, and displaying it shows nothing;
* ``pictures.picture`` and every figure function the notebooks display return :data:`IDLE`
  (which displays as nothing) without drawing;
* the timing experiments (``benchmarks.causal_attention_benchmark``, ``benchmarks.time_by_tile_size``)
  measure nothing and return no rows;
* the experiments whose results only a picture or a printed table shows compute nothing:
  ``cost.cost_table`` returns no rows, ``retrieval.one_head_recovery`` and
  ``score_noise.simulated_spreads`` return NaN ("not computed", as a widget's readouts).

The notebooks draw no figure of their own (no pyplot in a notebook): every picture is a function of
``heads_and_masks/pictures/<slug>.py`` that the notebook displays with ``picture(...)``.

Grading needs none of them (test cells check the learner's functions), and in a grading kernel the
course's reference functions that they call are absent anyway. This module imports nothing of the
grader's: the package never depends on ``autograde``.

Grading mode also imports none of them. The package's layout says where display code lives:
``heads_and_masks/widgets/<slug>.py`` and ``heads_and_masks/pictures/`` hold widgets and static
figures only (computations live in the topic modules). When the package is imported in grading mode,
:func:`heads_and_masks.stand_ins.stand_in_for_display_modules` makes every such module a stand-in, built from the names its source
defines without running it (so neither matplotlib nor ipywidgets is imported): each class is an idle
course widget, each function returns :data:`IDLE`, any other name is :data:`IDLE`. ``widgets/base.py``
itself is real (its heavy imports wait for the first widget that draws). Outside grading mode,
nothing changes.
"""

from __future__ import annotations

import functools
import importlib
import math
import os
import types

GRADING_ENV = "HEADS_AND_MASKS_GRADING"  # the same name as autograde.kernel.sandbox.GRADING_ENV


def grading_mode() -> bool:
    """True in a kernel that grades a notebook (``HEADS_AND_MASKS_GRADING=1``), read at every call."""
    return os.environ.get(GRADING_ENV) == "1"


class Idle:
    """Stands for whatever grading mode did not build (a picture, a widget's box, a control).

    Every attribute is another no-op, a call returns it again, and displaying it shows nothing, so
    the notebook's later cells that use it run without errors.
    """

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return self

    def __call__(self, *args, **kwargs):
        return self

    def __iter__(self):
        return iter(())

    def __repr__(self) -> str:
        return "<not built while grading>"

    def _ipython_display_(self) -> None:  # displays as nothing
        pass


IDLE = Idle()


class IdleReadouts(dict):
    """A widget's readouts in grading mode: empty, and NaN (not computed) for any name asked for."""

    def __missing__(self, name):
        return math.nan


class IdleControls(dict):
    """A widget's controls in grading mode: any name is a control whose value may be set (to no effect)."""

    def __missing__(self, name):
        control = self[name] = Idle()
        return control


def idle_while_grading(result=IDLE):
    """Decorator: in grading mode the function returns ``result()`` if callable, else ``result``, without running."""

    def decorate(function):
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            if grading_mode():
                return result() if callable(result) and not isinstance(result, Idle) else result
            return function(*args, **kwargs)

        return wrapper

    return decorate


def lazy_module(name: str) -> types.ModuleType:
    """``name``, imported the first time one of its attributes is used (``widgets = lazy_module("ipywidgets")``)."""

    class Lazy(types.ModuleType):
        def __getattr__(self, attribute):
            return getattr(importlib.import_module(name), attribute)

    return Lazy(name)
