"""Notebook 04 without nbgrader: its checks against the catalog's answers, and its widget driven by code.

The catalog (tests/catalog/nb04_work_fraction.py) is graded with the real nbgrader by
test_catalogs.py; here the same answers run straight through the check functions, which is fast and
shows each verdict and message directly.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from catalog.nb04_work_fraction import ANSWERS
from course import solution_notebook

import heads_and_masks as hm
from heads_and_masks.checks import work_fraction as checks
from heads_and_masks.checks.core import CheckFailed
from heads_and_masks.tiled import MASKED, SKIPPED, entry_kinds
from heads_and_masks.widgets.work_fraction import TileGridWidget

CHECKS = {
    "causal_used_entries": [lambda f: checks.check_causal_used_entries(f, thorough=True)],
    "causal_used_fraction": [lambda f: checks.check_causal_used_fraction(f, thorough=True)],
    "blocked_causal_attention": [
        lambda f: checks.check_blocked_causal_attention(f, seed=5, thorough=True),
        lambda f: checks.check_blocked_causal_attention_count(f, seed=5, thorough=True),
        lambda f: checks.check_blocked_causal_attention_memory(f),
        checks.check_blocked_causal_attention_errors,
    ],
}


def _solutions() -> dict[str, str]:
    """The solution cells of the notebook, their BEGIN/END SOLUTION marker lines removed."""
    return {
        c.metadata["nbgrader"]["grade_id"]: re.sub(r"(?m)^[ \t]*### (BEGIN|END) SOLUTION[ \t]*\n", "", c.source)
        for c in solution_notebook("04_work_fraction").cells
        if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")
    }


def _function(answer, name):
    """The answer's function `name` (or the notebook's solution, where the answer leaves it alone)."""
    source = answer.source(name) if name in answer.cells else _solutions()[name]
    namespace = {"np": np}
    for other in ("causal_used_entries",):  # an answer may build on its earlier one
        if other != name and other in answer.cells:
            exec(answer.source(other), namespace)
    exec(source, namespace)
    return namespace[name]


def _verdicts(answer, name):
    function = _function(answer, name)
    failures = []
    for check in CHECKS[name]:
        try:
            check(function)
        except CheckFailed as failure:
            failures.append(str(failure))
    return failures


@pytest.mark.parametrize("answer", [a for a in ANSWERS if a.correct], ids=lambda a: a.name)
def test_correct_answers_pass_every_check(answer, capsys):
    for name in CHECKS:
        assert _verdicts(answer, name) == [], f"{answer.name}: {name}"
    assert "✓" in capsys.readouterr().out


@pytest.mark.parametrize("answer", [a for a in ANSWERS if a.breaks and not a.graded_only], ids=lambda a: a.name)
def test_each_mistake_fails_and_is_named(answer):
    failures = _verdicts(answer, answer.breaks)
    assert failures, f"{answer.name} was not caught"
    text = "\n".join(failures).lower()
    for phrase in answer.phrases:
        assert phrase.lower() in text, f"{answer.name}: {phrase!r} not in\n{text}"


def test_the_solution_cells_pass():
    for name, source in _solutions().items():
        namespace = {"np": np}
        exec(source, namespace)
        for check in CHECKS[name]:
            check(namespace[name])


def test_memory_check_sees_a_full_matrix():
    with pytest.raises(CheckFailed, match="whole score matrix"):
        checks.check_blocked_causal_attention_memory(_unlocked_full)


def _unlocked_full(q, k, v, block):
    """Full-then-mask written out here (the course's own functions are locked during checks)."""
    n, d = q.shape
    scores = q @ k.T / np.sqrt(d)
    scores = np.where(np.tri(n, dtype=bool), scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    count = sum((min(s + block, n) - s) * min(s + block, n) for s in range(0, n, block))
    return weights / weights.sum(axis=1, keepdims=True) @ v, count


def test_memory_check_cannot_be_fooled_by_resetting_the_peak():
    import tracemalloc

    def sneaky(q, k, v, block):
        result = _unlocked_full(q, k, v, block)
        tracemalloc.reset_peak()
        return result

    with pytest.raises(CheckFailed):
        checks.check_blocked_causal_attention_memory(sneaky)
    assert tracemalloc.reset_peak is not None and not tracemalloc.is_tracing()


def test_package_helpers_are_locked_during_a_check():
    def uses_the_tile_count(q, k, v, block):
        return _unlocked_full(q, k, v, block)[0], hm.tiled_computed_entries(len(q), block)

    with pytest.raises(CheckFailed, match="reference"):
        checks.check_blocked_causal_attention_count(uses_the_tile_count)


# ---------------------------------------------------------------- the widget
@pytest.mark.parametrize("n,block", [(48, 8), (37, 8), (1, 1), (5, 64), (256, 1), (256, 64), (100, 7)])
def test_widget_draws_the_computed_fraction(n, block):
    widget = TileGridWidget(n=n, block=block)
    drawn = np.asarray(widget.grid_image.get_array())  # what the picture shows, entry by entry
    assert drawn.shape == (n, n)
    drawn_fraction = np.count_nonzero(drawn != SKIPPED) / n**2
    assert np.isclose(widget.readouts["computed fraction"], drawn_fraction)
    assert np.isclose(drawn_fraction, hm.tiled_computed_entries(n, block) / n**2)
    assert np.isclose(widget.readouts["ideal (n+1)/(2n)"], (n + 1) / (2 * n))
    # the allowed entries are exactly the causal ones; the masked ones are above the diagonal
    causal = np.tri(n, dtype=bool)
    assert np.array_equal((drawn != SKIPPED) & (drawn != MASKED), causal)
    assert not (drawn == MASKED)[causal].any()
    # the marked point on the curve is this tile size's fraction
    x, y = widget.current.get_data()
    assert np.isclose(y[0], drawn_fraction)


def test_widget_follows_its_controls_and_tiles_approach_the_ideal(artifacts):
    widget = TileGridWidget(n=64, block=64)
    assert widget.readouts["computed fraction"] == 1.0
    first = widget.png()
    fractions = []
    for block in (32, 16, 8, 4, 2, 1):
        widget.controls["block"].value = block
        fractions.append(widget.readouts["computed fraction"])
        assert widget.readouts["tiles a side"] == 64 // block
    assert fractions == sorted(fractions, reverse=True)
    assert np.isclose(fractions[-1], hm.causal_used_fraction(64))
    assert widget.png() != first
    widget.controls["n"].value = 37
    widget.controls["block"].value = 8
    (artifacts / "widget_04_tiles.png").write_bytes(widget.png())


def test_entry_kinds_for_a_tiny_grid():
    kinds = entry_kinds(4, 2)
    # tile (0, 1) skipped; tiles (0, 0) and (1, 1) diagonal; tile (1, 0) below
    assert (kinds[:2, 2:] == SKIPPED).all()
    assert kinds[0, 1] == MASKED and kinds[2, 3] == MASKED
    assert (kinds[2:, :2] == 3).all()


def test_widget_tick_labels_stay_inside_the_picture():
    """At the largest n the last tile size tick (256) used to be cut at the picture's right edge."""
    widget = TileGridWidget(n=TileGridWidget.max_n, block=8)
    renderer = widget.canvas.get_renderer()
    picture = widget.figure.bbox
    widget.canvas.draw()  # ticks and labels as drawn
    labels = []
    for ax in widget.figure.axes:
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            labels += [
                label
                for tick in axis.get_major_ticks()
                if low <= tick.get_loc() <= high
                for label in (tick.label1, tick.label2)
                if label.get_visible() and label.get_text()
            ]
    assert any(label.get_text() == "256" for label in labels)
    for label in labels:
        box = label.get_window_extent(renderer)
        margin = label.get_fontsize() * widget.dpi / 72 / 2  # half a character: a label touching the edge looks cut
        assert (
            picture.x0 + margin <= box.x0
            and box.x1 <= picture.x1 - margin
            and picture.y0 <= box.y0
            and box.y1 <= picture.y1
        ), f"tick label {label.get_text()!r} is cut off (or touches the edge): {box} in {picture}"


def test_a_graded_call_whose_memory_counts_looks_like_any_other():
    """Graded, the checks call the learner's function in its kernel through the judge. The call whose memory
    the count and memory tests grade is made like every other: the same request, arguments never seen before
    (nothing staged, nothing repeated), no tracer running; its output, count and memory come from that one
    call, and the memory is read from outside (here: this process through /proc, as a grader without cgroups)."""
    import sys
    import textwrap
    import tracemalloc

    from test_misconceptions import _KernelHere

    from autograde.kernel.remote_calls import Budget, RemoteFunction

    namespace = {"np": np}
    exec(textwrap.dedent(next(a for a in ANSWERS if a.correct).cells[CHECKED]), namespace)
    tiled, watched = namespace[CHECKED], []

    def blocked_causal_attention(q, k, v, block):
        watched.append(tracemalloc.is_tracing() or sys.gettrace() is not None or sys.getprofile() is not None)
        return tiled(q, k, v, block)

    kernel = _KernelHere(blocked_causal_attention=blocked_causal_attention)
    sent, answer = [], kernel.request

    def recorded(payload, timeout):
        sent.append(payload)
        return answer(payload, timeout)

    kernel.request = recorded
    function = RemoteFunction(kernel, CHECKED, Budget(300, 120))
    checks.check_blocked_causal_attention_count(function)
    checks.check_blocked_causal_attention_memory(function)
    assert function.last_peak_bytes is not None, "the last call's memory was not measured"
    assert sent and all(sorted(p) == ["args", "kwargs", "name", "op"] and p["op"] == "call" for p in sent), [
        {k: v for k, v in p.items() if k not in ("args", "kwargs")} for p in sent
    ]
    arguments = [repr(p["args"]) for p in sent]
    assert len(set(arguments)) == len(arguments), "a call was made twice on the same arguments"
    assert watched and not any(watched), "a tracer ran during a graded call"


CHECKED = "blocked_causal_attention"


def test_a_call_out_of_memory_at_the_graded_size_names_the_whole_matrix():
    """Graded at n = 8192, a kernel of 04 cannot hold the whole score matrix (autograde/kernel/kernel_client.py, KERNEL_MEMORY): the
    call that builds it ends in MemoryError in the learner's kernel, and both tests say what a strip would cost."""
    import textwrap

    namespace = {"np": np}
    exec(textwrap.dedent(next(a for a in ANSWERS if a.correct).cells[CHECKED]), namespace)
    tiled = namespace[CHECKED]

    def whole_matrix_at_large_n(q, k, v, block):
        if len(q) >= 8192:
            raise MemoryError("Unable to allocate 512. MiB for an array with shape (8192, 8192) and data type float64")
        return tiled(q, k, v, block)

    for check, strip in (
        (lambda f: checks.check_blocked_causal_attention_memory(f, n=8192, d=8, block=80, seed=17), "5.0 MiB"),
        (lambda f: checks.check_blocked_causal_attention_count(f, seed=5, n=8192), "4.0 MiB"),
    ):
        with pytest.raises(CheckFailed, match="ran out of memory") as failed:
            check(whole_matrix_at_large_n)
        assert failed.value.misconception == "tiles.full_matrix_built", failed.value.misconception
        assert "512 MiB" in str(failed.value) and strip in str(failed.value), str(failed.value)
