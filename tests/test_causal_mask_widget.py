"""Notebook 03's widget (the lesson's), driven without a browser: the controls the browser test
relies on, readouts checked against values computed here from scratch, and the facts a learner
must be able to see (spread ∝ √d without the division, saturation, the one-hot first row)."""

from __future__ import annotations

import statistics
import time

import ipywidgets as widgets
import numpy as np
import pytest

from heads_and_masks.sentence import KEYS, QUERIES, TOKENS
from heads_and_masks.widgets import slider
from heads_and_masks.widgets.causal_mask import LessonWidget

READOUTS = ["score spread", "row entropy (bits)", "max weight", "gradient scale", "first row entropy (bits)"]


def expected_readouts(scale_by_sqrt_d: bool, causal: bool, head_size: int, temperature: float) -> dict[str, float]:
    """The readouts, computed the slow obvious way: loops over rows, nothing from the package."""
    n = len(TOKENS)
    q, k = QUERIES[:, :head_size], KEYS[:, :head_size]
    z = q @ k.T / temperature
    if scale_by_sqrt_d:
        z = z / np.sqrt(head_size)
    allowed = [[(key <= query) or not causal for key in range(n)] for query in range(n)]
    weights = np.zeros((n, n))
    entropies, top_eigenvalues, allowed_logits = [], [], []
    for i in range(n):
        keys = [j for j in range(n) if allowed[i][j]]
        row = np.array([z[i, j] for j in keys])
        allowed_logits += list(row)
        e = np.exp(row - row.max())
        p = e / e.sum()
        weights[i, keys] = p
        entropies.append(sum(-x * np.log(x) / np.log(2) for x in p if x > 0))
        full = weights[i]
        jacobian = np.diag(full) - np.outer(full, full)
        top_eigenvalues.append(max(np.linalg.eigvalsh(jacobian)))
    return {
        "score spread": float(max(allowed_logits) - min(allowed_logits)),
        "row entropy (bits)": float(np.mean(entropies)),
        "max weight": float(weights.max()),
        "gradient scale": float(np.mean(top_eigenvalues)),
        "first row entropy (bits)": float(entropies[0]),
    }


def test_controls_readouts_and_classes_are_those_the_browser_test_uses():
    widget = LessonWidget()
    assert list(widget.controls) == ["scale_by_sqrt_d", "causal", "head_size", "temperature"]
    assert isinstance(widget.controls["scale_by_sqrt_d"], (widgets.Checkbox, widgets.ToggleButton))
    assert widget.controls["scale_by_sqrt_d"].description == "divide by √d"
    assert widget.controls["causal"].description == "causal mask"
    size = widget.controls["head_size"]
    assert isinstance(size, slider.IntSlider) and (size.min, size.max, size.value) == (8, 512, 64)
    assert size.description == "head size d"
    temperature = widget.controls["temperature"]
    assert isinstance(temperature, slider.FloatSlider) and temperature.description == "temperature T"
    assert temperature.value == 1.0
    assert {"course-widget", "lesson-widget"} <= set(widget.widget._dom_classes)
    assert list(widget.readouts) == READOUTS
    html = widget.readout_html.value
    assert html.startswith("<table class='course-readouts'>")
    for name in READOUTS:
        assert f"<td>{name}</td>" in html


@pytest.mark.parametrize(
    "state",
    [
        dict(scale_by_sqrt_d=True, causal=True, head_size=64, temperature=1.0),
        dict(scale_by_sqrt_d=False, causal=True, head_size=64, temperature=1.0),
        dict(scale_by_sqrt_d=False, causal=False, head_size=512, temperature=1.0),
        dict(scale_by_sqrt_d=True, causal=False, head_size=8, temperature=0.25),
        dict(scale_by_sqrt_d=True, causal=True, head_size=200, temperature=3.5),
    ],
)
def test_readouts_match_an_independent_computation(state):
    widget = LessonWidget()
    for name, value in state.items():  # move the controls one by one, as a learner would
        widget.controls[name].value = value
    expected = expected_readouts(**state)
    for name in READOUTS:
        assert widget.readouts[name] == pytest.approx(expected[name], rel=1e-9, abs=1e-12), name


def test_first_row_under_the_mask_is_one_hot_with_entropy_zero():
    widget = LessonWidget()
    for scale in (True, False):
        widget.controls["scale_by_sqrt_d"].value = scale
        for head_size in (8, 64, 512):
            widget.controls["head_size"].value = head_size
            for temperature in (0.1, 1.0, 4.0):
                widget.controls["temperature"].value = temperature
                weights = np.asarray(widget.heatmap.get_array())
                assert np.array_equal(weights[0], np.eye(len(TOKENS))[0])
                assert widget.readouts["first row entropy (bits)"] == 0.0
                assert widget.readouts["max weight"] == 1.0
    widget.controls["causal"].value = False
    assert widget.readouts["first row entropy (bits)"] > 0.1  # only the mask pins it


def test_without_sqrt_d_the_spread_grows_like_sqrt_d_and_softmax_saturates():
    raw = LessonWidget(scale_by_sqrt_d=False, causal=False, head_size=8)
    scaled = LessonWidget(scale_by_sqrt_d=True, causal=False, head_size=8)
    small_raw, small_scaled = dict(raw.readouts), dict(scaled.readouts)
    raw.controls["head_size"].value = scaled.controls["head_size"].value = 512
    growth = raw.readouts["score spread"] / small_raw["score spread"]
    assert 0.6 * 8 < growth < 1.4 * 8, f"spread grew {growth:.2f}x for √(512/8) = 8"
    assert 0.5 < scaled.readouts["score spread"] / small_scaled["score spread"] < 2
    assert raw.readouts["max weight"] > 0.999 and raw.readouts["row entropy (bits)"] < 0.05
    assert raw.readouts["gradient scale"] < 0.01 < scaled.readouts["gradient scale"] / 10
    assert scaled.readouts["row entropy (bits)"] > 1.0
    # and the spread scales as 1/T
    scaled.controls["temperature"].value = 2.0
    assert scaled.readouts["score spread"] == pytest.approx(
        expected_readouts(True, False, 512, 1.0)["score spread"] / 2
    )


def test_the_picture_follows_the_controls_and_updates_fast(artifacts):
    widget = LessonWidget()
    (artifacts / "widget_03_lesson_default.png").write_bytes(widget.png())
    assert widget.forbidden.get_visible()
    pictures = {widget.png()}
    times = []
    for name, value in [
        ("scale_by_sqrt_d", False),
        ("head_size", 512),
        ("causal", False),
        ("temperature", 3.0),
        ("scale_by_sqrt_d", True),
        ("head_size", 16),
        ("causal", True),
        ("temperature", 0.3),
    ]:
        widget.controls[name].value = value
        times.append(widget.last_update_seconds)
        pictures.add(widget.png())
        assert widget.forbidden.get_visible() == widget.value("causal")
    assert len(pictures) == 9, "some control did not change the picture"
    (artifacts / "widget_03_lesson_moved.png").write_bytes(widget.png())
    widget.controls["head_size"].value = 512
    widget.controls["scale_by_sqrt_d"].value = False
    (artifacts / "widget_03_lesson_saturated.png").write_bytes(widget.png())
    cpu_times = []
    for value in range(8, 513, 40):  # a slider drag
        start = time.process_time()
        widget.controls["head_size"].value = value
        cpu_times.append(time.process_time() - start)
        times.append(widget.last_update_seconds)
    wall, cpu = statistics.median(times), statistics.median(cpu_times)
    (artifacts / "widget_03_update_seconds.txt").write_text(
        f"wall: median {wall:.4f} s, max {max(times):.4f} s; cpu: median {cpu:.4f} s\n"
    )
    # CPU time, not wall time: the budget is 100 ms, and a busy shared machine must not fail the test
    assert cpu < 0.1, f"an update costs {cpu * 1e3:.0f} ms of CPU (budget 100 ms)"


def test_the_sentence_is_the_lessons():
    """The lesson's sentence, "<s> кот сел на коврик .", token for token: six tokens ending in a full stop."""
    assert TOKENS == ("<s>", "cat", "sat", "on", "mat", ".")


def test_the_readouts_are_of_the_kind_of_the_lessons_figures():
    """The lesson's widget read spread 4.38 with a row entropy of 1.209 bits (d = 64, T = 1, mask on).
    Stretched to a spread of 4.38, our scores give about the lesson's entropy when the spread is a range
    (max - min, the widget's definition), and far less when it is a standard deviation: the lesson's
    spread is a range. Notebook 03 prints the same computation beside the widget."""
    from heads_and_masks.attention import masked_softmax
    from heads_and_masks.attention_stats import row_entropies
    from heads_and_masks.masks import causal_mask

    widget = LessonWidget()
    causal = causal_mask(len(TOKENS))
    z = QUERIES[:, :64] @ KEYS[:, :64].T / 8.0
    assert widget.readouts["score spread"] == pytest.approx(z[causal].max() - z[causal].min())

    def entropy_at(spread_of_kind):
        return row_entropies(masked_softmax(z * (4.38 / spread_of_kind), causal)).mean()

    as_range, as_std = entropy_at(np.ptp(z[causal])), entropy_at(z[causal].std())
    assert abs(as_range - 1.209) < 0.1, as_range
    assert as_std < 0.6, as_std
    # and unstretched, our widget's own readouts are of the lesson's order (other embeddings, same kind)
    assert 0.8 < widget.readouts["score spread"] / 4.38 < 1.25
    assert abs(widget.readouts["row entropy (bits)"] - 1.209) < 0.1
