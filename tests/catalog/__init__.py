"""Catalogs of sample answers, graded with the real nbgrader autograde by tests/test_catalogs.py.

One module per notebook, ``nbNN_<name>.py``, with ``ASSIGNMENT`` and ``ANSWERS``: a list of
:class:`Answer`. An answer replaces the source of some solution cells (by grade_id); every other
solution cell keeps the reference solution, so a wrong answer to one exercise should lose points
on that exercise only.

* ``Answer(name, cells)`` with no ``breaks``: a correct answer, which must earn full marks.
* ``Answer(name, cells, breaks="split_heads", says="(d h)")``: a realistic mistake (:func:`mistakes` writes
  the mistakes of one exercise as a table); the test cells of
  exercise ``split_heads`` (grade ids starting with ``test_split_heads``) must lose points, every
  other exercise must keep full marks, and the failure text of a broken test cell must contain
  ``says`` (case-insensitive), so the learner is told the misconception. An exercise that builds on the
  broken one (it calls the learner's own function, as the course's rule says) may lose points too when
  it is listed in ``cascades``.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import textwrap


@dataclasses.dataclass(frozen=True)
class Answer:
    name: str
    cells: dict[str, str]
    breaks: str | None = None
    says: str | tuple[str, ...] = ()
    untouched: bool = False  # the student notebook as released: must score 0 everywhere
    # exercises that call the broken one (the learner's own earlier function) and may lose points with it
    cascades: tuple[str, ...] = ()
    # only the graded run can judge it: it never returns (the grader has time limits), or it fools what a
    # notebook can measure (the grader also reads the kernel's memory cgroup)
    graded_only: bool = False

    @property
    def correct(self) -> bool:
        return self.breaks is None and not self.untouched

    def source(self, grade_id: str) -> str:
        return textwrap.dedent(self.cells[grade_id]).strip("\n")

    @property
    def phrases(self) -> tuple[str, ...]:
        return (self.says,) if isinstance(self.says, str) else tuple(self.says)


def mistakes(exercise: str, *rows: tuple[str, str | tuple[str, ...], str]) -> list[Answer]:
    """The realistic mistakes of one exercise, a row each: ``(name, says, the answer cell's source)``."""
    return [Answer(name, {exercise: source}, breaks=exercise, says=says) for name, says, source in rows]


def edited(source: str, *edits: tuple[str, str]) -> str:
    """``source`` with each ``(old, new)`` replaced in turn; every ``old`` must be there (an edit that finds
    nothing would leave a correct answer among the mistakes)."""
    for old, new in edits:
        if old not in source:
            raise ValueError(f"{old!r} is not in the answer being edited")
        source = source.replace(old, new)
    return source


def catalogs() -> dict[str, list[Answer]]:
    """{assignment: answers} for every catalog module in this package."""
    found = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("nb"):
            module = importlib.import_module(f"{__name__}.{info.name}")
            found[module.ASSIGNMENT] = module.ANSWERS
    return found
