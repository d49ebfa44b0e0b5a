"""How big the text of every course picture is, in CSS pixels as the learner sees it: the one place that says it.

A picture (a static figure or a widget's image) is a PNG of ``width_in × FIGURE_DPI`` pixels, shown at its
own size in a laptop's notebook (``pictures.NOTEBOOK_WIDTH_PX``, ``pictures.STATIC_PICTURE_WIDTH_PX``;
the tests hold every course picture to that width). One PNG pixel is then one CSS pixel, and a text of
``s`` points is ``s × dpi / 72`` pixels high on the screen. So the style is written in pixels and turned
into points here, for the dpi the figure is drawn at and the scale it is shown at: nothing else in the
course types a font size.

``course_style(dpi)`` is the matplotlib rc context every course figure is built, laid out and drawn in
(``@drawn_in_course_style`` for the picture functions; ``CourseWidget`` for the widgets).
"""

from __future__ import annotations

import contextlib
import functools

# Every course picture is drawn at this dpi: an inch of figure is 90 pixels of the PNG.
FIGURE_DPI = 90.0

# The smallest text a learner must read in a picture, in CSS pixels: tick labels, legends, the numbers
# in a heat map's cells. 12 px stays legible on a laptop and, projected, from the back of a lecture hall.
LEGIBLE_TEXT_PX = 12.0
TEXT_PX = LEGIBLE_TEXT_PX  # every text but the titles
TITLE_PX = 13.0  # axes titles and figure titles


def points(px: float, dpi: float = FIGURE_DPI, shown_scale: float = 1.0) -> float:
    """The font size in points that is ``px`` CSS pixels on the screen, for a figure drawn at ``dpi`` and
    shown at ``shown_scale`` of its own size (1: a picture no wider than the notebook)."""
    return px * 72.0 / (dpi * shown_scale)


def course_rc(dpi: float = FIGURE_DPI) -> dict:
    """The matplotlib settings of every course figure drawn at ``dpi``: the sizes of its texts."""
    text, title = points(TEXT_PX, dpi), points(TITLE_PX, dpi)
    return {
        "figure.dpi": dpi,
        "savefig.dpi": "figure",
        "font.size": text,
        "axes.titlesize": title,
        "axes.labelsize": text,
        "xtick.labelsize": text,
        "ytick.labelsize": text,
        "legend.fontsize": text,
        "legend.title_fontsize": text,
        "figure.titlesize": title,
        "figure.labelsize": text,
    }


# ---- colours that carry a meaning (tests/test_colour_vision.py) --------------------------------------------
# Okabe and Ito's palette ("Color Universal Design", 2008), whose colours stay apart with every common
# colour-vision deficiency: one for each way of sharing keys and values, the same in every picture...
KV_LAYOUT_COLOURS = {"MHA": "#D55E00", "GQA": "#0072B2", "MQA": "#009E73", "MLA": "#CC79A7"}
# ...and a line style each, so that a line's meaning never rests on its colour alone.
KV_LAYOUT_LINE_STYLES = {"MHA": "-", "GQA": "--", "MQA": ":", "MLA": "-."}


def ordered_colours(count: int) -> list:
    """Colours for ``count`` values of one ordered quantity (a noise level, a size): viridis, from dark to light,
    whose lightness alone keeps them apart and in order for every reader."""
    import matplotlib

    ramp = matplotlib.colormaps["viridis"]
    return [ramp(0.1 + 0.8 * i / max(count - 1, 1)) for i in range(count)]


@contextlib.contextmanager
def course_style(dpi: float = FIGURE_DPI):
    """Inside: every figure, axes and text made, laid out or drawn has the course's text sizes."""
    import matplotlib

    with matplotlib.rc_context(course_rc(dpi)):
        yield


def drawn_in_course_style(function):
    """Decorator for a function that builds a course Figure: it builds it in ``course_style()``."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        with course_style():
            return function(*args, **kwargs)

    return wrapper


def text_sizes_px(figure, extra_artists=()) -> list[float]:
    """The height of every text the figure draws (and ``extra_artists`` on top), in its own pixels.

    Recorded as the figure is drawn at its dpi (points × dpi / 72), so only texts actually drawn count:
    tick labels outside the axes' limits, empty strings and invisible texts do not.
    """
    from matplotlib.backends.backend_agg import RendererAgg

    sizes = []
    renderer = RendererAgg(int(figure.bbox.width), int(figure.bbox.height), figure.dpi)
    draw_text = renderer.draw_text

    def recording(gc, x, y, text, prop, *args, **kwargs):
        if text.strip():
            sizes.append(prop.get_size_in_points() * figure.dpi / 72.0)
        return draw_text(gc, x, y, text, prop, *args, **kwargs)

    renderer.draw_text = recording
    figure.draw(renderer)
    for artist in extra_artists:
        artist.draw(renderer)
    return sizes
