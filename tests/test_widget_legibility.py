"""Every course widget's picture fits a laptop's notebook and its smallest text is legible there.

JupyterLab in a 1100 px window with the file browser open gives a notebook's outputs about 668 px
(``pictures.NOTEBOOK_WIDTH_PX``). A picture no wider than that is shown at its own size (the readouts
move below it when they do not fit beside it), so the text sizes measured here, in the picture's own
pixels, are the sizes on the screen. The browser tests (tests/browser/laptop.py, from test_browser_notebooks.py)
measure the same in JupyterLab at that width.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import ipywidgets as widgets
import pytest

import heads_and_masks.widgets as package
from figure_text import clipped_text, overlapping_texts
from heads_and_masks.pictures import LEGIBLE_TEXT_PX, NOTEBOOK_WIDTH_PX
from heads_and_masks.widgets.base import CourseWidget
from heads_and_masks.widgets.fast_text import PathTextPainter


def course_widgets():
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"heads_and_masks.widgets.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, CourseWidget) and cls is not CourseWidget and cls.__module__ == module.__name__:
                yield cls


WIDGETS = sorted(course_widgets(), key=lambda cls: cls.__name__)


def test_every_widget_is_found():
    assert len(WIDGETS) >= 7


@pytest.mark.parametrize("cls", WIDGETS, ids=lambda cls: cls.__name__)
def test_picture_fits_a_laptop_notebook_and_its_text_is_legible(cls):
    widget = cls()
    width = widget.figure.bbox.width
    assert width <= NOTEBOOK_WIDTH_PX, (
        f"{cls.__name__}'s picture is {width:.0f} px wide: a laptop's notebook "
        f"({NOTEBOOK_WIDTH_PX} px) would scale it and its text down"
    )
    sizes = widget.text_sizes_px()
    assert sizes, f"{cls.__name__}: no text found in the picture"
    assert min(sizes) >= LEGIBLE_TEXT_PX, (
        f"{cls.__name__}: its smallest text is {min(sizes):.1f} px high "
        f"(below {LEGIBLE_TEXT_PX} px); sizes {sorted(set(sizes))}"
    )
    # the layout is fixed after the first draw (CourseWidget.update): what is measured here is what is shown
    assert not clipped_text(widget.figure), (
        f"{cls.__name__}: text cut by the picture's edge: {clipped_text(widget.figure)}"
    )
    overlaps = overlapping_texts(widget.figure, widget.dynamic_artists() or ())
    assert not overlaps, f"{cls.__name__}: texts drawn over each other: {overlaps}"
    assert f"course-widget-{cls.__name__}" in widget.widget._dom_classes  # the browser tests find it by this


class _Tiny(CourseWidget):
    figsize, dpi = (2.0, 1.0), 72

    def setup(self):
        self.controls["x"] = widgets.IntSlider(value=1, min=0, max=3)
        self.ax = self.figure.subplots()
        self.ax.set_xticks([])
        self.ax.set_yticks([])
        self.label = self.ax.text(0.5, 0.5, "", fontsize=11)
        self.painter = PathTextPainter(6, self.dpi)

    def draw(self):
        self.label.set_text(f"x = {self.value('x')}")
        return {"x": self.value("x")}


def test_text_sizes_find_matplotlib_text_and_glyph_painters():
    widget = _Tiny()
    sizes = widget.text_sizes_px()
    assert 11.0 in sizes and 6.0 in sizes  # 72 dpi: one point is one pixel
    widget.label.set_fontsize(4)
    assert min(widget.text_sizes_px()) == 4.0
