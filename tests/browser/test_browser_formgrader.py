"""nbgrader's formgrader in the instructor's JupyterLab, on the course's own gradebook and layout (issue #20).

One student's submission of 00_start_here goes through the instructor's pipeline (collect, sandboxed
autograde): the code is autograded, the written answer waits for a person. The instructor's lab
(``tools/lab.py --instructor``) then runs on that course; in Chromium the formgrader page of the
submission shows the written answer with a score box; a score typed there reaches the gradebook, the
student's total grows by it, the exported CSV shows it instead of "pending", and the report no longer
counts it. The submission also writes HTML and JavaScript, in a markdown cell and in its outputs: none of
it may run in the grader's browser.

The page works offline: a request off this machine is aborted and fails the test, and so does any
JavaScript error, any request the server answers with an error, and a formgrader whose start-up did not
finish (its keyboard shortcuts come last). The formulas of the written answer are typeset by MathJax as
this server serves it (jupyter-server-mathjax), with MathJax's Safe extension: the student's
``\\href{javascript:...}`` makes no link. Screenshots: ``test-artifacts/browser/formgrader_written_answer.png``
(the answer and its score box), ``formgrader_page.png`` (the whole page) and
``formgrader_written_answer_1100px.png`` (the answer at the narrowest laptop width, where no word may be
broken across two lines: Bootstrap's ``pre`` style broke them anywhere). axe audits the grading page as the
grader sees it (tests/browser/accessibility.py): no serious violation in the notebook the course renders there;
the formgrader's own page around it is written to test-artifacts/accessibility/formgrader-around.json.
"""

from __future__ import annotations


import nbformat
import pytest
from course import grade_class
from lab_process import LabProcess, instructor_lab_around
from accessibility import audit, blocking, described
from reflow import at_200_percent, reflow_problems
from labdriver import NOT_LOCAL, page_from_file, wait_until
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
# The written answer: four formulas (one displayed), as a student types them in markdown, a paragraph on one
# long line. The last formula tries a javascript: link and markup inside the math.
ANSWER = r"""With $m = \max_k s_k$ every term of the row is multiplied by the same factor $e^{-m}$, which cancels: the numerator and the denominator of every weight are multiplied by it, so their ratio stays the same.

$$w_j = \frac{e^{s_j - m}}{\sum_k e^{s_k - m}} = \frac{e^{s_j}}{\sum_k e^{s_k}}$$

Without it, $\href{javascript:window.studentScript = 'tex link'}{e^{1000}} = \infty <img src="x" onerror="window.studentScript = 'tex img'">$ and the weights are NaN.
"""
FORMULAS = 4

# Every formula MathJax made in the written answer's cell: its TeX, the size of what is shown, and whether
# it is an error (a TeX error is an <merror> in the MathML, an undefined macro is red text that starts with a backslash)
_TYPESET_JS = """answer => MathJax.Hub.getAllJax(answer).map(jax => {
  const shown = document.getElementById(jax.inputID + '-Frame');
  const box = shown ? shown.getBoundingClientRect() : {width: 0, height: 0};
  const mathml = jax.root.toMathML();
  return {tex: jax.originalText, width: box.width, height: box.height,
          error: /<merror|<mtext mathcolor="red">\\\\/.test(mathml)};
})"""

# The words of the written answer's text (its formulas left out: MathJax breaks those itself) that the page
# breaks across two lines: a word's Range has client rects on more than one line ("0 b|ecomes", "scor|e" when
# a style lets lines break inside words), and how many words there are.
_SPLIT_WORDS_JS = """answer => {
  const inMath = node => node.parentElement.closest('.MathJax, .MathJax_Display, .MathJax_Preview, script');
  const split = [];
  let words = 0;
  for (const pre of answer.querySelectorAll('.text_cell_render pre')) {
    const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (inMath(node)) continue;
      for (const match of node.data.matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const lines = new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top)));
        words += 1;
        if (lines.size > 1) split.push(match[0]);
      }
    }
  }
  return {split, words};
}"""
LAPTOP_WIDTHS = (1100, 1200, 1280)  # CSS pixels of a laptop's browser window

_STARTED_JS = "() => !!(window.MathJax && MathJax.loaded && window.formgrader && formgrader.loaded)"
_STATE_JS = """() => ({mathjax: window.MathJax ? MathJax.loaded ?? 'loading' : 'absent',
                       formgrader: window.formgrader ? formgrader.loaded : 'absent'})"""
# the formgrader's scrolling has stopped: no jQuery animation on the page
_SCROLLED_JS = "() => !jQuery('body, html').is(':animated')"


def _note_refused(refused: list[str], url: str, failed: bool, why) -> None:
    """A request to this machine that failed or that the server refused (off the machine: aborted here)."""
    if failed and not NOT_LOCAL.match(url):
        refused.append(f"{why} {url}")


def _hostile_submission() -> nbformat.NotebookNode:
    notebook = submission(A, {WRITTEN: ANSWER})  # the solution's code, a written answer with formulas
    first = next(i for i, c in enumerate(notebook.cells) if c.metadata.get("nbgrader", {}).get("solution"))
    notebook.cells.insert(first + 1, nbformat.v4.new_code_cell(OUTPUTS))
    notebook.cells.insert(first + 1, nbformat.v4.new_markdown_cell(MARKUP))
    return notebook


def _check_feedback_page(browser, path, screenshots) -> None:
    """The feedback page as the student opens it, from its file with no network at all: its formulas are
    MathML the browser draws (no TeX left, no MathJax, nothing requested), no script of the student's runs,
    and axe finds no serious accessibility violation."""
    with page_from_file(browser, path, 1100, 900) as page:
        assert page.evaluate("() => window.studentScript ?? null") is None, "a student's script ran in the feedback"
        answer = page.locator(".cell", has_text="every term of the row is multiplied").first
        formulas = answer.evaluate("""cell => [...cell.querySelectorAll('math')].map(m => {
            const box = m.getBoundingClientRect();
            return {display: m.getAttribute('display'), width: box.width, height: box.height};
        })""")
        # three formulas become MathML (one displayed); the hostile fourth, which the converter cannot read,
        # stays as its TeX in a code span, as written
        assert len(formulas) >= 3 and any(f["display"] == "block" for f in formulas), formulas
        assert all(f["width"] > 5 and f["height"] > 5 for f in formulas), f"a formula is not drawn: {formulas}"
        text = answer.inner_text()
        assert "\\frac" not in text and "\\max" not in text and "$$" not in text, f"TeX shown as text: {text[:500]}"
        assert page.evaluate("() => typeof window.MathJax") == "undefined"
        answer.screenshot(path=str(screenshots / "feedback_written_answer.png"))
        found = blocking(audit(page, "feedback-page", include=["body"]))
        assert not found, described("the feedback page", found)
        with at_200_percent(page):  # WCAG 1.4.10: a student reads the feedback on a laptop zoomed to 200 %
            problems = reflow_problems(page, "feedback page", screenshots / "zoom200-feedback.png", ["body"])
        assert not problems, "the feedback page at 200 % zoom: " + "; ".join(problems)


# What the course puts on the formgrader's grading page: the submitted notebook as nbconvert renders it (its
# markdown, its code and its outputs, with the styles of the course's formgrade template,
# tools/instructor_lab_data). The rest is nbgrader's: its navigation, and the panel heading and footer of each
# graded cell with the score boxes, buttons and comment box.
GRADING_PAGE_OURS = [".text_cell_render", ".input_area", ".output_subarea"]


def _audit_grading_page(page) -> None:
    """axe on the grading page, as the grader sees it before typing a score: no serious violation in what
    the course makes; the formgrader's own page around it is written beside it, and listed in
    docs/accessibility.md."""
    found = blocking(audit(page, "formgrader-grading-page", include=GRADING_PAGE_OURS))
    audit(page, "formgrader-around", exclude=GRADING_PAGE_OURS)
    assert not found, described("the formgrader's grading page (the course's part)", found)


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

    instructor_lab_around(course.root)
    lab = LabProcess(course.root, runtime=tmp_path / "runtime", arguments=("--instructor",)).start()
    # the formgrader's own API calls carry no token of the URL's: the grader's session sends it with each
    context = browser.new_context(
        viewport={"width": 1200, "height": 900}, extra_http_headers={"Authorization": f"token {lab.token}"}
    )
    off_machine, refused, errors, dialogs = [], [], [], []
    context.route(NOT_LOCAL, lambda route: (off_machine.append(route.request.url), route.abort()))
    try:
        lab.wait_for_output("JupyterLab is running")
        page = context.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        page.on(
            "response", lambda response: _note_refused(refused, response.url, response.status >= 400, response.status)
        )
        page.on("requestfailed", lambda request: _note_refused(refused, request.url, True, request.failure))
        page.goto(f"{lab.base_url}/formgrader/submissions/{submission_id}/")
        score = page.locator(f"input.score#{WRITTEN}")
        score.wait_for(timeout=60_000)
        page.wait_for_load_state("load")
        # MathJax has typeset the page and the formgrader has finished starting (its last step), or failed
        wait_until(
            lambda: page.evaluate(_STARTED_JS) or errors or off_machine, timeout=30, what="formgrader", page=page
        )
        assert off_machine == [] and errors == [], f"offline, the formgrader page failed: {off_machine} {errors}"
        assert page.evaluate(_STARTED_JS), f"MathJax or the formgrader did not start: {page.evaluate(_STATE_JS)}"
        page.wait_for_timeout(1000)  # an onerror or a late script would have run by now
        ran = [frame.evaluate("() => window.studentScript ?? null") for frame in page.frames]
        assert ran == [None] * len(ran) and dialogs == [], f"student script ran in the formgrader: {ran} {dialogs}"
        shown = page.inner_text("body")
        # the hostile markup reached the page (else the check above proves nothing), as text only
        assert "window.studentScript" in shown, "the submission's markup is not on the formgrader page at all"

        # the written answer is shown, its formulas typeset: no TeX left as text, each formula drawn
        answer = score.locator("xpath=ancestor::*[contains(@class, 'nbgrader_cell')][1]")
        answer_text = answer.inner_text()
        assert "every term of the row is multiplied" in answer_text, answer_text[:500]
        assert "\\frac" not in answer_text and "$" not in answer_text, f"TeX shown as text: {answer_text[:500]}"
        typeset = answer.evaluate(_TYPESET_JS)
        assert len(typeset) == FORMULAS, (
            f"{len(typeset)} formulas typeset in the written answer, not {FORMULAS}: {typeset}"
        )
        assert all(f["width"] > 5 and f["height"] > 5 and not f["error"] for f in typeset), typeset
        assert page.evaluate("() => MathJax.version") == "2.7.9"
        widths = answer.evaluate("cell => [...cell.querySelectorAll('pre')].map(p => [p.scrollWidth, p.clientWidth])")
        assert widths and all(inside <= shown + 1 for inside, shown in widths), (
            f"the written answer's lines run off to the right (text width, box width): {widths}"
        )
        # at every laptop width, no word of the answer is broken across two lines
        for width in LAPTOP_WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            page.wait_for_timeout(300)  # (layout and MathJax's reflow after the resize)
            words = answer.evaluate(_SPLIT_WORDS_JS)
            if width == LAPTOP_WIDTHS[0]:
                answer.screenshot(path=str(screenshots / f"formgrader_written_answer_{width}px.png"))
            assert words["words"] >= 30 and words["split"] == [], f"at {width} px, words broken across lines: {words}"
        page.set_viewport_size({"width": 1200, "height": 900})
        _audit_grading_page(page)
        links = page.evaluate("() => [...document.querySelectorAll('a[href]')].map(a => a.href)")
        assert not [link for link in links if link.lower().startswith("javascript:")], links

        # feedback made from the formgrader (its "Generate Feedback") says the written answer is pending
        made = context.request.post(f"{lab.base_url}/formgrader/api/assignment/{A}/alice/generate_feedback")
        assert made.ok and made.json()["success"], made.text()
        sent_path = course.path("feedback", "alice", A) / f"{A}.html"
        sent = sent_path.read_text(encoding="utf-8")
        assert "Score: pending / 2.0, not graded yet" in sent and "Written response</a> (Score: 0.0" not in sent
        _check_feedback_page(browser, sent_path, screenshots)

        score.fill("1.5")
        score.press("Tab")  # formgrader saves a score on change, and moves to the next box
        wait_until(lambda: _written_grade(course)[0] == 1.5, timeout=30, what="the score in the gradebook", page=page)
        # the formgrader scrolls the box it selects into view (a 0.5 s animation): what the grader sees then
        wait_until(lambda: page.evaluate(_SCROLLED_JS), timeout=10, what="the formgrader's scrolling", page=page)
        top, bottom = answer.evaluate("cell => [cell.getBoundingClientRect().top, cell.getBoundingClientRect().bottom]")
        assert 0 < top and bottom < 900, f"the written answer is not in view after Tab (top {top}, bottom {bottom})"
        page.screenshot(path=str(screenshots / "formgrader_written_answer.png"), full_page=False)
        page.screenshot(path=str(screenshots / "formgrader_page.png"), full_page=True)
    finally:
        context.close()
        output = lab.stop()
    # offline: nothing from elsewhere, nothing refused by the server, no JavaScript error
    assert off_machine == [] and refused == [] and errors == [], (off_machine, refused, errors)
    manual, needs_person, total_after, _ = _written_grade(course)
    assert not needs_person and total_after == total_before + 1.5, output[-2000:]
    row = export_grades(course, course.root / "grades.csv", [A])[0]
    assert row[WRITTEN] == "1.5" and float(row["total"]) == total_before + 1.5 and float(row["max_total"]) == 6, row
    assert "written answers pending" not in report(course, A)
