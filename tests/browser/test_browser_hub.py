"""A class on this machine's JupyterHub (`make hub`), in Chromium: real Unix accounts, each person's server as them.

The hub is started as `make hub` starts it (tests/hub_class.py), with an instructor (an ordinary account)
and students added from a roster CSV by `make hub-roster`. Each logs in with their password (PAM) and gets
a JupyterLab of their own, run as their own uid. A student's lab offers the Assignments tab and Validate,
not the formgrader, the course list or Create Assignment (and the formgrader's pages are not served to
them); the instructor's lab offers the formgrader, on the course in their home.

Making Unix accounts needs root: CI runs as root and fails here without it; elsewhere the test is skipped.
"""

from __future__ import annotations

import contextlib
import csv
import html
import json
import os
import re
import shutil
import time

import nbformat
import pytest
from course import REPO, student_notebook
from gallery import UPDATE_GALLERY
from hub_class import HubClass, running_hub_class
from labdriver import KERNEL_IDLE_JS, new_browser_context, pause, wait_until
from submissions import grade_id, submission

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LAB_READY = "#jp-main-dock-panel"
FORMGRADER_READY = "() => !!(window.MathJax && MathJax.loaded && window.formgrader && formgrader.loaded)"
MENU_ITEMS_JS = """() => [...document.querySelectorAll('.lm-Menu:not(.lm-mod-hidden) .lm-Menu-itemLabel')]
    .map(item => item.textContent.trim()).filter(Boolean)"""


@pytest.fixture(scope="module")
def hub_class(browser):
    with running_hub_class() as hub:
        start_servers_together(browser, hub, hub.people())
        yield hub


def log_in(page, hub: HubClass, person) -> None:
    """Log ``person`` in on the hub's login page with their password: the hub then starts their server (if it is
    not running) and sends the page to it."""
    page.goto(f"{hub.url}/hub/login")
    page.fill("input[name=username]", person.name)
    page.fill("input[name=password]", person.password)
    page.click("input[type=submit], button[type=submit]")


def start_servers_together(browser, hub: HubClass, people) -> None:
    """Log every one of ``people`` in at once, each in a browser of their own, and wait until each page is sent to
    its server: the hub starts the servers side by side (one login's spawn each), not one login after another.
    The pages are closed as their lab begins to load; the tests log in again, into a server already up."""
    contexts = []
    try:
        for person in people:
            contexts.append(new_browser_context(browser))
            log_in(contexts[-1].new_page(), hub, person)
        for person, context in zip(people, contexts, strict=True):
            context.pages[0].wait_for_url(re.compile(rf"/user/{person.name}/lab"), timeout=150_000, wait_until="commit")
    finally:
        for context in contexts:
            context.close()


@contextlib.contextmanager
def logged_in(browser, hub: HubClass, person):
    """A page of ``person``'s own JupyterLab, reached by logging in to the hub with their password."""
    context = new_browser_context(browser)
    page = context.new_page()
    try:
        log_in(page, hub, person)
        page.wait_for_url(re.compile(rf"/user/{person.name}/lab"), timeout=150_000)
        page.wait_for_selector(LAB_READY, timeout=120_000)
        yield page
    finally:
        context.close()


def keep_shot(page, path) -> None:
    """A screenshot into test-artifacts/, and into docs/images with UPDATE_GALLERY=1 (docs/hub-gallery.md)."""
    page.screenshot(path=str(path))
    if UPDATE_GALLERY:
        shutil.copy(path, REPO / "docs" / "images" / path.name)


def nbgrader_menu(page) -> list[str]:
    """The items of the lab's Nbgrader menu, as a person sees them."""
    page.click(".lm-MenuBar-itemLabel:text-is('Nbgrader')")
    items = wait_until(lambda: page.evaluate(MENU_ITEMS_JS), 10, what="the Nbgrader menu", page=page)
    page.keyboard.press("Escape")
    return items


def page_config(page) -> dict:
    return json.loads(page.evaluate("() => document.getElementById('jupyter-config-data').textContent"))


def test_students_and_instructor_get_their_own_lab_with_their_tools(hub_class, browser, screenshots):
    hub = hub_class
    student = hub.roster[0]
    with logged_in(browser, hub, student) as page:
        assert hub.servers().get(student.name) and set(hub.servers()[student.name]) == {student.account.pw_uid}
        items = nbgrader_menu(page)
        assert "Assignment List" in items, items
        assert not {"Formgrader", "Formgrader (local)", "Course List", "Create assignment"} & set(items), items
        page.click(".lm-MenuBar-itemLabel:text-is('Nbgrader')")
        page.click(".lm-Menu-itemLabel:text-is('Assignment List')")
        page.wait_for_selector("#nbgrader-assignment-list", timeout=30_000)
        keep_shot(page, screenshots / "hub_student_lab.png")
        hidden = {f"@jupyter/nbgrader:{plugin}" for plugin in ("formgrader", "create-assignment", "course-list")}
        config = page_config(page)  # disabled, and locked: the student cannot turn them on in the Plugin Manager
        assert hidden <= set(config["disabledExtensions"]) and hidden <= set(config["lockedExtensions"]), config
        # the formgrader is not served to a student, whatever they type in the address bar
        answer = page.goto(f"{hub.url}/user/{student.name}/formgrader")
        assert answer.status == 404, answer.status

    with logged_in(browser, hub, hub.instructor) as page:
        assert set(hub.servers()[hub.instructor.name]) == {hub.instructor.account.pw_uid}
        assert "Formgrader" in nbgrader_menu(page)
        answer = page.goto(f"{hub.url}/user/{hub.instructor.name}/formgrader")
        assert answer.status == 200
        page.wait_for_selector("text=03_causal_mask", timeout=60_000)  # the course's assignments, from its gradebook
        keep_shot(page, screenshots / "hub_instructor_formgrader.png")


# ---------------------------------------------------------------------------------------------------------
# A term: release, three students fetch, answer, validate and submit, the instructor grades, feedback.
# ---------------------------------------------------------------------------------------------------------
A = "03_causal_mask"
WRITTEN = "written_minus_infinity"  # the written answer, 2 points, graded by the instructor in the formgrader
# What a hostile student's code can reach, by capability: every folder under the homes and the exchange it
# can list, every file of someone else's it can open. It runs as the student (their process, their kernel
# when Validate runs the notebook) and again in the grading kernel, whose outputs the feedback shows.
PROBE = r"""import json
import os
import pwd


def reach():
    me = os.getuid()
    tops = sorted({p.pw_dir for p in pwd.getpwall() if p.pw_dir.startswith("/home/")})
    tops.append(os.environ.get("HEADS_AND_MASKS_EXCHANGE", "/srv/nbgrader/exchange"))
    found = {"uid": me, "opened": [], "listed": [], "refused": []}
    for top in tops:
        for folder, _, files in os.walk(top, onerror=lambda error: found["refused"].append(error.filename)):
            found["listed"].append(folder)
            for name in files:
                path = os.path.join(folder, name)
                try:
                    if os.stat(path).st_uid == me:
                        continue
                    with open(path, "rb") as handle:
                        handle.read(1)
                    found["opened"].append(path)
                except OSError:
                    found["refused"].append(path)
    return found
"""
HOSTILE = {
    "causal_mask": PROBE + '\nprint("REACHED " + json.dumps(reach()))\n\ndef causal_mask(n):\n    return reach()\n',
    "masked_softmax": "def masked_softmax(scores, mask):\n    return reach()\n",
    "row_entropy_bits": "def row_entropy_bits(weights):\n    return reach()\n",
    WRITTEN: "I read every other student's answer first.",
}
# the steps docs/hub-gallery.md shows (UPDATE_GALLERY=1 copies them into docs/images)
HUB_GALLERY = {
    "hub_01_typed_written_answer.png",
    "hub_02_validated_a.png",
    "hub_03_submitted_a.png",
    "hub_04_validated_b.png",
    "hub_06_validated_c.png",
    "hub_08_formgrader_submissions.png",
    "hub_09_formgrader_grading_a.png",
    "hub_11_feedback_a.png",
}
MODEL_ANSWER = (
    "Softmax gives exp(score) / sum of exp(scores): a score of minus infinity becomes exp(-inf) = 0 exactly, "
    "so a masked key gets weight 0, while a large negative number only makes it small."
)


def released_source(assignment: str, cell_id: str) -> str:
    """The cell as released: the stub a student who did not answer leaves."""
    return next(c.source for c in student_notebook(assignment).cells if grade_id(c) == cell_id)


def snapshot(top) -> dict[str, tuple]:
    """Every file under ``top``: (size, mtime, mode), to tell whether anything changed it."""
    found = {}
    for folder, _, files in os.walk(top):
        for name in files:
            info = os.lstat(os.path.join(folder, name))
            found[os.path.join(folder, name)] = (info.st_size, info.st_mtime_ns, info.st_mode)
    return found


def make_as(hub: HubClass, person, *arguments: str) -> str:
    """`make ...` run by ``person`` in their course, with their server's environment (as in their lab's terminal)."""
    done = hub.as_person(
        person,
        ["make", "--no-print-directory", "-C", str(hub.course), *arguments],
        env=hub.server_environment(person),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"make {' '.join(arguments)} as {person.name}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def write_as(hub: HubClass, person, path, text: str) -> None:
    """``text`` into ``path`` by ``person``'s own process (their uid): the answers they placed."""
    done = hub.as_person(person, ["sh", "-c", 'cat > "$1"', "sh", str(path)], input=text, text=True)
    assert done.returncode == 0


def probe_as(hub: HubClass, person) -> dict:
    done = hub.as_person(
        person,
        [str(hub.env / "bin" / "python"), "-c", PROBE + "\nprint(json.dumps(reach()))"],
        env={"HEADS_AND_MASKS_EXCHANGE": str(hub.exchange)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def close_dialogs(page) -> None:
    """Dismiss a dialog the lab shows (Validate's findings), as a person would after reading it."""
    dialog = page.locator(".jp-Dialog")
    if dialog.count():
        dialog.locator(".jp-Dialog-button").last.click()
        dialog.first.wait_for(state="detached", timeout=10_000)


def assert_opens_unmodified(page, fetched) -> None:
    """Open the fetched notebook from the Assignments tab as it is and wait for its kernel: its tab must not be
    marked modified (JupyterLab writes the kernel's language_info into the metadata as the kernel comes up: the
    release told the copy beforehand, autograde/kernel_language.py). Then the tab is closed, the list folded."""
    fetched.locator("a").first.click()  # shows the assignment's notebooks
    page.locator("#fetched_assignments_list a", has_text=A).last.click()
    page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=60_000)
    page.wait_for_function(KERNEL_IDLE_JS, timeout=120_000)
    pause(page, 2)  # the kernel's reply is applied to the notebook by then
    tab = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.jp-mod-current")
    assert "jp-mod-dirty" not in (tab.get_attribute("class") or ""), "the fetched notebook opens marked modified"
    tab.locator(".lm-TabBar-tabCloseIcon").click()  # unmodified: closed without a question
    page.locator(".jp-Notebook").wait_for(state="detached", timeout=10_000)
    open_assignments(page)
    fetched.locator("a").first.click()  # folded again, as the term goes on


def type_written_answer(page, answer: str) -> None:
    """Open the notebook from the Assignments tab, type ``answer`` into the written answer's cell, save."""
    page.locator("#fetched_assignments_list a", has_text=A).last.click()
    stub = page.locator(".jp-RenderedMarkdown", has_text=re.compile(r"^\s*YOUR ANSWER HERE\s*$"))
    cell = page.locator(".jp-MarkdownCell", has=stub).first
    cell.wait_for(timeout=60_000)
    cell.scroll_into_view_if_needed()
    cell.dblclick()
    editor = page.locator(".jp-Notebook .jp-MarkdownCell.jp-mod-active .cm-content")  # the cell, being edited
    editor.wait_for(timeout=10_000)
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.type(answer)
    page.keyboard.press("Shift+Enter")
    page.keyboard.press("Control+S")
    page.locator(".jp-MarkdownCell", has_text=answer[:40]).first.wait_for(timeout=10_000)
    wait_until(lambda: not page.locator(".jp-mod-dirty").count(), 30, what="the notebook saved", page=page)


def gradebook_totals(hub: HubClass) -> dict[str, float]:
    """Each student's total on the assignment, as the instructor's gradebook has it (read by the test, as root)."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{hub.course / 'class' / 'gradebook.db'}") as book:
        return {s.student.id: s.score for s in book.assignment_submissions(A)}


def submission_id(hub: HubClass, student) -> str:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{hub.course / 'class' / 'gradebook.db'}") as book:
        return book.find_submission_notebook(A, A, student.name).id


def written_score(hub: HubClass, student) -> float | None:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{hub.course / 'class' / 'gradebook.db'}") as book:
        return book.find_grade(WRITTEN, A, A, student.name).manual_score


def open_assignments(page) -> None:
    page.click(".lm-MenuBar-itemLabel:text-is('Nbgrader')")
    page.click(".lm-Menu-itemLabel:text-is('Assignment List')")
    page.wait_for_selector("#nbgrader-assignment-list", timeout=30_000)


def click_in_list(page, listing: str, label: str):
    """Click the button ``label`` of 03_causal_mask in the Assignments tab's list ``listing``."""
    row = page.locator(f"#{listing} .list_item", has_text=A).first
    row.wait_for(timeout=60_000)
    button = row.locator(f"button:text-is('{label}')").first
    button.click()
    return row


def test_a_term_on_the_hub(hub_class, browser, screenshots):
    hub = hub_class
    full, partial, hostile = hub.roster
    shots = iter(range(1, 100))

    started = time.monotonic()

    def shot(page, name: str) -> None:
        print(f"{time.monotonic() - started:6.1f} s  {name}")
        path = screenshots / f"hub_{next(shots):02d}_{name}.png"
        if path.name in HUB_GALLERY:  # docs/hub-gallery.md shows them
            keep_shot(page, path)
        else:
            page.screenshot(path=str(path))

    # 1. the instructor releases the assignment, from their course, as themselves
    with logged_in(browser, hub, hub.instructor):
        assert "released" in make_as(hub, hub.instructor, "release", f"ASSIGNMENT={A}")
    before_students = snapshot(hub.course)

    # 2. each student fetches, answers, validates and submits in their own lab
    answers = {
        full: submission(A, {WRITTEN: released_source(A, WRITTEN)}),  # the written answer is typed in the lab
        partial: submission(A, {"masked_softmax": released_source(A, "masked_softmax")}),
        hostile: submission(A, HOSTILE),
    }
    validated = {}
    for student, notebook in answers.items():
        with logged_in(browser, hub, student) as page:
            open_assignments(page)
            click_in_list(page, "released_assignments_list", "Fetch")
            fetched = page.locator("#fetched_assignments_list .list_item", has_text=A).first
            fetched.wait_for(timeout=60_000)
            if student is full:  # opened as fetched, its kernel up, nothing typed: closing it asks nothing
                checking = time.monotonic()
                assert_opens_unmodified(page, fetched)
                took = time.monotonic() - checking
                print(f"{time.monotonic() - started:6.1f} s  opened as fetched, not marked modified ({took:.1f} s)")
            # the code answers placed by the student's own process, in the file the fetch made
            write_as(hub, student, student.home / A / f"{A}.ipynb", nbformat.writes(notebook))
            fetched.locator("a").first.click()  # shows the assignment's notebooks
            if student is full:
                type_written_answer(page, MODEL_ANSWER)
                shot(page, "typed_written_answer")
                open_assignments(page)
                assert MODEL_ANSWER in (student.home / A / f"{A}.ipynb").read_text()
            validate = page.locator("#fetched_assignments_list button:text-is('Validate')").first
            validate.click()
            validated[student.name] = wait_until(
                lambda button=validate: re.search(r"btn-(success|danger)", button.get_attribute("class") or ""),
                120,
                what="Validate",
                page=page,
            )[1]
            shot(page, f"validated_{student.name[-1]}")
            close_dialogs(page)
            click_in_list(page, "fetched_assignments_list", "Submit")
            page.locator("#submitted_assignments_list .list_item", has_text=A).first.wait_for(timeout=60_000)
            shot(page, f"submitted_{student.name[-1]}")
    assert validated == {full.name: "success", partial.name: "danger", hostile.name: "danger"}, validated
    # what the hostile student's own process reaches: of the class's homes and exchange, only what was released
    reached = probe_as(hub, hostile)
    class_paths = [str(p.home) for p in hub.people()] + [str(hub.exchange)]
    opened = [p for p in reached["opened"] if p.startswith(tuple(class_paths))]
    released = str(hub.exchange / "heads-and-masks" / "outbound") + "/"
    assert opened and all(p.startswith(released) for p in opened), opened
    for other in (full, partial, hub.instructor):
        assert str(other.home) in reached["refused"], "a home of someone else was listed"
    assert snapshot(hub.course) == before_students, "a student's action changed a file of the instructor's course"

    # 3. the instructor grades: the pipeline from the exchange, the written answers in the formgrader
    graded = make_as(hub, hub.instructor, "grade", f"ASSIGNMENT={A}", "SOURCE=exchange")
    assert re.search(r"collected from the exchange .*: 3 students have a submission", graded), graded

    with logged_in(browser, hub, hub.instructor) as page:
        server = f"{hub.url}/user/{hub.instructor.name}"
        page.goto(f"{server}/formgrader/gradebook/{A}/{A}")
        page.wait_for_selector("a[href*='/formgrader/submissions/']", timeout=60_000)
        shot(page, "formgrader_submissions")
        for student, points in ((full, "2"), (hostile, "0")):
            page.goto(f"{server}/formgrader/submissions/{submission_id(hub, student)}/")
            score = page.locator(f"input.score#{WRITTEN}")
            score.wait_for(timeout=60_000)
            wait_until(lambda: page.evaluate(FORMGRADER_READY), 60, what="the formgrader's scripts", page=page)
            score.fill(points)
            score.scroll_into_view_if_needed()
            shot(page, f"formgrader_grading_{student.name[-1]}")
            score.press("Tab")  # the formgrader saves a score on change
            wait_until(
                lambda s=student, p=points: written_score(hub, s) == float(p), 30, what="the score saved", page=page
            )
    make_as(hub, hub.instructor, "feedback", f"ASSIGNMENT={A}")
    make_as(hub, hub.instructor, "export")
    expected = {full.name: 13.0, partial.name: 5.0, hostile.name: 0.0}
    assert gradebook_totals(hub) == expected
    with open(hub.course / "class" / "grades.csv", newline="") as exported:
        rows = {row["student"]: float(row["total"]) for row in csv.DictReader(exported) if row["assignment"] == A}
    assert rows == expected, rows
    after_grading = snapshot(hub.course)

    # 4. each student fetches their feedback in the Assignments tab: their own, without hidden tests
    feedback = {}
    for student in (full, partial, hostile):
        with logged_in(browser, hub, student) as page:
            open_assignments(page)
            click_in_list(page, "submitted_assignments_list", "Fetch Feedback")
            page.locator("#submitted_assignments_list a", has_text="view feedback").first.wait_for(timeout=60_000)
            shot(page, f"feedback_{student.name[-1]}")
            pages = sorted((student.home / A / "feedback").glob(f"*/{A}.html"))
            assert len(pages) == 1, pages
            assert pages[0].stat().st_uid == student.account.pw_uid
            feedback[student] = pages[0].read_text()
    for student, text in feedback.items():
        assert "HIDDEN TESTS" not in text and "hidden_inputs" not in text
    assert MODEL_ANSWER[:60] in feedback[full] and "REACHED" not in feedback[full]
    assert "NotImplementedError" in feedback[partial]
    # what the hostile code reached in the grading kernel, as its feedback shows it
    in_grading = json.loads(html.unescape(re.search(r"REACHED (\{.*?\})\s*<", feedback[hostile], re.S)[1]))
    assert not [p for p in in_grading["opened"] if p.startswith(tuple(class_paths))], in_grading["opened"]
    # and its own process after feedback: the feedback of others is not even listed
    reached = probe_as(hub, hostile)
    assert str(hub.exchange / "heads-and-masks" / "feedback") in reached["refused"]
    assert all(p.startswith(released) for p in reached["opened"] if p.startswith(tuple(class_paths)))
    assert snapshot(hub.course) == after_grading, "a student's action changed a file of the instructor's course"
    print(f"\nhostile student's process reached: {len(reached['listed'])} folders listed, opened {opened}")
    print(f"hostile code in the grading kernel: opened {in_grading['opened'][:5]}, refused {in_grading['refused'][:5]}")
