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
from heads_and_masks.checks.start import check_attention


def _failure(answer) -> str | None:
    namespace = {"np": np}
    exec(answer.source("attention"), namespace)  # noqa: S102
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
