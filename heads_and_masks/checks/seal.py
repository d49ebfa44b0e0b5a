"""Seals: proof, visible in a graded notebook's outputs, that a check really ran to its end.

Student code runs in the same kernel as the tests, so it could rewrite or skip later test cells
(an IPython input transformer, an AST transformer, an event callback). Each check that completes
prints a line ending in a *seal*, an HMAC of what was checked, keyed by a secret of the grading run.
The grader compares the seals of each test cell with those of the reference solution graded in the
same run; a test cell without them earns nothing and is flagged for review.

The secret reaches the kernel in a file that this module reads and deletes when the kernel starts
(before any student code runs; the sandboxed kernel manager arranges it). Outside grading there is
no secret and no seal is printed.
"""
from __future__ import annotations

import hashlib
import hmac
import os

KEY_FILE_VARIABLE = "HM_SEAL_KEY_FILE"


def _make_sealer():
    path = os.environ.pop(KEY_FILE_VARIABLE, None)
    key = None
    if path:
        try:
            with open(path, "rb") as handle:
                key = handle.read()
            os.remove(path)
        except OSError:
            key = None

    def sealer(text: str) -> str:
        if not key:
            return ""
        return hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()[:20]

    return sealer


_sealer = _make_sealer()
del _make_sealer


def seal_line(what: str) -> str:
    """The closing line of a completed check, with its seal when grading."""
    mark = _sealer(what)
    return f"✓ {what}: complete" + (f" [seal {mark}]" if mark else "")
