"""The traits the course's choosing widgets share: a row of labelled positions, one of them chosen.

The browser sees ``labels`` and moves ``index``; Python sees ``value``, the position at ``index``.
The group of buttons (choice.py) and the slider (slider.py) differ only in how a value finds its position.
Both name their classes the same way, made on first use (``made_on_first_use``).
"""

import functools
from collections.abc import Callable


@functools.cache
def positions_class():
    """Made on first use (in grading mode no widget is built, and anywidget is not imported)."""
    import anywidget
    import traitlets

    class LabelledPositions(anywidget.AnyWidget):
        """``positions[i]`` in Python, ``labels[i]`` shown and read in the browser; ``index`` is the chosen one."""

        description = traitlets.Unicode("").tag(sync=True)
        labels = traitlets.List(traitlets.Unicode()).tag(sync=True)
        index = traitlets.Int(0).tag(sync=True)
        disabled = traitlets.Bool(False).tag(sync=True)
        value = traitlets.Any()  # the value at ``index`` (Python only)

        def _index_moved(self, change) -> None:
            self.value = self.positions[change["new"]]

    return LabelledPositions


def made_on_first_use(module: str, makers: dict[str, Callable[[], type]]) -> Callable[[str], type]:
    """A module's ``__getattr__`` (PEP 562) that gives its widget classes by name, each made by its maker when it is
    first asked for: importing the module makes none (in grading mode anywidget is not imported)."""

    def __getattr__(name: str) -> type:
        if name in makers:
            return makers[name]()
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return __getattr__
