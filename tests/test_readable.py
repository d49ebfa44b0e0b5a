"""Numbers as people read them: counts with thousands separators, no exponent, a 0 that is 0."""

from __future__ import annotations

import re

import numpy as np
import pytest

from heads_and_masks.readable import readable_number
from heads_and_masks.widgets.causal_mask import LessonWidget
from heads_and_masks.widgets.heads import HeadSplitWidget
from heads_and_masks.widgets.kv_heads import KVCacheCalculator
from heads_and_masks.widgets.start_here import QueryWidget
from heads_and_masks.widgets.work_fraction import TileGridWidget

EXPONENT = re.compile(r"\d[eE][+-]?\d")


@pytest.mark.parametrize(
    "value, digits, text",
    [
        (4_027_056_128, 4, "4,027,056,128"),
        (np.int64(22_040), 4, "22,040"),
        (7, 4, "7"),
        (0, 4, "0"),
        (13_743.9, 3, "13,744"),
        (137.43, 3, "137"),
        (0.07292, 4, "0.07292"),
        (0.5, 4, "0.5"),
        (1.0, 4, "1"),
        (1.064, 4, "1.064"),
        (0.99996, 4, "1"),
        (999.96, 4, "1,000"),
        (5e-5, 4, "0.00005"),
        (1.07e-28, 4, "0"),
        (-0.0, 4, "0"),
        (-2.5, 4, "-2.5"),
        (float("inf"), 4, "∞"),
    ],
)
def test_readable_number(value, digits, text):
    assert readable_number(value, digits) == text


def test_no_exponent_for_any_magnitude():
    for exponent in range(-30, 16):
        for mantissa in (1.0, 2.204, 4.027, 9.99):
            text = readable_number(mantissa * 10.0**exponent)
            assert not EXPONENT.search(text), text


def _values(widget) -> list[str]:
    return re.findall(r"<td><b>(.*?)</b></td>", widget.readout_html.value)


def test_readouts_of_counts_have_separators_and_no_exponent():
    heads = HeadSplitWidget()
    assert heads.readouts["multiply-adds"] > 10**9
    assert f"{heads.readouts['multiply-adds']:,}" in _values(heads)
    assert not any(EXPONENT.search(v) for v in _values(heads))
    tiles = TileGridWidget(n=256, block=1)
    assert f"{tiles.readouts['entries computed']:,}" in _values(tiles)
    calculator = KVCacheCalculator(model="GPT-3-175B", context=1048576, batch=256, dtype="fp32")
    assert calculator.readouts["KV cache (GiB)"] > 10**4
    assert not any(EXPONENT.search(v) for v in _values(calculator))
    assert not EXPONENT.search(calculator.cache_label.get_text())


def test_an_entropy_that_is_zero_reads_0():
    widget = LessonWidget(scale_by_sqrt_d=False, head_size=512, temperature=0.1)  # every row one-hot
    assert 0 < widget.readouts["row entropy (bits)"] < 1e-20  # exp of minus hundreds: 0 to any precision shown
    names = re.findall(r"<td>(.*?)</td><td><b>", widget.readout_html.value)
    assert _values(widget)[names.index("row entropy (bits)")] == "0"
    assert _values(widget)[names.index("gradient scale")] == "0"
    assert not any(EXPONENT.search(v) for v in _values(QueryWidget(length=8.0)))


def test_readouts_printed_in_a_notebook_read_as_on_the_widget():
    heads = HeadSplitWidget()
    text = heads.readouts_text()
    assert f"multiply-adds: {heads.readouts['multiply-adds']:,}" in text and not EXPONENT.search(text)
    calculator = KVCacheCalculator(model="GPT-3-175B")
    assert "fits: no" in calculator.readouts_text() and "<" not in calculator.readouts_text()


def test_a_russian_readout_writes_numbers_as_russian_prose_does():
    """In Russian a readout's thousands are apart by a narrow space and its decimals after a comma ("4,608" would
    read there as a fraction): the same values, written as the glossary writes numbers."""
    from heads_and_masks import i18n

    with i18n.use_language("ru"):
        assert readable_number(4608) == "4\u202f608" and readable_number(79.6) == "79,6"
        calculator = KVCacheCalculator(model="GPT-3-175B", gpu="H100")
        values = _values(calculator)
    assert "4\u202f608" in values and "79,6" in values and "2\u202f048" in values, values
    assert readable_number(4608) == "4,608"  # English again once out of Russian
