"""Every notebook of the course, student version and solution, run in JupyterLab in a real browser.

For each notebook: open it as it is (nothing tagged or changed; File → Open from Path… in the JupyterLab window
the session keeps open, labdriver.LabWindow) and Run All (Run menu), as a learner does (a student notebook as on a laptop: a 1100 × 900 window with the file browser open, where the
outputs get about 700 px; the solutions in 1400 × 1000, then again at laptop width: laptop.py),
the Russian student notebooks in the lab a Russian learner gets (`make lab LANG=ru`: tools/lab.py's own
configuration, JupyterLab's menus and dialogs in Russian, which each run checks in the menu bar, and its Run All
chosen by its Russian name), then check that
* a student notebook, opened and its kernel up, is not marked modified (closing it untouched asks nothing);
* Run All reached the last cell, and in a solution every test cell printed its ✓ line: every cell ran (JupyterLab stops at the first error, so no cell may
  raise, not even in a student notebook where nothing is written yet);
* no cell shows an error or writes to stderr, except, in a student notebook, the test cell of each
  unanswered exercise, which says in one message that the exercise is not written yet (nbgrader counts
  that line as a failure: the untouched notebook scores 0) and shows no traceback;
* every widget output rendered and every picture loaded; every output fits the window: none wider than
  its output area, none past the window's edge, every widget drawn with a size inside its output area;
* every course widget (``.course-widget``) shows a picture and its readouts, and moving its first slider
  with the keyboard and then by dragging the handle with the mouse changes both the picture and the
  readouts (a widget without a slider: its first dropdown or checkbox is changed instead).
In three solutions (``KEYBOARD_IN_LAB``) every widget is then used with the keyboard alone (keyboard.py), from its
cell selected in command mode, where JupyterLab's shortcuts could take the keys.
One solution (``ZOOMED``) is then laid out at 200 % zoom, as in a 1280 px window (reflow.py): nothing scrolls
sideways, every control of its widgets usable.
A screenshot of each widget goes to ``test-artifacts/browser/`` (and, with UPDATE_GALLERY=1, the
solution's widgets to ``docs/images/``, the Russian student notebook's to ``docs/images/ru-*.png``); of a student
notebook, also the window with its first widget (``laptop-<kind>-<assignment>.png``; of ``RUSSIAN_LAB_IN_GALLERY``
in the gallery too: JupyterLab itself in Russian).
"""

from __future__ import annotations

import re
import shutil
import time

import pytest

from accessibility import audit, blocking, described, pictures_without_lead
from gallery import GALLERY_IMAGES, UPDATE_GALLERY
from keyboard import keyboard_session
from laptop import check_pictures_at_laptop_width
from reflow import at_200_percent, reflow_problems
from labdriver import (
    LAPTOP,
    NOTEBOOKS,
    REPO,
    RUSSIAN_STUDENT_ASSIGNMENTS,
    is_student,
    kind_language,
    not_written_yet_pattern,
    cells_never_run,
    close_file_browser,
    control_names,
    drag_slider,
    handle_position,
    is_test_cell,
    layout_problems,
    open_file_browser,
    output_problems,
    outputs_that_do_not_fit,
    press_slider_key,
    settle,
    slider_handle,
    unexpected_errors,
    wait_for_change,
    widget_caption,
    widget_state,
)

pytestmark = pytest.mark.browser
# The notebook also read at 200 % zoom in JupyterLab (every page of the explore page is, test_browser_explore):
# its widget has the widest controls (three buttons of 10.5 em), and a solution has every output.
ZOOMED = "07_generation"
# The solutions whose widgets are also used with the keyboard alone in JupyterLab (keyboard.py; every widget is,
# on the explore page): between them every kind of control, a dropdown, a group of buttons, a checkbox, a slider
# and an on/off button, where JupyterLab's own shortcuts could take their keys.
KEYBOARD_IN_LAB = ("01_heads", "03_causal_mask", "08_learned_heads")
# The Russian notebook whose whole laptop window the gallery shows: JupyterLab's menus in Russian around it
RUSSIAN_LAB_IN_GALLERY = "05_other_masks"
# The kinds of notebook whose JupyterLab frame has been audited in this session (once each: it is JupyterLab's)
FRAME_AUDITED: set[str] = set()


@pytest.mark.parametrize(("kind", "assignment"), NOTEBOOKS, ids=[f"{k}-{a}" for k, a in NOTEBOOKS])
def test_notebook_runs_and_its_widgets_respond(kind, assignment, open_notebook, screenshots, gallery):
    notebook_page = open_notebook(kind, assignment)
    page = notebook_page.page
    if is_student(kind):  # a learner on a laptop
        started = time.monotonic()
        page.set_viewport_size(LAPTOP)
        open_file_browser(page)
        notebook_page.timings["laptop window"] = time.monotonic() - started
        # opened, its kernel up and nothing typed: not marked modified, so closing it asks nothing (JupyterLab
        # writes the kernel's language_info into the metadata: the copy must already say the same, tools/lab.py)
        assert page.locator(".lm-TabBar-tab.jp-mod-current.jp-mod-dirty").count() == 0, (
            f"{kind} {assignment} opens marked modified, untouched"
        )
    notebook_page.run_all()
    started = time.monotonic()
    saved = notebook_page.save_and_read()
    notebook_page.timings["save"] = time.monotonic() - started
    errors = unexpected_errors(saved, kind)
    assert not errors, f"{kind} {assignment}: unexpected error output after Run All:\n\n" + "\n\n".join(errors)
    not_run = cells_never_run(saved)
    assert not not_run, f"{kind} {assignment}: Run All left cells unexecuted: {not_run}"
    last = [c for c in saved.cells if c.cell_type == "code"][-1]
    assert last.get("execution_count"), f"{kind} {assignment}: Run All did not reach the last cell"
    if kind == "solution":  # every check passes, and says so
        silent = [i for i, c in enumerate(saved.cells) if is_test_cell(c) and "✓" not in _printed(c)]
        assert not silent, f"{kind} {assignment}: test cells that printed no ✓ line: {silent}"
    if is_student(kind):
        shown = notebook_page.cell_outputs()
        check_unanswered_exercises_say_so(saved, shown, f"{kind} {assignment}", kind_language(kind))
        if kind_language(kind) != "en":  # the package's messages in the outputs: none left in English
            code = [cell.source for cell in saved.cells if cell.cell_type == "code"]
            english = english_sentences_shown(shown, kind_language(kind), code)
            assert not english, f"{kind} {assignment}: package messages shown untranslated after Run All: {english}"
        first_test = next(i for i, cell in enumerate(saved.cells) if is_test_cell(cell))
        page.locator(".jp-Notebook .jp-Cell").nth(first_test).screenshot(
            path=str(screenshots / f"{kind}-{assignment}-test-cell.png")
        )
    started = time.monotonic()
    problems = output_problems(page) + outputs_that_do_not_fit(page)
    notebook_page.timings["outputs checked"] = time.monotonic() - started
    assert not problems, f"{kind} {assignment} ({page.viewport_size['width']} px window): " + "; ".join(problems)

    # WCAG 2.2 AA, by axe-core: the cells' outputs and text are the course's; the lab around them (editors,
    # prompts, toolbars) is JupyterLab's: recorded in test-artifacts/accessibility/ once for each kind of notebook
    # (the same frame around every notebook), listed in docs/accessibility.md, not counted here
    started = time.monotonic()
    ours = [".jp-OutputArea-output", ".jp-MarkdownOutput"]
    found = blocking(audit(page, f"notebook-{kind}-{assignment}", include=ours))
    # the Russian lab's frame is the same JupyterLab, its words in Russian: audited once, around an English notebook
    frame = "student" if is_student(kind) else kind
    if frame not in FRAME_AUDITED:
        audit(page, f"lab-around-{kind}-{assignment}", exclude=ours)
        FRAME_AUDITED.add(frame)
    notebook_page.timings["accessibility"] = time.monotonic() - started
    assert not found, described(f"{kind} {assignment} after Run All", found)
    # and every picture's text alternative begins with its lead: what the reader should see in it
    shown, unled = pictures_without_lead(page)
    assert shown and not unled, f"{kind} {assignment}: {len(unled)} of {shown} pictures have no lead: {unled}"

    boxes = page.locator(".course-widget")
    count = boxes.count()
    assert count >= 1, f"{kind} {assignment}: no course widget (.course-widget) in the notebook"
    if is_student(kind):
        started = time.monotonic()
        boxes.first.scroll_into_view_if_needed()
        settle(boxes.first)
        page.screenshot(path=str(screenshots / f"laptop-{kind}-{assignment}.png"))
        notebook_page.timings["laptop screenshot"] = time.monotonic() - started
        if kind == "student-ru" and assignment == RUSSIAN_LAB_IN_GALLERY and UPDATE_GALLERY:
            GALLERY_IMAGES.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(
                screenshots / f"laptop-{kind}-{assignment}.png", GALLERY_IMAGES / f"ru-lab-{assignment}.png"
            )
            title = notebook_title(saved, assignment)
            gallery[f"ru-lab-{assignment}.png"] = {
                "assignment": assignment,
                "title": title,
                "language": "ru",
                "window": True,
            }
    if kind == "student" and assignment in RUSSIAN_STUDENT_ASSIGNMENTS:
        # Its widgets are driven in the untouched Russian copy of the same notebook (same widget code, same
        # cells) and, in English, in the solution: driving them a third time here buys no assertion
        print(f"{kind} {assignment}: " + ", ".join(f"{p} {t:.1f} s" for p, t in notebook_page.timings.items()))
        return
    if kind_language(kind) != "en":  # the widgets' labels and readouts: none left in English
        english = english_sentences_shown(boxes.all_inner_texts(), kind_language(kind))
        assert not english, f"{kind} {assignment}: widget text shown untranslated: {english}"
    started = time.monotonic()
    for index in range(count):
        box = boxes.nth(index)
        box.scroll_into_view_if_needed()
        name = f"{assignment}" if index == 0 else f"{assignment}-{index + 1}"
        check_widget(
            page, box, f"{kind} {assignment}, widget {index + 1} of {count}", screenshots / f"{kind}-{name}.png"
        )
        if kind == "student-ru" and UPDATE_GALLERY:  # the Russian section of the gallery (gallery.py)
            GALLERY_IMAGES.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(screenshots / f"{kind}-{name}.png", GALLERY_IMAGES / f"ru-{name}.png")
            title = notebook_title(saved, assignment)
            gallery[f"ru-{name}.png"] = {"assignment": assignment, "title": title, "language": "ru"}
        if kind == "solution" and UPDATE_GALLERY:
            GALLERY_IMAGES.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(screenshots / f"{kind}-{name}.png", GALLERY_IMAGES / f"{name}.png")
            title = notebook_title(saved, assignment)
            state = widget_state(box)
            gallery[f"{name}.png"] = {
                "assignment": assignment,
                "title": title,
                **widget_caption(box),
                "controls": control_names(box),
                "readouts": list(state["readouts"]),
            }
    notebook_page.timings["widgets"] = time.monotonic() - started
    if kind == "solution" and assignment in KEYBOARD_IN_LAB:  # with the keyboard alone, in the lab (keyboard.py)
        started = time.monotonic()
        for index in range(count):
            check_keyboard_in_lab(page, boxes.nth(index), f"{kind} {assignment}, widget {index + 1} of {count}")
        notebook_page.timings["keyboard"] = time.monotonic() - started
    if kind == "solution":  # the same outputs laid out again on a laptop: no second Run All
        started = time.monotonic()
        check_pictures_at_laptop_width(page, assignment, screenshots)
        notebook_page.timings["laptop width"] = time.monotonic() - started
    if kind == "solution" and assignment == ZOOMED:  # and at 200 % zoom, the file browser closed (reflow.py)
        started = time.monotonic()
        close_file_browser(page)
        with at_200_percent(page):
            problems = reflow_problems(page, f"{kind} {assignment}", screenshots / f"zoom200-{kind}-{assignment}.png")
        notebook_page.timings["200 % zoom"] = time.monotonic() - started
        assert not problems, f"{kind} {assignment} at 200 % zoom (a 1280 px window): " + "; ".join(problems)
    print(
        f"{kind} {assignment}: "
        + ", ".join(f"{phase} {seconds:.1f} s" for phase, seconds in notebook_page.timings.items())
    )


def notebook_title(notebook, assignment: str) -> str:
    """The notebook's title, its first heading (the gallery's headings), or the assignment's name."""
    return notebook.cells[0].source.splitlines()[0].lstrip("# ").strip() if notebook.cells else assignment


def _printed(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")


def english_sentences_shown(texts: list[str], language: str, code: list[str] = ()) -> list[str]:
    """The package's messages (the msgids of heads_and_masks/locale/<language>) found in English in ``texts``:
    each message's longest fixed stretch of words between its placeholders, when it is a phrase of three words
    or more (shorter ones, such as a unit or a name, can be the same in both languages). Words the notebook's
    own ``code`` writes (a table's header, a readout's key it prints) are code, the same in both languages."""
    from babel.messages.pofile import read_po

    page = " ".join(" ".join(texts).split())
    code_words = " ".join(" ".join(code).split())
    found = []
    for catalog in sorted((REPO / "heads_and_masks" / "locale" / language).glob("*.po")):
        with catalog.open("rb") as po:
            for message in read_po(po):
                ids = message.id if isinstance(message.id, tuple) else (message.id,)
                for msgid in filter(None, ids):
                    stretch = max(re.split(r"\{[^}]*\}", msgid), key=len).strip(" .,:;")
                    if len(stretch.split()) >= 3 and stretch in page and stretch not in code_words:
                        found.append(stretch)
    return found


def check_unanswered_exercises_say_so(notebook, shown: list[str], label: str, language: str = "en") -> None:
    """What the page shows under each test cell of an untouched notebook: "not written yet" (in the notebook's
    language: the catalog's words, labdriver.not_written_yet_pattern), no traceback."""
    assert len(shown) == len(notebook.cells), f"{label}: {len(shown)} cells in the page, {len(notebook.cells)} saved"
    tests = [i for i, cell in enumerate(notebook.cells) if is_test_cell(cell)]
    assert tests, f"{label}: no test cell"
    # (the message is broken between words into lines that fit the column: heads_and_masks/checks/core.py)
    says_so = not_written_yet_pattern(language)
    silent = {i: shown[i][:200] for i in tests if not says_so.search(" ".join(shown[i].split()).replace("✗ ", "\n✗ "))}
    assert not silent, f"{label}: test cells that do not say their exercise is not written yet: {silent}"
    tracebacks = {i: text[:300] for i, text in enumerate(shown) if "Traceback" in text}
    assert not tracebacks, f"{label}: a traceback is shown after Run All: {tracebacks}"


def check_keyboard_in_lab(page, box, label: str) -> None:
    """From its cell, selected in command mode as a keyboard user selects it, Tab reaches the widget; then the
    keyboard walk from just before it (JupyterLab's menus and editors before it are not the course's)."""
    cell = box.locator("xpath=ancestor::*[contains(@class, 'jp-Cell')][1]")
    cell.click(position={"x": 3, "y": 3})  # the cell's left edge: selects it
    page.keyboard.press("Escape")  # command mode: the notebook's shortcuts are live
    presses = 0
    while not box.evaluate("box => box.contains(document.activeElement)"):
        presses += 1
        assert presses <= 5, f"{label}: 5 presses of Tab from its cell in command mode did not reach the widget"
        page.keyboard.press("Tab")
    stops, used = keyboard_session(page, box, f"{label} (JupyterLab)", from_page_start=False)
    print(f"{label}: from its cell, Tab {presses} times; keys used in JupyterLab: {', '.join(used)}")


def check_widget(page, box, label: str, screenshot_path) -> None:
    """Rendered (picture and readouts), screenshot taken, then moved by keyboard and by mouse."""
    state = settle(box)
    assert state["src"] and state["loaded"] and state["width"] > 0 and state["height"] > 0, (
        f"{label}: the picture did not render (img src={str(state['src'])[:40]!r}, size {state['width']}×{state['height']})"
    )
    assert state["readouts"], (
        f"{label}: no readouts (table.course-readouts with <td>NAME</td><td><b>VALUE</b></td> rows)"
    )
    box.screenshot(path=str(screenshot_path))
    problems = layout_problems(box)
    assert not problems, f"{label}: the widget renders badly (screenshot {screenshot_path}): " + "; ".join(problems)

    # every slider is found by its role and its name, as a screen reader finds it: "slider, head size d"
    for name in box.locator(".course-slider-label").all_inner_texts():
        assert box.get_by_role("slider", name=name, exact=True).count() == 1, (
            f"{label}: no slider named {name!r} in the accessibility tree (its label does not name it)"
        )
    if box.locator("input.course-slider-input").count():
        handle = slider_handle(box)
        value_before = handle_position(handle)[0]
        key = press_slider_key(handle)
        started = time.monotonic()
        state = wait_for_change(box, state, f"{label}: after pressing {key} on the first slider")
        print(
            f"{label}: keyboard step {value_before} -> {handle_position(handle)[0]}, "
            f"picture and readouts updated in {time.monotonic() - started:.2f} s"
        )
        value_before = handle_position(handle)[0]
        distance = drag_slider(page, handle)
        state = wait_for_change(box, state, f"{label}: after dragging the first slider's handle by {distance:+.0f} px")
        value_after = handle_position(handle)[0]
        assert value_after != value_before, (
            f"{label}: dragging the handle did not move the slider (value {value_before})"
        )
        return

    # no slider: change the first dropdown or checkbox instead
    select = box.locator("select")
    checkbox = box.locator("input[type=checkbox]")
    if select.count():
        options = select.first.locator("option")
        current = select.first.evaluate("s => s.selectedIndex")
        select.first.select_option(index=(current + 1) % options.count())
        wait_for_change(box, state, f"{label}: after choosing another option in the first dropdown")
    elif checkbox.count():
        checkbox.first.click()
        wait_for_change(box, state, f"{label}: after clicking the first checkbox")
    else:
        pytest.fail(f"{label}: no slider, dropdown or checkbox to move")
