"""The common frame of the course widgets: controls, a figure redrawn in place, readouts."""
from __future__ import annotations

import io
import time

import ipywidgets as widgets
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image


class CourseWidget:
    """Controls on top, a picture below, readouts beside it.

    Subclasses build ``self.controls`` and the axes in ``setup()``, then draw in ``draw()``, which
    returns the readouts as a dict of numbers. The figure is created once; every update redraws the
    existing artists and sends one PNG to the browser (no figure is rebuilt, nothing flickers).
    """

    figsize = (6.0, 4.0)
    dpi = 90

    def __init__(self, **initial):
        self.figure = Figure(figsize=self.figsize, dpi=self.dpi, layout="constrained")
        self.canvas = FigureCanvasAgg(self.figure)
        self.controls: dict[str, widgets.Widget] = {}
        self.readouts: dict[str, float] = {}
        self.image = widgets.Image(format="png", layout=widgets.Layout(max_width="100%"))
        self.readout_html = widgets.HTML()
        self.last_update_seconds = 0.0
        self.setup()
        for name, value in initial.items():
            self.controls[name].value = value
        for control in self.controls.values():
            control.observe(self._on_change, names="value")
        self.widget = widgets.VBox(
            [widgets.HBox(list(self.controls.values()), layout=widgets.Layout(flex_flow="row wrap")),
             widgets.HBox([self.image, self.readout_html])],
            layout=widgets.Layout(width="100%"),
        )
        self.widget.add_class("course-widget")
        self.update()

    # subclasses override these two
    def setup(self) -> None:
        raise NotImplementedError

    def draw(self) -> dict[str, float]:
        raise NotImplementedError

    def format_readouts(self, readouts: dict[str, float]) -> str:
        rows = "".join(f"<tr><td style='white-space:nowrap'>{name}</td>"
                       f"<td style='text-align:right;padding-left:1em;white-space:nowrap'><b>{value:.4g}</b></td></tr>"
                       for name, value in readouts.items())
        return f"<table class='course-readouts'>{rows}</table>"

    def value(self, name):
        return self.controls[name].value

    def _on_change(self, _change) -> None:
        self.update()

    def update(self) -> None:
        start = time.perf_counter()
        self.readouts = dict(self.draw())
        self.readout_html.value = self.format_readouts(self.readouts)
        self.canvas.draw()  # one render of the existing artists
        if self.figure.get_layout_engine() is not None:
            self.figure.set_layout_engine("none")  # the layout is fixed after the first draw: keep it
        buffer = io.BytesIO()
        Image.fromarray(np.asarray(self.canvas.buffer_rgba())).save(buffer, format="png", compress_level=1)
        self.image.value = buffer.getvalue()
        self.last_update_seconds = time.perf_counter() - start

    def png(self) -> bytes:
        return bytes(self.image.value)

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)
