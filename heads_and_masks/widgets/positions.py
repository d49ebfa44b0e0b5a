"""The traits the course's choosing widgets share: a row of labelled positions, one of them chosen.

The browser sees ``labels`` and moves ``index``; Python sees ``value``, the position at ``index``.
The group of buttons (choice.py) and the slider (slider.py) differ only in how a value finds its position.
"""

import functools


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
