"""The accessibility audit of a page the browser tests open: axe-core, the engine browsers' own tools use.

axe-core (Deque's, bundled by the PyPI package axe-playwright-python, so nothing is fetched at test time) is run
inside the page on the WCAG 2.0, 2.1 and 2.2 rules of levels A and AA. A page is split in two:
* what this course makes (a notebook's cells and their outputs, the widgets, the feedback page, the class
  report, the explore pages): every violation of impact "serious" or "critical" there fails the test;
* the frame around it that belongs to JupyterLab, Voilà or nbgrader (menus, toolbars, the formgrader's own
  page): its violations are written to test-artifacts/accessibility/ and listed in docs/accessibility.md,
  never hidden and never counted against the course (they are not ours to fix here).
Each audit writes its whole result to test-artifacts/accessibility/<surface>.json.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import axe_playwright_python

AXE_SCRIPT = (Path(axe_playwright_python.__file__).parent / "axe.min.js").read_text(encoding="utf-8")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "accessibility"

# WCAG 2.2 level AA is every rule tagged with one of these (axe tags each rule with the level it belongs to)
WCAG_AA_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]
BLOCKING = {"serious", "critical"}


@dataclass(frozen=True)
class Violation:
    rule: str  # axe's rule id, e.g. "color-contrast"
    impact: str  # minor, moderate, serious or critical
    help: str  # axe's one-line description of the rule
    targets: tuple[str, ...]  # CSS selectors of the elements that break it
    summary: str  # axe's explanation for the first element
    html: tuple[str, ...] = ()  # the start of each element's HTML, as axe quotes it

    def __str__(self) -> str:
        shown = ", ".join(self.targets[:3]) + (f" and {len(self.targets) - 3} more" if len(self.targets) > 3 else "")
        return f"[{self.impact}] {self.rule}: {self.help} ({len(self.targets)} elements: {shown}). {self.summary}"


def audit(page, surface: str, include: list[str] | None = None, exclude: list[str] | None = None) -> list[Violation]:
    """Every WCAG 2.2 A/AA violation axe finds in the page (or in the parts ``include`` selects)."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(AXE_SCRIPT)
    context = {"include": [[s] for s in include]} if include else {"exclude": []}
    if exclude:
        context["exclude"] = [[s] for s in exclude]
    options = {"runOnly": {"type": "tag", "values": WCAG_AA_TAGS}, "resultTypes": ["violations"]}
    result = page.evaluate("([context, options]) => axe.run(context, options)", [context, options])
    violations = [
        Violation(
            rule=v["id"],
            impact=v.get("impact") or "minor",
            help=v["help"],
            targets=tuple(" ".join(map(str, node["target"])) for node in v["nodes"]),
            summary=(v["nodes"][0].get("failureSummary") or "").replace("\n", " ") if v["nodes"] else "",
            html=tuple(node.get("html", "")[:300] for node in v["nodes"]),
        )
        for v in result["violations"]
    ]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"{surface}.json").write_text(
        json.dumps(
            {
                "surface": surface,
                "url": page.url,
                "include": include,
                "exclude": exclude,
                "violations": [v.__dict__ for v in violations],
            },
            indent=1,
        ),
        encoding="utf-8",
    )
    return violations


# How heads_and_masks.text_alternative.describe_figure begins the sentences it builds from a figure's own
# texts. A picture's text alternative that begins with one of them has no lead in front (what to see in it).
GENERATED_OPENINGS = ("Panel ", "Figure titled", "Horizontal axis:", "Vertical axis:", "Legend:", "A figure without")
_PICTURE_TEXTS_JS = """() => [...document.querySelectorAll('.jp-OutputArea-output img')].map(
  img => img.getAttribute('alt') || img.getAttribute('title') || '')"""


def pictures_without_lead(page) -> tuple[int, list[str]]:
    """How many pictures the notebook's outputs show, and the text alternatives (``alt`` of a static picture,
    ``title`` of a widget's) that do not begin with a lead."""
    texts = page.evaluate(_PICTURE_TEXTS_JS)
    return len(texts), [text[:120] for text in texts if not text or text.startswith(GENERATED_OPENINGS)]


def blocking(violations: list[Violation]) -> list[Violation]:
    """The violations a page of this course may not have: impact serious or critical."""
    return [v for v in violations if v.impact in BLOCKING]


def described(surface: str, violations: list[Violation]) -> str:
    return f"{surface}: {len(violations)} accessibility violations (WCAG 2.2 AA, axe-core):\n" + "\n".join(
        f"  {v}" for v in violations
    )
