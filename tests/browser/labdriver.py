"""Drive a real JupyterLab in headless Chromium: start the server, open a notebook, Run All, use widgets.

The browser tests (``test_browser_*.py``) read like a learner's session; the mechanics are here:

* ``LabServer``: one JupyterLab on 127.0.0.1 with a token and fresh config, data, settings, workspace and
  runtime folders in a temporary directory. The notebooks are *copies* (the repository is never written).
* ``LearnersLab``: the lab `make lab LANG=<language>` starts (tools/lab.py in a copy of the repository's layout),
  JupyterLab's interface in that language, the notebooks in ``my-work/<language>/`` as lab.py copies them.
* ``LabWindow``: one JupyterLab page kept open while notebooks are opened in it one after another (File → Open
  from Path…, File → Close All Tabs), as a learner keeps the lab open.
* ``NotebookSession``: one notebook open, in a page of its own or in a LabWindow. Every request that does not go
  to 127.0.0.1/localhost is aborted, and every JavaScript error on the page is recorded (the tests fail on it).
* widget helpers: read a course widget's picture (``img`` src, PNG) and readouts (``table.course-readouts``),
  move a slider (the course's native ``<input type="range">``) by keyboard (focus it, arrow key) or by
  dragging its thumb with the mouse.

Facts this relies on: Debian's ``/usr/bin/chromium`` (Playwright cannot download
its own browser offline), and waiting for "| Idle" in the status bar before Run All (the execution
indicator reads idle before the kernel is connected, and Run All then silently does nothing).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from lab_process import LabProcess, copy_repository_layout, free_port

# Debian's Chromium (BROWSER_TESTS_CHROMIUM points elsewhere, e.g. to check how the tests behave without it)
CHROMIUM = Path(os.environ.get("BROWSER_TESTS_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# Every URL that does not go to this machine's server: those requests are aborted.
NOT_LOCAL = re.compile(r"^(?!(https?|wss?)://(127\.0\.0\.1|localhost)(:\d+)?/)")
REPO = Path(__file__).resolve().parents[2]


def _assignments(folder: str) -> list[str]:
    base = REPO / folder
    return sorted(
        p.name for p in base.iterdir() if p.is_dir() and p.name[:2].isdigit() and (p / f"{p.name}.ipynb").exists()
    )


# Every assignment that exists when the tests are collected: student versions and solutions.
STUDENT_ASSIGNMENTS = _assignments("notebooks")
SOLUTION_ASSIGNMENTS = _assignments("solutions")
# The Russian release's student notebooks (notebooks-ru/, built from translations/ru), untouched as a learner gets them
RUSSIAN_STUDENT_ASSIGNMENTS = _assignments("notebooks-ru") if (REPO / "notebooks-ru").is_dir() else []
NOTEBOOKS = (
    [("student", a) for a in STUDENT_ASSIGNMENTS]
    + [("solution", a) for a in SOLUTION_ASSIGNMENTS]
    + [("student-ru", a) for a in RUSSIAN_STUDENT_ASSIGNMENTS]
)
# Where each kind of notebook is released; a kind beginning "student" is a learner's copy (lab.copy_assignment)
RELEASED = {"student": "notebooks", "solution": "solutions", "student-ru": "notebooks-ru"}
ANSI = re.compile(r"\x1b\[[0-9;]*m")

# JupyterLab user settings written into the fresh settings folder (plugin id -> settings).
LAB_SETTINGS = {
    # no "Would you like to get notified about Jupyter news?" toast, no update check (no network anyway)
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
    # every cell stays in the page, so every widget is rendered and can be found
    "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"},
    # nothing is written behind the test's back; the test saves once, when the run is over
    "@jupyterlab/docmanager-extension:plugin": {"autosave": False},
}


# The words of JupyterLab's interface the driver clicks and reads, in each language the course opens the lab in
# (the Russian ones as JupyterLab's Russian language pack, jupyterlab-language-pack-ru-RU, has them).
LAB_WORDS = {
    "en": {
        "File": "File",
        "Edit": "Edit",
        "Run": "Run",
        "Run All Cells": "Run All Cells",
        "Open from Path": "Open from Path",
        "Close All Tabs": "Close All Tabs",
        "Discard": "Discard",
        "Idle": "Idle",
        "Dead": "Dead",
        "Unknown": "Unknown",
    },
    "ru": {
        "File": "Файл",
        "Edit": "Редактировать",
        "Run": "Выполнить",
        "Run All Cells": "Запустить все ячейки",
        "Open from Path": "Открыть из пути",
        "Close All Tabs": "Закрыть все вкладки",
        "Discard": "Отклонить",
        "Idle": "Простаивает",
        "Dead": "Мёртв",
        "Unknown": "Неизвестный",
    },
}


# --------------------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------------------


def _write_lab_settings(settings_dir: Path) -> None:
    for plugin_id, values in LAB_SETTINGS.items():
        package, plugin = plugin_id.split(":")
        path = settings_dir / package / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


@dataclass
class LabServer:
    """A JupyterLab server for the whole test session, serving copies of the course notebooks."""

    repo: Path
    folder: Path  # a fresh temporary folder: everything of this server lives here
    token: str = field(default_factory=lambda: os.urandom(16).hex())
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None
    language = "en"  # of JupyterLab's interface (LAB_WORDS)

    @property
    def root(self) -> Path:
        return self.folder / "course"

    @property
    def log(self) -> Path:
        return self.folder / "jupyterlab.log"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def notebook_path(self, kind: str, assignment: str) -> Path:
        """``kind`` is "student" (from notebooks/), "solution" (from solutions/) or "student-ru" (notebooks-ru/)."""
        return self.root / kind / assignment / f"{assignment}.ipynb"

    def copy_course(self, assignments: dict[str, list[str]]) -> None:
        from lab import copy_assignment  # the student's copy as `make lab` makes it in my-work/

        for kind, names in assignments.items():
            copy = copy_assignment if is_student(kind) else shutil.copytree
            for name in names:
                copy(self.repo / RELEASED[kind] / name, self.root / kind / name)

    def start(self, timeout: float = 180.0) -> None:
        dirs = {name: self.folder / name for name in ("config", "data", "settings", "workspaces", "runtime", "ipython")}
        for path in dirs.values():
            path.mkdir(parents=True, exist_ok=True)
        _write_lab_settings(dirs["settings"])
        env = dict(os.environ)
        env.pop("MPLBACKEND", None)  # the kernels must use the inline backend, not the tests' Agg
        env.update(
            JUPYTER_CONFIG_DIR=str(dirs["config"]),
            JUPYTER_DATA_DIR=str(dirs["data"]),
            JUPYTER_RUNTIME_DIR=str(dirs["runtime"]),
            JUPYTERLAB_SETTINGS_DIR=str(dirs["settings"]),
            JUPYTERLAB_WORKSPACES_DIR=str(dirs["workspaces"]),
            IPYTHONDIR=str(dirs["ipython"]),
            PYTHONUNBUFFERED="1",
        )
        command = [
            sys.executable,
            "-m",
            "jupyter",
            "lab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.root}",
            "--ServerApp.terminals_enabled=False",
            "--LabApp.news_url=",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            command.append("--allow-root")
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                command, cwd=self.root, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with code {self.process.returncode}:\n{self.log_tail()}")
            try:
                self.api("GET", "/api/status")
                return
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"JupyterLab did not answer on {self.base_url} within {timeout:.0f} s:\n{self.log_tail()}")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def api(self, method: str, path: str):
        request = urllib.request.Request(  # noqa: S310 - the test's own server on 127.0.0.1
            f"{self.base_url}{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - the test's own server on 127.0.0.1
            body = response.read()
        return json.loads(body) if body else None

    def shut_down_kernels(self) -> None:
        """Free the CPU for the next notebook: end every session and kernel of this server."""
        for session in self.api("GET", "/api/sessions") or []:
            self.api("DELETE", f"/api/sessions/{session['id']}")
        for kernel in self.api("GET", "/api/kernels") or []:
            self.api("DELETE", f"/api/kernels/{kernel['id']}")

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


@dataclass
class LearnersLab(LabServer):
    """The lab `make lab LANG=<language>` gives a learner: tools/lab.py ``--language <language>`` started in a copy of
    the repository's layout (lab_process.LabProcess), on tools/lab.py's own configuration (JupyterLab's interface in
    that language), the notebooks those lab.py copied into ``my-work/<language>/``. Only the test's JupyterLab user
    settings (LAB_SETTINGS) are added, in the user's own settings folder, as a learner's would be."""

    language: str = "ru"
    running: LabProcess | None = None

    @property
    def root(self) -> Path:
        return self.folder / "repo"

    def notebook_path(self, kind: str, assignment: str) -> Path:
        from lab import work_folder  # my-work/<language>/, where lab.py copies the learner's notebooks

        return self.root / work_folder(self.language) / assignment / f"{assignment}.ipynb"

    def copy_course(self, assignments: dict[str, list[str]]) -> None:
        raise NotImplementedError("tools/lab.py copies a learner's notebooks itself")

    def start(self, timeout: float = 180.0) -> None:
        copy_repository_layout(self.root)
        runtime = self.folder / "runtime"
        # JupyterLab's user settings live in the user's config folder (LabProcess: <runtime's parent>/jupyter-user)
        _write_lab_settings(runtime.parent / "jupyter-user" / "config" / "lab" / "user-settings")
        self.running = LabProcess(
            self.root, runtime=runtime, arguments=("--language", self.language), port=self.port, token=self.token
        ).start()
        status, _ = self.running.api("/api/status", deadline=time.monotonic() + timeout)
        assert status == 200, f"tools/lab.py --language {self.language}: /api/status answered {status}"

    def stop(self) -> None:
        if self.running is not None:
            self.running.stop()

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.running.output.splitlines()[-lines:]) if self.running else "(not started)"


def kernel_idle_js(language: str = "en") -> str:
    """The kernel is connected only when the status bar says "| Idle" in the lab's language (before that, Run All
    does nothing, and the kernel's language_info is not yet in the notebook's metadata)."""
    idle = json.dumps(f"| {LAB_WORDS[language]['Idle']}")
    return f"() => (document.querySelector('#jp-main-statusbar')?.textContent || '').includes({idle})"


KERNEL_IDLE_JS = kernel_idle_js("en")

# Error outputs (a traceback) shown anywhere in the notebook.
_ERROR_OUTPUTS_JS = """() => [...document.querySelectorAll('.jp-Notebook .jp-OutputArea-output')]
    .map(o => o.innerText).filter(t => /Traceback/.test(t)).map(t => t.slice(0, 400))"""

# The outputs' text of every cell (markdown cells too, so the index is the notebook's cell index).
_CELL_OUTPUTS_JS = """() => [...document.querySelectorAll('.jp-Notebook .jp-Cell')]
    .map(cell => [...cell.querySelectorAll('.jp-OutputArea-output')].map(o => o.innerText).join('\\n'))"""


# --------------------------------------------------------------------------------------------------
# One notebook in one page
# --------------------------------------------------------------------------------------------------


def new_browser_context(browser):
    """A browser context in which every request that does not go to this machine is aborted.

    The pattern is matched inside Playwright's driver, so requests to the local server never wait for Python
    (a Python route handler runs only while the test is calling Playwright, not during ``time.sleep``).
    One context serves the whole session: its cache keeps JupyterLab's scripts between notebooks.
    """
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, device_scale_factor=1)
    context.blocked_requests = []

    def block(route):
        context.blocked_requests.append(route.request.url)
        route.abort()

    context.route(NOT_LOCAL, block)
    return context


@contextlib.contextmanager
def page_from_file(browser, path: Path, width: int, height: int):
    """A page the course wrote (a report, a feedback page), opened from its file as its reader opens it, with no
    network: every request that is not for a ``file:`` or ``data:`` URL is refused.

    Yields the page once it has loaded and half a second has passed (an ``onerror`` would have run by then),
    after checking that it asked for nothing off the machine and raised no JavaScript error.
    """
    context = browser.new_context(viewport={"width": width, "height": height}, device_scale_factor=1)
    requested, errors = [], []

    def refuse(route):
        requested.append(route.request.url)
        route.abort()

    context.route(re.compile(r"^(?!(file|data):)"), refuse)
    try:
        page = context.new_page()
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        page.wait_for_timeout(500)
        assert requested == [], f"{path.name}, opened from its file, asked for {requested}"
        assert errors == [], f"{path.name} raised JavaScript errors: {errors}"
        yield page
    finally:
        context.close()


@dataclass
class PageWatch:
    """What happened on a page besides what the test did: JavaScript errors and console errors."""

    page_errors: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)

    def attach(self, page) -> None:
        page.on(
            "pageerror", lambda error: self.page_errors.append(f"{error.name}: {error.message}\n{error.stack or ''}")
        )
        page.on(
            "console", lambda message: self.console_errors.append(message.text) if message.type == "error" else None
        )


# The prompt of every code cell and the kernel's status, read in one go from the page.
_RUN_STATE_JS = """() => {
  const prompts = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')]
      .map(p => p.textContent.trim());
  const status = document.querySelector('#jp-main-statusbar');
  return {prompts, status: status ? status.textContent : ''};
}"""


def pause(page, seconds: float) -> None:
    """Wait while letting Playwright deliver the page's events (time.sleep would hold them back)."""
    if page is None or page.is_closed():
        time.sleep(seconds)
    else:
        page.wait_for_timeout(seconds * 1000)


def wait_until(condition, timeout: float, interval: float = 0.1, what: str = "condition", page=None):
    """Poll ``condition()`` until it returns something truthy; return it, or raise TimeoutError."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        pause(page, interval)


def _file_browser_width(page) -> float:
    return page.evaluate("() => document.querySelector('#filebrowser')?.getBoundingClientRect().width || 0")


def menu_bar_labels(page) -> list[str]:
    """The menus of JupyterLab's menu bar, as they read ("File", "Edit", ... or "Файл", "Редактировать", ...)."""
    return [label.strip() for label in page.locator("#jp-menu-panel .lm-MenuBar-item").all_inner_texts()]


def check_interface_language(page, language: str) -> None:
    """JupyterLab's own interface speaks ``language``: its File and Edit menus read as LAB_WORDS has them."""
    words = LAB_WORDS[language]
    labels = menu_bar_labels(page)
    missing = [words[menu] for menu in ("File", "Edit") if words[menu] not in labels]
    assert not missing, (
        f"JupyterLab's interface is not in the language {language!r}: no menu {missing} in its menu bar {labels} "
        f"(JupyterLab's language pack, and tools/lab_config_{language}/ on tools/lab.py's JUPYTER_CONFIG_PATH)"
    )


def choose_menu_item(page, menu: str, item: str) -> None:
    """A command chosen from JupyterLab's menu bar, as a learner chooses it: ``menu`` → ``item``."""
    page.locator("#jp-menu-panel .lm-MenuBar-item", has_text=re.compile(rf"^{re.escape(menu)}$")).click()
    command = page.locator(".lm-Menu-item", has_text=item).first
    try:
        command.wait_for(timeout=10_000)
    except Exception:  # noqa: BLE001 - Playwright's timeout: said in the menu's own words instead
        shown = page.locator(".lm-Menu-item .lm-Menu-itemLabel").all_inner_texts()
        raise AssertionError(f"no command {item!r} in JupyterLab's {menu!r} menu, which shows {shown}") from None
    command.click()


class LabWindow:
    """One JupyterLab page kept open while notebooks are opened in it one after another, as a learner keeps the lab
    open: File → Open from Path…, then File → Close All Tabs. Booting JupyterLab was 3 to 5 s of the 6 that a
    fresh page took to show a notebook with its kernel up (measured here, on a loaded machine), once per notebook.

    Before each notebook the window is put back as it was when JupyterLab started (its size, the file browser
    open or closed); a notebook that fails leaves the window ``broken`` and the next one gets a fresh page."""

    def __init__(self, server: LabServer, context):
        self.server, self.context = server, context
        self.page = context.new_page()
        self.page.set_default_timeout(30_000)
        self.watch = PageWatch()
        self.watch.attach(self.page)
        self.broken = False
        self.words = LAB_WORDS[server.language]  # the words of its interface
        self.page.goto(f"{server.base_url}/lab?reset&token={server.token}")  # ?reset: an empty workspace
        self.page.wait_for_selector("#jp-menu-panel .lm-MenuBar-item", timeout=90_000)
        self.page.wait_for_selector(".jp-SideBar .lm-TabBar-tab[data-id='filebrowser']", timeout=90_000)
        self.viewport = dict(self.page.viewport_size)
        self.file_browser_open = _file_browser_width(self.page) >= 50

    def as_it_started(self) -> None:
        """The window's size and the file browser as JupyterLab started with them."""
        if self.page.viewport_size != self.viewport:
            self.page.set_viewport_size(self.viewport)
        if self.file_browser_open:
            open_file_browser(self.page)
        else:
            close_file_browser(self.page)

    def close_all_tabs(self) -> None:
        """File → Close All Tabs; a notebook with unsaved changes (a widget moved after the save) is discarded."""
        choose_menu_item(self.page, self.words["File"], self.words["Close All Tabs"])
        deadline = time.monotonic() + 30
        discard_label = re.compile(rf"^{re.escape(self.words['Discard'])}$")
        while self.page.locator(".jp-NotebookPanel").count():
            discard = self.page.locator(".jp-Dialog button", has_text=discard_label)
            if discard.count():
                discard.first.click()
            if time.monotonic() > deadline:
                raise TimeoutError("the notebook's tab did not close within 30 s")
            pause(self.page, 0.1)

    def close(self) -> None:
        if not self.page.is_closed():
            self.page.close()


class NotebookSession:
    """A notebook opened in JupyterLab: in a page of its own, or in a LabWindow shared by a session's notebooks."""

    def __init__(self, server: LabServer, context, kind: str, assignment: str, window: LabWindow | None = None):
        self.server, self.kind, self.assignment, self.window = server, kind, assignment, window
        self.path = server.notebook_path(kind, assignment)
        self.timings: dict[str, float] = {}  # seconds per phase, reported by the tests
        self.words = LAB_WORDS[server.language]  # the words of JupyterLab's interface
        if window is None:
            self.watch = PageWatch()
            self.page = context.new_page()
            self.page.set_default_timeout(30_000)
            self.watch.attach(self.page)
        else:
            self.watch, self.page = window.watch, window.page
        self.errors_before = len(self.watch.page_errors)  # the window's, from the notebooks before this one

    @property
    def page_errors(self) -> list[str]:
        """The JavaScript errors the page raised while this notebook was open."""
        return self.watch.page_errors[self.errors_before :]

    def close(self) -> None:
        if self.window is None:
            self.page.close()
        else:
            self.window.close_all_tabs()

    # ---- opening and running -------------------------------------------------------------------
    def open(self, timeout: float = 90.0) -> None:
        started = time.monotonic()
        relative = self.path.relative_to(self.server.root).as_posix()
        if self.window is None:
            # ?reset: start from an empty workspace (no tabs restored from an earlier test)
            self.page.goto(f"{self.server.base_url}/lab/tree/{relative}?reset&token={self.server.token}")
        else:
            self.window.as_it_started()
            check_interface_language(self.page, self.server.language)
            choose_menu_item(self.page, self.words["File"], self.words["Open from Path"])
            self.page.locator(".jp-Dialog input").fill(relative)
            self.page.keyboard.press("Enter")
        self.page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=timeout * 1000)
        self.page.wait_for_function(kernel_idle_js(self.server.language), timeout=timeout * 1000)
        self.timings["open"] = time.monotonic() - started

    def run_all(self, timeout: float = 400.0, stopped_after: float = 5.0) -> float:
        """Run → Run All Cells, through the menu as a learner would; return the seconds it took.

        Nothing is tagged or changed in the notebook: like a learner's Run All, it stops at the first cell
        that raises. Finished when every non-empty code cell shows an execution number and the kernel is
        idle. The kernel reads idle between two cells too, so Run All counts as *stopped* (a failure that
        names the cells never run and the error shown) only when the kernel has stayed idle with cells
        unrun and the prompts unchanged for ``stopped_after`` seconds.
        """
        start = time.monotonic()
        code_cells = [c for c in nbformat.read(self.path, as_version=4).cells if c.cell_type == "code"]
        must_run = [i for i, cell in enumerate(code_cells) if cell.source.strip()]
        choose_menu_item(self.page, self.words["Run"], self.words["Run All Cells"])
        idle, stopped = f"| {self.words['Idle']}", re.compile(rf"\| ({self.words['Dead']}|{self.words['Unknown']})")
        quiet = {"prompts": None, "since": time.monotonic()}

        def finished():
            state = self.page.evaluate(_RUN_STATE_JS)
            if stopped.search(state["status"]):
                raise AssertionError(
                    f"the kernel died during Run All of {self.kind} {self.assignment}\n{self.diagnostics()}"
                )
            prompts = state["prompts"]
            if len(prompts) != len(code_cells):
                return False
            is_idle = idle in state["status"]
            unrun = [i for i in must_run if not re.fullmatch(r"\[\d+\]:?", prompts[i])]
            if is_idle and not unrun:
                return True
            if not is_idle or "[*]:" in prompts or prompts != quiet["prompts"]:
                quiet.update(prompts=prompts, since=time.monotonic())
            elif time.monotonic() - quiet["since"] > stopped_after:
                errors = self.page.evaluate(_ERROR_OUTPUTS_JS)
                raise AssertionError(
                    f"Run All of {self.kind} {self.assignment} stopped before the end: {len(unrun)} code cells never "
                    f"ran (the first: code cell {unrun[0]}, {_first_line(code_cells[unrun[0]])!r}); errors shown: "
                    f"{errors[:2]}\n{self.diagnostics()}"
                )
            return False

        try:
            wait_until(
                finished,
                timeout=timeout,
                interval=0.25,
                what=f"Run All of {self.kind} {self.assignment}",
                page=self.page,
            )
        except TimeoutError as error:
            raise TimeoutError(f"{error}\n{self.diagnostics()}") from None
        self.timings["run all"] = time.monotonic() - start
        return self.timings["run all"]

    def cell_outputs(self) -> list[str]:
        """The text of each cell's outputs as shown in the page, in notebook order ("" for none)."""
        return self.page.evaluate(_CELL_OUTPUTS_JS)

    def save_and_read(self, timeout: float = 30.0) -> nbformat.NotebookNode:
        """Save the notebook from the browser (toolbar button) and read back what JupyterLab wrote."""
        before = self.path.stat().st_mtime_ns
        self.page.locator(".jp-NotebookPanel-toolbar [data-command='docmanager:save']").first.click()
        try:
            wait_until(
                lambda: self.path.stat().st_mtime_ns != before,
                timeout=timeout,
                what="the notebook to be saved",
                page=self.page,
            )
        except TimeoutError as error:
            raise TimeoutError(f"{error}\n{self.diagnostics()}") from None
        return wait_until(
            lambda: _read_notebook(self.path), timeout=timeout, what="a complete saved notebook", page=self.page
        )

    def diagnostics(self) -> str:
        """What a person needs to see when the page did not do what was expected."""
        shot = self.server.folder / f"{self.kind}-{self.assignment}-{time.monotonic():.0f}.png"
        try:
            self.page.screenshot(path=str(shot))
        except Exception as error:  # noqa: BLE001 - the page may be gone
            shot = f"(no screenshot: {error})"
        status = self.page.evaluate(_RUN_STATE_JS)["status"] if not self.page.is_closed() else "(page closed)"
        return (
            f"page screenshot: {shot}\nstatus bar: {status}\n"
            f"console errors: {self.watch.console_errors[-5:]}\nJupyterLab log:\n{self.server.log_tail(15)}"
        )


@contextlib.contextmanager
def opened_notebook(server: LabServer, context, kind: str, assignment: str, window: LabWindow | None = None):
    """The notebook open with its kernel connected, in a fresh page or in ``window``; afterwards its page or tab is
    closed, the kernel shut down, and any JavaScript error the page raised meanwhile fails the test."""
    session = NotebookSession(server, context, kind, assignment, window)
    try:
        session.open()
        yield session
    except BaseException:
        if window is not None:  # whatever state the failure left it in is not for the next notebook
            window.broken = True
        raise
    finally:
        try:
            if window is None or not window.broken:
                session.close()
        finally:
            server.shut_down_kernels()
    errors = session.page_errors
    assert not errors, f"JavaScript errors on the page of {kind} {assignment}:\n" + "\n".join(errors)


def _read_notebook(path: Path):
    try:
        return nbformat.read(path, as_version=4)
    except Exception:  # noqa: BLE001 - a notebook caught mid-write is read again later
        return None


# --------------------------------------------------------------------------------------------------
# What the run left in the notebook
# --------------------------------------------------------------------------------------------------


def is_test_cell(cell) -> bool:
    nbgrader = cell.metadata.get("nbgrader", {})
    return bool(nbgrader.get("grade")) and not nbgrader.get("solution")


NOT_WRITTEN_YET = re.compile(
    r"^✗ `\w+` (is not written yet|cannot be checked yet: it calls `\w+`, which is not written yet)\b"
)


def is_student(kind: str) -> bool:
    """A learner's copy ("student", "student-ru"), not a solution."""
    return kind.startswith("student")


def kind_language(kind: str) -> str:
    """The language a kind of notebook is written in: "ru" for "student-ru", else "en"."""
    return kind.rpartition("-")[2] if "-" in kind else "en"


def not_written_yet_messages(language: str) -> list[str]:
    """The two "not written yet" messages of heads_and_masks/checks/core.py as a learner reads them in
    ``language``, with the function names replaced by a pattern: taken from the catalog, so an emptied or
    missing translation shows as an English message where a Russian one is expected."""
    from heads_and_masks import i18n

    english = [
        "`{name}` is not written yet: replace `raise NotImplementedError()` with your code",
        "`{name}` cannot be checked yet: it calls `{called}`, which is not written yet "
        "(in `{called}`, replace `raise NotImplementedError()` with your code)",
    ]
    if language == "en":
        return english
    with i18n.use_language(language):
        translated = [i18n._(message) for message in english]
    missing = [message for message, shown in zip(english, translated) if shown == message]
    assert not missing, f"no {language} translation of the message(s) {missing} (heads_and_masks/locale/{language})"
    return translated


def not_written_yet_pattern(language: str) -> re.Pattern:
    """One message of an unfinished exercise, ✗ first, in ``language`` (its words as the catalog has them)."""
    alternatives = [
        re.escape(message.split(":")[0]).replace(re.escape("{name}"), r"\w+").replace(re.escape("{called}"), r"\w+")
        for message in not_written_yet_messages(language)
    ]
    return re.compile(r"^✗ (" + "|".join(alternatives) + ")", re.MULTILINE)


def unexpected_errors(notebook, kind: str) -> list[str]:
    """Error and stderr outputs that should not be there, each described for a person.

    No cell may show an error, in either version. Student notebooks: the test cell of an unfinished
    exercise says so in one message on stderr ("✗ `attention` is not written yet: ..."); no other stderr.
    """
    problems = []
    not_written_yet = not_written_yet_pattern(kind_language(kind)) if is_student(kind) else NOT_WRITTEN_YET
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                traceback = ANSI.sub("", "\n".join(output.get("traceback", [])[-3:]))
                problems.append(f"cell {index} ({_first_line(cell)}): {output.ename}: {output.evalue}\n{traceback}")
            elif output.output_type == "stream" and output.name == "stderr":
                # one message, broken between words into lines that fit the column (heads_and_masks/checks/core.py)
                message = " ".join(output.text.split())
                one = message.count("✗") == 1
                if is_student(kind) and is_test_cell(cell) and one and not_written_yet.match(message):
                    continue
                problems.append(f"cell {index} ({_first_line(cell)}) wrote to stderr: {output.text.strip()[:500]}")
    return problems


def cells_never_run(notebook) -> list[str]:
    return [
        f"cell {i} ({_first_line(c)})"
        for i, c in enumerate(notebook.cells)
        if c.cell_type == "code" and c.source.strip() and c.get("execution_count") is None
    ]


def _first_line(cell) -> str:
    return next((line.strip() for line in cell.source.splitlines() if line.strip()), "")[:60]


# --------------------------------------------------------------------------------------------------
# Widgets in the page
# --------------------------------------------------------------------------------------------------

# Everything displayed as an output: widgets that failed to render, pictures that did not load.
_OUTPUT_HEALTH_JS = """() => {
  const problems = [];
  for (const area of document.querySelectorAll(
      '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.widget-view+json"]')) {
    const text = area.textContent || '';
    if (!area.querySelector('.jupyter-widgets') || /Error displaying widget|Loading widget/.test(text))
      problems.push('a widget output did not render: ' + JSON.stringify(text.slice(0, 200)));
  }
  for (const img of document.querySelectorAll('.jp-OutputArea-output img')) {
    if (!img.complete || img.naturalWidth === 0 || img.naturalHeight === 0)
      problems.push('a picture did not load: ' + (img.getAttribute('src') || '').slice(0, 60));
  }
  return problems;
}"""

# The markdown a widget follows: its section heading and its first paragraph (for the gallery captions).
_CAPTION_JS = """box => {
  let cell = box.closest('.jp-Cell');
  let heading = '', paragraph = '';
  while (cell && !(heading && paragraph)) {
    cell = cell.previousElementSibling;
    if (!cell || !cell.classList.contains('jp-MarkdownCell')) continue;
    const rendered = cell.querySelector('.jp-RenderedMarkdown');
    if (!rendered) continue;
    if (!paragraph) { const p = rendered.querySelector('p'); if (p) paragraph = p.innerText; }
    const h = [...rendered.querySelectorAll('h1, h2, h3')].pop();
    if (h && !heading) heading = h.innerText.replace(/¶$/, '').trim();
  }
  return {heading, paragraph};
}"""


def output_problems(page) -> list[str]:
    return page.evaluate(_OUTPUT_HEALTH_JS)


def widget_state(box) -> dict:
    """The picture (src of the first img) and the readouts (text of table.course-readouts) of a widget box."""
    return box.evaluate("""box => {
      const img = box.querySelector('img');
      const table = box.querySelector('table.course-readouts');
      const rows = table ? [...table.querySelectorAll('tr')].map(tr => [...tr.querySelectorAll('td')].map(td => td.innerText.trim())) : [];
      return {src: img ? img.getAttribute('src') : null,
              width: img ? img.naturalWidth : 0, height: img ? img.naturalHeight : 0,
              loaded: img ? img.complete : false,
              readouts: Object.fromEntries(rows.filter(r => r.length >= 2).map(r => [r[0], r[1]])),
              readout_text: table ? table.innerText : null,
              // all the text beside the picture: the table and what stands with it (a key, the mask's name)
              readout_words: table ? table.parentElement.innerText : null};
    }""")


def layout_problems(box) -> list[str]:
    """What a learner would see wrong in a widget's layout: a picture or readouts cut off at the right
    edge, a readout clipped inside its cell, a readout row or an entry of a colour key (``.course-key``, one
    entry a child) wrapped onto two lines."""
    return box.evaluate("""box => {
      const problems = [];
      const edge = box.getBoundingClientRect().right + 1;
      const img = box.querySelector('img');
      if (img && img.getBoundingClientRect().right > edge)
        problems.push(`the picture runs ${Math.round(img.getBoundingClientRect().right - edge)} px past the widget's edge`);
      // a key's entry is one line: taller than one and a half of its lines, it has wrapped
      for (const entry of box.querySelectorAll('.course-key > *')) {
        const style = getComputedStyle(entry), height = entry.getBoundingClientRect().height;
        const line = parseFloat(style.lineHeight) || 1.2 * parseFloat(style.fontSize);  // 'normal': about 1.2 em
        if (height > 1.5 * line)
          problems.push(`the colour key's entry "${entry.innerText.trim()}" wraps onto ${Math.round(height / line)} lines`);
      }
      const table = box.querySelector('table.course-readouts');
      if (!table) return problems;
      const rows = [...table.querySelectorAll('tr')];
      for (const td of table.querySelectorAll('td')) {
        const rect = td.getBoundingClientRect(), text = td.innerText.trim();
        if (rect.width < 1 || rect.right > edge)
          problems.push(`the readout cell "${text}" is cut off (right ${Math.round(rect.right)} px, widget edge ${Math.round(edge)} px)`);
        if (td.scrollWidth > td.clientWidth + 1)
          problems.push(`the readout cell "${text}" is clipped (${td.scrollWidth} px of text in ${td.clientWidth} px)`);
      }
      for (let parent = table.parentElement; parent && parent !== box.parentElement; parent = parent.parentElement)
        if (parent.scrollWidth > parent.clientWidth + 1 && getComputedStyle(parent).overflowX !== 'visible') {
          problems.push(`the readouts are clipped by their container (${parent.scrollWidth} px in ${parent.clientWidth} px)`);
          break;
        }
      const heights = rows.map(tr => tr.getBoundingClientRect().height).filter(h => h > 0);
      if (heights.length && Math.max(...heights) > 1.6 * Math.min(...heights))
        problems.push(`a readout row wraps onto two lines (row heights ${heights.map(Math.round).join(', ')} px)`);
      return problems;
    }""")


# A laptop: a 1100 × 900 window, with JupyterLab's file browser open (it takes about 250 px of the width).
LAPTOP = {"width": 1100, "height": 900}


def open_file_browser(page) -> float:
    """Open JupyterLab's file browser in the left sidebar if it is closed; return its width in px."""
    width = page.evaluate("() => document.querySelector('#filebrowser')?.getBoundingClientRect().width || 0")
    if width < 50:
        page.locator(".jp-SideBar .lm-TabBar-tab[data-id='filebrowser']").first.click()
        page.wait_for_function(
            "() => (document.querySelector('#filebrowser')?.getBoundingClientRect().width || 0) > 50"
        )
        width = page.evaluate("() => document.querySelector('#filebrowser').getBoundingClientRect().width")
    return width


def close_file_browser(page) -> None:
    """Collapse JupyterLab's left sidebar if the file browser is open in it."""
    width = "() => document.querySelector('#filebrowser')?.getBoundingClientRect().width || 0"
    if page.evaluate(width) >= 50:
        page.locator(".jp-SideBar .lm-TabBar-tab[data-id='filebrowser']").first.click()
        page.wait_for_function(f"() => ({width})() < 50")


# Every output of the notebook fits the window: none wider than its output area (a sideways scroll bar,
# or cut off), none past the window's right edge; every widget drawn, with a size, inside its output area.
_OUTPUTS_FIT_JS = """() => {
  const problems = [], cells = [...document.querySelectorAll('.jp-Notebook .jp-Cell')];
  const edge = document.documentElement.clientWidth + 1;
  for (const output of document.querySelectorAll('.jp-Notebook .jp-OutputArea-output')) {
    const where = `cell ${cells.indexOf(output.closest('.jp-Cell'))}`, area = output.getBoundingClientRect();
    if (output.scrollWidth > output.clientWidth + 1)
      problems.push(`${where}: an output ${output.scrollWidth} px wide in ${output.clientWidth} px (scrolls sideways or is cut off)`);
    if (area.right > edge)
      problems.push(`${where}: an output ends ${Math.round(area.right - edge)} px past the window's right edge`);
    const widget = output.querySelector('.jupyter-widgets');
    if (!widget) continue;
    const drawn = widget.getBoundingClientRect();
    if (drawn.width < 1 || drawn.height < 1)
      problems.push(`${where}: a widget drawn ${Math.round(drawn.width)} × ${Math.round(drawn.height)} px`);
    const widest = Math.max(drawn.right, ...[...widget.querySelectorAll('*')].map(e => e.getBoundingClientRect().right));
    if (widest > area.right + 1)
      problems.push(`${where}: a widget reaches ${Math.round(widest - area.right)} px past its output area`);
  }
  return problems;
}"""


def outputs_that_do_not_fit(page) -> list[str]:
    return page.evaluate(_OUTPUTS_FIT_JS)


def widget_caption(box) -> dict:
    return box.evaluate(_CAPTION_JS)


def control_names(box) -> list[str]:
    """The descriptions of the widget's controls (not the options of its buttons)."""
    return box.evaluate("""box => [...box.querySelectorAll('.widget-label, .widget-label-basic, .course-slider-label, .course-choice-label, .course-dropdown-label, .course-on-off .course-choice-button')]
        .map(e => e.innerText.replace(/\u200b/g, '').trim()).filter(t => t)""")


def wait_for_change(box, before: dict, what: str, timeout: float = 15.0, need=("src", "readout_text")) -> dict:
    """Wait until the widget's picture and readouts both differ from ``before`` and have settled."""

    def changed():
        now = widget_state(box)
        if all(now[key] != before[key] for key in need) and now["loaded"] and now["width"] > 0:
            return now
        return None

    try:
        wait_until(changed, timeout=timeout, interval=0.1, what=what, page=box.page)
    except TimeoutError:
        now = widget_state(box)
        names = {"src": "picture (img src)", "readout_text": "readouts", "readout_words": "text beside the picture"}
        unchanged = [names[k] for k in need if now[k] == before[k]]
        raise AssertionError(
            f"{what}: the {' and the '.join(unchanged)} did not change within {timeout:.0f} s "
            f"(readouts before {before['readouts']}, after {now['readouts']})"
        ) from None
    return settle(box)


def settle(box, quiet: float = 0.6, timeout: float = 15.0) -> dict:
    """Wait until the picture and readouts stop changing for ``quiet`` seconds (a drag sends many updates)."""
    last, since = widget_state(box), time.monotonic()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pause(box.page, 0.1)
        now = widget_state(box)
        if (now["src"], now["readout_text"]) != (last["src"], last["readout_text"]):
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet and now["loaded"]:
            return now
    return last


def slider_handle(box):
    """The range input of the first slider in ``box`` (heads_and_masks/widgets/slider.py)."""
    return box.locator("input.course-slider-input").first


def handle_position(handle) -> tuple[float, float, float]:
    """(position, first, last) of a slider: positions are 0 … k − 1 (see ``slider_text`` for what it shows)."""
    return tuple(handle.evaluate("h => [h.value, h.min, h.max].map(Number)"))


def slider_text(handle) -> str:
    """What the slider says its value is (its aria-valuetext, the text beside it): "4,096", "1.50"."""
    return handle.evaluate("h => h.getAttribute('aria-valuetext')")


def press_slider_key(handle, towards_max: bool | None = None) -> str:
    """Focus the slider and press one arrow key, towards whichever end is further away unless told."""
    value, low, high = handle_position(handle)
    if towards_max is None:
        towards_max = value < high
    key = "ArrowRight" if towards_max else "ArrowLeft"
    handle.focus()
    handle.press(key)
    return key


def drag_slider(page, handle, fraction: float = 0.35, towards_max: bool | None = None) -> float:
    """Drag the slider's thumb with the mouse by ``fraction`` of the track, towards the end further away
    unless told. The thumb's centre is found from the value (the track runs between half a thumb from
    each end; Chromium's thumb is about 16 px wide)."""
    track = handle.bounding_box()
    value, low, high = handle_position(handle)
    thumb = 16.0
    x = track["x"] + thumb / 2 + (track["width"] - thumb) * ((value - low) / (high - low) if high > low else 0.0)
    y = track["y"] + track["height"] / 2
    if towards_max is None:
        towards_max = track["x"] + track["width"] - x >= x - track["x"]
    distance = fraction * track["width"] * (1 if towards_max else -1)
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + distance, y, steps=10)
    page.mouse.up()
    return distance
