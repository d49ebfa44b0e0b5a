"""Notebook 08's widget, driven without a browser: the step slider moves the maps and the readouts through
the snapshots of training; switching a head off costs exactly its rule; the figures of the notebook draw."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from heads_and_masks import training
from heads_and_masks.pictures import learned_heads as pictures
from heads_and_masks.widgets.learned_heads import LearnedHeadsWidget


@pytest.fixture(scope="module")
def widget():
    return LearnedHeadsWidget()  # the notebook's run: training.train() with its defaults


def _map_pixels(widget, head):
    """The rendered pixels of one head's map (RGB), cut from the widget's PNG."""
    picture = np.asarray(Image.open(io.BytesIO(widget.png())).convert("RGB")).astype(int)
    box = widget.map_axes[head].get_window_extent()
    height = picture.shape[0]
    return picture[height - int(box.y1) + 2 : height - int(box.y0) - 2, int(box.x0) + 2 : int(box.x1) - 2]


def test_the_widget_shows_the_run_the_notebook_trains(widget):
    assert widget.run is training.notebook_run()
    assert list(widget.controls["step"].options) == widget.run.snapshot_steps
    assert widget.value("step") == widget.run.snapshot_steps[-1]
    assert [name for name in widget.controls if name.startswith("head")] == ["head 0", "head 1"]


def test_the_step_slider_moves_maps_and_readouts_through_training(widget, artifacts):
    run = widget.run
    widget.controls["step"].value = run.snapshot_steps[0]
    start = dict(widget.readouts)
    start_pixels = _map_pixels(widget, 0)
    (artifacts / "widget_08_learned_heads_start.png").write_bytes(widget.png())
    widget.controls["step"].value = run.snapshot_steps[-1]
    end = dict(widget.readouts)
    (artifacts / "widget_08_learned_heads_end.png").write_bytes(widget.png())
    assert not np.array_equal(start_pixels, _map_pixels(widget, 0)), "the maps did not change with the step"
    assert start["held-out loss (nats)"] > 1.0 > 0.01 > end["held-out loss (nats)"]
    expected = training.rule_weights(training.attention_maps(run.snapshot_params[-1], run.probe_ids, run.config))
    for head in range(2):
        assert end[f"head {head}: weight on t − 1"] == pytest.approx(expected[head, 0])
        assert end[f"head {head}: weight on 0"] == pytest.approx(expected[head, 1])
    loss, per_rule = training.loss_of(run.params, run.probe_ids, run.probe_targets, run.config)
    assert end["held-out loss (nats)"] == pytest.approx(loss)
    assert end["loss, previous token (nats)"] == pytest.approx(per_rule[0])


def test_switching_a_head_off_costs_its_rule_and_blanks_its_map(widget, artifacts):
    run = widget.run
    widget.controls["step"].value = run.snapshot_steps[-1]
    jobs = np.argmax(training.rule_weights(run.maps()), axis=1)  # the rule of each head
    for head in range(2):
        widget.controls[f"head {head}"].value = False
        readouts = dict(widget.readouts)
        rule = ["loss, previous token (nats)", "loss, first token (nats)"][jobs[head]]
        other = ["loss, previous token (nats)", "loss, first token (nats)"][1 - jobs[head]]
        assert readouts[rule] > training.chance_loss(run.config), "without its head the rule is lost"
        assert readouts[other] < 0.01, "the other rule does not need it"
        # the control keeps its name: its state is its own (a checkbox unchecked, read out by a screen reader)
        assert widget.controls[f"head {head}"].description == f"head {head} on"
        # its map is blank, so the readouts give no weights for it: they say, in a sentence, that it is off
        assert not any(name.startswith(f"head {head}: weight") for name in readouts), readouts
        shown = widget.readouts_text()
        assert f"Head {head} is switched off: its output is set to zero, so it attends to nothing." in shown, shown
        assert f"head {1 - head}: weight on t − 1" in readouts, "the head still on keeps its weights"
        assert _map_pixels(widget, head).min() > 200, "a head that is off shows an empty map"
        if head == 0:
            (artifacts / "widget_08_learned_heads_head0_off.png").write_bytes(widget.png())
        widget.controls[f"head {head}"].value = True
    assert widget.readouts["held-out loss (nats)"] < 0.01


def test_the_widget_takes_any_run():
    small = training.train(training.Config(heads=4), seed=1, steps=20, snapshots=4)
    widget = LearnedHeadsWidget(small)
    assert len(widget.map_axes) == 4 and len([c for c in widget.controls if c.startswith("head")]) == 4
    assert list(widget.controls["step"].options) == small.snapshot_steps


def test_the_static_figures_draw(widget, artifacts):
    run = widget.run
    for name, figure in [
        ("maps", pictures.head_maps_figure(run)),
        ("loss", pictures.loss_curves_figure(run)),
        ("head_counts", pictures.head_count_figure({1: np.array([0.3, 0.5]), 2: np.array([1e-5, 2e-5])}, 16)),
    ]:
        png = pictures.picture(figure).data
        assert png.startswith(b"\x89PNG")
        (artifacts / f"figure_08_learned_heads_{name}.png").write_bytes(png)
