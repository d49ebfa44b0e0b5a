"""Fixtures of the browser tests: one JupyterLab server and one headless Chromium for the whole session, and for
the Russian notebooks the lab a Russian learner gets (`make lab LANG=ru`, its interface in Russian), started only
when a Russian notebook is opened.

Without ``/usr/bin/chromium`` (or without Playwright) the tests are skipped, with a message saying how to
run them, unless the environment variable ``CI`` is set: in CI a missing browser is a failure.
``UPDATE_GALLERY=1`` also copies the widget screenshots into ``docs/images/`` and rewrites ``docs/gallery.md``.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest
from course import IN_CI

from gallery import UPDATE_GALLERY, write_gallery
from labdriver import (
    CHROMIUM,
    CHROMIUM_FLAGS,
    REPO,
    RUSSIAN_STUDENT_ASSIGNMENTS,
    SOLUTION_ASSIGNMENTS,
    STUDENT_ASSIGNMENTS,
    LabServer,
    LabWindow,
    LearnersLab,
    kind_language,
    new_browser_context,
    opened_notebook,
)


HOW_TO_RUN = (
    "To run them: install Chromium (Debian/Ubuntu: `sudo apt-get install chromium`, which provides "
    "/usr/bin/chromium), then `make test` or `.venv/bin/python -m pytest tests/browser`. "
    "With CI=true a missing browser fails these tests instead of skipping them."
)


def _browser_missing_reason() -> str | None:
    if not CHROMIUM.exists():
        return f"Chromium not found at {CHROMIUM}: the browser tests need it."
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the Python package playwright is not installed (pip install -e '.[test]')."
    return None


@pytest.fixture(scope="session")
def browser_ready() -> None:
    reason = _browser_missing_reason()
    if reason is None:
        return
    if IN_CI:
        pytest.fail(f"CI is set and {reason} {HOW_TO_RUN}", pytrace=False)
    pytest.skip(f"{reason} {HOW_TO_RUN}")


@pytest.fixture(scope="session")
def lab(browser_ready, tmp_path_factory):
    """One JupyterLab for every English notebook of the session (copies of notebooks/ and solutions/)."""
    import matplotlib.font_manager  # noqa: F401  build matplotlib's font cache now, not in a kernel's stderr

    server = LabServer(repo=REPO, folder=tmp_path_factory.mktemp("jupyterlab"))
    server.copy_course({"student": STUDENT_ASSIGNMENTS, "solution": SOLUTION_ASSIGNMENTS})
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def russian_lab(browser_ready, tmp_path_factory):
    """The lab of a Russian learner, `make lab LANG=ru` (labdriver.LearnersLab): JupyterLab in Russian, the untouched
    Russian notebooks in my-work/ru/ as tools/lab.py copied them. One more server start, for every Russian notebook."""
    import matplotlib.font_manager  # noqa: F401  build matplotlib's font cache now, not in a kernel's stderr

    assert RUSSIAN_STUDENT_ASSIGNMENTS, "no notebooks-ru/: `make notebooks` builds the Russian release"
    server = LearnersLab(repo=REPO, folder=tmp_path_factory.mktemp("jupyterlab-ru"), language="ru")
    started = time.monotonic()
    server.start()
    print(f"\nthe Russian learner's lab (tools/lab.py --language ru) up in {time.monotonic() - started:.1f} s")
    yield server
    server.stop()


# The lab that opens the notebooks of each language (a fixture's name): started only when one of them is opened
LAB_OF_LANGUAGE = {"en": "lab", "ru": "russian_lab"}


@pytest.fixture(scope="session")
def browser(browser_ready):
    """Headless Chromium (Debian's; Playwright cannot download its own browser here)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def browser_context(browser):
    """One context for the session (JupyterLab's scripts stay cached); requests off this machine are aborted."""
    context = new_browser_context(browser)
    yield context
    if context.blocked_requests:
        print(
            f"\nblocked {len(context.blocked_requests)} requests off this machine, e.g. {context.blocked_requests[:3]}"
        )
    context.close()


@pytest.fixture(scope="session")
def lab_windows(browser_context):
    """The JupyterLab window of each server the notebooks of the session open in, one after another
    (labdriver.LabWindow): ``lab_windows(server)`` gives its current one, or a fresh one when the last notebook
    broke it. The servers share the one browser context (their pages are apart: another port, another origin)."""
    windows: dict[int, list[LabWindow]] = {}

    def current(server) -> LabWindow:
        opened = windows.setdefault(server.port, [])
        if not opened or opened[-1].broken:
            if opened:
                opened[-1].close()
            opened.append(LabWindow(server, browser_context))
        return opened[-1]

    yield current
    for opened in windows.values():
        for window in opened:
            window.close()


@pytest.fixture
def open_notebook(request, browser_context, lab_windows):
    """``open_notebook(kind, assignment)``: the notebook opened in the JupyterLab window of its language's lab
    (LAB_OF_LANGUAGE), kernel connected.

    At the end of the test its tab is closed, its kernel shut down, and the test fails if the page raised any
    JavaScript error while it was open.
    """

    def open_one(kind: str, assignment: str):
        server = request.getfixturevalue(LAB_OF_LANGUAGE[kind_language(kind)])
        return stack.enter_context(opened_notebook(server, browser_context, kind, assignment, lab_windows(server)))

    with contextlib.ExitStack() as stack:
        yield open_one


@pytest.fixture(scope="session")
def screenshots(artifacts) -> Path:
    folder = artifacts / "browser"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def gallery():
    """Collects gallery entries during the session; with UPDATE_GALLERY=1 writes docs/ at the end."""
    entries: dict[str, dict] = {}
    yield entries
    if UPDATE_GALLERY and entries:
        write_gallery(entries)
