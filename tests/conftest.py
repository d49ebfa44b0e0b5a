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
