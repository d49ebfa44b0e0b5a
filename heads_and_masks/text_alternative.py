"""What a picture shows, in words: the text alternative a screen reader reads in place of a figure.

A figure of this course says what it shows in its own texts: the overall title, each panel's title (often
with the number that matters, "keeps 43.8%"), the axes' labels and the legend. The text alternative is
built from those texts at the moment the picture is made, so it never disagrees with what is drawn, and a
sentence written by the author (``lead``) can come first to say what to look for. Each part is a whole
sentence of its own (a translator sees whole sentences, a screen reader reads them in order).
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

from .i18n import _

if TYPE_CHECKING:  # nothing of matplotlib is imported here: grading kernels import no drawing library
    from matplotlib.figure import Figure

# Each picture function computes its lead from the data it draws, and the figure carries it to picture(),
# which the notebook calls later (weakly held: a figure that is gone takes its lead with it).
_LEADS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def with_lead(figure: Figure, lead: str) -> Figure:
    """``figure``, with ``lead`` (what the reader should see in it, and conclude) kept for its text alternative."""
    _LEADS[figure] = lead
    return figure


def lead_of(figure: Figure) -> str | None:
    """The lead given to ``figure`` by ``with_lead``, or None."""
    return _LEADS.get(figure)


def _clean(text: str) -> str:
    """A label as one line of plain words: line breaks become spaces, TeX dollars go."""
    return " ".join(text.replace("$", "").split())


def _panel_sentences(ax, number: int, count: int) -> list[str]:
    titles = [_clean(ax.get_title(loc)) for loc in ("left", "center", "right")]
    title = "; ".join(t for t in titles if t)
    sentences = []
    if count == 1:
        if title:
            sentences.append(_("Panel titled: {title}.").format(title=title))
    elif title:
        sentences.append(
            _("Panel {number} of {count}, titled: {title}.").format(number=number, count=count, title=title)
        )
    else:
        sentences.append(_("Panel {number} of {count}.").format(number=number, count=count))
    xlabel, ylabel = _clean(ax.get_xlabel()), _clean(ax.get_ylabel())
    if xlabel:
        sentences.append(_("Horizontal axis: {label}.").format(label=xlabel))
    if ylabel:
        sentences.append(_("Vertical axis: {label}.").format(label=ylabel))
    _handles, labels = ax.get_legend_handles_labels()
    labels = [_clean(label) for label in labels if label and not label.startswith("_")]
    if labels:
        sentences.append(_("Legend: {labels}.").format(labels="; ".join(labels)))
    return sentences


def _says_something(ax) -> bool:
    titles = any(ax.get_title(loc).strip() for loc in ("left", "center", "right"))
    legend = any(label and not label.startswith("_") for label in ax.get_legend_handles_labels()[1])
    return titles or legend or bool(ax.get_xlabel().strip() or ax.get_ylabel().strip())


def describe_figure(figure: Figure, lead: str | None = None) -> str:
    """The text alternative of ``figure``: ``lead`` (what to look for; by default the one ``with_lead`` gave
    it), then its titles, axes and legends."""
    lead = lead or lead_of(figure)
    sentences = [lead.strip()] if lead else []
    suptitle = figure._suptitle.get_text() if getattr(figure, "_suptitle", None) else ""
    if suptitle.strip():
        sentences.append(_("Figure titled: {title}.").format(title=_clean(suptitle)))
    # the panels that say something: a colour bar or a blank spacer with no text is not a panel to read
    panels = [ax for ax in figure.get_axes() if ax.get_visible() and _says_something(ax)]
    for number, ax in enumerate(panels, start=1):
        sentences.extend(_panel_sentences(ax, number, len(panels)))
    if not sentences:
        return _("A figure without titles or labels.")
    return " ".join(sentences)
