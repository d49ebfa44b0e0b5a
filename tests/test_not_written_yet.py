"""An exercise that still holds its stub (`raise NotImplementedError()`) is "not written yet".

Every check says so in one message on stderr, broken between words into lines that fit JupyterLab's column
on a laptop (``OUTPUT_COLUMNS``), and returns without raising: JupyterLab's Run All goes on to
the next cell (it stops only on an error), while nbgrader gives the test cell no points (it counts
stderr as a failure). Functions are defined here as a notebook cell defines them, in a namespace
called ``__main__``; the untouched notebooks themselves are run in test_notebooks.py.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import textwrap

import numpy as np
import pytest

import heads_and_masks.checks as checks_package
from heads_and_masks.checks import CheckFailed
from heads_and_masks.checks.core import OUTPUT_COLUMNS
from heads_and_masks.checks.heads import check_multi_head_attention
from heads_and_masks.checks.start_here import check_attention

REPLACE = "replace `raise NotImplementedError()` with your code"


def _every_check():
    for module_info in pkgutil.iter_modules(checks_package.__path__):
        module = importlib.import_module(f"{checks_package.__name__}.{module_info.name}")
        for name, function in inspect.getmembers(module, inspect.isfunction):
            if name.startswith("check_") and function.__module__ == module.__name__:
                yield name, function


CHECKS = sorted(_every_check())


def cell(source: str, **names) -> dict:
    """Run ``source`` as a notebook cell would (module ``__main__``); its namespace."""
    namespace = {"__name__": "__main__", "np": np, **names}
    exec(textwrap.dedent(source), namespace)
    return namespace


def said(err: str) -> str:
    """The one message a check wrote to stderr: each of its lines fits OUTPUT_COLUMNS; joined with spaces."""
    assert err.endswith("\n") and all(len(line) <= OUTPUT_COLUMNS for line in err.splitlines()), err
    return " ".join(err.split())


def test_every_check_module_is_found():
    assert len(CHECKS) >= 30, [name for name, _ in CHECKS]


@pytest.mark.parametrize(("name", "check"), CHECKS, ids=[name for name, _ in CHECKS])
def test_a_stub_is_not_written_yet_in_one_message_on_stderr(name, check, capfd):
    stub = cell("""
        def answer(*args, **kwargs):
            # YOUR CODE HERE
            raise NotImplementedError()
    """)["answer"]
    assert check(stub) is None, f"{name} raised instead of reporting the stub"
    out, err = capfd.readouterr()
    assert said(err) == f"✗ `answer` is not written yet: {REPLACE}"
    assert out == "", f"{name} printed something for an unwritten exercise: {out!r}"


def test_a_function_calling_an_unwritten_one_names_the_one_to_write(capfd):
    namespace = cell("""
        def split_heads(x, h):
            # YOUR CODE HERE
            raise NotImplementedError()

        def multi_head_attention(x, w_q, w_k, w_v, w_o, h, mask=None):
            return split_heads(x @ w_q, h)
    """)
    check_multi_head_attention(namespace["multi_head_attention"])
    assert said(capfd.readouterr().err) == (
        "✗ `multi_head_attention` cannot be checked yet: it calls `split_heads`, which is not written yet "
        f"(in `split_heads`, {REPLACE})"
    )


def test_a_stub_raised_with_words_of_the_learner_is_not_finished(capfd):
    attention = cell("""
        def attention(q, k, v, mask=None):
            raise NotImplementedError("masks come later")
    """)["attention"]
    check_attention(attention)
    err = said(capfd.readouterr().err)
    assert "`attention` is not finished" in err and "masks come later" in err, err


def refuses_in_words(*args):
    """A library function that does not support an input (this module is not ``__main__``)."""
    raise NotImplementedError("float16 scores are not supported")


def test_a_library_refusing_an_input_is_a_crash_like_any_other(capfd):
    """Not the stub: the learner called something that cannot do what was asked. A failure with its words."""
    attention = cell(
        """
        def attention(q, k, v, mask=None):
            return refuses_in_words(q, k, v)
    """,
        refuses_in_words=refuses_in_words,
    )["attention"]
    with pytest.raises(CheckFailed, match="raised NotImplementedError: float16 scores are not supported"):
        check_attention(attention)
    assert capfd.readouterr().err == ""


def test_a_try_out_cell_says_in_one_line_that_its_exercise_is_not_written_yet(capsys):
    """The cell after each exercise (`with hm.if_written(...)`): Run All goes on past a stub, and nothing else."""
    import heads_and_masks as hm
    from heads_and_masks.earlier_answers import NotBroughtError

    stub = cell("""
        def causal_mask(n):
            raise NotImplementedError()
    """)["causal_mask"]
    ran = []
    with hm.if_written("causal_mask"):
        ran.append("before")
        stub(4)
        ran.append("after")
    with hm.if_written("multi_head_attention"):
        raise NotBroughtError("attention from 00_start_here is not written yet")
    with hm.if_written("causal_mask"):
        ran.append("written")
    assert ran == ["before", "written"]
    assert capsys.readouterr() == ("causal_mask is not written yet\nmulti_head_attention is not written yet\n", "")
    with pytest.raises(ValueError, match="learner's own error"), hm.if_written("causal_mask"):
        raise ValueError("the learner's own error")
