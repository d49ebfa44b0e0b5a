"""The common frame of the course widgets: controls, a figure redrawn in place, readouts."""

from __future__ import annotations

import functools
import io
import re
import time

import numpy as np

from ..figure_style import FIGURE_DPI, course_style, text_sizes_px
from ..grading import IDLE, IdleControls, IdleReadouts, grading_mode, lazy_module

from ..i18n import translated
from ..readable import readable_number
from ..text_alternative import describe_figure

# Imported on first use: in grading mode no widget is built, so these are never imported there.
widgets = lazy_module("ipywidgets")

# Names and values never wrap; values line up on the right.
READOUT_STYLE = (
    "<style>.course-readouts td{white-space:nowrap}.course-readouts td+td{text-align:right;padding-left:1em}</style>"
)
# ipywidgets' dropdowns and buttons show focus by a 1 px border of another colour (the dropdown's outline is
# removed, !important), hard to see (WCAG 2.4.7): in a course widget they get the ring the course's slider and
# buttons have. It is drawn inside a dropdown or a button: their box clips whatever is drawn outside it.
FOCUS_STYLE = (
    "<style>.course-widget :is(select, button):focus-visible"
    "{outline:2px solid var(--jp-brand-color1,#1976d2)!important;outline-offset:-2px}"
    ".course-widget input[type=checkbox]:focus-visible"
    "{outline:2px solid var(--jp-brand-color1,#1976d2)!important;outline-offset:2px}</style>"
)


def described_image(**traits):
    """An ipywidgets Image that can carry a text alternative (its ``tooltip``, the <img>'s title).

    ipywidgets' view sets the title only when the model's ``description`` is empty, and an Image has no
    ``description``: the view then fails to render at all (ipywidgets 8.1, ``updateTooltip`` reads its
    length). An empty ``description``, synced, is all it needs.
    """
    return _described_image_class()(**traits)


@functools.cache
def _described_image_class():
    from traitlets import Unicode

    class DescribedImage(widgets.Image):
        description = Unicode("").tag(sync=True)

    return DescribedImage


class CourseWidget:
    """Controls on top, a picture below, readouts beside it.

    Subclasses build ``self.controls`` and the axes in ``setup()``, then draw in ``draw()``, which
    returns the readouts as a dict of numbers. The figure is created once; every update redraws the
    existing artists and sends one PNG to the browser (no figure is rebuilt, nothing flickers).

    In grading mode (``heads_and_masks.grading``) a widget builds nothing and computes nothing:
    ``readouts`` is empty (NaN for any name), ``controls`` accept any value to no effect, and
    displaying it shows nothing. Grading does not need it, and the reference functions it would
    call are absent from grading kernels.
    """

    figsize = (6.0, 4.0)
    # What the reader should see in the picture as it is now, and conclude: the first sentences of its text
    # alternative. Each widget defines it as a property, computed from its controls and readouts after draw().
    picture_lead: str | None = None
    dpi = FIGURE_DPI

    def __init__(self, **initial):
        self.idle = grading_mode()
        if self.idle:
            self.figure = self.canvas = self.image = self.readout_html = self.widget = IDLE
            self.controls, self.readouts = IdleControls(), IdleReadouts()
            self.last_update_seconds = 0.0
            return
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        self.figure = Figure(figsize=self.figsize, dpi=self.dpi, layout="constrained")
        self.canvas = FigureCanvasAgg(self.figure)
        self.controls: dict[str, widgets.Widget] = {}
        self.readouts: dict[str, float] = {}
        # the shown name of a readout whose (English) key is made in draw() ("head 0: weight on 0"): the
        # translation of the whole name, with its number in place; every other key is marked N_ and translated
        self.shown_names: dict[str, str] = {}
        # The picture keeps its own size, in which its text is legible, whenever the notebook is as wide:
        # where picture and readouts do not fit side by side, the readouts move below it (the row wraps).
        # Only a notebook narrower than the picture itself scales it down (keeping its proportions). The
        # readouts never shrink, so their names and values always show in full.
        self.image = described_image(
            format="png",
            layout=widgets.Layout(
                flex="0 1 auto", min_width="0", max_width="100%", height="auto", object_fit="contain"
            ),
        )
        self.readout_html = widgets.HTML(layout=widgets.Layout(flex="0 0 auto", margin="0 0 0 8px"))
        self.last_update_seconds = 0.0
        self._background = None  # the static part of the figure, when the subclass blits
        self._backgrounds: dict = {}  # earlier backgrounds by background_key(), most recent last
        self._background_key = None
        with course_style(self.dpi):  # every text the widget makes gets the course's size (figure_style)
            self.setup()
        for name, value in initial.items():
            self.controls[name].value = value
        for control in self.controls.values():
            control.observe(self._on_change, names="value")
        self.widget = widgets.VBox(
            [
                widgets.HBox(list(self.controls.values()), layout=widgets.Layout(flex_flow="row wrap")),
                widgets.HBox(
                    [self.image, self.readout_html],
                    layout=widgets.Layout(flex_flow="row wrap", align_items="flex-start"),
                ),
            ],
            layout=widgets.Layout(width="100%"),
        )
        self.widget.add_class("course-widget")
        self.widget.add_class(f"course-widget-{type(self).__name__}")  # which widget this is, in the page
        self.update()

    # subclasses override these two
    def setup(self) -> None:
        raise NotImplementedError

    def draw(self) -> dict[str, float]:
        raise NotImplementedError

    def format_value(self, value) -> str:
        """How one readout value is written (HTML): as people read numbers (see ``readable``)."""
        return readable_number(value)

    def readout_name(self, name: str) -> str:
        """A readout's name as the table shows it, in the widget's language (its key stays English)."""
        return self.shown_names.get(name) or translated(name)

    def readouts_text(self) -> str:
        """The readouts as the widget shows them, one "name: value" line each (for a notebook's print)."""
        names = {name: self.readout_name(name) for name in self.readouts}
        width = max((len(shown) for shown in names.values()), default=0)
        return "\n".join(
            f"{names[name]:>{width}}: {re.sub(r'<[^>]+>', '', self.format_value(value))}"
            for name, value in self.readouts.items()
        )

    def format_readouts(self, readouts: dict[str, float]) -> str:
        # the keys stay English (tests and picture_lead read them): the table shows each in the widget's language
        rows = "".join(
            f"<tr><td>{self.readout_name(name)}</td><td><b>{self.format_value(value)}</b></td></tr>"
            for name, value in readouts.items()
        )
        return f"<table class='course-readouts'>{rows}</table>" + READOUT_STYLE + FOCUS_STYLE

    def value(self, name):
        return self.controls[name].value

    def _on_change(self, _change) -> None:
        self.update()

    def dynamic_artists(self):
        """The artists that change from one update to the next, or None to redraw the whole figure.

        A subclass that returns them gets blitting: axes, ticks, labels and colour bars are rendered
        once into a background, and each update redraws only these artists on top of it.
        """
        return None

    background_cache_size = 8

    def background_key(self):
        """What the static background depends on (e.g. a control that moves axis limits), or None.

        When the key changes, the background is rendered anew, and earlier ones are kept (up to
        ``background_cache_size``) so that going back to a key redraws only the dynamic artists.
        """
        return None

    def _select_background(self) -> None:
        key = self.background_key()
        if key == self._background_key:
            return
        if self._background is not None:
            self._backgrounds[self._background_key] = self._background
            while len(self._backgrounds) > self.background_cache_size:
                self._backgrounds.pop(next(iter(self._backgrounds)))
        self._background = self._backgrounds.pop(key, None)
        self._background_key = key

    def update(self) -> None:
        if self.idle:
            return
        with course_style(self.dpi):  # a title set or a tick made while drawing keeps the course's size
            self._update()

    def _update(self) -> None:
        start = time.perf_counter()
        self.readouts = dict(self.draw())
        self.readout_html.value = self.format_readouts(self.readouts)
        artists = self.dynamic_artists()
        if artists is not None:
            artists = list(artists)  # a generator would be used up by set_animated below
            self._select_background()
        if artists is None or self._background is None:
            for artist in artists or ():
                artist.set_animated(True)  # left out of the full draw, drawn on top below
            self.canvas.draw()  # one render of the existing artists
            if self.figure.get_layout_engine() is not None:
                self.figure.set_layout_engine("none")  # the layout is fixed after the first draw: keep it
                if artists is not None:  # ask again: artists placed in pixels move with the first layout
                    artists = list(self.dynamic_artists())
                    for artist in artists:
                        artist.set_animated(True)
            if artists is not None:
                self._background = self.canvas.copy_from_bbox(self.figure.bbox)
        else:
            self.canvas.restore_region(self._background)
        for artist in artists or ():
            self.figure.draw_artist(artist)
        from PIL import Image

        buffer = io.BytesIO()
        Image.fromarray(np.asarray(self.canvas.buffer_rgba())).save(buffer, format="png", compress_level=1)
        self.image.value = buffer.getvalue()
        # the picture's text alternative (the <img>'s title: ipywidgets' Image has no alt), kept in step with it
        self.image.tooltip = describe_figure(self.figure, self.picture_lead)
        self.last_update_seconds = time.perf_counter() - start

    def text_sizes_px(self) -> list[float]:
        """The size of every text the picture shows, in the picture's own pixels (points × dpi / 72).

        Text drawn by matplotlib is recorded as the figure is drawn (static and changing parts alike);
        labels drawn as glyph paths (fast_text) are found through the painters the widget holds.
        """
        from .fast_text import PathLegend, PathTextPainter

        with course_style(self.dpi):
            sizes = text_sizes_px(self.figure, self.dynamic_artists() or ())
        for value in vars(self).values():  # a PathTitle's size is its Text's, recorded above
            painter = value.painter if isinstance(value, PathLegend) and value.entries else value
            if isinstance(painter, PathTextPainter):
                sizes.append(painter.font.get_size_in_points() * painter.scale)
        return sizes

    def png(self) -> bytes:
        return b"" if self.idle else bytes(self.image.value)

    def _ipython_display_(self):
        if self.idle:
            return
        from IPython.display import display

        display(self.widget)
