"""`make lab` as a process: a copy of the repository's layout, tools/lab.py started in it, stopped as by Ctrl-C.

Used by test_lab.py (the server, its terminals, its nbgrader) and browser/test_browser_lab.py (what the
learner sees). The copy holds tools/lab.py, tools/lab_config/ and notebooks/, so the real my-work/ is never
touched; the kernels import the course package from the environment, as they do for a learner.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from course import REPO

# tools/lab.py and what it imports from beside it (the languages of the course: tools/translations.py)
LAB_TOOLS = ("lab.py", "translations.py")
# The PATH of a shell that knows nothing of the course's environment: lab.py must add it for the terminals.
BARE_PATH = "/usr/local/bin:/usr/bin:/bin"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def copy_repository_layout(destination: Path, instructor: bool = False) -> Path:
    """What `make lab` needs; the instructor's lab also needs the source and the course's nbgrader config."""
    (destination / "tools").mkdir(parents=True)
    for tool in LAB_TOOLS:
        shutil.copy(REPO / "tools" / tool, destination / "tools" / tool)
    for config in (REPO / "tools").glob("lab_config*"):  # lab_config_<language>: JupyterLab in that language
        shutil.copytree(config, destination / "tools" / config.name)
    for released in REPO.glob("notebooks*"):  # notebooks-<language>: the course in another language
        shutil.copytree(released, destination / released.name)
    shutil.copytree(REPO / "authoring", destination / "authoring")  # what authors open as notebooks (Jupytext)
    shutil.copy(REPO / "pyproject.toml", destination / "pyproject.toml")  # its [tool.jupytext] settings
    if instructor:
        shutil.copytree(REPO / "tools" / "instructor_lab_data", destination / "tools" / "instructor_lab_data")
        shutil.copytree(REPO / "solutions", destination / "solutions")
        (destination / "autograde").mkdir()
        for module in (REPO / "autograde").glob("*.py"):  # not a gradebook or submissions of this checkout
            shutil.copy(module, destination / "autograde" / module.name)
    return destination


def instructor_lab_around(root: Path) -> None:
    """The repository's instructor lab around a graded course's ``root`` (whose class/ holds its gradebook):
    tools/lab.py with its configuration and the instructor's formgrader data, pyproject.toml, and autograde's
    modules and templates (the course's nbgrader_config.py and its feedback page)."""
    (root / "tools").mkdir(exist_ok=True)
    for tool in LAB_TOOLS:
        shutil.copy(REPO / "tools" / tool, root / "tools" / tool)
    shutil.copytree(REPO / "tools" / "lab_config", root / "tools" / "lab_config")
    shutil.copytree(REPO / "tools" / "instructor_lab_data", root / "tools" / "instructor_lab_data")
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    (root / "autograde").mkdir(exist_ok=True)
    for module in (REPO / "autograde").glob("*.py"):
        shutil.copy(module, root / "autograde" / module.name)
    shutil.copytree(REPO / "autograde" / "templates", root / "autograde" / "templates", dirs_exist_ok=True)


@dataclass
class LabProcess:
    """tools/lab.py of ``root`` running on 127.0.0.1:``port``, its output collected."""

    root: Path
    runtime: Path
    arguments: tuple[str, ...] = ()  # for lab.py, before the test's own
    port: int = field(default_factory=free_port)
    token: str = field(default_factory=lambda: secrets.token_hex(16))
    process: subprocess.Popen | None = None
    lines: list[str] = field(default_factory=list)
    reader: threading.Thread | None = None

    def start(self) -> LabProcess:
        command = [
            sys.executable,
            str(self.root / "tools" / "lab.py"),
            *self.arguments,
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            "--LabApp.news_url=",
            "--ServerApp.open_browser=False",
        ]
        # a machine where Jupyter was never used: empty user config, workspaces and runtime folders
        home = self.runtime.parent / "jupyter-user"
        env = dict(
            os.environ,
            PATH=BARE_PATH,
            JUPYTER_RUNTIME_DIR=str(self.runtime),
            PYTHONUNBUFFERED="1",
            JUPYTER_CONFIG_DIR=str(home / "config"),
            JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
        )
        env.pop("JUPYTER_CONFIG_PATH", None)
        env.pop("MPLBACKEND", None)  # the tests' Agg (tests/course.py) is no learner's: the kernels draw inline
        # its own process group: lab.py starts JupyterLab as a child, and both must stop (as with Ctrl-C)
        self.process = subprocess.Popen(
            command,
            cwd=self.root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self.reader = threading.Thread(
            target=lambda: self.lines.extend(iter(self.process.stdout.readline, "")), daemon=True
        )
        self.reader.start()
        return self

    @property
    def output(self) -> str:
        """Everything lab.py and JupyterLab printed so far."""
        return "".join(self.lines)

    def wait_for_output(self, text: str, timeout: float = 120.0) -> str:
        deadline = time.monotonic() + timeout
        while text not in self.output:
            assert self.process.poll() is None, f"lab.py stopped:\n{self.output[-3000:]}"
            assert time.monotonic() < deadline, f"lab.py did not print {text!r}:\n{self.output[-3000:]}"
            time.sleep(0.2)
        return self.output

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def request(self, path: str, method: str = "GET", deadline: float | None = None):
        """(status, body) of a request to the server, waiting until ``deadline`` for it to come up."""
        request = urllib.request.Request(  # noqa: S310 - the test's own server on 127.0.0.1
            f"{self.base_url}{path}", method=method, headers={"Authorization": f"token {self.token}"}
        )
        while True:
            try:
                with urllib.request.urlopen(request, timeout=120) as response:  # noqa: S310 (localhost only)
                    return response.status, response.read().decode()
            except urllib.error.HTTPError as error:
                return error.code, error.read().decode()
            except (ConnectionError, urllib.error.URLError):
                if self.process.poll() is not None:
                    raise AssertionError(
                        f"lab.py stopped (exit code {self.process.returncode}):\n{self.output[-3000:]}"
                    ) from None
                if deadline is None or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def api(self, path: str, method: str = "GET", deadline: float | None = None):
        status, body = self.request(path, method, deadline)
        return status, (json.loads(body) if body else None)

    def page_config(self, path: str) -> dict:
        """The page config JupyterLab sends with the page at ``path`` (what its front end starts with)."""
        status, html = self.request(path)
        assert status == 200, f"{path}: HTTP {status}"
        found = re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', html, re.S)
        assert found, f"{path}: no jupyter-config-data in the page"
        return json.loads(found.group(1))

    def run_in_terminal(self, command: str, timeout: float = 180.0) -> str:
        """Open a terminal of the lab, type ``command`` in it; everything it printed until done."""
        status, terminal = self.api("/api/terminals", method="POST")
        assert status == 200, status
        # In a thread of its own: a browser test earlier in the session may have left an event loop
        # running in this one (Playwright's sync API), where asyncio.run() refuses to start.
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, self._type(terminal["name"], command, timeout)).result()

    async def _type(self, name: str, command: str, timeout: float) -> str:
        from tornado.websocket import websocket_connect

        socket_url = f"ws://127.0.0.1:{self.port}/terminals/websocket/{name}?token={self.token}"
        connection = await websocket_connect(socket_url)
        marker = "finished-" + secrets.token_hex(4)
        await connection.write_message(json.dumps(["stdin", f'{command}; echo {marker[:9]}"{marker[9:]}"\r']))
        printed = ""
        deadline = time.monotonic() + timeout
        while marker not in printed:  # the marker is typed in two pieces, so only the echo matches it
            message = await asyncio.wait_for(connection.read_message(), max(1.0, deadline - time.monotonic()))
            if message is None:
                break
            kind, *payload = json.loads(message)
            if kind == "stdout":
                printed += payload[0]
        connection.close()
        return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\(B", "", printed)

    def stop(self) -> str:
        """Interrupt lab.py and JupyterLab as Ctrl-C would; everything they printed."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGINT)
            time.sleep(0.5)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGINT)  # JupyterLab asks for a second Ctrl-C to shut down
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)
        self.reader.join(timeout=10)
        return self.output
