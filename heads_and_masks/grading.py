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
:func:`stand_in_for_display_modules` makes every such module a stand-in, built from the names its source
defines without running it (so neither matplotlib nor ipywidgets is imported): each class is an idle
course widget, each function returns :data:`IDLE`, any other name is :data:`IDLE`. ``widgets/base.py``
itself is real (its heavy imports wait for the first widget that draws). Outside grading mode,
nothing changes.
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import math
import os
import sys
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


DISPLAY_PACKAGES = ("heads_and_masks.widgets", "heads_and_masks.pictures")  # display code only, by the layout
REAL_IN_GRADING = {"heads_and_masks.widgets", "heads_and_masks.widgets.base"}  # light, and what stand-ins build on


def _idle_function(name: str):
    def idle(*args, **kwargs):
        return IDLE

    idle.__name__ = idle.__qualname__ = name
    return idle


def _idle_widget_class(name: str, module: str) -> type:
    from .widgets.base import CourseWidget

    def __init__(self, *args, **kwargs):
        CourseWidget.__init__(self)  # in grading mode: builds nothing (see CourseWidget)

    def __getattr__(self, attribute):  # whatever the real widget had beyond CourseWidget
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        return IDLE

    return type(name, (CourseWidget,), {"__init__": __init__, "__getattr__": __getattr__, "__module__": module})


class _StandIns(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the display modules in grading mode and makes stand-ins of them (see the module's docstring)."""

    def find_spec(self, fullname, path, target=None):
        if (
            not grading_mode()
            or fullname in REAL_IN_GRADING
            or not any(fullname == p or fullname.startswith(p + ".") for p in DISPLAY_PACKAGES)
        ):
            return None
        real = importlib.machinery.PathFinder.find_spec(fullname, path)
        if real is None or not real.origin or not real.origin.endswith(".py"):
            return None
        spec = importlib.util.spec_from_loader(
            fullname, self, origin=real.origin, is_package=real.submodule_search_locations is not None
        )
        if real.submodule_search_locations is not None:
            spec.submodule_search_locations = list(real.submodule_search_locations)
        return spec

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        with open(module.__spec__.origin, encoding="utf-8") as source:
            tree = ast.parse(source.read())
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                setattr(module, node.name, _idle_widget_class(node.name, module.__name__))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                setattr(module, node.name, _idle_function(node.name))
        module.__doc__ = f"stand-in for {module.__name__} while grading (heads_and_masks.grading)"

        def __getattr__(name):
            if name.startswith("__"):
                raise AttributeError(name)
            if module.__spec__.submodule_search_locations is not None:  # a module of this package
                try:
                    return importlib.import_module(f"{module.__name__}.{name}")
                except ModuleNotFoundError:
                    pass
            return IDLE

        module.__getattr__ = __getattr__


_STAND_INS = _StandIns()


def stand_in_for_display_modules() -> None:
    """In grading mode, import stand-ins for the display modules from now on (idempotent)."""
    if grading_mode() and _STAND_INS not in sys.meta_path:
        sys.meta_path.insert(0, _STAND_INS)
