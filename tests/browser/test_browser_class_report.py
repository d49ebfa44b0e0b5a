"""The class report opened in Chromium from the file itself (no server): every picture shows, nothing runs.

The class is the suite's one class run of 03_causal_mask (``graded_batch``: catalog answers, the untouched
notebook, the solution and the attacks, graded together). The page must load nothing from anywhere (its
pictures are inline PNGs), run no script, show each exercise's picture at its own size, and show a
student name written as HTML as text. The screenshot goes to test-artifacts/browser/ and, with
``UPDATE_GALLERY=1``, to docs/images/class_report.png (shown in docs/instructors.md).
"""

from __future__ import annotations

import shutil

import pytest
from accessibility import audit, blocking, described
from reflow import at_200_percent, reflow_problems
from labdriver import page_from_file
from course import graded_batch
from gallery import GALLERY_IMAGES, UPDATE_GALLERY

from autograde import class_marks, class_report

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ASSIGNMENT = "03_causal_mask"


def test_class_report_in_chromium(browser, screenshots):
    run = graded_batch(ASSIGNMENT)
    page_path, _ = class_report.write(run.course, ASSIGNMENT)
    report = class_marks.read_assignment(run.course, ASSIGNMENT)
    with page_from_file(browser, page_path, 1200, 900) as page:
        assert page.evaluate("() => document.scripts.length") == 0
        pictures = page.evaluate("""() => [...document.images].map(i => ({complete: i.complete,
            natural: i.naturalWidth, shown: i.getBoundingClientRect().width}))""")
        exercises = [e for e in report.exercises if not any(m.written for m in report.marks_of(e))]
        assert len(pictures) == len(exercises)
        for picture in pictures:  # decoded, and shown at its own size (not shrunk: its text stays legible)
            assert picture["complete"] and picture["natural"] > 300 and picture["shown"] >= picture["natural"] - 1
        text = page.inner_text("body")
        for exercise in exercises:  # the page says what the report computed
            top = class_marks.misconception_table(report.marks_of(exercise))
            if top:
                assert top[0][0] in text
        hostile = [s for s in report.students if "<" in s]
        for student in hostile:
            assert student in text  # shown as text, not parsed as markup
        # WCAG 2.2 AA (axe-core), the whole page: it is the course's own
        found = blocking(audit(page, "class-report", include=["body"]))
        assert not found, described("the class report", found)
        with at_200_percent(page):  # WCAG 1.4.10: read without scrolling sideways at 200 % of a 1280 px window
            problems = reflow_problems(page, "class report", screenshots / "zoom200-class_report.png", ["body"])
        assert not problems, "the class report at 200 % zoom: " + "; ".join(problems)
        shot = screenshots / "class_report.png"
        page.set_viewport_size({"width": 1200, "height": 1400})
        page.screenshot(path=str(shot), full_page=False)
        if UPDATE_GALLERY:
            shutil.copy(shot, GALLERY_IMAGES / "class_report.png")


def test_the_russian_class_report_in_chromium(browser, screenshots, tmp_path):
    """The class report in Russian (make report LANG=ru), of test_report_language's made-up mixed class: no grading.
    Its longer words must still fit a narrow window (200 % zoom) and pass the same audit; the page says its language."""
    from test_report_language import _mixed_class

    from heads_and_masks import i18n

    with i18n.use_language("ru"):
        this, later = _mixed_class()
        page_path = tmp_path / "class_report-ru.html"
        page_path.write_text(class_report.render_html(this, [this, later], similar_pairs=2), encoding="utf-8")
    with page_from_file(browser, page_path, 1200, 900) as page:
        assert page.evaluate("() => document.documentElement.lang") == "ru"
        found = blocking(audit(page, "class-report-ru", include=["body"]))
        assert not found, described("the Russian class report", found)
        with at_200_percent(page):
            problems = reflow_problems(
                page, "Russian class report", screenshots / "zoom200-class_report-ru.png", ["body"]
            )
        assert not problems, "the Russian class report at 200 % zoom: " + "; ".join(problems)
        page.screenshot(path=str(screenshots / "class_report-ru.png"), full_page=True)
