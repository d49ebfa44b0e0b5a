"""A mixed class, graded in one run: a submission is judged in the language of the notebook the student handed in.

Students hand in the same answers in the English notebook and in the Russian one (notebooks-ru/): the first
mistake of 00_start_here's catalog, or the notebook as released. Through the instructor's pipeline (collected from
a folder, graded in parallel, feedback made), both languages get the same points and the same misconception ids,
and the class report counts them together by id; a Russian notebook's student reads Russian (the checks' "not
written yet" message, the feedback page's words), an English one's English. One English notebook names a
language that is a path: it is graded in English, and alike.
"""

from __future__ import annotations

import copy
import re

import pytest
from catalog import catalogs
from course import grade_class
from submissions import in_language, submission

from autograde import class_report, report
from autograde.class_marks import misconception_table, read_assignment
from autograde.feedback import feedback
from autograde.results import read_verdicts
from heads_and_masks import i18n

A = "00_start_here"
NOT_WRITTEN_RU = "ещё не написана: замените `raise NotImplementedError()` своим кодом"
NOT_WRITTEN_EN = "is not written yet: replace `raise NotImplementedError()` with your code"


@pytest.fixture(scope="module")
def mixed_class(tmp_path_factory):
    mistake = next(answer for answer in catalogs()[A] if answer.breaks is not None)
    wrong = submission(A, {k: mistake.source(k) for k in mistake.cells}, keep_stubs=True)
    untouched = submission(A, {}, keep_stubs=True)
    forged = copy.deepcopy(untouched)
    forged.metadata["heads_and_masks"] = {"language": "../notebooks-ru"}  # a path, not one of the course's languages
    handed_in = {
        "wrong_en": wrong,
        "wrong_ru": in_language(wrong, A, "ru"),
        "untouched_ru": in_language(untouched, A, "ru"),
        "untouched_forged": forged,
    }
    run = grade_class(A, handed_in, tmp_path_factory.mktemp("mixed-class"))
    pages = {path.parent.parent.name: path.read_text(encoding="utf-8") for path in feedback(run.course, A)}
    return run, mistake, pages


@pytest.mark.slow
def test_the_same_answers_get_the_same_points_and_misconceptions_in_both_languages(mixed_class):
    run, mistake, _pages = mixed_class
    scores = {student: result.scores for student, result in run.results.items()}
    verdicts = {student: read_verdicts(result.notebook) for student, result in run.results.items()}
    found = {
        student: {gid: (v["passed"], v["misconception"]) for gid, v in cells.items()}
        for student, cells in verdicts.items()
    }
    for english, russian in (("wrong_en", "wrong_ru"), ("untouched_forged", "untouched_ru")):
        assert scores[english] == scores[russian], scores
        assert found[english] == found[russian], found
    assert any(misconception for _passed, misconception in found["wrong_ru"].values()), found
    # the class report counts the mistake of both languages together, by id
    table = dict(misconception_table([m for m in read_assignment(run.course, A).marks if m.exercise == mistake.breaks]))
    ids = {misconception for _passed, misconception in found["wrong_ru"].values() if misconception}
    for misconception in ids:
        assert sorted(table[misconception]) == ["wrong_en", "wrong_ru"], table
    # ... and so does its page in the instructor's language (make report LANG=ru): one row of two students
    before = i18n.untranslated("ru")
    with i18n.use_language("ru"):
        page, _table = class_report.write(run.course, A)
        text = report.report(run.course, A)
    assert i18n.untranslated("ru") - before == set()
    page = page.read_text(encoding="utf-8")
    assert "<html lang='ru'>" in page and "Отчёт по группе" in page and "студента" in text, text
    for misconception in ids:
        assert re.search(rf"<code>{re.escape(misconception)}</code></td><td>[^<]+</td><td class='n'>2</td>", page)


@pytest.mark.slow
def test_each_student_reads_the_language_of_the_notebook_they_handed_in(mixed_class):
    run, _mistake, pages = mixed_class
    messages = {
        student: " ".join(" ".join(v["message"].split()) for v in read_verdicts(result.notebook).values())
        for student, result in run.results.items()
    }
    assert NOT_WRITTEN_RU in messages["untouched_ru"] and NOT_WRITTEN_EN not in messages["untouched_ru"], messages
    assert NOT_WRITTEN_EN in messages["untouched_forged"] and NOT_WRITTEN_RU not in messages["untouched_forged"], (
        messages
    )
    # the feedback page: its own words, the checks' messages, the hidden tests' placeholder
    for student in ("wrong_ru", "untouched_ru"):
        assert '<html lang="ru">' in pages[student]
        for russian in ("Проверочная ячейка", "Баллы:", "(Наверх)", "здесь при проверке вашего блокнота"):
            assert russian in pages[student], (student, russian)
        for english in ("Test cell", "Score:", "(Top)", "hidden tests ran here"):
            assert english not in pages[student], (student, english)
    assert NOT_WRITTEN_RU in " ".join(pages["untouched_ru"].split())
    for student in ("wrong_en", "untouched_forged"):
        assert '<html lang="en">' in pages[student]
        for english in ("Test cell", "Score:", "(Top)", "hidden tests ran here"):
            assert english in pages[student], (student, english)


def test_a_late_russian_submission_is_told_what_it_cost_in_whole_russian_sentences():
    """The late note of the feedback page (feedback_filter.SayLate), in the language of the graded notebook."""
    import datetime as dt

    from autograde.late_policy import CourseLatePolicy
    from autograde.lateness import Lateness, late_sentence
    from heads_and_masks import i18n

    before = i18n.untranslated("ru")
    late = Lateness(dt.datetime(2026, 12, 11, 19, 5), dt.datetime(2026, 12, 10, 17, 0), 26 * 3600 + 300, 0.6)
    with i18n.use_language("ru"):
        note = f"{late_sentence(late)} {CourseLatePolicy().describe()}"
    assert i18n.untranslated("ru") == before, i18n.untranslated("ru") - before
    assert "Эта работа сдана через 1 день и 2 часа после срока" in note, note
    assert "снято 0,6 балла" in note and "15 минут после срока" in note, note
