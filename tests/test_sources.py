"""Every GitHub file the course cites is pinned to a commit.

A link to a branch (``blob/main/...``) breaks when the file moves or is deleted, and then says nothing about
what the course read: both happened to files cited here (mistral-src's one_file_ref.py, removed; MaxText's
configs, moved under src/). A link to a commit keeps showing the text that was read.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# A file-level link on GitHub: github.com/<owner>/<repo>/blob|raw/<ref>/<path>, or raw.githubusercontent.com.
FILE_LINK = re.compile(
    r"(?:github\.com/[\w.-]+/[\w.-]+/(?:blob|raw)|raw\.githubusercontent\.com/[\w.-]+/[\w.-]+)/(?P<ref>[^/\s\"')\]]*)"
)
COMMIT = re.compile(r"[0-9a-f]{40}")


def cited_files():
    """The files where the course cites sources: its data, notebook sources, built notebooks, package, docs."""
    patterns = (
        "data/*.csv",
        "authoring/*.py",
        "notebooks/**/*.ipynb",
        "solutions/**/*.ipynb",
        "heads_and_masks/**/*.py",
        "docs/*.md",
        "README.md",
    )
    return sorted(path for pattern in patterns for path in ROOT.glob(pattern))


def unpinned_links(text):
    """The GitHub file links in ``text`` whose ref is not a 40-hex commit."""
    return [m.group(0) for m in FILE_LINK.finditer(text) if not COMMIT.fullmatch(m.group("ref"))]


def test_a_branch_link_is_recognised_and_a_commit_link_accepted():
    branch = "https://github.com/AI-Hypercomputer/maxtext/blob/main/MaxText/configs/models/gpt3-175b.yml"
    commit = "https://github.com/o/r/blob/0123456789abcdef0123456789abcdef01234567/a.py"
    raw = "https://raw.githubusercontent.com/o/r/v1.0/a.py"
    assert unpinned_links(f"see {branch}, {commit} and {raw}.") == [
        "github.com/AI-Hypercomputer/maxtext/blob/main",
        "raw.githubusercontent.com/o/r/v1.0",
    ]


def test_every_github_file_link_is_pinned_to_a_commit():
    found = {
        str(path.relative_to(ROOT)): links
        for path in cited_files()
        if (links := unpinned_links(path.read_text(encoding="utf-8")))
    }
    assert not found, (
        "These GitHub file links name a branch or tag instead of a commit; cite "
        f"github.com/<owner>/<repo>/blob/<40-hex commit>/<path> so the link keeps showing what was read: {found}"
    )
