"""Grading mode: with HEADS_AND_MASKS_GRADING=1 (set by the grader in every grading kernel), the course's
widgets, pictures and timing experiments do nothing, call no reference function, and the notebook's later
cells still run without errors.

"Do nothing" is tested by what is not done, never by timing: every reference function is locked (a call
raises), and matplotlib's drawing and saving raise too.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from course import ASSIGNMENTS, REPO, solution_notebook
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

import heads_and_masks as hm
from heads_and_masks import _guard, benchmarks, pictures
from heads_and_masks.pictures import causal_mask as causal_pictures
from heads_and_masks.pictures import generation as generation_pictures
from heads_and_masks.pictures import heads as heads_pictures
from heads_and_masks.pictures import kv_heads as kv_heads_pictures
from heads_and_masks.pictures import learned_heads as learned_heads_pictures
from heads_and_masks.pictures import why_heads as why_heads_pictures
from heads_and_masks.pictures import work_fraction as work_fraction_pictures
from heads_and_masks.grading import GRADING_ENV, Idle, grading_mode

sys.path.insert(0, str(REPO / "tools"))
from bench import _course_widgets


@pytest.fixture
def grading(monkeypatch):
    """Grading mode, every reference function locked, and no drawing possible."""
    monkeypatch.setenv(GRADING_ENV, "1")

    def refuse(*args, **kwargs):
        raise AssertionError("something was drawn in grading mode")

    monkeypatch.setattr(FigureCanvasAgg, "draw", refuse)
    monkeypatch.setattr(Figure, "savefig", refuse)
    with _guard.locked():
        yield


def test_the_package_and_the_grader_name_the_same_variable():
    from autograde.kernel.sandbox import GRADING_ENV as graders

    assert hm.GRADING_ENV == GRADING_ENV == graders


def test_grading_mode_follows_the_environment(monkeypatch):
    monkeypatch.delenv(GRADING_ENV, raising=False)
    assert not hm.grading_mode()
    monkeypatch.setenv(GRADING_ENV, "0")
    assert not grading_mode()
    monkeypatch.setenv(GRADING_ENV, "1")
    assert grading_mode()


def test_the_package_knows_grading_mode_without_the_grader():
    """The flag is read by the package alone: importing it (and using the flag) never imports autograde."""
    code = (
        "import sys, heads_and_masks as hm, heads_and_masks.widgets.causal_mask, heads_and_masks.pictures.work_fraction\n"
        "hm.grading_mode()\n"
        "assert not [m for m in sys.modules if m.split('.')[0] == 'autograde'], 'autograde was imported'"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO / "tests")
    assert run.returncode == 0, run.stderr


def test_grading_mode_imports_no_drawing_library():
    """In grading mode every module of the package imports (the notebooks' imports work) and none of them
    brings in matplotlib, ipywidgets or PIL: the display modules are stand-ins, never run."""
    code = (
        "import importlib, pkgutil, sys\n"
        "import heads_and_masks as hm\n"
        "names = [m.name for m in pkgutil.walk_packages(hm.__path__, 'heads_and_masks.')]\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('matplotlib', 'ipywidgets', 'PIL'))\n"
        "assert not heavy, heavy[:10]\n"
        "from heads_and_masks.widgets.causal_mask import LessonWidget\n"
        "from heads_and_masks.pictures import why_heads\n"
        "widget = LessonWidget(n=5)\n"
        "assert widget.idle and widget.png() == b''\n"
        "widget.controls['n'].value = 3\n"
        "assert isinstance(why_heads.hull_figure(None), hm.grading.Idle)\n"
        "print(len(names), sum(n.startswith(('heads_and_masks.widgets.', 'heads_and_masks.pictures')) for n in names))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO / "tests",
        env={**os.environ, GRADING_ENV: "1"},
    )
    assert run.returncode == 0, run.stderr
    modules, display_modules = map(int, run.stdout.split())
    assert display_modules >= 10 and modules > display_modules
    outside = subprocess.run(
        [sys.executable, "-c", "import heads_and_masks.widgets.causal_mask, sys; assert 'matplotlib' in sys.modules"],
        capture_output=True,
        text=True,
        cwd=REPO / "tests",
        env={k: v for k, v in os.environ.items() if k != GRADING_ENV},
    )
    assert outside.returncode == 0, "outside grading mode the real widget module is imported"


WIDGETS = list(_course_widgets())


def test_every_course_widget_is_found():
    assert len(WIDGETS) >= 7, [cls.__name__ for _, cls in WIDGETS]


@pytest.mark.parametrize("cls", [cls for _, cls in WIDGETS], ids=lambda cls: cls.__name__)
def test_a_widget_builds_nothing_while_grading(grading, cls):
    widget = cls()
    assert widget.idle
    assert widget.png() == b"", "a widget rendered a picture in grading mode"
    assert not isinstance(widget.figure, Figure)
    # What the notebooks' later cells do with a widget still works:
    assert dict(widget.readouts) == {}
    assert np.isnan(widget.readouts["any readout"])
    print(f"{widget.readouts['score spread']:.2f}", {k: round(v, 3) for k, v in widget.readouts.items()})
    widget.controls["heads"].value = 24
    widget.update()
    widget._ipython_display_()


def test_widgets_still_draw_outside_grading(monkeypatch):
    monkeypatch.delenv(GRADING_ENV, raising=False)
    module, cls = WIDGETS[0]
    widget = cls()
    assert not widget.idle and widget.png().startswith(b"\x89PNG"), f"{module}.{cls.__name__} drew nothing"
    assert widget.readouts


FIGURES = [
    (why_heads_pictures.hull_figure, (np.zeros((4, 2)),), {"previous": 1, "first": 0}),
    (why_heads_pictures.winning_figure, (np.arange(1, 5), {}, 10), {}),
    (work_fraction_pictures.used_fraction_figure, (np.arange(1, 9),), {}),
    (work_fraction_pictures.tile_size_figure, (512, {8: 0.1}), {}),
    (work_fraction_pictures.benchmark_figure, ([],), {}),
    (causal_pictures.mask_figure, (np.tril(np.ones((3, 3), bool)), ["a", "b", "c"]), {}),
    (causal_pictures.readouts_versus_d_figure, ([8, 16], {}, {}), {}),
    (kv_heads_pictures.head_mapping_figure, (), {"h": 8, "g": 2}),
    (kv_heads_pictures.cache_per_token_figure, ({},), {}),
    (heads_pictures.split_orders_figure, (8, 2), {}),
    (generation_pictures.decode_masks_figure, (3, 8), {}),
    (generation_pictures.composed_masks_figure, ({"causal": np.tril(np.ones((3, 3), bool))},), {}),
    (generation_pictures.bytes_per_token_figure, ({},), {}),
    (learned_heads_pictures.head_maps_figure, (None,), {}),
    (learned_heads_pictures.loss_curves_figure, (None,), {}),
    (learned_heads_pictures.head_count_figure, ({1: np.ones(2)}, 16), {}),
]


@pytest.mark.parametrize("function, args, kwargs", FIGURES, ids=lambda f: getattr(f, "__name__", ""))
def test_a_figure_function_draws_nothing_while_grading(grading, function, args, kwargs):
    built = function(*args, **kwargs)
    assert isinstance(built, Idle)
    shown = why_heads_pictures.picture(built)
    assert isinstance(shown, Idle)
    shown._ipython_display_()


def test_picture_returns_without_drawing_while_grading(grading):
    figure = Figure()
    figure.subplots().plot([0, 1], [1, 0])
    for show in (pictures.picture, work_fraction_pictures.picture, why_heads_pictures.picture, causal_pictures.picture):
        assert isinstance(show(figure), Idle)


def test_picture_draws_outside_grading(monkeypatch):
    monkeypatch.delenv(GRADING_ENV, raising=False)
    figure = Figure(figsize=(1, 1))
    figure.subplots().plot([0, 1], [1, 0])
    assert pictures.picture(figure).data.startswith(b"\x89PNG")


def test_timing_experiments_measure_nothing_while_grading(grading):
    rows = benchmarks.causal_attention_benchmark(
        sizes=(256, 512, 1024, 2048), d=64, block=128, repeats=3, dtype="float32"
    )
    assert rows == []
    assert benchmarks.format_benchmark(rows).splitlines()[0].split()[:2] == ["dtype", "n"]
    assert benchmarks.time_by_tile_size(512, blocks=(8, 16), repeats=3) == {}


def _uses_grading_mode(source: str) -> bool:
    return "grading_mode" in source or "HEADS_AND_MASKS_GRADING" in source


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_notebooks_have_no_code_for_grading_mode(assignment):
    """The package knows; the notebooks do not need to."""
    assert not [c for c in solution_notebook(assignment).cells if _uses_grading_mode(c.source)]


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_solution_notebook_runs_without_errors_in_grading_mode(assignment, tmp_path, monkeypatch):
    """Every cell of a solution notebook runs without error in grading mode (reference package present),
    and no picture or widget is displayed."""
    from nbclient import NotebookClient

    monkeypatch.setenv(GRADING_ENV, "1")  # the kernel inherits this process's environment
    monkeypatch.setenv("MPLBACKEND", "Agg")  # as in a grading kernel
    notebook = solution_notebook(assignment)
    NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    shown = [
        o
        for c in notebook.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") in ("display_data", "execute_result")
        and (
            {"image/png", "application/vnd.jupyter.widget-view+json"} & set(o.get("data", {}))
            or "<img" in "".join(o.get("data", {}).get("text/html", ""))  # a picture with its text alternative
        )
    ]
    assert not shown, f"{len(shown)} pictures or widgets were displayed in grading mode"
