"""The static pictures in Russian: every picture function of the notebooks (test_pictures.FIGURES, with the
arguments the notebooks pass) drawn in Russian, its text alternative read. No message of pictures/*.py or of
text_alternative.py falls back to English, and the lead, the panels' sentences and the figure's own texts are
Russian. (Whether the Russian texts fit their picture is measured by drawing them: the lead's job, not this
test's; rendering 30 PNGs would cost half a minute.)"""

from __future__ import annotations

import re
from pathlib import Path

from test_pictures import FIGURES

from heads_and_masks import i18n, local_attention, text_alternative
from heads_and_masks.grading import GRADING_ENV
from heads_and_masks.pictures import other_masks as mask_pictures

PICTURES = Path(mask_pictures.__file__).parent
SOURCES = [*sorted(PICTURES.glob("*.py")), Path(text_alternative.__file__)]
# the modules' text with implicitly joined string literals joined, so that a long message is found whole
SOURCE = "\n".join(re.sub(r'"\s*\n\s*"', "", path.read_text(encoding="utf-8")) for path in SOURCES)
CYRILLIC = re.compile("[а-яё]", re.IGNORECASE)
# how text_alternative starts its sentences about the figure's texts, in Russian and in English
FIGURE_SENTENCES = "Рисунок с заголовком|Панель|Горизонтальная ось|Вертикальная ось|Легенда"
ENGLISH_SENTENCES = re.compile("Figure titled|Panel|Horizontal axis|Vertical axis|Legend:")


def _figure_texts(figure) -> list[str]:
    """The titles, axis labels and legend labels drawn in the figure."""
    texts = [figure._suptitle.get_text()] if getattr(figure, "_suptitle", None) else []
    for ax in figure.get_axes():
        texts += [ax.get_title(loc) for loc in ("left", "center", "right")]
        texts += [ax.get_xlabel(), ax.get_ylabel(), *ax.get_legend_handles_labels()[1]]
    return [text for text in texts if text.strip()]


def test_every_picture_speaks_russian(monkeypatch):
    monkeypatch.delenv(GRADING_ENV, raising=False)
    before = i18n.untranslated("ru")
    described = {}
    with i18n.use_language("ru"):
        for function, args, kwargs in FIGURES:
            figure = function(*args, **kwargs)
            described[function.__name__] = (text_alternative.describe_figure(figure), _figure_texts(figure))
    # a message of these modules without a translation would fall back to English and be counted here
    missing = {text for text in i18n.untranslated("ru") - before if text in SOURCE}
    assert not missing, missing
    for name, (description, texts) in described.items():
        lead, *described_texts = re.split(FIGURE_SENTENCES, description)  # the lead comes first
        assert CYRILLIC.search(lead), f"{name}: its lead is not Russian: {description}"
        assert described_texts and not ENGLISH_SENTENCES.search(description), f"{name}: {description}"
        # every figure says something in Russian in its own texts (beside the titles the notebook passes)
        assert any(CYRILLIC.search(text) for text in texts), f"{name}: no Russian text in {texts}"


def test_a_counted_figure_text_takes_the_russian_form_of_its_count(monkeypatch):
    """Russian has three forms for a count: the layers in the receptive field's panel titles."""
    monkeypatch.delenv(GRADING_ENV, raising=False)
    reach = {layers: local_attention.receptive_field(8, 3, layers) for layers in (1, 2, 5, 21)}
    with i18n.use_language("ru"):
        figure = mask_pictures.receptive_field_figure(reach)
    titles = [ax.get_title().split(":")[0] for ax in figure.axes]
    assert titles == ["1 слой", "2 слоя", "5 слоёв", "21 слой"]
