"""nbgrader's formgrader in the instructor's JupyterLab, on the course's own gradebook and layout (issue #20).

One student's submission of 00_start_here goes through the instructor's pipeline (collect, sandboxed
autograde): the code is autograded, the written answer waits for a person. The instructor's lab
(``tools/lab.py --instructor``) then runs on that course; in Chromium the formgrader page of the
submission shows the written answer with a score box; a score typed there reaches the gradebook, the
student's total grows by it, the exported CSV shows it instead of "pending", and the report no longer
counts it. The submission also writes HTML and JavaScript, in a markdown cell and in its outputs: none of
it may run in the grader's browser.
"""

from __future__ import annotations

import shutil

import nbformat
import pytest
from course import REPO, grade_class
from lab_process import LabProcess
from labdriver import wait_until
from submissions import submission

from autograde.course import gradebook
from autograde.export import export_grades
from autograde.report import report

pytestmark = [pytest.mark.browser, pytest.mark.slow]

A = "00_start_here"
WRITTEN = "written_largest_score"  # its written question, 2 points
# what a hostile (or careless) submission writes for whoever opens it: each would set a flag if it ran
MARKUP = '<script>window.studentScript = "markdown"</script><img src="x" onerror="window.studentScript = \'img\'">'
OUTPUTS = (
    "from IPython.display import HTML, Javascript, display\n"
    "display(HTML('<script>window.studentScript = \"html output\"</script>'"
    ' \'<img src="x" onerror="window.studentScript = 1">\'))\n'
    "display(Javascript('window.studentScript = \"js output\"'))\n"
)


def _hostile_submission() -> nbformat.NotebookNode:
    notebook = submission(A, {})  # the solution's code and its model written answer
    first = next(i for i, c in enumerate(notebook.cells) if c.metadata.get("nbgrader", {}).get("solution"))
    notebook.cells.insert(first + 1, nbformat.v4.new_code_cell(OUTPUTS))
    notebook.cells.insert(first + 1, nbformat.v4.new_markdown_cell(MARKUP))
    return notebook


def _as_instructor_lab(root) -> None:
    """The repository's lab launcher and nbgrader configuration around the graded course."""
    (root / "tools").mkdir(exist_ok=True)
    shutil.copy(REPO / "tools" / "lab.py", root / "tools" / "lab.py")
    shutil.copytree(REPO / "tools" / "lab_config", root / "tools" / "lab_config")
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    for module in (REPO / "autograde").glob("*.py"):
        shutil.copy(module, root / "autograde" / module.name)


def _written_grade(course):
    with gradebook(course) as gb:
        notebook = gb.find_submission_notebook(A, A, "alice")
        grade = next(g for g in notebook.grades if g.name == WRITTEN)
        return grade.manual_score, grade.needs_manual_grade, gb.find_submission(A, "alice").score, notebook.id


def test_formgrader_grades_a_written_answer_and_runs_no_student_script(browser, tmp_path, screenshots):
    run = grade_class(A, {"alice": _hostile_submission()}, tmp_path, workers=1)
    course, result = run.course, run.results["alice"]
    # graded (the scan asks for a look at `import IPython.display`), the written answer left for a person
    assert not result.status.failed and result.autograded_total == 4 and result.pending == [WRITTEN], result.line()
    manual, needs_person, total_before, submission_id = _written_grade(course)
    assert manual is None and needs_person and total_before == result.total == result.autograded_max

    _as_instructor_lab(course.root)
    lab = LabProcess(course.root, runtime=tmp_path / "runtime", arguments=("--instructor",)).start()
    # the formgrader's own API calls carry no token of the URL's: the grader's session sends it with each
    context = browser.new_context(
        viewport={"width": 1200, "height": 900}, extra_http_headers={"Authorization": f"token {lab.token}"}
    )
    errors, dialogs = [], []
    try:
        lab.wait_for_output("JupyterLab is running")
        page = context.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        page.goto(f"{lab.base_url}/formgrader/submissions/{submission_id}/")
        score = page.locator(f"input.score#{WRITTEN}")
        score.wait_for(timeout=60_000)
        page.wait_for_load_state("load")
        page.wait_for_timeout(1000)  # an onerror or a late script would have run by now
        ran = [frame.evaluate("() => window.studentScript ?? null") for frame in page.frames]
        assert ran == [None] * len(ran) and dialogs == [], f"student script ran in the formgrader: {ran} {dialogs}"
        shown = page.inner_text("body")
        assert "Model answer" in shown  # the student's written answer is shown (here the model answer)
        # the hostile markup reached the page (else the check above proves nothing), as text only
        assert "window.studentScript" in shown, "the submission's markup is not on the formgrader page at all"

        score.fill("1.5")
        score.press("Tab")  # formgrader saves a score on change
        wait_until(lambda: _written_grade(course)[0] == 1.5, timeout=30, what="the score in the gradebook", page=page)
        page.evaluate(f"() => document.getElementById('{WRITTEN}').scrollIntoView({{block: 'center'}})")
        page.screenshot(path=str(screenshots / "formgrader_written_answer.png"), full_page=False)
    finally:
        context.close()
        output = lab.stop()
    manual, needs_person, total_after, _ = _written_grade(course)
    assert not needs_person and total_after == total_before + 1.5, output[-2000:]
    row = export_grades(course, course.root / "grades.csv", [A])[0]
    assert row[WRITTEN] == "1.5" and float(row["total"]) == total_before + 1.5 and float(row["max_total"]) == 6, row
    assert "written answers pending" not in report(course, A)
    # formgrader loads MathJax from a CDN, out of reach here (no network): its absence is the only error allowed
    assert [e for e in errors if "MathJax" not in e] == [], errors
