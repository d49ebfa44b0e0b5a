"""`make lab` (tools/lab.py), as a learner studying on their own gets it.

* The first start copies the notebooks into my-work/ and serves them; a later start never overwrites
  a learner's answers.
* The URL printed last opens my-work/00_start_here/00_start_here.ipynb, and the file browser starts in
  my-work/.
* nbgrader is quiet and correct for self-study: of its tools only the Validate button is served (no
  Assignments or Courses tab, no exchange, no Formgrader or Create Assignment), no "No nbgrader_config.py"
  warning, and `nbgrader validate` works in the lab's terminals (the environment's bin/ on their PATH
  even when lab.py was started from a shell that does not have it).
* The instructor's lab (`make instructor-lab`) has every nbgrader tool, on the course's configuration.

Run on a copy of the repository's layout (tests/lab_process.py), so the real my-work/ is never touched.
What the learner sees in the browser is in browser/test_browser_lab.py.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import nbformat
import pytest
from lab_process import LabProcess, copy_repository_layout

from course import ASSIGNMENTS, kernel_reply_language_info

START = "my-work/00_start_here/00_start_here.ipynb"
NOT_WRITTEN = "✗ `attention` is not written yet: replace `raise NotImplementedError()` with your code"
# the course's Validate for the written answer left as it was (nbgrader's own: "You did not provide a response."
# under "The following cell failed"): the question, what it asks, where to write (autograde/validator.py)
UNANSWERED = "Your answer to the written question “Why subtract the largest score?” is still blank."
UNANSWERED_ASKS = "Show why the weights do not change, and say what goes wrong without it."
UNANSWERED_WHERE = "in place of YOUR ANSWER HERE"
# nbgrader's tools a self-study learner has no use for (no course, no exchange) or must not see (instructor's)
HIDDEN_PLUGINS = {
    "@jupyter/nbgrader:assignment-list",
    "@jupyter/nbgrader:course-list",
    "@jupyter/nbgrader:create-assignment",
    "@jupyter/nbgrader:formgrader",
    "@jupyter/nbgrader:menu",
}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """One lab.py running for the module's tests; its whole output is in ``lab.output`` once stopped."""
    folder = tmp_path_factory.mktemp("lab")
    running = LabProcess(copy_repository_layout(folder / "repo"), runtime=folder / "runtime").start()
    try:
        running.api("/api/status", deadline=time.monotonic() + 120)
        yield running
    finally:
        running.stop()


def test_lab_copies_the_notebooks_serves_them_and_keeps_the_learners_answers(tmp_path: Path):
    root = copy_repository_layout(tmp_path / "repo")
    lab = LabProcess(root, runtime=tmp_path / "runtime").start()
    try:
        status, listing = lab.api("/api/contents/my-work", deadline=time.monotonic() + 120)
        assert status == 200
        assert sorted(item["name"] for item in listing["content"]) == ASSIGNMENTS
        status, model = lab.api(f"/api/contents/{START}")
        assert status == 200 and model["type"] == "notebook"
    finally:
        output = lab.stop()
    assert f"Copied {len(ASSIGNMENTS)} notebooks into my-work/" in output, output[-2000:]

    # the learner writes an answer; the next start keeps it and copies nothing
    mine = root / START
    notebook = nbformat.read(mine, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell("my_answer = 42"))
    nbformat.write(notebook, mine)
    lab = LabProcess(root, runtime=tmp_path / "runtime").start()
    try:
        lab.api("/api/contents/my-work", deadline=time.monotonic() + 120)
    finally:
        output = lab.stop()
    assert "Copied" not in output, output[-2000:]
    assert nbformat.read(mine, as_version=4).cells[-1].source == "my_answer = 42", "make lab overwrote an answer"


def test_the_url_printed_last_opens_00_start_here_and_the_file_browser_starts_in_my_work(lab):
    lab.wait_for_output("JupyterLab is running")
    time.sleep(1.0)  # what the server prints after the URL, if anything
    urls = re.findall(r"http://\S+", lab.output)
    # the notebook, with the file browser in my-work/ (JupyterLab's own parameter of its tree URLs)
    expected = f"{lab.base_url}/lab/tree/{START}?file-browser-path=my-work&token={lab.token}"
    assert urls[-1] == expected, f"the last URL printed is {urls[-1]}, not the notebook's {expected}"
    assert all(url.startswith(f"{lab.base_url}/lab/tree/{START}") for url in urls), urls  # none opens the Launcher

    config = lab.page_config(expected.removeprefix(lab.base_url))
    assert config["treePath"] == START, "the URL does not open the notebook (JupyterLab's treePath)"
    assert config["preferredPath"] == "my-work", "the file browser's home is not my-work/"
    status, model = lab.api(f"/api/contents/{START}")
    assert status == 200 and model["type"] == "notebook"


def test_lab_in_russian_opens_the_russian_notebooks_in_a_russian_jupyterlab(lab, tmp_path: Path):
    """`make lab LANG=ru` (or a Russian locale, as make passes $(LANG)): the Russian notebooks copied into
    my-work/ru/, the first of them opened, JupyterLab's default display language Russian; the English lab
    of the same machine stays English."""
    root = copy_repository_layout(tmp_path / "repo")
    russian = LabProcess(root, runtime=tmp_path / "runtime", arguments=("--language", "ru_RU.UTF-8")).start()
    start = "my-work/ru/00_start_here/00_start_here.ipynb"
    try:
        status, listing = russian.api("/api/contents/my-work/ru", deadline=time.monotonic() + 120)
        assert status == 200 and sorted(item["name"] for item in listing["content"]) == ASSIGNMENTS
        status, model = russian.api(f"/api/contents/{start}")
        assert status == 200 and model["content"]["metadata"]["heads_and_masks"]["language"] == "ru"
        assert "Добро пожаловать" in model["content"]["cells"][0]["source"] + model["content"]["cells"][1]["source"]
        russian.wait_for_output("JupyterLab is running")
        urls = re.findall(r"http://\S+", russian.output)
        assert urls[-1].startswith(f"{russian.base_url}/lab/tree/{start}?file-browser-path=my-work/ru"), urls[-1]
        # the lab's default display language (the user has chosen none: JupyterLab takes the schema's default)
        status, settings = russian.api("/lab/api/settings/@jupyterlab/translation-extension:plugin")
        assert status == 200 and settings["schema"]["properties"]["locale"]["default"] == "ru_RU", settings
        status, packs = russian.api("/lab/api/translations/ru_RU")
        assert status == 200 and packs["data"], "JupyterLab's Russian language pack is not installed"
    finally:
        output = russian.stop()
    assert f"Copied {len(ASSIGNMENTS)} notebooks into my-work/ru/" in output, output[-2000:]
    status, settings = lab.api("/lab/api/settings/@jupyterlab/translation-extension:plugin")
    assert status == 200 and settings["schema"]["properties"]["locale"]["default"] == "default", "not English"


def test_only_the_validate_button_of_nbgrader_is_served(lab):
    config = lab.page_config("/lab")
    disabled = set(config["disabledExtensions"])
    assert HIDDEN_PLUGINS <= disabled, f"shown to the learner: {sorted(HIDDEN_PLUGINS - disabled)}"
    assert "@jupyter/nbgrader:validate-assignment" not in disabled
    assert any(e["name"] == "@jupyter/nbgrader" for e in config["federated_extensions"])
    # the server side: no formgrader, no assignment or course list (they would look for an exchange)
    for path in ("/formgrader", "/assignments", "/courses"):
        status, _ = lab.request(path)
        assert status == 404, f"{path} is served (HTTP {status})"
    status, version = lab.api("/nbgrader_version?version=0.9.6")
    assert status == 200 and version["success"]


def test_an_authoring_file_opens_as_a_notebook(lab):
    """For authors (README): JupyterLab opens authoring/*.py as notebooks through Jupytext, graded cells and all."""
    config = lab.page_config("/lab")
    assert any(e["name"] == "jupyterlab-jupytext" for e in config["federated_extensions"]), config[
        "federated_extensions"
    ]
    status, model = lab.api("/api/contents/authoring/01_heads.py?type=notebook&content=1")
    assert status == 200 and model["type"] == "notebook", model
    graded = {
        c["metadata"]["nbgrader"]["grade_id"]: c["metadata"]["nbgrader"].get("points")
        for c in model["content"]["cells"]
        if c["metadata"].get("nbgrader", {}).get("grade")
    }
    assert graded.get("test_split_heads") == 3, graded


def test_the_validate_button_reports_the_unwritten_exercise(lab):
    """What the notebook toolbar's Validate button asks the server: a failure, in the checks' own words."""
    status, result = lab.api(f"/assignments/validate?path={START}", method="POST")
    assert status == 200 and result["success"], result
    failed = result["value"].get("failed", [])
    # the exercise in the check's words, and the written answer (markdown, graded by a person) still empty
    # (the check's message is broken between words into lines that fit the lab's column: checks/core.py)
    errors = [" ".join(f["error"].split()) for f in failed]
    assert len(errors) == 2 and errors[0] == NOT_WRITTEN, result["value"]
    assert errors[1].startswith(UNANSWERED), f"the blank written answer is not named: {errors[1]}"
    assert UNANSWERED_ASKS in errors[1] and UNANSWERED_WHERE in errors[1], f"nothing says what to write: {errors[1]}"


def test_nbgrader_validate_works_in_the_labs_terminal(lab):
    """As 00_start_here says: a terminal of the lab starts in my-work/, and nbgrader is on its PATH."""
    printed = lab.run_in_terminal("pwd && nbgrader validate 00_start_here/00_start_here.ipynb")
    assert f"{lab.root / 'my-work'}\r\n" in printed, f"the terminal does not start in my-work/:\n{printed}"
    assert "command not found" not in printed, f"nbgrader is not on the terminal's PATH:\n{printed}"
    assert "VALIDATION FAILED ON 2 CELL(S)" in printed, printed  # the exercise and the written answer
    words = " ".join(printed.split())  # (the messages are broken between words: checks/core.py, the validator)
    assert NOT_WRITTEN in words and UNANSWERED in words, f"the failures are not shown in full:\n{printed}"
    assert UNANSWERED_WHERE in words, f"nothing says where to write:\n{printed}"
    assert "The following cell failed" not in printed, f"nbgrader's words, not the course's:\n{printed}"
    assert "No nbgrader_config.py" not in printed, printed


def test_the_lab_starts_without_nbgrader_or_kernel_warnings(lab):
    lab.request(f"/assignments/validate?path={START}", method="POST")  # nbgrader's config is read by now
    output = lab.output
    for noise in ("No nbgrader_config.py", "exchange", "Exchange", "formgrader does not seem"):
        assert noise not in output, f"{noise!r} in the lab's output:\n{output[-3000:]}"
    nbgrader_warnings = [line for line in output.splitlines() if re.search(r"\[(W|E) .*\].*nbgrader", line)]
    assert not nbgrader_warnings, nbgrader_warnings


def test_the_instructors_lab_has_formgrader_on_the_course_configuration(tmp_path: Path):
    root = copy_repository_layout(tmp_path / "repo", instructor=True)
    lab = LabProcess(root, runtime=tmp_path / "runtime", arguments=("--instructor",)).start()
    try:
        lab.wait_for_output("JupyterLab is running")
        assert (
            re.findall(r"http://\S+", lab.output)[-1]
            == f"{lab.base_url}/lab?file-browser-path=solutions&token={lab.token}"
        )
        disabled = set(lab.page_config("/lab")["disabledExtensions"])
        assert not HIDDEN_PLUGINS & disabled, f"hidden from the instructor: {sorted(HIDDEN_PLUGINS & disabled)}"
        status, assignments = lab.api("/formgrader/api/assignments")
        assert status == 200, assignments
        assert sorted(a["name"] for a in assignments) == ASSIGNMENTS, "formgrader does not read the course's layout"
    finally:
        output = lab.stop()
    assert "No nbgrader_config.py" not in output, output[-3000:]
    assert not (root / "my-work").exists(), "the instructor's lab copied the student notebooks into my-work/"


def test_the_instructors_lab_does_not_reopen_the_learners_notebook(tmp_path: Path):
    """Issue 43, item 10: `make instructor-lab` restored the learner's last layout (same workspace), so it
    reopened their notebook and started its kernel. JupyterLab's front end restores exactly the workspace
    the server sends for /lab (``/lab/api/workspaces/default``): the instructor's must be its own."""
    from jupyterlab_server.workspaces_handler import WorkspacesManager

    learners_notebook = f"notebook:{START}"
    learners_layout = {
        "data": {
            "layout-restorer:data": {
                "main": {"dock": {"type": "tab-area", "currentIndex": 0, "widgets": [learners_notebook]}}
            },
            learners_notebook: {"data": {"path": START, "factory": "Notebook"}},
        },
        "metadata": {"id": "default"},
    }
    root = copy_repository_layout(tmp_path / "repo", instructor=True)
    lab = LabProcess(root, runtime=tmp_path / "runtime", arguments=("--instructor",))
    # where the learner's `make lab` keeps its workspaces (LabProcess gives both labs this user folder)
    learners_workspaces = tmp_path / "jupyter-user" / "workspaces"
    learners_workspaces.mkdir(parents=True)
    WorkspacesManager(learners_workspaces).save("default", json.dumps(learners_layout))
    lab.start()
    try:
        lab.wait_for_output("JupyterLab is running")
        status, workspace = lab.api("/lab/api/workspaces/default")
        assert status == 200, workspace
        restored = json.dumps(workspace)
        assert START not in restored, f"the instructor's lab would reopen the learner's notebook: {restored}"
        status, sessions = lab.api("/api/sessions")
        assert status == 200 and sessions == [], f"kernels started in the instructor's lab: {sessions}"
    finally:
        lab.stop()
    learners_files = [path.read_text() for path in learners_workspaces.iterdir()]
    assert any(START in text for text in learners_files), "the learner's workspace was changed"


def test_the_learners_copies_say_what_their_kernel_will_say_of_its_language(tmp_path: Path):
    """JupyterLab writes the kernel's ``language_info`` into a notebook's metadata as the kernel comes up, and a
    notebook whose metadata changes opens marked modified, untouched. The copies `make lab` makes must already
    hold, word for word, what a real kernel of this environment replies (tests/browser/test_browser_notebooks.py
    checks the tab itself, on every student notebook)."""
    from lab import copy_missing_notebooks

    copied = copy_missing_notebooks(tmp_path / "my-work")
    assert sorted(copied) == sorted(ASSIGNMENTS)
    replied = kernel_reply_language_info()
    for assignment in ASSIGNMENTS:
        notebook = nbformat.read(tmp_path / "my-work" / assignment / f"{assignment}.ipynb", as_version=4)
        written = notebook.metadata.get("language_info")
        assert written == replied, f"{assignment}: the copy says {written}, the kernel replies {replied}"
