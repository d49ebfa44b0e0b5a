"""Notebook 07's widget driven without a browser: every step of every policy, readouts against counts made
here from scratch, the picture changing with the controls, and its text legible."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from heads_and_masks.model_configs import KiB
from heads_and_masks.pictures import LEGIBLE_TEXT_PX
from heads_and_masks.widgets import choice, slider
from heads_and_masks.widgets.generation import PROMPT, SINKS, TOTAL, WINDOW, GenerationStepper

POLICIES = {"full cache": None, "sliding window": WINDOW, "sinks + window": WINDOW}


def slow_cache_contents(policy: str, written: int) -> set[int]:
    """The positions the cache holds after ``written`` tokens, token by token, evicting the oldest non-sink."""
    held: list[int] = []
    for p in range(written):
        held.append(p)
        if policy == "sliding window" and len(held) > WINDOW:
            held.pop(0)
        if policy == "sinks + window" and len(held) > SINKS + WINDOW:
            held.pop(SINKS)
    return set(held)


def slow_visible_keys(policy: str, start: int, stop: int) -> set[int]:
    keys = set()
    for query in range(start, stop):
        for key in range(query + 1):
            if policy == "full cache" or query - key < WINDOW or (policy == "sinks + window" and key < SINKS):
                keys.add(key)
    return keys


def test_controls_are_those_the_notebook_describes():
    widget = GenerationStepper()
    assert list(widget.controls) == ["policy", "chunk", "step"]
    assert isinstance(widget.controls["policy"], choice.ToggleButtons)  # a named radio group drawn as buttons
    # the options are (shown label, value) pairs, the label in the notebook's language: in English, the value
    assert widget.controls["policy"].positions == widget.controls["policy"].labels == list(POLICIES)
    assert isinstance(widget.controls["chunk"], slider.IntSlider)
    assert "course-widget-GenerationStepper" in widget.widget._dom_classes


@pytest.mark.parametrize("policy", list(POLICIES))
@pytest.mark.parametrize("chunk", [1, 3])
def test_every_step_against_a_token_by_token_cache(policy, chunk):
    widget = GenerationStepper(policy=policy, chunk=chunk)
    widget.controls["step"].value = 0
    steps = widget.controls["step"].max + 1
    assert steps == 1 + -(-(TOTAL - PROMPT) // chunk)  # the prompt, then chunks up to TOTAL tokens
    pictures, stop = set(), 0
    for step in range(steps):
        widget.controls["step"].value = step
        start = stop
        stop = PROMPT if step == 0 else min(start + chunk, TOTAL)
        assert widget.readouts["positions written this step"] == f"{start} … {stop - 1}"
        held = slow_cache_contents(policy, stop)
        assert widget.readouts["tokens in the cache"] == len(held)
        assert widget.readouts["keys this step's queries see"] == len(slow_visible_keys(policy, start, stop))
        assert widget.readouts["cache at Mistral-7B's scale (KiB)"] == len(held) * 2 * 32 * 8 * 128 * 2 / KiB
        pictures.add(widget.png())
    assert len(pictures) == steps  # every step draws a different picture
    long = {"full cache": 32768, "sliding window": 4096, "sinks + window": 4100}[policy]
    assert widget.readouts["Mistral-7B after 32K tokens (MiB)"] == long * 2 * 32 * 8 * 128 * 2 / 2**20


def test_memory_grows_with_full_cache_and_stays_flat_with_a_window():
    widget = GenerationStepper(policy="full cache", chunk=1)
    sizes = {}
    for policy in POLICIES:
        widget.controls["policy"].value = policy
        sizes[policy] = []
        for step in range(widget.controls["step"].max + 1):
            widget.controls["step"].value = step
            sizes[policy].append(widget.readouts["tokens in the cache"])
    assert sizes["full cache"] == sorted(set(sizes["full cache"])) and sizes["full cache"][-1] == TOTAL
    assert max(sizes["sliding window"]) == WINDOW and sizes["sliding window"][-5:] == [WINDOW] * 5
    assert max(sizes["sinks + window"]) == SINKS + WINDOW


def test_changing_the_chunk_keeps_the_step_in_range():
    widget = GenerationStepper(chunk=1)
    widget.controls["step"].value = widget.controls["step"].max  # the last step of 17
    widget.controls["chunk"].value = 4  # now only 5 steps
    assert widget.controls["step"].max == 4 and widget.controls["step"].value <= 4
    assert widget.readouts["positions written this step"].endswith(str(TOTAL - 1))


def test_picture_is_legible_and_saved_for_review(artifacts):
    widget = GenerationStepper(policy="full cache", chunk=3)
    widget.controls["step"].value = 3
    assert min(widget.text_sizes_px()) >= LEGIBLE_TEXT_PX  # 20 slots of the full cache: the smallest labels
    (artifacts / "widget_07_full.png").write_bytes(widget.png())
    widget.controls["policy"].value = "sinks + window"
    image = Image.open(io.BytesIO(widget.png()))
    assert image.size == (int(7.3 * 90), int(3.9 * 90))
    pixels = np.asarray(image.convert("RGB")).reshape(-1, 3)
    assert (np.abs(pixels - np.array([255, 127, 14])).sum(axis=1) < 30).sum() > 100  # orange: the slots just written
    (artifacts / "widget_07_sinks.png").write_bytes(widget.png())
