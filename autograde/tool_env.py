"""The environment in which the course runs nbgrader and its grading workers as subprocesses."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def tool_env(headless: bool = False) -> dict[str, str]:
    """This environment with its interpreter's folder first on PATH, as in an activated venv.

    nbgrader runs some of its helpers by name (alembic, for the gradebook), so they must be found even
    when the course's Python was called by its full path without activating anything. ``headless``
    also gives matplotlib a non-interactive backend unless one is chosen (grading workers have no display).
    """
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    if headless:
        env.setdefault("MPLBACKEND", "Agg")
    return env
