"""What one submission may cost a class run: the bounds, and how a bound that was hit is recorded.

Every per-cell and per-file limit elsewhere (collect.py's file size, the judge's cell time) still lets one
hand-in cost the class a lot in total: 150,000 tiny markdown cells under the size cap kept the feedback
step busy for minutes on one student. So each step that spends on a submission has a bound of its own:

* **structure** (inspection, before any step spends on the notebook; the similarity page's reading too): its
  cells, the characters of their sources, its stored outputs, how deeply its JSON nests and how many objects
  and arrays it holds (``notebook_shape``, ``structure_limits``);
* **output** (grading, as it arrives from the kernel): the characters a notebook's kernel sends over its
  whole grading (its cells and its functions' calls), and the size of one message (``kernel_client.MAX_KERNEL_OUTPUT``,
  ``kernel_client.MAX_MESSAGE_BYTES``): the cell, and the student's grading, end when either is passed;
* **time**: the judge's per-cell and per-notebook time, the pool's per-submission time;
* **feedback** (``feedback.py``): each student's page is made in a process of its own, with a time and a
  memory limit (``FEEDBACK_SECONDS``, ``FEEDBACK_MEMORY_MB``): one student's page never holds the others'.

A bound that was hit is a line in the student's result (``Result.limits``: which bound, and what the
submission cost), in the report and the CSV: never "graded without trouble".

The figures were chosen from the course's own notebooks (measured; docs/security.md gives the margins):
the largest honest notebook has 73 cells, 33,000 characters of source, nesting 5 deep, and its grading
receives well under a MiB of output from the kernel in any one cell or call.
"""

from __future__ import annotations

import dataclasses

MAX_CELLS = 1_000  # 14 times the largest notebook of the course (03: 73 cells)
MAX_SOURCE_CHARS = 2 * 2**20  # characters of all cells' sources: 60 times the largest (03: 33,000)
MAX_OUTPUTS = 5_000  # stored outputs (cleared before grading, but parsed, validated and rendered before that)
MAX_DEPTH = 64  # nesting of the notebook's JSON: 5 in the course's notebooks, a dozen with widget outputs
# JSON objects and arrays: each becomes Python objects that nbformat converts, validates and copies; 6 million
# empty objects in the metadata (17 MiB, under the size cap) took nbformat 14 s to read and 49 s to write, at
# 7.4 GB (red team). The course's notebooks have at most 271 (03); each stored output adds a few (MAX_OUTPUTS of
# them stay under 25,000)
MAX_CONTAINERS = 100_000
WALKED_CONTAINERS = 10 * MAX_CONTAINERS  # measuring stops there (the depth of a deeper notebook is said as far)
FEEDBACK_SECONDS = 60  # one student's feedback page: 1-2.5 s for an honest one here (on a loaded machine)
FEEDBACK_MEMORY_MB = 1024  # the address space of the process making one page: an honest one peaks at 210 MiB


@dataclasses.dataclass
class NotebookShape:
    """What a notebook's structure costs each step that reads it."""

    cells: int = 0
    source_chars: int = 0
    outputs: int = 0
    depth: int = 0
    containers: int = 0  # JSON objects and arrays (counted up to just past WALKED_CONTAINERS)

    def describe(self) -> str:
        return (
            f"{self.cells:,} cells, {self.source_chars:,} characters of source, {self.outputs:,} stored outputs, "
            f"nested {self.depth} deep, {self.containers:,} JSON objects and arrays"
        )


_WALKED = object()  # the end of a container's items


def notebook_shape(raw) -> NotebookShape:
    """The shape of a notebook parsed from JSON (plain lists and dicts), measured without recursion: a
    notebook of any nesting is measured, never a RecursionError, and a container of any length without a copy.
    The walk stops past WALKED_CONTAINERS: a notebook of millions is refused all the same, in a tenth of the time."""
    shape = NotebookShape()
    stack = [(iter((raw,)), 1)]  # what is left to walk of each container on the way down, and its items' depth
    while stack and shape.containers <= WALKED_CONTAINERS:
        items, depth = stack[-1]
        value = next(items, _WALKED)
        if value is _WALKED:
            stack.pop()
            continue
        shape.depth = max(shape.depth, depth)
        if isinstance(value, (dict, list)):  # (its items are walked one by one: a list of millions costs no copy)
            shape.containers += 1
            stack.append((iter(value.values() if isinstance(value, dict) else value), depth + 1))
    cells = raw.get("cells") if isinstance(raw, dict) else None
    for cell in cells if isinstance(cells, list) else []:
        if not isinstance(cell, dict):
            continue
        shape.cells += 1
        source = cell.get("source", "")
        shape.source_chars += sum(map(len, source)) if isinstance(source, list) else len(str(source))
        outputs = cell.get("outputs")
        shape.outputs += len(outputs) if isinstance(outputs, list) else 0
    if isinstance(cells, list):  # whatever else a list of cells holds counts too
        shape.cells = max(shape.cells, len(cells))
    return shape


def structure_limits(shape: NotebookShape) -> list[str]:
    """Each structure bound the notebook passes, in words (empty: within every bound)."""
    passed = []
    if shape.cells > MAX_CELLS:
        passed.append(f"{shape.cells:,} cells, over the limit of {MAX_CELLS:,}")
    if shape.source_chars > MAX_SOURCE_CHARS:
        passed.append(f"{shape.source_chars:,} characters of source, over the limit of {MAX_SOURCE_CHARS:,}")
    if shape.outputs > MAX_OUTPUTS:
        passed.append(f"{shape.outputs:,} stored outputs, over the limit of {MAX_OUTPUTS:,}")
    if shape.depth > MAX_DEPTH:
        passed.append(f"JSON nested {shape.depth:,} deep, over the limit of {MAX_DEPTH}")
    if shape.containers > MAX_CONTAINERS:
        counted = (
            f"more than {WALKED_CONTAINERS:,}" if shape.containers > WALKED_CONTAINERS else f"{shape.containers:,}"
        )
        passed.append(f"{counted} JSON objects and arrays, over the limit of {MAX_CONTAINERS:,}")
    return passed
