"""Matplotlib figures as PNG images for the notebooks, whatever matplotlib backend the kernel uses."""

from __future__ import annotations

import base64
import html
import io

import matplotlib
from matplotlib.figure import Figure

from ..figure_style import LEGIBLE_TEXT_PX, course_style
from ..grading import IDLE, Idle, grading_mode
from ..text_alternative import describe_figure

# How wide a notebook's outputs are in JupyterLab on a laptop: a 1100 px wide window with the file browser
# open leaves 668 px (measured in Chromium, JupyterLab 4). A picture at most this wide is shown at its own
# size, so text drawn at LEGIBLE_TEXT_PX or more stays legible; a wider one is scaled down, text and all.
# (How big figure text is, and the style every course figure is drawn in: heads_and_masks.figure_style.)
NOTEBOOK_WIDTH_PX = 660
__all__ = ["LEGIBLE_TEXT_PX", "MOST_SHRINK", "NOTEBOOK_WIDTH_PX", "STATIC_PICTURE_WIDTH_PX", "Picture", "picture"]
# A static picture is an HTML output (an <img> with its text alternative, see Picture), and JupyterLab keeps
# 20 px free on the right of every HTML output: it has 648 px there. A figure drawn a little wider is
# rendered at a dpi that fits (crisp, where the browser would blur it scaling it down); more than
# MOST_SHRINK narrower than designed is a design to mend, and is refused.
STATIC_PICTURE_WIDTH_PX = 648
MOST_SHRINK = 0.03


def picture(figure: Figure, dpi: float | str | None = None, lead: str | None = None):
    """The figure as a PNG image for IPython's display, with its text alternative; ``dpi`` None:
    rcParams["savefig.dpi"] (the figure's own by default); ``lead``: a sentence that says what to look for.

    In grading mode it draws nothing and returns an object that displays as nothing.
    """
    if grading_mode() or isinstance(figure, Idle):  # nothing is drawn while grading (heads_and_masks.grading)
        return IDLE
    if dpi is None:
        dpi = matplotlib.rcParams["savefig.dpi"]
    dpi = figure.get_dpi() if dpi == "figure" else float(dpi)
    width = figure.get_figwidth() * dpi
    if width > STATIC_PICTURE_WIDTH_PX:
        if width * (1 - MOST_SHRINK) > STATIC_PICTURE_WIDTH_PX:
            raise ValueError(
                f"the figure is {width:.0f} px wide at {dpi:g} dpi: a laptop's notebook shows "
                f"{STATIC_PICTURE_WIDTH_PX} px; make it narrower"
            )
        dpi *= STATIC_PICTURE_WIDTH_PX / width
    buffer = io.BytesIO()
    with course_style(figure.dpi):  # a tick made while drawing gets the course's text size too
        figure.savefig(buffer, format="png", dpi=dpi)
    return Picture(buffer.getvalue(), describe_figure(figure, lead))


class Picture:
    """A PNG with its text alternative, displayed as an HTML image so that the text reaches the page.

    JupyterLab draws an ``image/png`` output as an <img> without alt text (the ``alt`` metadata that
    nbconvert reads is ignored there), and a screen reader then says only "image". An <img> with ``alt``
    in a ``text/html`` output is read; the plain-text version of the output is the same description.
    """

    def __init__(self, data: bytes, text: str):
        self.data, self.text = data, text  # the PNG's bytes (as IPython's Image calls them) and its description

    def _repr_mimebundle_(self, include=None, exclude=None):
        source = base64.b64encode(self.data).decode("ascii")
        image = f'<img src="data:image/png;base64,{source}" alt="{html.escape(self.text, quote=True)}">'
        return {"text/html": image, "text/plain": self.text}
