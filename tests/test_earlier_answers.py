"""bring_answer: an exercise that builds on an earlier one uses the learner's own earlier function, brought
from their earlier notebook, not pasted by hand and never the course's reference."""

from __future__ import annotations

import shutil

import nbformat
import numpy as np
import pytest
from catalog.nb00_start_here import ANSWERS
from course import REPO

from heads_and_masks.earlier_answers import NotBroughtError, answer_source, bring_answer


def _course(tmp_path, attention_source=None):
    """my-work/00_start_here (the learner's notebook 00, with an answer if given) and my-work/01_heads."""
    for name in ("00_start_here", "01_heads"):
        (tmp_path / name).mkdir()
        shutil.copy(REPO / "notebooks" / name / f"{name}.ipynb", tmp_path / name)
    if attention_source is not None:
        path = tmp_path / "00_start_here" / "00_start_here.ipynb"
        notebook = nbformat.read(path, as_version=4)
        cell = next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "attention")
        cell.source = attention_source
        nbformat.write(notebook, path)
    return tmp_path / "01_heads"


def test_the_learners_own_attention_is_brought(tmp_path, capsys):
    answer = next(a for a in ANSWERS if a.name == "loops_over_rows")  # unlike the reference: loops over rows
    here = _course(tmp_path, answer.source("attention"))
    namespace = {"np": np}
    attention = bring_answer("attention", from_notebook="00_start_here", here=here, namespace=namespace)
    assert namespace["attention"] is attention
    assert attention.__code__.co_filename == "<your attention from 00_start_here>"  # run from the learner's cell
    assert "np.ndindex" in answer_source("attention", tmp_path / "00_start_here" / "00_start_here.ipynb")
    q, k, v = np.random.default_rng(0).normal(size=(3, 4, 2))
    causal = np.tril(np.ones((4, 4), bool))
    weights = np.exp(np.where(causal, q @ k.T / np.sqrt(2), -np.inf))
    assert np.allclose(attention(q, k, v, causal), weights / weights.sum(-1, keepdims=True) @ v)
    assert "defined here" in capsys.readouterr().out


def test_an_unwritten_or_missing_attention_is_said_so(tmp_path):
    here = _course(tmp_path)  # notebook 00 as released: raise NotImplementedError
    namespace = {"np": np}
    stand_in = bring_answer("attention", from_notebook="00_start_here", here=here, namespace=namespace)
    with pytest.raises(NotBroughtError, match="not written yet"):
        stand_in(None, None, None)
    assert isinstance(NotBroughtError("x"), NotImplementedError)  # an unanswered exercise, as the course counts it
    alone = tmp_path / "somewhere" / "else"
    alone.mkdir(parents=True)
    with pytest.raises(NotBroughtError, match="not beside"):
        bring_answer("attention", from_notebook="00_start_here", here=alone, namespace={})(None, None, None)


def test_notebook_01_brings_attention_and_asks_for_no_paste():
    source = (REPO / "authoring" / "01_heads.py").read_text(encoding="utf-8")
    assert 'bring_answer("attention", from_notebook="00_start_here")' in source
    assert "paste" not in source.lower()
