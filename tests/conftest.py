"""Fixtures shared by the tests (the helpers live in tests/course.py)."""

from __future__ import annotations

import atexit
import os
import sys
import tempfile
import time
from pathlib import Path

import pytest

# ------------------------------------------------------------------ nothing left in the temporary folders
_SESSION_STARTED = time.time()
_TEMPORARY_FOLDERS = (Path(tempfile.gettempdir()), Path("/var/tmp"))


def _left_behind() -> list[Path]:
    """The course's scratch folders (``hm-*``) made or changed in a temporary folder since the session began."""
    found = []
    for folder in _TEMPORARY_FOLDERS:
        for entry in folder.glob("hm-*") if folder.is_dir() else ():
            try:
                if entry.lstat().st_ctime >= _SESSION_STARTED:
                    found.append(entry)
            except FileNotFoundError:  # removed while we looked
                pass
    return sorted(found)


def _check_nothing_left_behind() -> None:
    """Runs last of all (``atexit`` runs handlers in reverse order, and this one is registered first): after
    every fixture, ``finally`` and cleanup the suite registers. A test run that leaves a graded class or a
    course copy in /tmp fills the disk of a shared machine, run after run. On CI, where nothing else runs
    beside the suite, a leftover fails the run; elsewhere (other test runs may share /tmp) it is a warning."""
    left = _left_behind()
    if not left:
        return
    listing = "\n".join(f"  {entry}" for entry in left)
    print(f"\nThe test run left {len(left)} folder(s) behind in the temporary folders:\n{listing}", file=sys.stderr)
    if os.environ.get("CI"):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)


atexit.register(_check_nothing_left_behind)

sys.path.insert(0, str(Path(__file__).resolve().parent))
import course  # noqa: E402  (also puts autograde/, tools/ and tests/ on sys.path)
from course import ASSIGNMENTS, REPO  # noqa: E402


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Where tests leave pictures and reports for a person to look at (ignored by git)."""
    folder = REPO / "test-artifacts"
    folder.mkdir(exist_ok=True)
    return folder


# ------------------------------------------------------------------ the class runs, graded ahead
def _class_run_read_by(item) -> str | None:
    """The assignment whose class run (``course.graded_batch``) a test reads: named by its parameters (an
    assignment, or something of an assignment such as an attack), by the assignment its code names, or by
    its module's ASSIGNMENT. None for a test that grades nothing of the kind."""
    function = getattr(item, "function", None)
    if function is None or "graded_batch" not in function.__code__.co_names:
        return None
    callspec = getattr(item, "callspec", None)
    for value in (callspec.params if callspec else {}).values():
        name = value if isinstance(value, str) else getattr(value, "assignment", None)
        if name in ASSIGNMENTS:
            return name
    named = [c for c in function.__code__.co_consts if isinstance(c, str) and c in ASSIGNMENTS]
    return named[0] if named else getattr(item.module, "ASSIGNMENT", None)


# What a browser run of a notebook already shows (test_browser_notebooks.py: Run All in JupyterLab, no error,
# no stderr but the "not written yet" lines, every test cell's ✓ or ✗) need not be run again by nbclient
# (test_notebooks.py) in the same session: each of those runs is left out when its browser run is collected.
RUN_IN_THE_BROWSER = {
    "test_solution_notebook_runs_top_to_bottom": "solution",
    "test_untouched_student_notebook_runs_to_the_end": "student",
}


def pytest_collection_modifyitems(config, items):
    in_the_browser = {
        (item.callspec.params["kind"], item.callspec.params["assignment"])
        for item in items
        if item.nodeid.startswith("tests/browser/test_browser_notebooks.py") and hasattr(item, "callspec")
    }
    again = [
        item
        for item in items
        if getattr(item, "originalname", None) in RUN_IN_THE_BROWSER
        and (RUN_IN_THE_BROWSER[item.originalname], item.callspec.params["assignment"]) in in_the_browser
    ]
    if again:
        config.hook.pytest_deselected(items=again)
        items[:] = [item for item in items if item not in again]


# Work a test reads that is mostly waiting (another user's grading run and its timeouts, a second environment's
# run), done by the same process after the class runs before it (``course.done_ahead``): test -> module:function.
AHEAD_JOBS = {
    "test_attacker_earns_nothing": "test_boundary:hostile_class_graded",  # (the first test to read it)
    "test_a_ballast_earns_nothing_graded_without_root": "test_boundary:ballasts_graded_without_root",
    "test_the_course_runs_on_debians_own_python": "test_pythons:run_on_debians_python",
    "test_a_local_user_reaches_nothing_of_a_grading_run": "test_cluster_boundary:a_local_user_attacks_a_grading_run",
}


def pytest_collection_finish(session):
    """Start grading, in the background, the class runs the collected tests will read, in the order they
    will read them: grading fills the core that the tests before them (browsers, kernels) leave idle.
    Only those runs: a single test file grades only what it reads."""
    if session.config.option.collectonly:
        return
    needed = [_class_run_read_by(item) or AHEAD_JOBS.get(getattr(item, "originalname", None)) for item in session.items]
    course.grade_ahead([a for a in needed if a is not None])


def pytest_sessionfinish(session):
    course.stop_grading_ahead()


@pytest.hookimpl(trylast=True)  # after --durations' slowest tests
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """After the slowest tests (--durations), the time of each test file, setup and teardown included: a file
    whose tests are each quick but many shows here, so drift in `make test`'s total has a name."""
    per_file: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) in ("setup", "call", "teardown"):
                name = report.nodeid.split("::")[0]
                per_file[name] = per_file.get(name, 0.0) + report.duration
    if len(per_file) < 2:
        return
    terminalreporter.write_sep("=", "time per test file (setup, call and teardown)")
    for name, seconds in sorted(per_file.items(), key=lambda item: -item[1])[:25]:
        terminalreporter.write_line(f"{seconds:8.1f}s  {name}")
    terminalreporter.write_line(f"{sum(per_file.values()):8.1f}s  in all ({len(per_file)} files)")
