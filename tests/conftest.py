"""Fixtures shared by the tests (the helpers live in tests/course.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from course import REPO  # noqa: E402  (also puts autograde/, tools/ and tests/ on sys.path)


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Where tests leave pictures and reports for a person to look at (ignored by git)."""
    folder = REPO / "test-artifacts"
    folder.mkdir(exist_ok=True)
    return folder


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
