"""Notebook 00's widget, driven without a browser: the picture and the readouts follow the controls."""

from __future__ import annotations

import numpy as np

import heads_and_masks as hm
from heads_and_masks.widgets.start_here import KEYS, VALUES, QueryWidget


def _expected(angle_degrees, length):
    angle = np.deg2rad(angle_degrees)
    query = length * np.array([np.cos(angle), np.sin(angle)])
    scores = KEYS @ query / np.sqrt(2)
    weights = np.exp(scores - scores.max())
    weights /= weights.sum()
    return weights, weights @ VALUES


def test_readouts_follow_the_controls(artifacts):
    widget = QueryWidget()
    first_png = widget.png()
    for angle, length in [(0, 1.0), (90, 4.0), (200, 8.0)]:
        widget.controls["angle"].value = angle
        widget.controls["length"].value = length
        weights, output = _expected(angle, length)
        assert np.isclose(widget.readouts["max weight"], weights.max())
        assert np.isclose(widget.readouts["entropy (bits)"], -(weights * np.log2(weights)).sum())
        assert np.allclose([widget.readouts["output x"], widget.readouts["output y"]], output)
    assert widget.png() != first_png, "the picture did not change with the controls"
    (artifacts / "widget_00_query.png").write_bytes(widget.png())


def test_longer_query_sharpens_the_weights():
    widget = QueryWidget(angle=0, length=0.5)
    soft = widget.readouts["max weight"]
    widget.controls["length"].value = 8.0
    assert widget.readouts["max weight"] > soft
    assert widget.readouts["entropy (bits)"] < hm.row_entropy_bits(np.full(4, 0.25))
