"""Misconception ids: every diagnosis the checks can make names a registered, stable id.

The class report (autograde/class_report.py) counts students per id, so an id must be carried by the
failure itself (``CheckFailed.misconception``), never read back from the message text.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from heads_and_masks.checks import (
    causal_mask as causal,
    heads,
    kv_heads,
    learned_heads as learned,
    other_masks,
    start_here as start,
    work_fraction as tiles,
    why_heads,
)
from heads_and_masks.checks.core import CheckFailed, expect_close, fail
from heads_and_masks.checks.misconceptions import MISCONCEPTIONS, family


def _diagnoses():
    """Every generator of known wrong results, on inputs where each of its mistakes is reachable."""
    r = np.random.default_rng(0)
    causal_4 = np.tril(np.ones((4, 4), bool))
    q, k, v = (r.normal(size=(3, 4)) for _ in range(3))
    gq, gk, gv = r.normal(size=(2, 4, 5, 3)), r.normal(size=(2, 2, 5, 3)), r.normal(size=(2, 2, 5, 3))
    bq, bk, bv = (r.normal(size=(2, 5, 3)) for _ in range(3))
    return {
        "split": heads._wrong_splits(r.normal(size=(2, 3, 8)), 2),
        "merge": heads._wrong_merges(r.normal(size=(2, 2, 3, 4))),
        "cost": heads._wrong_costs(16, 64, 4),
        "mha": heads._wrong_mhas(*heads._mha_inputs(r, 2, 5, 8), 2, heads.causal(None, 2, 2, 5)),
        "causal_mask": causal._wrong_masks(4),
        "softmax": causal._wrong_softmaxes(r.normal(size=(4, 4)), causal_4),
        "entropy": causal._wrong_entropies(np.full((4, 4), 0.25)),
        "attention": start._wrong_attentions(q, k, v, np.tril(np.ones((3, 3), bool))),
        "entries": tiles._wrong_entries(5),
        "fractions": tiles._wrong_fractions(5),
        "counts": tiles._wrong_counts(10, 3),
        "tiled": tiles._wrong_outputs(r.normal(size=(7, 3)), r.normal(size=(7, 3)), r.normal(size=(7, 2)), 3),
        "padding": other_masks._padding_mistakes([2, 3], 4),
        "window": other_masks._window_mistakes(5, 2),
        "attention_mask": other_masks._attention_mask_mistakes([2, 3], 4, True, 2),
        "batched": other_masks._batched_mistakes(bq, bk, bv, np.array([3, 5]), True, 2),
        "gqa": kv_heads._wrong_gqa(gq, gk, gv, np.tril(np.ones((5, 5), bool))),
        "kv_cache": kv_heads._wrong_sizes(1000, 2, 2, 2, 5, 2, 2),
        "rates": why_heads._wrong_rates(8, 1.5, 16),
        "backward": learned._wrong_gradients(*_backward_inputs(r)),
        "rules": learned._wrong_rule_weights(r.random((2, 3, 6, 6))),
    }


def _backward_inputs(r):
    """q, k, v, a mask with a row that allows no key (so every mistake of 08's backward is reachable), dout."""
    mask = np.tril(np.ones((4, 4), bool))
    mask[2] = False
    return r.normal(size=(4, 3)), r.normal(size=(4, 3)), r.normal(size=(4, 2)), mask, r.normal(size=(4, 2))


@pytest.mark.parametrize("name,diagnoses", list(_diagnoses().items()))
def test_every_diagnosis_names_a_registered_id(name, diagnoses):
    found = list(diagnoses)
    assert found, name
    for diagnosis in found:
        assert len(diagnosis) == 3, f"{name}: a diagnosis is (wrong result, explanation, id): {diagnosis[1:]}"
        _, explanation, misconception = diagnosis
        assert isinstance(explanation, str) and explanation, name
        assert misconception in MISCONCEPTIONS, f"{name}: {misconception!r} is not registered"


def test_ids_are_family_dot_name_and_described():
    for misconception, words in MISCONCEPTIONS.items():
        assert misconception.count(".") == 1 and misconception == misconception.lower(), misconception
        assert family(misconception) and words.strip(), misconception


class _KernelHere:
    """The judge's harness (the code it defines in every grading kernel) run in this process: a call into it takes
    the path a graded call takes, the kernel's side and the grader's, without starting a kernel."""

    def __init__(self, **functions):
        from autograde.kernel.kernel_client import HARNESS

        self.namespace = dict(functions)
        exec(HARNESS, self.namespace)

    def request(self, payload: dict, timeout: float) -> dict:
        import contextlib
        import io
        import json

        from autograde.inside.harness import REPLY_MARK

        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            self.namespace["__hm_rpc"](json.dumps(payload))
        return json.loads(printed.getvalue().strip().splitlines()[-1].removeprefix(REPLY_MARK))

    def memory_meter(self):
        """This process's memory, read as the grader reads a kernel's where it has no cgroup (/proc)."""
        import os

        from autograde.kernel.resources import MemoryMeter

        return MemoryMeter(None, os.getpid())


def test_a_finalizers_resource_warning_is_not_the_answers_warning():
    """A ResourceWarning is a finalizer's (an unclosed event loop collected during the call, as it happened once
    in 60 gradings of a correct answer): it never fails an answer; a numerics warning still does. The same
    policy on both paths: the checks' call in the learner's notebook, and the grading kernel's call (the judge's
    harness records the warnings there, the grader warns again with them inside the checks' call)."""
    import warnings

    from autograde.kernel.remote_calls import Budget, RemoteFunction
    from heads_and_masks.checks.core import call

    def collected_mid_call(x):
        warnings.warn("unclosed event loop", ResourceWarning)
        return x

    def overflows(x):
        return np.exp(np.array([x]))

    def divides_by_zero(x):
        return np.array([x]) / 0.0

    def warns_itself(x):
        warnings.warn("this is slow", UserWarning)
        return x

    kernel = _KernelHere(
        collected_mid_call=collected_mid_call,
        overflows=overflows,
        divides_by_zero=divides_by_zero,
        warns_itself=warns_itself,
    )
    budget = Budget(60, 30)
    for path, function in [("notebook", f) for f in (collected_mid_call, overflows, divides_by_zero, warns_itself)] + [
        ("kernel", RemoteFunction(kernel, f, budget))
        for f in ("collected_mid_call", "overflows", "divides_by_zero", "warns_itself")
    ]:
        name = function.__name__
        if name == "collected_mid_call":
            assert call(function, 1000.0, what=f"f(1000.0) ({path})", allow_warnings=False) == 1000.0
        else:
            with pytest.raises(CheckFailed, match="emitted a warning") as failed:
                call(function, 1000.0, what=f"f(1000.0) ({path})", allow_warnings=False)
            assert failed.value.misconception == "numerics.warning", (path, name)
    # the kernel's side applies the policy itself: a finalizer's warning never leaves the kernel
    recorded = {
        name: [
            category
            for category, _ in kernel.request({"op": "call", "name": name, "args": [1000.0], "kwargs": {}}, 5)[
                "warnings"
            ]
        ]
        for name in ("collected_mid_call", "overflows", "divides_by_zero", "warns_itself")
    }
    assert recorded == {
        "collected_mid_call": [],
        "overflows": ["RuntimeWarning"],
        "divides_by_zero": ["RuntimeWarning"],
        "warns_itself": ["UserWarning"],
    }


def test_the_grading_kernel_has_the_checks_warning_policy(tmp_path):
    """The harness imports the policy from the kernel's stub copy of the package: that copy is the module itself."""
    import ast

    from autograde.kernel.stub_package import stub_package
    from heads_and_masks import _answer_warnings

    def definitions(text):
        return {ast.unparse(node) for node in ast.parse(text).body if not isinstance(node, ast.Expr)}

    for assignment in (None, "03_causal_mask"):
        stub = stub_package(tmp_path / str(assignment), assignment)
        kept = definitions((stub / "_answer_warnings.py").read_text())
        assert definitions(Path(_answer_warnings.__file__).read_text()) <= kept, assignment


def test_a_failure_carries_the_id_of_the_diagnosis_it_matched():
    expected = np.array([0.5, 0.5])
    with pytest.raises(CheckFailed) as named:
        expect_close(
            np.array([1.0, 0.0]),
            expected,
            what="w",
            diagnoses=[
                (np.array([0.0, 1.0]), "flipped", "mask.polarity_flipped"),
                (np.array([1.0, 0.0]), "no softmax", "softmax.missing"),
            ],
        )
    assert named.value.misconception == "softmax.missing" and "no softmax" in str(named.value)
    with pytest.raises(CheckFailed) as unnamed:
        expect_close(
            np.array([0.9, 0.1]),
            expected,
            what="w",
            diagnoses=[(np.array([0.0, 1.0]), "flipped", "mask.polarity_flipped")],
        )
    assert unnamed.value.misconception is None  # wrong in a way no check names: "unrecognised" in the report
    with pytest.raises(KeyError):
        fail("a message", "mask.no_such_idea")  # an id must be registered before a check may use it


# ---------------------------------------------------------------------------- the catalogs' messages, in-process
# Every test cell of 05-08 (visible and hidden calls) run here on each catalog answer, without nbgrader: a correct
# answer passes everything; a wrong one fails only the exercise it breaks (or one that builds on it), carries an id
# its catalog label lists, and its message says what the catalog says it must. (tests/test_catalogs.py grades the
# same answers with nbgrader; this is the seconds-long version, and it also reads the cascades' messages.)
IN_PROCESS = ("05_other_masks", "06_kv_heads", "07_generation", "08_learned_heads")


def _in_process_cases():
    from catalog import catalogs

    return [
        (assignment, answer)
        for assignment in IN_PROCESS
        for answer in catalogs()[assignment]
        if not answer.untouched and not answer.graded_only
    ]


def _verdicts(assignment, answer) -> dict[str, CheckFailed]:
    """{grade id: failure} of every graded test cell the answer fails, run in this process."""
    import contextlib
    import io

    from build_notebooks import read_source
    from course import REPO

    import heads_and_masks as hm

    namespace = {"np": np, "hm": hm}
    failures = {}
    for cell in read_source(REPO / "authoring" / f"{assignment}.py").cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or "grade_id" not in meta:
            continue
        grade_id = meta["grade_id"]
        if not meta.get("grade"):
            exec(answer.source(grade_id) if grade_id in answer.cells else cell.source, namespace)
            continue
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                exec(cell.source, dict(namespace))
            except CheckFailed as failure:
                failures[grade_id] = failure
    return failures


@pytest.mark.parametrize(
    ("assignment", "answer"), _in_process_cases(), ids=[f"{a[:2]}-{x.name}" for a, x in _in_process_cases()]
)
def test_catalog_messages_name_the_misconception(assignment, answer, capfd):
    from catalog.misconceptions import LABELS

    failures = _verdicts(assignment, answer)
    capfd.readouterr()
    if answer.correct:
        assert not failures, {g: str(f) for g, f in failures.items()}
        return
    broken = {g: f for g, f in failures.items() if g.startswith(f"test_{answer.breaks}")}
    assert broken, f"{answer.name} was not caught: {failures}"
    cascaded = {g: f for g, f in failures.items() if g not in broken}
    assert all(any(g.startswith(f"test_{e}") for e in answer.cascades) for g in cascaded), list(cascaded)
    labels = LABELS[assignment][answer.name]
    for grade_id, failure in broken.items():
        assert (failure.misconception or "unrecognised") in labels, (grade_id, failure.misconception, str(failure))
    text = " ".join(str(f) for f in broken.values()).lower()
    for phrase in answer.phrases:
        assert phrase.lower() in text, f"the message does not say {phrase!r}: {text}"
    for grade_id, failure in cascaded.items():  # an exercise failing because the earlier one it builds on is wrong
        assert failure.misconception == "conventions.earlier_exercise_wrong", (grade_id, str(failure))
        assert f"your {answer.breaks}" in str(failure), str(failure)


def _points(assignment) -> dict[str, float]:
    from build_notebooks import read_source
    from course import REPO

    cells = read_source(REPO / "authoring" / f"{assignment}.py").cells
    return {
        c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"]["points"]
        for c in cells
        if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")
    }


@pytest.mark.parametrize(
    ("answer_name", "kept", "possible"),
    [
        ("new_token_prepended", 3, 4),  # right but for the order of the cache: only the cache's point lost
        ("cache_not_appended", 2, 4),  # the output right, the caches (and so the generation) wrong
        ("cache_forgets_own_kv", 1, 4),  # the caches right, every output wrong
        ("top_left_tril", 2, 4),  # the alignment the exercise is about: its 2 points
        ("bottom_right_refuses_no_new_query", 3, 4),  # the empty chunk refused: its own point, not the alignment's
    ],
)
def test_07_gives_partial_understanding_partial_credit(answer_name, kept, possible, capfd):
    from catalog import catalogs

    answer = next(a for a in catalogs()["07_generation"] if a.name == answer_name)
    points = _points("07_generation")
    failures = _verdicts("07_generation", answer)
    capfd.readouterr()
    cells = [g for g in points if g.startswith(f"test_{answer.breaks}")]
    assert sum(points[g] for g in cells) == possible
    assert sum(points[g] for g in cells if g not in failures) == kept, sorted(failures)
