"""Matplotlib figures as PNG images for the notebooks, whatever matplotlib backend the kernel uses."""

from __future__ import annotations

import io

from matplotlib.figure import Figure

from ..grading import IDLE, Idle, grading_mode

# How wide a notebook's outputs are in JupyterLab on a laptop: a 1100 px wide window with the file browser
# open leaves 668 px (measured in Chromium, JupyterLab 4). A picture at most this wide is shown at its own
# size, so text drawn at LEGIBLE_TEXT_PX or more stays legible; a wider one is scaled down, text and all.
NOTEBOOK_WIDTH_PX = 660
LEGIBLE_TEXT_PX = 9.0


def picture(figure: Figure, dpi: float | str | None = None):
    """The figure as a PNG image for IPython's display; ``dpi`` None: rcParams["savefig.dpi"] (the figure's own by default).

    In grading mode it draws nothing and returns an object that displays as nothing.
    """
    if grading_mode() or isinstance(figure, Idle):  # nothing is drawn while grading (heads_and_masks.grading)
        return IDLE
    from IPython.display import Image

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return Image(data=buffer.getvalue(), format="png")
