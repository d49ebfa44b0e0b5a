"""`make lab` in the browser, as a learner studying on their own meets it.

tools/lab.py is started as `make lab` starts it (in a copy of the repository's layout), and the URL it
printed last is opened in Chromium:
* the notebook 00_start_here is open and current, and the file browser shows my-work/ (the seven
  notebooks), not the repository root;
* of nbgrader's tools only the notebook toolbar's Validate button is there: no Nbgrader menu, no
  Assignments or Courses tab, no Create Assignment sidebar, no Formgrader; nothing on the page errs
  (no "Error fetching courses!");
* Validate, on the untouched notebook, reports the failure in the checks' words ("not written yet").
"""

from __future__ import annotations

import re
import time

import pytest
from lab_process import LabProcess, copy_repository_layout

from course import ASSIGNMENTS
from labdriver import PageWatch, wait_until

pytestmark = pytest.mark.browser


@pytest.fixture
def lab_py(browser_ready, tmp_path):
    lab = LabProcess(copy_repository_layout(tmp_path / "repo"), runtime=tmp_path / "runtime").start()
    try:
        lab.wait_for_output("JupyterLab is running")
        yield lab
    finally:
        lab.stop()


def test_make_lab_opens_00_start_here_with_only_the_validate_button(lab_py, browser_context, screenshots):
    url = re.findall(r"http://\S+", lab_py.output)[-1]
    page = browser_context.new_page()
    watch = PageWatch()
    watch.attach(page)
    try:
        page.goto(url)
        page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", timeout=90_000)
        page.wait_for_function(  # the kernel is connected (a dialog about it would come before)
            "() => (document.querySelector('#jp-main-statusbar')?.textContent || '').includes('| Idle')", timeout=90_000
        )
        current = page.locator(".jp-MainAreaWidget.jp-NotebookPanel:not(.lm-mod-hidden)")
        wait_until(
            lambda: "00 · Start here" in (current.first.locator(".jp-Cell").first.inner_text() or ""),
            timeout=30,
            what="the notebook 00_start_here to show",
            page=page,
        )
        tab = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel").first
        assert tab.inner_text().strip() == "00_start_here.ipynb"

        listing = page.locator(".jp-FileBrowser .jp-DirListing-item .jp-DirListing-itemText")
        wait_until(
            lambda: sorted(listing.all_inner_texts()) == ASSIGNMENTS,
            timeout=30,
            what=f"the file browser to list my-work/ (shows {listing.all_inner_texts()})",
            page=page,
        )
        assert "my-work" in page.locator(".jp-FileBrowser .jp-BreadCrumbs").first.inner_text()

        menus = [t.strip() for t in page.locator("#jp-menu-panel .lm-MenuBar-item").all_inner_texts()]
        assert "Run" in menus and not [m for m in menus if "nbgrader" in m.lower()], menus
        sidebar = [
            t.strip()
            for t in page.locator(".jp-SideBar .lm-TabBar-tab").evaluate_all(
                "tabs => tabs.map(t => t.getAttribute('title') || t.innerText)"
            )
        ]
        assert not [t for t in sidebar if re.search(r"assignment|course|formgrader", t, re.I)], sidebar
        dialogs = page.locator(".jp-Dialog").all_inner_texts()
        assert not dialogs, f"a dialog is open after the notebook opened: {dialogs}"
        page.locator("#jp-menu-panel .lm-MenuBar-item", has_text=re.compile(r"^View$")).click()
        page.locator(".lm-Menu-item", has_text="Command Palette").first.click()  # no nbgrader command in it either
        palette = page.locator(".jp-ModalCommandPalette .lm-CommandPalette-input")
        palette.wait_for(state="visible", timeout=15_000)
        palette.fill("nbgrader")
        time.sleep(0.5)
        commands = page.locator(".jp-ModalCommandPalette .lm-CommandPalette-item").all_inner_texts()
        assert not [c for c in commands if re.search(r"assignment|course|formgrader", c, re.I)], commands
        page.keyboard.press("Escape")

        validate = current.first.locator(".jp-Toolbar").get_by_text("Validate", exact=True)
        validate.click()
        dialog = page.locator(".jp-Dialog").first
        dialog.wait_for(timeout=120_000)
        wait_until(
            lambda: "not written yet" in dialog.inner_text(),
            timeout=120,
            what="Validate to report the unwritten exercise",
            page=page,
        )
        text = dialog.inner_text()
        assert "failed" in text.lower() and "success" not in text.lower(), text
        page.screenshot(path=str(screenshots / "make-lab-validate.png"))
        dialog.locator("button").last.click()
        page.screenshot(path=str(screenshots / "make-lab.png"))
        assert not watch.page_errors, watch.page_errors
        nbgrader_errors = [e for e in watch.console_errors if re.search(r"nbgrader|fetching|exchange", e, re.I)]
        assert not nbgrader_errors, nbgrader_errors
    finally:
        page.close()
