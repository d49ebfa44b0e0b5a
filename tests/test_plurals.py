"""Counts of students in the grader's output read as English for one student and for several (issue 43)."""

import pytest

from autograde.class_report import class_size, late_count
from autograde.grade import collected_from_exchange, collected_from_files, graded_summary
from autograde.report import headline, pending_line


@pytest.mark.parametrize(
    "one, several",
    [
        (headline("01", 1, "1 graded"), headline("01", 3, "3 graded")),
        (pending_line(1, 2), pending_line(3, 6)),
        (collected_from_exchange("here", 1), collected_from_exchange("here", 3)),
        (collected_from_files(1, "a folder"), collected_from_files(3, "a folder")),
        (graded_summary(1, 0, "01"), graded_summary(3, 0, "01")),
        (class_size(1, 1), class_size(3, 3)),
        (late_count(1), late_count(3)),
    ],
)
def test_one_student_is_singular_and_several_plural(one, several):
    assert "1 student" in one or "1 submission" in one, one
    assert "1 students" not in one and "1 submissions" not in one, one
    assert " 1 student has" in one or " has " not in one, one
    assert "3 students" in several or "3 submissions" in several, several
    assert " has a " not in several, several


def test_the_progress_line_counts_one_failure_and_several():
    """The grading run's progress line: '1 failure so far', then '2 failures so far' (whole sentences)."""
    import io
    from types import SimpleNamespace

    from autograde.pool import Progress

    stream = io.StringIO()
    progress = Progress(3, stream=stream)
    for student, failed in (("ann", 1), ("ben", 0), ("cat", 1)):
        progress.update(SimpleNamespace(student=student, status=SimpleNamespace(failed=failed)))
    lines = stream.getvalue().splitlines()
    assert "1/3 students, 1 failure so far" in lines[0], lines
    assert "2/3 students, 1 failure so far" in lines[1], lines
    assert "3/3 students, 2 failures so far" in lines[2], lines
