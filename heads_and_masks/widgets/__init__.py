"""Interactive pictures for the notebooks: ipywidgets controls driving the reference implementations.

Every widget is a :class:`~heads_and_masks.widgets.base.CourseWidget`: ``.controls`` (name -> control),
``.readouts`` (name -> last computed number), ``.figure`` (a matplotlib Figure redrawn in place) and
``.widget`` (the box to display). Setting a control's ``value`` updates everything at once, so a
test can drive a widget without a browser.
"""

from .base import CourseWidget

__all__ = ["CourseWidget"]
