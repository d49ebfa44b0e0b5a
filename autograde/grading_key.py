"""The instructor's grading key: the secret from which hidden checks draw their inputs.

The repository is public, hidden tests included: a student can read every seed in ``solutions/``
and compute a table of answers offline. So while grading, every random input of every check is
drawn from ``HMAC(key, assignment / notebook / student / the submission's code / the check's seed)``
(see ``heads_and_masks.checks.core.secret_inputs``): without the key the inputs cannot be known,
and even with the feedback of one submission in hand, any change to the code draws new ones.

The key is made on the first ``make grade`` (32 random bytes, hex, mode 0600) at
``class/grading-key`` in the course root (the class's folder, class_folder.py), which git ignores, or read from the file named by
``HEADS_AND_MASKS_GRADING_KEY_FILE`` (a JupyterHub deployment keeps it in the grader's home or a
secret volume, see docs/jupyterhub.md). It never enters a kernel: kernels get an environment built
from nothing and see no course folder.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from .class_folder import CLASS_FOLDER

KEY_FILE_ENV = "HEADS_AND_MASKS_GRADING_KEY_FILE"


def key_path(course_root: Path) -> Path:
    configured = os.environ.get(KEY_FILE_ENV)
    return Path(configured) if configured else Path(course_root) / CLASS_FOLDER / "grading-key"


def load_or_create(path: Path) -> bytes:
    """The key in ``path``, made there first if there is none (never overwritten)."""
    path = Path(path)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            pass  # another process made it meanwhile: read theirs
        else:
            with os.fdopen(descriptor, "w") as handle:
                handle.write(secrets.token_hex(32) + "\n")
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(descriptor) as handle:
        text = handle.read(200).strip()
    if len(text) < 32:
        raise ValueError(f"the grading key in {path} is too short (at least 32 characters are needed)")
    return text.encode("utf-8")
