"""The similar-submissions page opened in Chromium from the file itself (no server): nothing loads, nothing runs.

The class is built from the catalogs on disk (tests/similar_classes.py: 01_heads, the styles and a copy of one
of them per exercise under renamed variables), compared by ``similarity.write`` as ``make similarity`` does:
no grading. The page must load nothing and run no script, show its picture, mark matched lines with text as
well as shading, and pass the accessibility audit (axe-core, WCAG 2.2 AA). The screenshot goes to
test-artifacts/browser/similarity.png.
"""

from __future__ import annotations

import pytest
from accessibility import audit, blocking, described
from reflow import at_200_percent, reflow_problems
from labdriver import page_from_file
from similar_classes import build_class, write_class

from autograde import similarity, similarity_page

pytestmark = [pytest.mark.browser]


def test_similarity_page_in_chromium(browser, screenshots, tmp_path):
    test_class = build_class("01_heads", "renamed variables")
    test_class.submissions["<em>me"] = {}  # a student id written as HTML (a folder name: no slash), shown as text
    course = write_class(tmp_path, test_class)
    report, paths = similarity.write(course, "01_heads")
    with page_from_file(browser, paths["html"], 1300, 1000) as page:
        assert page.evaluate("() => document.scripts.length") == 0
        picture = page.evaluate("() => [...document.images].map(i => [i.complete, i.naturalWidth, i.alt])")
        assert len(picture) == 1 and picture[0][0] and picture[0][1] > 300 and "class level" in picture[0][2]
        levels = page.evaluate("() => [...document.querySelectorAll('h1,h2,h3,h4,h5')].map(h => +h.tagName[1])")
        assert levels[0] == 1 and all(b <= a + 1 for a, b in zip(levels, levels[1:])), f"a heading skips: {levels}"
        marked = page.evaluate(
            "() => [...document.querySelectorAll('tr.match td.mark')].map(td => td.innerText.trim())"
        )
        assert marked and set(marked) == {similarity_page.MATCH_MARKER}, "every shaded line says it matches, in words"
        assert "<em>me" in page.inner_text("body")
        assert len(report.flagged) >= len(test_class.planted)
        found = blocking(audit(page, "similarity", include=["body"]))
        assert not found, described("the similar-submissions page", found)
        with at_200_percent(page):  # WCAG 1.4.10: the side-by-side code may scroll in its own box, not the page
            problems = reflow_problems(page, "similarity page", screenshots / "zoom200-similarity.png", ["body"])
        assert not problems, "the similar-submissions page at 200 % zoom: " + "; ".join(problems)
        page.screenshot(path=str(screenshots / "similarity.png"), full_page=False)
