"""The checks that the notebooks' test cells run on a learner's answers.

Each exercise has one ``check_<function>`` function. It runs the learner's function on inputs,
compares with the course's reference implementation, and on a mismatch raises
:class:`~heads_and_masks.checks.core.CheckFailed` with a message that says what was expected,
what came back, by how much they differ, and the likely misconception.
"""

from .core import CheckFailed

__all__ = ["CheckFailed"]
