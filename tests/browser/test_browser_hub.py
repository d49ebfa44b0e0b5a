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
import json
import os
import re

import pytest
from conftest import IN_CI
from hub_class import HubClass
from labdriver import new_browser_context, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LAB_READY = "#jp-main-dock-panel"
MENU_ITEMS_JS = """() => [...document.querySelectorAll('.lm-Menu:not(.lm-mod-hidden) .lm-Menu-itemLabel')]
    .map(item => item.textContent.trim()).filter(Boolean)"""


@pytest.fixture(scope="module")
def hub_class(browser_ready):
    if os.geteuid() != 0:
        why = "The hub's test makes Unix accounts (useradd) and runs JupyterHub as root, which CI does."
        if IN_CI:
            pytest.fail(f"CI is set and this process is not root. {why}", pytrace=False)
        pytest.skip(why)
    hub = HubClass()
    try:
        hub.open()
        yield hub
    finally:
        hub.close()


@contextlib.contextmanager
def logged_in(browser, hub: HubClass, person):
    """A page of ``person``'s own JupyterLab, reached by logging in to the hub with their password."""
    context = new_browser_context(browser)
    page = context.new_page()
    try:
        page.goto(f"{hub.url}/hub/login")
        page.fill("input[name=username]", person.name)
        page.fill("input[name=password]", person.password)
        page.click("input[type=submit], button[type=submit]")
        page.wait_for_url(re.compile(rf"/user/{person.name}/lab"), timeout=150_000)
        page.wait_for_selector(LAB_READY, timeout=120_000)
        yield page
    finally:
        context.close()


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
        page.screenshot(path=str(screenshots / "hub_student_lab.png"))
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
        page.screenshot(path=str(screenshots / "hub_instructor_formgrader.png"))
