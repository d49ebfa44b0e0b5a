"""The explore page (`make explore`: tools/explore.py serving with Voilà), driven in headless Chromium.

`make explore` is started as a user starts it (tools/explore.py, which builds the pages and runs Voilà);
every request off this machine is aborted, as when it is projected offline. For each page: the title and
explanation show, no code shows, the widget renders (picture and readouts, laid out in full) and responds
to its first control (keyboard and mouse on a slider, else a dropdown or checkbox), with no JavaScript
error; then it is used with the keyboard alone, every control (keyboard.py). The index is laid out at 200 % zoom
(reflow.py) in both languages, each page in Russian (below: the same page, with the longer words).
The Russian pages (``ru/``, served by the same server: `make explore` serves both languages) are checked in the
same test as their English page, opened in a second tab as the English one opens, so that Voilà renders it
(runs its notebook in a kernel) while the English page is checked: its title, text and widget in Russian (no
English sentence left), the widget responds to its first control, the accessibility audit, 200 % zoom (Russian
words are longer). The keyboard walk, the same in every language, is done once per widget (on the English page).
Screenshots go to ``test-artifacts/browser/explore-*.png`` (with UPDATE_GALLERY=1 also to
``docs/images/`` and the gallery's explore section).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from accessibility import audit, blocking, described
from gallery import GALLERY_IMAGES, UPDATE_GALLERY
from keyboard import keyboard_session
from labdriver import REPO, PageWatch, control_names, widget_state
from reflow import at_200_percent, reflow_problems
from test_browser_notebooks import check_widget

sys.path.insert(0, str(REPO / "tools"))
from explore import PageText, pages, what_it_shows

pytestmark = pytest.mark.browser
PAGES = pages()
RUSSIAN = PageText("ru")
CYRILLIC = re.compile("[а-яё]", re.IGNORECASE)
ENGLISH_WORD = re.compile(r"\b[A-Za-z]{2,}\b")


def english_sentences(text: str) -> list[str]:
    """The pieces of ``text`` (split at line ends and sentence marks) that read as English: three English words
    or more, and no Russian letter. A name (Mistral-7B, GiB, MHA / GQA) or a formula is not one."""
    pieces = (piece.strip() for piece in re.split(r"[\n.:;!?()]", text))
    return [piece for piece in pieces if len(ENGLISH_WORD.findall(piece)) >= 3 and not CYRILLIC.search(piece)]


def widget_words(box) -> str:
    """What a widget says, seen or heard: its text, and its pictures' and controls' text alternatives."""
    alternatives = box.evaluate("""box => [...box.querySelectorAll('[alt], [aria-label], [title]')]
        .flatMap(e => ['alt', 'aria-label', 'title'].map(a => e.getAttribute(a) || ''))""")
    return "\n".join([box.inner_text(), *alternatives])


@pytest.fixture(scope="module")
def explore(browser_ready, tmp_path_factory):
    """`make explore` running (tools/explore.py on a free port); its base URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = tmp_path_factory.mktemp("explore") / "explore.log"
    with open(log, "w") as output:
        process = subprocess.Popen(
            [sys.executable, str(REPO / "tools" / "explore.py"), f"--port={port}"],
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(url + "/", timeout=10) as response:  # noqa: S310 (localhost)
                    if response.status == 200:
                        break
            except OSError:
                pass
            assert process.poll() is None, f"tools/explore.py stopped:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"the explore page did not come up:\n{log.read_text()[-3000:]}"
            time.sleep(0.5)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # explore.py and the Voilà server it started
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


class PagesAhead:
    """Explore pages opened before they are checked: Voilà renders a page by running its notebook in a kernel,
    so a tab opened ahead renders while the page before it is checked. Each tab watched for errors from the start."""

    def __init__(self, context, url: str):
        self.context, self.url, self.tabs = context, url, {}

    def open(self, path: str) -> None:
        if path not in self.tabs:
            tab, watch = self.context.new_page(), PageWatch()
            watch.attach(tab)
            tab.goto(f"{self.url}/voila/render/{path}", wait_until="commit", timeout=120_000)
            self.tabs[path] = (tab, watch)

    def take(self, path: str):
        """The tab of ``path`` (opened now if it was not ahead) and its PageWatch; the caller closes it."""
        self.open(path)
        return self.tabs.pop(path)


@pytest.fixture(scope="module")
def ahead(explore, browser_context):
    pages_ahead = PagesAhead(browser_context, explore)
    yield pages_ahead
    for tab, _watch in pages_ahead.tabs.values():
        tab.close()


def test_every_notebook_with_a_widget_has_a_page():
    with_widgets = sorted(
        p.stem
        for p in (REPO / "heads_and_masks" / "widgets").glob("*.py")
        if p.stem not in ("__init__", "base", "choice", "fast_text", "positions", "slider")  # the shared parts
    )
    assert sorted(page.slug for page in PAGES) == with_widgets


def test_the_index_lists_every_page(explore, browser_context, screenshots):
    """The index names each page by its notebook's title, in the course's order, with what its widget shows,
    and its links open the pages; it asks nothing of the network and passes the accessibility audit."""
    page = browser_context.new_page()
    blocked_before = len(browser_context.blocked_requests)
    try:
        page.goto(explore + "/", wait_until="load")
        page.screenshot(path=str(screenshots / "explore-index.png"), full_page=True)
        links = page.locator("main li h2 a")
        titles = links.evaluate_all("links => links.map(link => link.textContent.trim())")
        assert titles == [p.title for p in PAGES], titles
        descriptions = page.locator("main li p").evaluate_all("ps => ps.map(p => p.textContent.trim())")
        assert descriptions == [" ".join(what_it_shows(p).split()) for p in PAGES], descriptions
        assert all(len(d.split()) >= 5 for d in descriptions), descriptions
        hrefs = links.evaluate_all("links => links.map(link => link.href)")
        assert hrefs == [f"{explore}/voila/render/{p.assignment}.ipynb" for p in PAGES], hrefs
        with urllib.request.urlopen(hrefs[0], timeout=120) as response:  # noqa: S310 (localhost)
            assert response.status == 200 and PAGES[0].title.split(" · ")[-1] in response.read().decode()
        found = blocking(audit(page, "explore-index"))
        assert not found, described("explore index", found)
        with at_200_percent(page):
            shot = screenshots / "zoom200-explore-index.png"
            problems = reflow_problems(page, "explore index", shot, ours=["main"])
        assert not problems, "explore index at 200 % zoom (a 1280 px window): " + "; ".join(problems)
        off_machine = browser_context.blocked_requests[blocked_before:]
        assert not off_machine, f"the index asks the network for {off_machine[:3]}: offline it waits in vain"

        # the Russian index (ru/): the same list in Russian, linking the Russian pages
        page.goto(explore + "/voila/tree/ru", wait_until="load")
        page.screenshot(path=str(screenshots / "explore-index-ru.png"), full_page=True)
        assert page.locator("html").get_attribute("lang") == "ru"
        titles = links.evaluate_all("links => links.map(link => link.textContent.trim())")
        assert titles == [RUSSIAN.title(p) for p in PAGES], titles
        shown = page.locator("main").inner_text()
        assert not english_sentences(shown), f"the Russian index has English sentences: {english_sentences(shown)}"
        hrefs = links.evaluate_all("links => links.map(link => link.href)")
        assert hrefs == [f"{explore}/voila/render/ru/{p.assignment}.ipynb" for p in PAGES], hrefs
        found = blocking(audit(page, "explore-index-ru"))
        assert not found, described("explore index in Russian", found)
        with at_200_percent(page):
            problems = reflow_problems(
                page, "Russian index", screenshots / "zoom200-explore-index-ru.png", ours=["main"]
            )
        assert not problems, "Russian explore index at 200 % zoom: " + "; ".join(problems)
    finally:
        page.close()


@pytest.mark.parametrize("entry", PAGES, ids=[p.assignment for p in PAGES])
def test_page_shows_the_widget_without_code_and_it_responds(
    entry, explore, ahead, browser_context, screenshots, gallery
):
    label = f"explore {entry.assignment}"
    blocked_before = len(browser_context.blocked_requests)
    # Rendered ahead: this page was opened by the test before this one; its Russian page opens now, and the
    # next English page too, so that Voilà renders them while this one is checked.
    page, watch = ahead.take(f"{entry.assignment}.ipynb")
    russian, russian_watch = ahead.take(f"ru/{entry.assignment}.ipynb")
    following = PAGES.index(entry) + 1
    if following < len(PAGES):
        ahead.open(f"{PAGES[following].assignment}.ipynb")
    page.bring_to_front()  # a tab behind others gets no resize or animation frames: zoom and sliders would stall
    try:
        box = page.locator(".course-widget").first
        box.wait_for(state="visible", timeout=120_000)
        assert page.locator("h1").first.inner_text().strip().startswith(entry.title[:10]), page.locator(
            "h1"
        ).first.inner_text()
        shown = page.locator("body").inner_text()
        assert "import" not in shown and entry.call not in shown, f"{label}: code is shown:\n{shown[:1000]}"
        assert page.locator(".jp-InputArea-editor:visible, .CodeMirror:visible, .cm-editor:visible").count() == 0
        errors = page.locator(
            ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr'], .jp-RenderedText[data-mime-type='application/vnd.jupyter.stderr']"
        )
        assert errors.count() == 0, f"{label}: an error is shown: {errors.first.inner_text()[:500]}"

        path = screenshots / f"explore-{entry.assignment}.png"
        check_widget(page, box, label, screenshots / f"explore-{entry.assignment}-widget.png")
        bottom = page.evaluate("""() => Math.max(...[...document.querySelectorAll('.jp-Cell, .jp-OutputArea')]
                                   .map(e => e.getBoundingClientRect().bottom + window.scrollY))""")
        page.screenshot(
            path=str(path),
            full_page=True,
            clip={"x": 0, "y": 0, "width": page.viewport_size["width"], "height": bottom + 24},
        )
        assert not watch.page_errors, f"{label}: JavaScript errors: {watch.page_errors}"
        # WCAG 2.2 AA (axe-core): the outputs and text are the course's; Voilà's frame is recorded
        ours = [".jp-OutputArea-output", ".jp-MarkdownOutput"]
        found = blocking(audit(page, f"explore-{entry.assignment}", include=ours))
        audit(page, f"voila-around-{entry.assignment}", exclude=ours)
        assert not found, described(label, found)
        off_machine = browser_context.blocked_requests[blocked_before:]
        assert not off_machine, f"{label}: the page asks the network for {off_machine[:3]}: offline it waits in vain"

        # with the keyboard alone (keyboard.py), on the page already open; the layout at 200 % zoom is checked on
        # the Russian page (check_russian_page): the same page, with the longer words
        started = time.monotonic()
        stops, used = keyboard_session(page, box, label)
        walked = time.monotonic() - started
        print(
            f"{label}: Tab reaches {', '.join(stop.visible for stop in stops)}; keys used: {', '.join(used)} "
            f"({walked:.1f} s)"
        )
        if UPDATE_GALLERY:
            GALLERY_IMAGES.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, GALLERY_IMAGES / path.name)
            gallery[path.name] = {
                "assignment": entry.assignment,
                "title": entry.title,
                "explore": True,
                "controls": control_names(box),
                "readouts": list(widget_state(box)["readouts"]),
            }
        check_russian_page(russian, russian_watch, entry, screenshots)
        off_machine = browser_context.blocked_requests[blocked_before:]
        assert not off_machine, f"{label}: the pages ask the network for {off_machine[:3]}: offline they wait in vain"
    finally:
        page.close()
        russian.close()


def check_russian_page(page, watch, entry, screenshots) -> None:
    """The Russian page, rendered meanwhile: its title, text and widget in Russian, the widget responding to its
    first control, the accessibility audit and 200 % zoom (no keyboard walk: the English page's is the same)."""
    label = f"explore ru/{entry.assignment}"
    page.bring_to_front()
    started = time.monotonic()
    box = page.locator(".course-widget").first
    box.wait_for(state="visible", timeout=120_000)
    rendered = time.monotonic()
    assert page.locator("html").get_attribute("lang") == "ru"
    heading = page.locator("h1").first.inner_text().strip()
    assert heading.startswith(RUSSIAN.title(entry)[:10]), heading
    text = page.locator(".jp-MarkdownOutput").first.inner_text()
    assert not english_sentences(text), f"{label}: English sentences in the page's text: {english_sentences(text)}"
    check_widget(page, box, label, screenshots / f"explore-ru-{entry.assignment}-widget.png")
    responded = time.monotonic()
    # after the widget moved: every sentence it says, its readouts' and picture's too, is Russian
    said = english_sentences(widget_words(box))
    assert not said, f"{label}: the widget says English sentences (a message without its translation?): {said}"
    assert not watch.page_errors, f"{label}: JavaScript errors: {watch.page_errors}"
    ours = [".jp-OutputArea-output", ".jp-MarkdownOutput"]
    found = blocking(audit(page, f"explore-ru-{entry.assignment}", include=ours))
    assert not found, described(label, found)
    audited = time.monotonic()
    with at_200_percent(page):
        problems = reflow_problems(page, label, screenshots / f"zoom200-explore-ru-{entry.assignment}.png")
    assert not problems, f"{label} at 200 % zoom (a 1280 px window): " + "; ".join(problems)
    print(
        f"{label}: waited {rendered - started:.1f} s for the widget (rendered meanwhile), responded and read "
        f"in {responded - rendered:.1f} s, audited in {audited - responded:.1f} s, "
        f"reflowed in {time.monotonic() - audited:.1f} s"
    )
