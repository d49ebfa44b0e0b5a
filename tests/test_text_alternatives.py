"""Every picture of the course says in words what it shows (WCAG 1.1.1: a text alternative).

A static picture is displayed as an HTML <img> with ``alt`` (JupyterLab ignores alt metadata on an
``image/png`` output); a widget's picture carries its text in the <img>'s title (ipywidgets' Image has no
alt). Both texts are built from the figure's own titles, axis labels and legends when the picture is made,
so they say what is drawn now. The browser tests run axe-core over every notebook, which fails on any
picture without a text alternative; these tests check what the text says.
"""

from __future__ import annotations

import html
import re

import pytest
from matplotlib.figure import Figure
from test_pictures import FIGURES
from test_widget_legibility import WIDGETS

from heads_and_masks.pictures import Picture, picture
from heads_and_masks.text_alternative import describe_figure, lead_of

FALLBACK = "A figure without titles or labels."


def _titles(figure) -> list[str]:
    return [
        " ".join(ax.get_title(loc).replace("$", "").split())
        for ax in figure.get_axes()
        if ax.get_visible()
        for loc in ("left", "center", "right")
        if ax.get_title(loc).strip()
    ]


def test_a_figure_is_described_by_its_titles_axes_and_legend():
    figure = Figure()
    left, right = figure.subplots(1, 2)
    left.set_title("causal mask\nkeeps 56.2%")
    left.set(xlabel="key", ylabel="query")
    right.plot([0, 1], [1, 2], label="tiled: computed / $n^2$")
    right.plot([0, 1], [2, 1], label="_hidden")
    right.legend()
    text = describe_figure(figure, lead="Only the lower triangle is kept.")
    assert text == (
        "Only the lower triangle is kept. Panel 1 of 2, titled: causal mask keeps 56.2%. Horizontal axis: key. "
        "Vertical axis: query. Panel 2 of 2. Legend: tiled: computed / n^2."
    ), text


def test_a_figure_without_any_text_says_so_rather_than_nothing():
    figure = Figure()
    figure.subplots().plot([0, 1])
    assert describe_figure(figure) == FALLBACK


def test_a_static_picture_is_an_html_image_whose_alt_is_the_description():
    figure = Figure(figsize=(2, 1))
    ax = figure.subplots()
    ax.set_title('a "quoted" <title> & more')
    shown = picture(figure)
    assert isinstance(shown, Picture)
    bundle = shown._repr_mimebundle_()
    assert set(bundle) == {"text/html", "text/plain"}
    assert bundle["text/plain"] == describe_figure(figure)
    alt = re.fullmatch(r'<img src="data:image/png;base64,[A-Za-z0-9+/=]+" alt="([^"]*)">', bundle["text/html"])
    assert alt, bundle["text/html"][:200]
    assert html.unescape(alt[1]) == describe_figure(figure)  # escaped: the quote does not end the attribute


def move_first_control(widget) -> None:
    """Move the widget's first control, whatever it is, to another value: a dropdown or toggle to another
    option, a checkbox to its other state, a slider to an end."""
    control = next(iter(widget.controls.values()))
    options = getattr(control, "options", None)
    if options:
        labels = [o[1] if isinstance(o, tuple) else o for o in options]
        control.value = labels[0] if control.value != labels[0] else labels[-1]
    elif isinstance(control.value, bool):
        control.value = not control.value
    else:
        control.value = control.max if control.value != control.max else control.min


@pytest.mark.parametrize("cls", WIDGETS, ids=lambda cls: cls.__name__)
def test_a_widgets_picture_says_what_it_shows_and_follows_its_controls(cls):
    widget = cls()
    text = widget.image.tooltip
    assert text and text != FALLBACK, f"{cls.__name__}: its picture has no text alternative ({text!r})"
    missing = [t for t in _titles(widget.figure) if t not in text]
    assert not missing, f"{cls.__name__}: the text alternative leaves out the titles {missing}: {text!r}"
    # moved, the picture's titles change with it and so does its text (whatever the first control is)
    move_first_control(widget)
    assert widget.image.tooltip == describe_figure(widget.figure, widget.picture_lead)


# A readout of a quantity that has a unit says it in its name, so that the number read out means something:
# (what the name speaks of, the units one of which it must name, why).
UNITS = [
    (r"\bentropy\b", r"\(bits\)", "an entropy is in bits (log base 2)"),
    (r"\bloss\b", r"\(nats\)", "the course's losses are cross-entropies in nats (natural log)"),
    (r"\b(cache|memory|weights)\b", r"\((KiB|MiB|GiB|bytes)\)|\btokens?\b", "a size in memory: bytes or tokens"),
    (r"\bcontext\b", r"\(tokens\)", "a context is a number of tokens"),
]


@pytest.mark.parametrize("cls", WIDGETS, ids=lambda cls: cls.__name__)
def test_every_readout_is_text_that_names_its_unit(cls):
    """The readouts are text beside the picture (read by a screen reader, not only drawn), each number with
    its unit where it has one (WCAG 1.1.1, 1.3.1)."""
    widget = cls()
    assert widget.readouts, f"{cls.__name__} has no readouts"
    shown = re.sub(r"<[^>]+>", " ", widget.readout_html.value)
    missing = [name for name in widget.readouts if html.escape(name, quote=False) not in shown]
    assert not missing, f"{cls.__name__}: readouts not written beside the picture: {missing}"
    without = [
        f"{name!r} ({why})"
        for name, value in widget.readouts.items()
        if not isinstance(value, str)
        for speaks_of, unit, why in UNITS
        if re.search(speaks_of, name) and not re.search(unit, name)
    ]
    assert not without, f"{cls.__name__}: readouts that do not name their unit: {'; '.join(without)}"


def test_a_picture_a_little_too_wide_is_drawn_to_fit_and_a_much_too_wide_one_is_refused():
    from heads_and_masks.pictures import STATIC_PICTURE_WIDTH_PX

    slightly = Figure(figsize=(6.57, 2), dpi=100)  # 657 px: as some of the course's figures are
    slightly.subplots().set_title("a little too wide")
    png = picture(slightly).data
    assert int.from_bytes(png[16:20], "big") <= STATIC_PICTURE_WIDTH_PX
    much = Figure(figsize=(8, 2), dpi=100)
    much.subplots().set_title("far too wide")
    with pytest.raises(ValueError, match="make it narrower"):
        picture(much)


# A lead is whole sentences: each begins with a capital, a digit or an opening quote, and ends with a full stop.
SENTENCE = re.compile(r"[A-Z0-9“(][^\n]*?[.!?]")


def whole_sentences(text: str) -> bool:
    sentences = re.split(r"(?<=[.!?])\s+(?=[A-Z0-9“(])", text.strip())
    return bool(text.strip()) and all(SENTENCE.fullmatch(s) for s in sentences)


def test_the_sentence_check_can_fail():
    assert whole_sentences("The causal mask keeps 54.2% of the scores. “local” keeps 18.2%.")
    assert not whole_sentences("keeps 54.2%")  # a fragment
    assert not whole_sentences("The mask keeps 54.2%")  # no full stop
    assert not whole_sentences("")


@pytest.mark.parametrize("function, args, kwargs", FIGURES, ids=[f.__name__ for f, _, _ in FIGURES])
def test_every_static_picture_leads_with_what_to_see(function, args, kwargs):
    """Each picture function says, from the data it draws, what the reader should see and conclude; that
    lead comes first in the text alternative the notebook shows (the <img>'s alt)."""
    figure = function(*args, **kwargs)
    lead = lead_of(figure)
    assert lead, f"{function.__name__}: its picture has no lead (text_alternative.with_lead)"
    assert whole_sentences(lead), f"{function.__name__}: its lead is not whole sentences: {lead!r}"
    assert picture(figure).text.startswith(lead + " "), picture(figure).text[:300]


@pytest.mark.parametrize("cls", WIDGETS, ids=lambda cls: cls.__name__)
def test_every_widget_leads_with_what_its_picture_shows_now(cls):
    """A widget's lead is computed from its settings: moved, the lead changes, and stays first in the text."""
    widget = cls()
    lead = widget.picture_lead
    assert lead, f"{cls.__name__}: its picture has no lead (picture_lead)"
    assert whole_sentences(lead), f"{cls.__name__}: its lead is not whole sentences: {lead!r}"
    assert widget.image.tooltip.startswith(lead + " "), widget.image.tooltip[:300]
    move_first_control(widget)
    assert widget.picture_lead != lead, f"{cls.__name__}: its lead did not follow its first control: {lead!r}"
    assert widget.image.tooltip.startswith(widget.picture_lead + " ")
