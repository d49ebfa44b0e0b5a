"""Math in the feedback page, typeset when the page is made: MathML, which browsers draw themselves.

nbgrader's feedback page loads MathJax from a CDN to typeset the notebook's formulas (the lesson's and the
student's written answers). Offline, or wherever the CDN is out of reach, every formula shows as TeX
source; and the page is often opened where no Jupyter server can serve MathJax either (from the file itself,
or from JupyterLab's /files/, which serves it sandboxed, with no origin to load fonts from). So the page
carries no script for math at all: ``TypesetMath`` (a feedback preprocessor, on the copy being rendered)
replaces each formula of a markdown cell with MathML made by ``latex2mathml``, which Chromium, Firefox
and Safari draw natively. A student's written answer, which the grader fences so that none of its markup is
read (``adopt_release.as_text``), becomes literal text with its formulas typeset (``literal_with_math``).

A formula is the student's text, so it is hostile: the MathML is parsed and rebuilt from an allowlist of
presentation elements and attributes (no link, no style, no event handler, no foreign element), and text
is escaped, also against Markdown (an ``*`` or ``_`` inside a formula never starts emphasis). A formula
that cannot be converted stays as its TeX, shown as code. Code spans and fenced code are left alone.
"""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET

from nbgrader.preprocessors import NbGraderPreprocessor

# MathML's presentation elements (MathML Core and the common ones beyond it); nothing else survives
ELEMENTS = {
    "math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "msub", "msup", "msubsup", "mfrac", "msqrt",
    "mroot", "mstyle", "merror", "mpadded", "mphantom", "munder", "mover", "munderover", "mtable", "mtr",
    "mtd", "mlabeledtr", "menclose", "mfenced", "semantics", "annotation", "mmultiscripts", "mprescripts",
    "none",
}  # fmt: skip
# Attributes that change how a formula is drawn and nothing else (no href, style, class, id, event handler)
ATTRIBUTES = {
    "display", "mathvariant", "stretchy", "fence", "separator", "lspace", "rspace", "minsize", "maxsize",
    "symmetric", "largeop", "movablelimits", "accent", "accentunder", "linethickness", "columnalign",
    "rowalign", "columnspacing", "rowspacing", "columnlines", "rowlines", "frame", "width", "height", "depth",
    "scriptlevel", "displaystyle", "open", "close", "separators", "notation", "form", "encoding",
}  # fmt: skip
# Markdown would read these in the text of a formula (emphasis, code, escapes, links, a new formula)
MARKDOWN_SPECIAL = {c: f"&#{ord(c)};" for c in "*_`\\[]$~|#!"}
MATHML_NS = "{http://www.w3.org/1998/Math/MathML}"

# In markdown: fenced code, then code spans (left as they are), then the four ways to write a formula
_CODE = re.compile(r"(^|\n)(```|~~~).*?(\n\2[^\n]*|$)|`+[^`]*`+", re.S)
_MATH = re.compile(r"\$\$(.+?)\$\$|\\\[(.+?)\\\]|\\\((.+?)\\\)|(?<![\\$])\$(?!\s)((?:\\\$|[^$])+?)(?<!\s)\$", re.S)


def _escaped(text: str) -> str:
    return "".join(MARKDOWN_SPECIAL.get(c, c) for c in html.escape(text, quote=True))


def _rebuilt(element: ET.Element) -> str:
    """The element as MathML text, with only allowed elements and attributes; text escaped."""
    tag = element.tag.removeprefix(MATHML_NS)
    inner = _escaped(element.text or "") + "".join(_rebuilt(child) + _escaped(child.tail or "") for child in element)
    if tag not in ELEMENTS:
        return inner  # an unknown element: its text stays, the element goes
    attributes = "".join(
        f' {name}="{_escaped(value)}"'
        for name, value in sorted(element.attrib.items())
        if name in ATTRIBUTES and not re.search(r"[^\w.%# -]", value)
    )
    return f"<{tag}{attributes}>{inner}</{tag}>"


def to_mathml(tex: str, display: bool) -> str:
    """The formula ``tex`` as safe MathML text, or its TeX as an escaped code span when it cannot be read."""
    from latex2mathml.converter import convert

    try:
        made = convert(tex, display="block" if display else "inline")
        root = ET.fromstring(made)
    except Exception:  # noqa: BLE001 (any failure of the converter: the TeX stays, readable)
        delimiter = "$$" if display else "$"
        return f"<code>{_escaped(delimiter + tex + delimiter)}</code>"
    mathml = _rebuilt(root)
    return mathml if mathml.startswith("<math") else f"<code>{_escaped(tex)}</code>"


def typeset(markdown: str) -> str:
    """``markdown`` with every formula outside code replaced by MathML."""
    pieces, last = [], 0
    for code in _CODE.finditer(markdown):
        pieces.append(_typeset_text(markdown[last : code.start()]))
        pieces.append(code.group(0))
        last = code.end()
    pieces.append(_typeset_text(markdown[last:]))
    return "".join(pieces)


def _typeset_text(text: str) -> str:
    def replace(match: re.Match) -> str:
        display_dollars, display_brackets, inline_parens, inline_dollars = match.groups()
        tex = display_dollars or display_brackets or inline_parens or inline_dollars
        return to_mathml(tex.strip(), display=bool(display_dollars or display_brackets))

    return _MATH.sub(replace, text)


# A student's written answer, as the sanitize step leaves it in the graded notebook (adopt_release.as_text): a fenced
# block, so that none of its markup reaches anyone's page
_LITERAL = re.compile(r"\A(`{3,})text\n(.*)\n\1\Z", re.S)


def literal_with_math(text: str) -> str:
    """A written answer as HTML: its words exactly as typed (no markup of the student's is read: tags, links
    and Markdown show as the characters they are), its paragraphs kept, and its formulas as MathML."""
    paragraphs = [p for p in re.split(r"\n\s*\n", text.strip()) if p.strip()]
    rendered = []
    for paragraph in paragraphs:
        pieces, last = [], 0
        for match in _MATH.finditer(paragraph):
            pieces.append(_escaped(paragraph[last : match.start()]))
            display_dollars, display_brackets, inline_parens, inline_dollars = match.groups()
            tex = display_dollars or display_brackets or inline_parens or inline_dollars
            pieces.append(to_mathml(tex.strip(), display=bool(display_dollars or display_brackets)))
            last = match.end()
        pieces.append(_escaped(paragraph[last:]))
        rendered.append("<p>" + " ".join("".join(pieces).split("\n")) + "</p>")
    return "\n".join(rendered)


class TypesetMath(NbGraderPreprocessor):
    """Every formula of every markdown cell as MathML, on the notebook being rendered into feedback: the
    course's text through Markdown, a student's written answer (fenced by the judge) as literal text."""

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "markdown":
            literal = _LITERAL.match(cell.source)
            cell.source = literal_with_math(literal[2]) if literal else typeset(cell.source)
        return cell, resources
