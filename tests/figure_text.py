"""What a reader sees wrong in a figure's text: cut by the picture's edge, or drawn over another text.

Used by test_pictures.py (the static pictures) and test_widget_legibility.py (the widgets' pictures).
"""

from __future__ import annotations

from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
from matplotlib.figure import Figure


def clipped_text(figure: Figure) -> list[str]:
    """The edges of the picture that cut what the figure draws (titles, labels, ticks, legends), by how
    many inches: what ``bbox_inches="tight"`` would have grown the picture by."""
    canvas = FigureCanvasAgg(figure)
    canvas.draw()  # lays the figure out (constrained layout runs while drawing)
    renderer = canvas.get_renderer()
    drawn, edge = figure.get_tightbbox(renderer), figure.bbox_inches  # inches
    overflow = {
        "left": edge.x0 - drawn.x0,
        "bottom": edge.y0 - drawn.y0,
        "right": drawn.x1 - edge.x1,
        "top": drawn.y1 - edge.y1,
    }
    return [f"{side} by {inches:.2f} in" for side, inches in overflow.items() if inches > 0.01]


def drawn_texts(figure: Figure, extra_artists=()) -> list[tuple[str, object]]:
    """(string, box in pixels) of every text the figure draws, as it draws them (ticks outside the limits,
    empty and invisible texts are not drawn, so not listed)."""
    if figure.canvas is None or not isinstance(figure.canvas, FigureCanvasAgg):
        FigureCanvasAgg(figure)
    figure.canvas.draw()  # the layout first: constrained layout moves the axes while drawing
    renderer = RendererAgg(int(figure.bbox.width), int(figure.bbox.height), figure.dpi)
    texts, draw_text = [], renderer.draw_text

    def recording(gc, x, y, text, prop, angle, ismath=False, mtext=None):
        if text.strip() and mtext is not None:
            texts.append((mtext.get_text(), mtext.get_window_extent(renderer)))
        return draw_text(gc, x, y, text, prop, angle, ismath=ismath, mtext=mtext)

    renderer.draw_text = recording
    figure.draw(renderer)
    for artist in extra_artists:
        artist.draw(renderer)
    unique = {}
    for text, box in texts:  # a multi-line Text is drawn line by line: one entry for its whole box
        unique[(text, tuple(box.bounds))] = (text, box)
    return list(unique.values())


def overlapping_texts(figure: Figure, extra_artists=(), tolerance_px: float = 1.0) -> list[str]:
    """Pairs of texts drawn over each other (their boxes overlap by more than ``tolerance_px`` both ways)."""
    texts = drawn_texts(figure, extra_artists)
    found = []
    for i, (first, a) in enumerate(texts):
        for second, b in texts[i + 1 :]:
            across = min(a.x1, b.x1) - max(a.x0, b.x0)
            up = min(a.y1, b.y1) - max(a.y0, b.y0)
            if across > tolerance_px and up > tolerance_px:
                found.append(f"{first!r} over {second!r} ({across:.0f} × {up:.0f} px)")
    return found
