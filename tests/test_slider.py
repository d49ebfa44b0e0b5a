"""The course's slider (heads_and_masks/widgets/slider.py), from Python: what ipywidgets' sliders did, kept.

The browser side (a native range input, its label, the arrow keys in JupyterLab) is tested in the browser
tests; here: positions and their texts, a value set from Python or from a position moved in the browser,
clamping when the range shrinks (the widgets rely on it), rounding to the step, and options.
"""

from __future__ import annotations

import pytest
import traitlets

from heads_and_masks.widgets import slider


def _changes(widget) -> list:
    seen = []
    widget.observe(lambda change: seen.append(change["new"]), names="value")
    return seen


def test_an_int_slider_has_a_position_per_step_each_shown_as_people_read_numbers():
    s = slider.int_slider(value=1024, min=0, max=4096, step=512, description="context")
    assert s.positions == list(range(0, 4097, 512))
    assert s.labels[-1] == "4,096" and s.labels[s.index] == "1,024" and s.value == 1024
    assert isinstance(s, slider.IntSlider) and (s.min, s.max, s.step) == (0, 4096, 512)


def test_moving_the_thumb_in_the_browser_sets_the_value_and_tells_observers():
    s = slider.int_slider(value=4, min=1, max=16, description="window w")
    seen = _changes(s)
    s.set_state({"index": 0})  # what the browser sends when the thumb reaches the left end
    assert s.value == 1 and seen == [1]


def test_a_value_set_from_python_moves_the_thumb_and_is_rounded_to_a_step_or_clamped():
    s = slider.int_slider(value=64, min=8, max=512, step=8, description="head size d")
    s.value = 100  # between 96 and 104: the nearest step
    assert (s.value, s.index) == (104, 12)
    s.value = 10_000
    assert (s.value, s.index) == (512, len(s.positions) - 1)
    s.value = -3
    assert (s.value, s.index) == (8, 0)


def test_a_shrinking_range_clamps_the_value_and_says_so():
    s = slider.int_slider(value=11, min=0, max=16, description="length")
    seen = _changes(s)
    s.max = 6
    assert s.value == 6 and seen == [6] and s.labels == [str(i) for i in range(7)] and s.index == 6


def test_a_float_slider_shows_as_many_decimals_as_its_step():
    s = slider.float_slider(value=1.0, min=0.1, max=4.0, step=0.05, description="temperature T")
    assert len(s.positions) == 79 and s.labels[:3] == ["0.10", "0.15", "0.20"] and s.labels[s.index] == "1.00"
    s.value = 1.234
    assert s.value == pytest.approx(1.25) and s.labels[s.index] == "1.25"
    coarse = slider.float_slider(value=1.5, min=0.1, max=8.0, step=0.1, description="query length")
    assert coarse.labels[coarse.index] == "1.5" and coarse.value == pytest.approx(1.5)


def test_a_selection_slider_takes_values_or_text_and_value_pairs():
    plain = slider.selection_slider(options=[1, 2, 4, 1024], value=4, description="head size d")
    assert plain.labels == ["1", "2", "4", "1,024"] and plain.index == 2
    pairs = slider.selection_slider(options=[("4K", 4096), ("8K", 8192)], value=8192, description="context")
    assert pairs.labels == ["4K", "8K"] and pairs.value == 8192
    pairs.set_state({"index": 0})
    assert pairs.value == 4096


def test_new_options_keep_the_value_or_take_the_nearest():
    s = slider.selection_slider(options=[1, 2, 4, 8], value=8, description="heads")
    s.options = [1, 2, 3, 6]
    assert s.value == 6 and s.labels[s.index] == "6"


def test_a_value_that_is_no_option_is_refused_with_the_options_named():
    s = slider.selection_slider(options=["causal", "sliding window"], value="causal", description="mask")
    with pytest.raises(traitlets.TraitError, match="sliding window"):
        s.value = "prefix"
    assert s.value == "causal" and s.index == 0  # refused before it was taken


def test_a_slider_with_no_position_is_refused():
    with pytest.raises(ValueError, match="no position"):
        slider.int_slider(value=0, min=5, max=1, description="empty")
