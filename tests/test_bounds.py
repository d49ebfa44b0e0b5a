"""The bounds of a class run (autograde/bounds.py), each pinned without grading anything.

The honest notebooks of the course sit far inside every structure bound (the margins the docs give); a
notebook past one is refused at inspection with its cost, before nbformat validates it; the report names
every submission that hit a bound, whatever its status. The bounds applied while grading (output) and
while making feedback are tested on the hostile class (tests/test_boundary.py).
"""

from __future__ import annotations

import json
import shutil

import nbformat
import pytest
from course import ASSIGNMENTS, REPO, solution_notebook, student_notebook

from autograde import bounds
from autograde.bounds import notebook_shape, structure_limits


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_the_course_notebooks_sit_far_inside_every_structure_bound(assignment):
    for notebook in (student_notebook(assignment), solution_notebook(assignment)):
        shape = notebook_shape(json.loads(nbformat.writes(notebook)))
        assert structure_limits(shape) == [], shape
        assert shape.cells * 10 <= bounds.MAX_CELLS, shape  # the margins docs/security.md gives
        assert shape.source_chars * 50 <= bounds.MAX_SOURCE_CHARS, shape
        assert shape.depth * 10 <= bounds.MAX_DEPTH, shape
        assert shape.containers * 100 <= bounds.MAX_CONTAINERS, shape


def test_each_structure_bound_is_said_with_its_cost():
    raw = json.loads(nbformat.writes(student_notebook(ASSIGNMENTS[0])))
    raw["cells"] += [{"cell_type": "markdown", "metadata": {}, "source": "x"}] * bounds.MAX_CELLS
    raw["cells"].append({"cell_type": "code", "metadata": {}, "source": "#" * bounds.MAX_SOURCE_CHARS, "outputs": []})
    raw["cells"][-1]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ""}] * (bounds.MAX_OUTPUTS + 1)
    deep: list = []
    for _ in range(100_000):  # far deeper than json or a recursive walk could go
        deep = [deep]
    raw["metadata"]["deep"] = deep
    passed = " | ".join(structure_limits(notebook_shape(raw)))
    for words in ("cells, over the limit of 1,000", "characters of source, over", "stored outputs, over", "nested"):
        assert words in passed, passed
    assert "nested 100,00" in passed.replace("JSON nested", "nested"), passed


def _course_with(tmp_path, notebook_bytes: bytes):
    from autograde.course import Course

    assignment = ASSIGNMENTS[0]
    for step in ("notebooks", "solutions"):
        shutil.copytree(REPO / step / assignment, tmp_path / step / assignment)
    course = Course(root=tmp_path)
    folder = course.path("submitted", "crowded", assignment)
    folder.mkdir(parents=True)
    (folder / f"{assignment}.ipynb").write_bytes(notebook_bytes)
    return course, assignment


def test_a_notebook_past_a_structure_bound_is_refused_at_inspection_before_it_is_validated(tmp_path, monkeypatch):
    from autograde.inspection import inspect

    raw = json.loads(nbformat.writes(student_notebook(ASSIGNMENTS[0])))
    raw["cells"] += [{"cell_type": "markdown", "id": f"m{i}", "metadata": {}, "source": "x"} for i in range(5_000)]
    course, assignment = _course_with(tmp_path, json.dumps(raw).encode())

    validated = []
    reads = nbformat.reads

    def validating(*args, **kwargs):
        validated.append(1)
        return reads(*args, **kwargs)

    monkeypatch.setattr(nbformat, "reads", validating)
    found = inspect(course, assignment, "crowded", collected={})
    assert not validated, "the notebook was validated: a step spent on it"
    assert found.status == "invalid notebook", found
    assert found.limits == [f"notebook structure: `{assignment}.ipynb` has 5,016 cells, over the limit of 1,000"]
    assert "remove the extra cells" in " ".join(found.notes), found.notes


def test_the_report_names_every_submission_that_hit_a_bound_whatever_its_status(tmp_path, monkeypatch):
    from autograde import report
    from autograde.results import Result, write_result

    course, assignment = _course_with(tmp_path, b"{}")
    monkeypatch.setattr(report, "sandbox_state", lambda: (True, ""))
    bounded = Result("crowded", assignment, "graded", {"a": 1.0}, {"a": 1.0}, [], limits=["feedback time: 61 s"])
    write_result(course, bounded)
    text = report.report(course, assignment)
    assert "1 submission hit a bound" in text and "crowded: feedback time: 61 s" in text, text
    assert "without trouble" not in text, text
    write_result(course, Result("crowded", assignment, "graded", {"a": 1.0}, {"a": 1.0}, []))
    assert "without trouble" in report.report(course, assignment)  # (and the test can tell the two apart)
