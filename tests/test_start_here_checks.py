"""Notebook 00's check in-process: every catalog answer through check_attention, visible and hidden calls as
in the notebook, so each verdict and message is seen in seconds (test_catalogs.py grades the same answers
with nbgrader)."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
from catalog.nb00_start_here import ANSWERS

from heads_and_masks.checks.core import CheckFailed
from heads_and_masks.checks.start_here import check_attention


def _failure(answer) -> str | None:
    namespace = {"np": np}
    exec(answer.source("attention"), namespace)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            check_attention(namespace["attention"])
            check_attention(namespace["attention"], seed=7919, thorough=True)
    except CheckFailed as failure:
        return str(failure)
    return None


@pytest.mark.parametrize("answer", [a for a in ANSWERS if not a.untouched], ids=lambda a: a.name)
def test_catalog_answer_against_the_check(answer):
    failure = _failure(answer)
    if answer.correct:
        assert failure is None, failure
        return
    assert failure, f"the mistake {answer.name} was not caught"
    for phrase in answer.phrases:
        assert phrase.lower() in failure.lower(), f"{phrase!r} not in: {failure}"


def test_a_hidden_run_does_not_print_the_visible_lines_again(capsys):
    """A test cell runs its check on the visible inputs, then (instructor's version) on the hidden ones,
    which repeat the visible probes: each ✓ line is printed once, and a hidden run that adds no line of
    its own says it passed in one line."""
    from heads_and_masks.checks.core import SAME_ON_MORE_INPUTS
    from heads_and_masks.checks.heads import check_split_heads_errors

    namespace = {"np": np}
    exec(next(a for a in ANSWERS if a.correct).source("attention"), namespace)
    check_attention(namespace["attention"])
    visible = capsys.readouterr().out.splitlines()
    check_attention(namespace["attention"], seed=7919, thorough=True)
    hidden = capsys.readouterr().out.splitlines()
    assert visible and hidden and not set(visible) & set(hidden), (visible, hidden)

    def split_heads(x, h):
        if x.shape[-1] % h:
            raise ValueError("h must divide the width")
        return x.reshape(x.shape[0], x.shape[1], h, -1).transpose(0, 2, 1, 3)

    check_split_heads_errors(split_heads)
    visible = capsys.readouterr().out.splitlines()
    check_split_heads_errors(split_heads, thorough=True)
    assert capsys.readouterr().out.splitlines() == [SAME_ON_MORE_INPUTS] != visible
