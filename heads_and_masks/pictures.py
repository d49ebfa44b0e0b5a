"""Matplotlib figures as PNG images for the notebooks, whatever matplotlib backend the kernel uses."""
from __future__ import annotations

import io

from matplotlib.figure import Figure


def picture(figure: Figure, dpi: float | str | None = None):
    """The figure as a PNG image for IPython's display; ``dpi`` None: rcParams["savefig.dpi"] (the figure's own by default)."""
    from IPython.display import Image

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=dpi)
    return Image(data=buffer.getvalue(), format="png")
