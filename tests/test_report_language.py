"""The instructor's reports in the instructor's language (issue 40): ``make grade LANG=ru`` / ``--language ru``.

A made-up mixed class (ann handed in the English notebook, boris the Russian one, both with the same mistake)
is reported in Russian: the class report's page and the text report ``make grade`` prints are Russian
throughout (no message without a translation, no English sentence left, ``<html lang="ru">``), and the
misconception both students made is one row of two students, counted by its id. In English the same class
reads as before. Nothing here grades anything: the records are written as grading writes them.
"""

from __future__ import annotations

import datetime as dt
import html
import re

import pytest

from autograde import class_marks, class_report, pages, report
from autograde.class_marks import FAILED, NOT_ANSWERED, PASSED, PENDING, Assignment, Mark
from autograde.course import Course
from autograde.grade import build_parser, report_language
from autograde.lateness import Lateness
from autograde.results import Result, Status, write_result
from heads_and_masks import i18n

A, LATER = "03_causal_mask", "05_other_masks"
SHARED = "mask.zero_not_ban"  # the mistake ann (English notebook) and boris (Russian notebook) both made


def _mixed_class() -> tuple[Assignment, Assignment]:
    marks = [
        Mark("ann", "causal_mask", FAILED, 0, 2, (SHARED,)),  # handed in notebooks/: English
        Mark("boris", "causal_mask", FAILED, 0, 2, (SHARED,)),  # handed in notebooks-ru/: Russian
        Mark("chen", "causal_mask", FAILED, 1, 2, (class_marks.UNRECOGNISED,)),
        Mark("dana", "causal_mask", PASSED, 2, 2),
        Mark("ann", "written_question", PENDING, 0, 2, written=True),
        Mark("boris", "written_question", NOT_ANSWERED, 0, 2, written=True),
        Mark("chen", "masked_softmax", NOT_ANSWERED, 0, 3),
    ]
    statuses = {"eve": (str(Status.MISSING), []), "chen": (str(Status.REVIEW), [])}
    due = dt.datetime(2026, 11, 30, 16, 0)
    late = {"boris": Lateness(due + dt.timedelta(hours=5), due, 5 * 3600.0, 0.5)}
    this = Assignment(
        A,
        ["ann", "boris", "chen", "dana", "eve"],
        ["causal_mask", "masked_softmax", "written_question"],
        marks,
        statuses,
        sandboxed=False,
        why_unsandboxed="bubblewrap",
        due=due,
        policy=i18n.translated("A late submission loses no points; how late it came is shown."),
        late=late,
    )
    later = Assignment(
        LATER, ["ann"], ["padding_mask"], [Mark("ann", "padding_mask", FAILED, 0, 2, ("mask.ignored",))], {}
    )
    return this, later


def _english_sentences(text: str, allowed: list[str]) -> list[str]:
    """Runs of two or more English words in ``text`` once the ``allowed`` strings (ids, names, commands, paths,
    what grading recorded) are taken out."""
    for kept in sorted(allowed, key=len, reverse=True):
        text = text.replace(kept, " ")
    return re.findall(r"[A-Za-z]{2,}(?:[ ,:;()-]+[A-Za-z]{2,})+", text)


def _page_text(page: str) -> str:
    """What a reader of the page reads: its text, its title, and its pictures' text alternatives."""
    alternatives = " ".join(re.findall(r"alt='([^']*)'", page))
    page = re.sub(r"<style>.*?</style>|<code>.*?</code>", " ", page, flags=re.S)
    return html.unescape(re.sub(r"<[^>]+>", " ", page) + " " + alternatives)


KEPT = [
    "ann",
    "boris",
    "chen",
    "dana",
    "eve",
    A,
    LATER,
    "causal_mask",
    "masked_softmax",
    "written_question",
    "padding_mask",
    "formgrader",
    "bubblewrap",
    "UTC",
    "docs/instructors.md",
    "unrecognised",
    "mask",
]


def test_the_class_report_of_a_mixed_class_in_russian_counts_by_id_and_leaves_no_english():
    before = i18n.untranslated("ru")
    with i18n.use_language("ru"):
        this, later = _mixed_class()  # read in the report's language, as read_assignment reads the late policy
        page = class_report.render_html(this, [this, later], similar_pairs=2)
        rows = class_marks.csv_rows(this, [this, later])
    assert i18n.untranslated("ru") - before == set()
    assert "<html lang='ru'>" in page and "<title>Отчёт по группе: 03_causal_mask</title>" in page
    # the mistake of the English and of the Russian notebook: one row, two students
    assert class_marks.misconception_table(this.marks_of("causal_mask"))[0] == (SHARED, ["ann", "boris"])
    assert re.search(rf"<code>{re.escape(SHARED)}</code></td><td>[^<]*</td><td class='n'>2</td>", page), page
    assert "Проверено без песочницы." in page and "ждёт проверки" in page and "5 часов" in page
    assert not _english_sentences(_page_text(page), KEPT), _english_sentences(_page_text(page), KEPT)
    # the CSV's columns and values stay what scripts read; only its descriptions are in the report's language
    misconception = next(r for r in rows if r["value"] == SHARED)
    assert misconception["measure"] == "misconception" and misconception["count"] == "2"
    assert any(r["measure"] == "outcome" and r["value"] == "passed" for r in rows)


def test_the_same_class_in_english_reads_as_before():
    this, later = _mixed_class()
    page = class_report.render_html(this, [this, later])
    assert "<html lang='en'>" in page and "<title>Class report: 03_causal_mask</title>" in page
    assert "<th>passed</th><th>failed</th><th>not answered</th><th>not graded</th>" in page
    assert "Not compared yet: <code>make similarity ASSIGNMENT=03_causal_mask</code> compares" in page
    assert "1 answer is pending: ann." in page and "Graded unsandboxed." in page


def test_the_text_report_of_a_mixed_class_in_russian(tmp_path, monkeypatch):
    """What ``make grade LANG=ru`` prints at its end (report.report), for records as grading writes them."""
    course = Course(root=tmp_path)
    monkeypatch.setattr(report, "sandbox_state", lambda: (False, "bubblewrap"))
    scores, maximum = {"test_causal_mask": 0.0}, {"test_causal_mask": 2.0}
    limit = "feedback time: 61 s"  # what bounds.py recorded while grading: kept as recorded
    write_result(course, Result("ann", A, "graded", scores, maximum, []))
    write_result(course, Result("boris", A, "needs review", scores, maximum, [], seconds_late=7200.0, late_penalty=0.5))
    write_result(course, Result("chen", A, "needs review", scores, maximum, [], limits=[limit]))
    course.path("submitted", "dana", A).mkdir(parents=True)  # submitted, not graded yet
    before = i18n.untranslated("ru")
    with i18n.use_language("ru"):
        text = report.report(course, A)
    assert i18n.untranslated("ru") - before == set()
    assert text.startswith("ВНИМАНИЕ: проверено БЕЗ ПЕСОЧНИЦЫ (bubblewrap)"), text
    assert "03_causal_mask: 4 студента: проверено: 1, нужно посмотреть: 2, ещё не проверено: 1" in text, text
    assert (
        "chen: нужно посмотреть, 0/2" in text
        and "boris: нужно посмотреть, 0/2, опоздание 2 часа, за него снято баллов: 0,5" in text
    ), text
    kept = [*KEPT, "grade.py autograde", limit]
    assert not _english_sentences(text, kept), _english_sentences(text, kept)
    english = report.report(course, A)
    assert "4 students: 1 graded, 2 needs review, 1 not graded yet" in english, english
    assert "boris: needs review, 0/2, 2 hours late, 0.5 points off for it" in english, english


@pytest.mark.parametrize(
    ("asked", "language"),
    [(None, None), ("", None), ("ru", "ru"), ("ru_RU.UTF-8", "ru"), ("en_US.UTF-8", "en"), ("de", "en")],
)
def test_the_instructor_asks_the_reports_language_as_release_takes_it(asked, language):
    assert report_language(asked) == language
    for command in ("report", "all"):
        args = build_parser().parse_args([command, A, *(["--language", asked] if asked is not None else [])])
        assert args.report_language == asked


def test_make_similarity_in_russian_through_the_command(tmp_path, capsys):
    """``make similarity LANG=ru``: the page (its text, its picture's text alternative) and the lines printed in
    Russian; the CSV as scripts read it. A made-up class of the catalog's styles with one renamed copy each."""
    from similar_classes import build_class, write_class

    from autograde.grade import main

    test_class = build_class("01_heads", "renamed variables")
    test_class.submissions["untouched"] = {}  # the notebook as released: listed with its reason
    course = write_class(tmp_path, test_class)
    before = i18n.untranslated("ru")
    assert main(["--root", str(tmp_path), "similarity", "01_heads", "--language", "ru"]) == 0
    assert i18n.untranslated("ru") - before == set()
    printed = capsys.readouterr().out
    assert "01_heads: сравнено работ:" in printed and "рядом: " in printed, printed
    reports = course.root / "class" / "reports"
    page = (reports / "01_heads-similarity.html").read_text(encoding="utf-8")
    assert "<html lang='ru'>" in page and "<title>Похожие работы: 01_heads</title>" in page
    assert "<td class='mark'>совпадение</td>" in page and "<img alt='Гистограммы оценок сходства" in page
    rows = (reports / "01_heads-similarity.csv").read_text(encoding="utf-8")
    recorded = [line.split('","')[-1].rstrip('"') for line in rows.splitlines()[1:]]  # the notes grading wrote
    code_shown = re.sub(r"<table class='code'>.*?</table>", " ", page, flags=re.S)
    kept = [*KEPT, *test_class.submissions, *recorded, "01_heads", "split_heads", "merge_heads", "docstrings"]
    assert not _english_sentences(_page_text(code_shown), kept), _english_sentences(_page_text(code_shown), kept)


def test_a_page_says_the_language_it_is_written_in():
    """``<html lang>``: the current language where the course has it; a language without catalogs reads English."""
    for current, written in (("ru", "ru"), ("de", "en"), (None, "en")):
        with i18n.use_language(current):
            assert pages.written_in() == written
