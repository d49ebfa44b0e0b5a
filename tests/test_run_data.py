"""What travels between a run's coordinator and its workers is checked where it arrives (``run_data.checked``):
a field missing, one too many or of another type is refused there, by name, not met later as a KeyError.
"""

from __future__ import annotations

import pytest

from autograde.run_data import ShapeError, WorkerResult, checked
from autograde.worker.grade_worker import grade_submission

RUN = {
    "id": "0123abcd",
    "course_id": "heads-and-masks",
    "assignment": "00_start_here",
    "gradebook": b"",
    "source": {},
    "releases": {"en": {}},
    "key": b"k" * 32,
    "submission_timeout": 60,
    "config": {"Judge.timeout": 10},
}
JOB = {"student": "ada", "files": {"00_start_here.ipynb": b"{}"}, "timestamp": None, "last": False}
RESULT = {
    "student": "ada",
    "ok": False,
    "seconds": 1.5,
    "log": "",
    "stopped": False,
    "judge_notes": [],
    "judge_limits": [],
    "judge_status": None,
    "failure": "died",
}


def without(data: dict, field: str) -> dict:
    return {name: value for name, value in data.items() if name != field}


@pytest.mark.parametrize(
    "run, job, message",
    [
        (RUN, without(JOB, "last"), "a Job lacks the field 'last'"),
        (RUN, {**JOB, "path": "/home/ada"}, "a Job has no field 'path'"),
        (RUN, {**JOB, "files": {"00_start_here.ipynb": "{}"}}, "the field 'files' of a Job must be dict[str, bytes]"),
        (without(without(RUN, "key"), "gradebook"), JOB, "a RunSettings lacks the fields 'gradebook', 'key'"),
        ({**RUN, "submission_timeout": "60"}, JOB, "the field 'submission_timeout' of a RunSettings must be"),
    ],
)
def test_a_worker_refuses_a_misshapen_task_before_it_grades(run, job, message):
    with pytest.raises(ShapeError) as refused:
        grade_submission(run, job)
    assert str(refused.value).startswith(message)


def test_the_coordinator_refuses_a_misshapen_result_and_takes_a_right_one():
    assert checked(WorkerResult, RESULT) is RESULT  # the optional fields may be there or not
    assert checked(WorkerResult, without(RESULT, "failure")) == without(RESULT, "failure")
    for wrong, message in [
        (without(RESULT, "ok"), "a WorkerResult lacks the field 'ok'"),
        ({**RESULT, "seconds": True}, "the field 'seconds' of a WorkerResult must be float, not bool"),
        ({**RESULT, "judge_notes": ["a", 2]}, "the field 'judge_notes' of a WorkerResult must be list[str], not list"),
        ([RESULT], "a WorkerResult must be a dict, not list"),
    ]:
        with pytest.raises(ShapeError, match=message.replace("[", r"\[").replace("]", r"\]")):
            checked(WorkerResult, wrong)
