"""The widgets in Russian: each widget of the notebooks, made and redrawn in Russian, shows its controls, its
readout table, its figure's texts and its picture's lead in Russian, and every text it shows has a translation."""

from __future__ import annotations

import re

import pytest

from heads_and_masks import attention_stats, i18n, local_attention, training
from heads_and_masks.widgets import (
    causal_mask,
    generation,
    heads,
    kv_heads,
    learned_heads,
    other_masks,
    start_here,
    why_heads,
    work_fraction,
)

CYRILLIC = re.compile("[а-яё]", re.IGNORECASE)


def _marked(module) -> set[str]:
    """The messages marked in ``module`` (as tools/translations.py extracts them)."""
    from babel.messages.extract import extract_from_file

    keywords = {"_": None, "N_": None, "ngettext": (1, 2)}
    found = extract_from_file("python", module.__file__, keywords=keywords)
    return {message[0] if isinstance(message, tuple) else message for _line, message, _notes, _context in found}


# the messages of these modules (a picture's own texts, shown by a widget too, are the pictures' test's)
MODULES = [learned_heads, causal_mask, generation, heads, kv_heads, other_masks, start_here, why_heads, work_fraction]
MESSAGES = set().union(*(_marked(module) for module in [*MODULES, attention_stats, local_attention, training]))

# each widget, with settings that reach the texts that only some states show (a mask of every kind, a head off)
WIDGETS = [
    lambda: start_here.QueryWidget(),
    lambda: heads.HeadSplitWidget(order="(d h)"),
    lambda: why_heads.ScoreNoiseWidget(d=1, noise=3.0),
    lambda: causal_mask.LessonWidget(causal=False, scale_by_sqrt_d=False),
    lambda: work_fraction.TileGridWidget(),
    lambda: other_masks.MaskWidget(padding=True, window=True, **{"block-sparse": True}),
    lambda: kv_heads.KVCacheCalculator(model="Mistral-7B-v0.1", gpu="H100"),
    lambda: generation.GenerationStepper(policy="sinks + window", chunk=3),
    lambda: learned_heads.LearnedHeadsWidget(
        training.train(training.Config(heads=2), seed=1, steps=4, snapshots=2), **{"head 1": False}
    ),
]


def _figure_texts(widget) -> list[str]:
    """Every text the figure holds (titles, labels, legends, tick labels, annotations)."""
    from matplotlib.text import Text

    return [text.get_text() for text in widget.figure.findobj(Text) if text.get_text()]


@pytest.mark.parametrize("make", WIDGETS, ids=[f"widget{i}" for i in range(len(WIDGETS))])
def test_a_widget_speaks_russian(make):
    before = i18n.untranslated("ru")
    with i18n.use_language("ru"):
        widget = make()
        lead = widget.picture_lead
        table, printed = widget.readout_html.value, widget.readouts_text()
        labels = [control.description for control in widget.controls.values()]
    # a text of these modules without a translation would fall back to English and be counted here
    assert not (i18n.untranslated("ru") - before) & MESSAGES
    assert CYRILLIC.search(lead), lead
    names = re.findall(r"<tr><td>(.*?)</td>", table)
    assert names and all(CYRILLIC.search(name) or name.isascii() and len(name) <= 2 for name in names), names
    assert all(CYRILLIC.search(line.split(":")[0]) for line in printed.splitlines())
    assert all(CYRILLIC.search(label) or label in {"n", "GPU"} for label in labels), labels
    assert any(CYRILLIC.search(text) for text in _figure_texts(widget))
    # the keys stay English: the notebooks, the tests and picture_lead read them
    assert all(not CYRILLIC.search(key) for key in widget.readouts)
    assert widget.image.tooltip.startswith(lead)


def test_the_language_of_a_widget_is_the_one_in_effect_when_it_is_drawn():
    with i18n.use_language("ru"):
        widget = kv_heads.KVCacheCalculator(model="Llama-2-7B", gpu="H100", batch=1, context=4096)
    assert widget.readouts["the limit that binds"] == "собственный контекст модели"
    assert "<td>что ограничивает</td>" in widget.readout_html.value
    widget.update()  # redrawn in English
    assert "<td>the limit that binds</td>" in widget.readout_html.value
