"""Colour never carries a meaning alone: legend entries a picture tells apart by colour only stay apart for
readers with a colour-vision deficiency (WCAG 1.4.1, use of colour).

For every legend of every picture (static pictures and widgets), two entries drawn alike in everything but
colour (same marker and line style for lines, same hatch for patches) must keep their colours apart as a
reader with protanopia, deuteranopia or tritanopia sees them (colorspacious's simulation, Machado et al.
2009, at full severity), and as everyone else does: a distance of at least ``MIN_DELTA_E`` in CAM02-UCS,
the perceptually uniform space matplotlib's own colormaps are designed in. Two entries that differ in
marker, line style or hatch are told apart without colour, and are not compared.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from colorspacious import cspace_convert, deltaE
from matplotlib import colors
from matplotlib.collections import Collection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from test_pictures import FIGURES
from test_widget_legibility import WIDGETS

# CAM02-UCS distance two legend colours keep for every reader. About 1 is a just-noticeable difference; 10 is
# told apart at a glance, side by side in a legend as on a line.
MIN_DELTA_E = 10.0
DEFICIENCIES = ("protanomaly", "deuteranomaly", "tritanomaly")  # at severity 100: the -anopias


def _cue(handle) -> tuple[tuple[float, float, float], tuple] | None:
    """(colour, what else tells the entry apart) of a legend handle; None for a handle with no colour."""
    if getattr(handle, "patches", None):  # a bar chart's container: its bars are drawn alike
        handle = handle.patches[0]
    if isinstance(handle, Line2D):
        marker = handle.get_marker()
        return colors.to_rgb(handle.get_color()), (
            "line",
            marker if marker not in (None, "", "None") else None,
            handle.get_linestyle(),
        )
    if isinstance(handle, Patch):
        face, edge = handle.get_facecolor(), handle.get_edgecolor()
        filled = face[3] > 0
        return colors.to_rgb(face if filled else edge), ("patch", handle.get_hatch(), filled)
    if isinstance(handle, Collection):
        faces = handle.get_facecolor()
        colour = faces[0] if len(faces) else handle.get_edgecolor()[0]
        return colors.to_rgb(colour), (
            "markers",
            type(handle).__name__,
            tuple(p.vertices.tobytes() for p in handle.get_paths()),
        )
    return None


def seen_by(colour, deficiency: str | None) -> np.ndarray:
    if deficiency is None:
        return np.asarray(colour)
    space = {"name": "sRGB1+CVD", "cvd_type": deficiency, "severity": 100}
    return np.clip(cspace_convert(colour, space, "sRGB1"), 0, 1)


def closest_pairs(figure: Figure) -> list[tuple[float, str, str, str]]:
    """(distance, reader, entry, entry) for every two legend entries told apart by colour alone."""
    found = []
    for ax in figure.get_axes():
        handles, labels = ax.get_legend_handles_labels()
        entries = [(label, *cue) for handle, label in zip(handles, labels) if (cue := _cue(handle))]
        for (label, colour, rest), (other, other_colour, other_rest) in itertools.combinations(entries, 2):
            if rest != other_rest or np.allclose(colour, other_colour):
                continue  # told apart otherwise, or the same colour on purpose (one meaning)
            for deficiency in (None, *DEFICIENCIES):
                distance = float(deltaE(seen_by(colour, deficiency), seen_by(other_colour, deficiency), "sRGB1"))
                found.append((distance, deficiency or "typical colour vision", label, other))
    return found


def too_close(figure: Figure) -> list[str]:
    return [
        f"{a!r} and {b!r} differ by colour alone, and for {reader} by {distance:.1f} (at least {MIN_DELTA_E:g})"
        for distance, reader, a, b in closest_pairs(figure)
        if distance < MIN_DELTA_E
    ]


def test_colours_a_red_green_deficiency_confuses_are_found():
    figure = Figure()
    ax = figure.subplots()
    ax.plot([0, 1], color="tab:red", label="red")
    ax.plot([1, 0], color="tab:green", label="green")
    ax.plot([0, 2], color="tab:green", ls="--", label="green, dashed")  # a line style apart: not compared
    found = too_close(figure)
    assert len(found) == 1 and "'red' and 'green'" in found[0] and "deuteranomaly" in found[0] + "", found


@pytest.mark.parametrize("function, args, kwargs", FIGURES, ids=[f.__name__ for f, _, _ in FIGURES])
def test_a_pictures_legend_never_depends_on_colour_vision(function, args, kwargs):
    problems = too_close(function(*args, **kwargs))
    assert not problems, f"{function.__name__}: " + "; ".join(problems)


@pytest.mark.parametrize("cls", WIDGETS, ids=lambda cls: cls.__name__)
def test_a_widgets_legend_never_depends_on_colour_vision(cls):
    problems = too_close(cls().figure)
    assert not problems, f"{cls.__name__}: " + "; ".join(problems)
