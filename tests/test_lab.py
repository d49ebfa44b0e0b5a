"""`make lab` (tools/lab.py): the first start copies the notebooks into my-work/ and serves them;
a later start never overwrites a learner's answers.

Run on a copy of the repository's layout (tools/lab.py and notebooks/), so the real my-work/ is
never touched.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from course import ASSIGNMENTS, REPO


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def repo_copy(tmp_path: Path) -> Path:
    (tmp_path / "tools").mkdir()
    shutil.copy(REPO / "tools" / "lab.py", tmp_path / "tools" / "lab.py")
    shutil.copytree(REPO / "notebooks", tmp_path / "notebooks")
    return tmp_path


def start_lab(root: Path, port: int, token: str) -> subprocess.Popen:
    command = [sys.executable, str(root / "tools" / "lab.py"), "--ServerApp.ip=127.0.0.1",
               f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
               "--LabApp.news_url=", "--ServerApp.open_browser=False"]
    # its own process group: lab.py starts JupyterLab as a child, and both must stop (as with Ctrl-C)
    return subprocess.Popen(command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            stdin=subprocess.DEVNULL, start_new_session=True)


def fetch(port: int, token: str, path: str, deadline: float):
    """GET the server's JSON API (waiting for the server to come up); (status, data)."""
    url = f"http://127.0.0.1:{port}{path}"
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    while True:
        try:
            with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 (localhost only)
                return response.status, json.loads(response.read())
        except (ConnectionError, urllib.error.URLError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def stop(process: subprocess.Popen) -> str:
    """Interrupt lab.py and JupyterLab as Ctrl-C would; the output they printed."""
    os.killpg(process.pid, signal.SIGINT)
    time.sleep(0.5)
    os.killpg(process.pid, signal.SIGINT)  # JupyterLab asks for a second Ctrl-C to shut down
    try:
        output, _ = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate(timeout=30)
    return output


def test_lab_copies_the_notebooks_serves_them_and_keeps_the_learners_answers(repo_copy: Path):
    token, port = secrets.token_hex(16), free_port()
    process = start_lab(repo_copy, port, token)
    try:
        status, listing = fetch(port, token, "/api/contents/my-work", time.monotonic() + 90)
        assert status == 200
        assert sorted(item["name"] for item in listing["content"]) == ASSIGNMENTS
        status, model = fetch(port, token, "/api/contents/my-work/00_start_here/00_start_here.ipynb",
                              time.monotonic() + 10)
        assert status == 200 and model["type"] == "notebook"
    finally:
        output = stop(process)
    assert f"Copied {len(ASSIGNMENTS)} notebooks into my-work/" in output, output[-2000:]
    assert f"http://127.0.0.1:{port}/" in output, "the URL to open was not printed:\n" + output[-2000:]

    # the learner writes an answer; the next start keeps it and copies nothing
    mine = repo_copy / "my-work" / "00_start_here" / "00_start_here.ipynb"
    notebook = nbformat.read(mine, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell("my_answer = 42"))
    nbformat.write(notebook, mine)
    port = free_port()
    process = start_lab(repo_copy, port, token)
    try:
        fetch(port, token, "/api/contents/my-work", time.monotonic() + 90)
    finally:
        output = stop(process)
    assert "Copied" not in output, output[-2000:]
    assert nbformat.read(mine, as_version=4).cells[-1].source == "my_answer = 42", "make lab overwrote an answer"
