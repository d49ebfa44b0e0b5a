"""The feedback page's formulas as MathML (autograde/feedback_math.py): every way to write one, code left
alone, and a formula as hostile as a student can write it. The page itself, offline in Chromium, is
tested in tests/browser/test_browser_feedback.py."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from autograde.feedback_math import ATTRIBUTES, ELEMENTS, to_mathml, typeset


def _tags_and_attributes(markup: str) -> tuple[set[str], set[str]]:
    root = ET.fromstring(f"<root>{markup}</root>")
    tags = {e.tag for e in root.iter()} - {"root"}
    attributes = {name for e in root.iter() for name in e.attrib}
    return tags, attributes


@pytest.mark.parametrize(
    ("markdown", "display"),
    [
        (r"weights $\mathrm{softmax}(QK^\top / \sqrt{d})$ here", "inline"),
        (r"weights \(\frac{1}{\sqrt{d}}\) here", "inline"),
        (r"the sum $$\sum_{j \le i} w_{ij} = 1$$ holds", "block"),
        (r"the sum \[ \frac{n(n+1)}{2} \] holds", "block"),
    ],
)
def test_every_way_of_writing_a_formula_becomes_mathml(markdown, display):
    made = typeset(markdown)
    assert made.count("<math") == 1 and f'display="{display}"' in made, made
    assert "$" not in made and "\\" not in made, f"TeX left in the page: {made}"
    assert made.startswith(("weights ", "the sum ")) and made.endswith((" here", " holds"))


def test_code_and_prices_are_left_as_they_are():
    markdown = "Use `$x$` in code, or\n\n```\nprint('$y$')\n```\n\nit costs $5 and $6 a month."
    assert typeset(markdown) == markdown


def test_a_formula_s_text_cannot_become_markdown():
    made = to_mathml(r"a_* b * c", display=False)
    text = re.sub(r"<[^>]+>", "", made)
    assert "*" not in text and "_" not in text and "&#42;" in text, made  # entities: no emphasis, no subscript


@pytest.mark.parametrize(
    "tex",
    [
        r"\href{javascript:alert(1)}{x}",
        r"\style{background:url(x)}{x}",
        r"\class{evil}{x}",
        r"x</mi><script>alert(1)</script><mi>",
        r"\text{<img src=x onerror=alert(1)>}",
        r"\unicode{x3c}script\unicode{x3e}",
    ],
)
def test_a_hostile_formula_gives_mathml_and_nothing_else(tex):
    made = to_mathml(tex, display=False)
    tags, attributes = _tags_and_attributes(made)
    assert tags <= ELEMENTS | {"code"}, tags - ELEMENTS
    assert attributes <= ATTRIBUTES, attributes - ATTRIBUTES
    # (the element and attribute allowlists above are what makes it safe: a hostile word may remain as text,
    # escaped, as the student wrote it)
    assert "<script" not in made.lower() and "<img" not in made.lower(), made


def test_a_formula_that_cannot_be_read_stays_as_its_tex_in_code():
    made = to_mathml(r"\frac{", display=True)
    assert made.startswith("<code>") and "&#92;frac{" in made, made


def test_a_written_answer_stays_literal_text_with_its_formulas_typeset():
    from autograde.feedback_math import TypesetMath
    from autograde.adopt_release import as_text

    answer = (
        "With $m = \\max_k s_k$ the factor $e^{-m}$ cancels <b>here</b> and [there](javascript:x).\n"
        "A second line.\n\n$$w_j = \\frac{e^{s_j}}{\\sum_k e^{s_k}}$$\n\n**not bold** `not code`"
    )
    cell = {"cell_type": "markdown", "source": as_text(answer), "metadata": {}}
    import nbformat

    cell = nbformat.from_dict(cell)
    made, _ = TypesetMath().preprocess_cell(cell, {}, 0)
    html_out = made.source
    assert html_out.count("<p>") == 3 and html_out.count("<math") == 3 and 'display="block"' in html_out, html_out
    text = re.sub(r"<math.*?</math>", "", html_out, flags=re.S)
    assert "<b>" not in text and "&lt;b&gt;here&lt;/b&gt;" in text  # the student's tag, shown as typed
    assert "<a" not in text and "javascript:x" in text  # a link as characters, never a link
    assert "&#42;&#42;not bold&#42;&#42;" in text and "&#96;not code&#96;" in text  # Markdown shows as typed
    assert "the factor" in text and "A second line." in text
