"""Grading mode's import hook: the display modules (widgets, pictures) become stand-ins that run nothing.

What a stand-in is and why: see :mod:`heads_and_masks.grading`. The hook lives in a module of its own
because it builds on ``widgets.base.CourseWidget``, which itself builds on grading mode's idle objects:
kept in ``grading.py`` it made the two modules import each other.
"""

from __future__ import annotations

import ast
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys

from .grading import IDLE, grading_mode

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
        module.__doc__ = f"stand-in for {module.__name__} while grading (heads_and_masks.stand_ins)"

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
