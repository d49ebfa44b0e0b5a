"""The judge: runs a submission's code in a sandboxed kernel and every test cell in the grader's process.

nbgrader's own ``Execute`` runs the test cells (hidden tests included) in the same kernel as the
student's code, which can then read them, rewrite them, or fake what they compare. The judge takes
that step's place in ``Autograde.autograde_preprocessors`` and separates the roles:

1. **The student's code runs in a sandboxed kernel** (``sandbox.py``): every code cell of the
   notebook except the test cells, in order, each under a time limit. Of the course package it has
   only the notebook's allowlist (``kernel_package.py``): no graded function, nothing that computes one.
2. **Every test cell runs here, in the grader's process**, with the real checks. Each name a test
   cell takes from the notebook is a proxy: a student function is called remotely on inputs sent as
   plain data (numbers, strings, numeric arrays, lists, tuples, dicts), and its result comes back as
   plain data. Nothing the student wrote runs in this process; neither the source of the hidden
   tests nor the expected values ever enter the kernel.
3. **Hidden inputs come from the instructor's key**: while a test cell runs, the checks' random
   inputs are drawn from ``HMAC(key, submission | seed)`` (``grading_key.py``).
4. **The outputs are the grader's**: a test cell that passed gets the checks' own lines; one that
   failed gets an error with the checks' message. What the student's code printed while it was being
   tested is dropped. Other cells keep only what the student's own cells printed (plain text, cut
   short); cells the instructor wrote get no outputs at all. Every cell's metadata is already the release's:
   nbgrader's sanitize step ends with ``AdoptRelease`` (adopt_release.py), which cleaned the notebook before the
   judge starts, so nothing the submission says about a cell reaches the graded notebook.

nbgrader then does the rest as usual (``SaveAutoGrades`` reads those outputs: an error scores 0).

A cell (or a call) that runs past its limit is interrupted; a function that timed out once is not
called again; the whole submission has a time budget. A kernel that dies is named with the cell that
killed it. Each of these is a note for the report (``JudgeReport``), never an abort of the run.

Its parts, from the kernel out:

    inside/harness.py   in the kernel: answers the judge's requests (the one ``encode`` on the wire)
    stub_package.py     the course package a grading kernel imports
    kernel_client.py    a student's kernel, started in its sandbox and talked to (``StudentKernel``)
    kernel_supply.py    a worker's kernels, a fresh one per submission, the next one booting meanwhile
    wire.py             what a kernel sent, read as plain data (``decode``)
    remote_calls.py     a student's function called from a test cell, under the notebook's time budget
    adopt_release.py    the submitted notebook cleaned first (nbgrader's sanitize step): the release's metadata
    verdicts.py         one test cell judged here, and its verdict
    judge.py            a whole notebook judged, and nbgrader's preprocessor (this module)
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
from pathlib import Path

import nbformat
from nbgrader.utils import is_grade, is_solution
from traitlets import Bytes, Integer, Unicode

from .adopt_release import ADOPTED, CourseFolders, notebook_key, read_once
from .kernel.kernel_client import HARNESS, CallTimedOut, GradingStopped, kernel_limits
from .kernel.kernel_supply import kernel_supply
from .kernel.remote_calls import Budget
from .kernel.sandbox import REPO, sandbox_available
from .verdicts import VERDICT_KEY, Verdict, verdict_outputs, judge_cell, verdict_metadata

MAX_NOTEBOOK_TEXT = 2**20  # characters of printed output kept for all the student's cells of a notebook
MAX_NOTES = 12  # notes the judge keeps for one notebook


def code_fingerprint(cells: list[str]) -> str:
    """What the hidden inputs of a submission are keyed on: the code the student submitted."""
    digest = hashlib.sha256()
    for source in cells:
        digest.update(source.encode("utf-8", "replace") + b"\0")
    return digest.hexdigest()


@dataclasses.dataclass
class JudgeReport:
    """What the judge saw, for the grading report (one per notebook judged)."""

    notes: list[str] = dataclasses.field(default_factory=list)
    status: str | None = None  # "timed out" / "kernel died" when that happened
    verdicts: dict[str, Verdict] = dataclasses.field(default_factory=dict)
    sandboxed: bool = True
    limits: list[str] = dataclasses.field(default_factory=list)  # the bounds it hit, with its cost (bounds.py)


REPORTS: dict[tuple[str, str, str], JudgeReport] = {}  # (assignment, student, notebook) -> report


def _label(cell, index: int) -> str:
    grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
    first = next((line.strip() for line in cell.source.splitlines() if line.strip() and not line.startswith("#")), "")
    return f"`{grade_id}`" if grade_id else f"cell {index + 1} (`{first[:40]}`)"


def instructor_tests(source: nbformat.NotebookNode) -> dict[str, str]:
    """grade_id -> source of every test cell of the instructor's notebook (hidden tests included)."""
    return {
        c.metadata["nbgrader"]["grade_id"]: c.source
        for c in source.cells
        if c.cell_type == "code" and is_grade(c) and not is_solution(c)
    }


def judge_notebook(
    nb: nbformat.NotebookNode,
    *,
    tests_source: dict[str, str],
    key: bytes | None,
    context: str,
    instructors: list[bool],
    cell_timeout: float = 60,
    budget_seconds: float = 480,
    memory_mb: int = 2048,
    assignment: str | None = None,
    language: str | None = None,
) -> JudgeReport:
    """Judge ``nb`` (a submitted notebook after nbgrader's sanitizing, ``AdoptRelease`` its last step) in place.

    Which cells are tests, and what they run, comes from the instructor's notebook (``tests_source``),
    never from the submission's metadata: a cell with a test's grade id is judged here with the
    instructor's source; every other code cell is the student's and runs in the kernel, whatever its
    metadata says. Every cell's metadata is already the release's (``adopt_release``); a cell that is its released
    counterpart unchanged (``instructors``, one flag a cell) is the instructor's and gets no outputs in the graded
    notebook. The tests run in
    ``language`` (``submission_language``): their messages are the student's language, their verdicts the same.
    """
    from heads_and_masks import i18n
    from heads_and_masks.checks.core import secret_inputs

    report = JudgeReport(sandboxed=sandbox_available()[0])
    tests = []
    for index, cell in enumerate(nb.cells):
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id in tests_source:
            if cell.cell_type != "code" or cell.source != tests_source[grade_id]:
                cell.cell_type, cell.source = "code", tests_source[grade_id]
                cell.setdefault("outputs", [])
                cell.setdefault("execution_count", None)
            tests.append((index, cell))
    test_indices = {i for i, _ in tests}
    budget = Budget(budget_seconds, cell_timeout)
    shown = 0  # characters of the student's printed output kept so far
    stopped = ""  # why grading stopped at an output bound (the kernel was ended): no test runs after it
    kernel = None
    try:
        memory_mb, cpu_seconds = kernel_limits(memory_mb, budget_seconds, assignment)
        kernel = kernel_supply().take(memory_mb, cpu_seconds, assignment)
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code" or index in test_indices:
                continue
            cell.outputs = []
            try:
                limit = budget.next_limit()
            except CallTimedOut:
                report.status = "timed out"
                report.notes.append(
                    f"the time for this notebook ({budget_seconds:g} s) ran out at {_label(cell, index)}"
                )
                report.limits.append(f"time: the notebook's {budget_seconds:g} s ran out at {_label(cell, index)}")
                break
            run = kernel.run(cell.source, min(limit, cell_timeout))
            if not instructors[index]:  # the student's own code: keep what it printed
                kept = run.outputs[:20]
                size = sum(len(o.get("text", "")) + len(o.get("evalue", "")) for o in kept)
                if shown + size > MAX_NOTEBOOK_TEXT:  # many cells that print: the graded notebook stays small
                    if shown <= MAX_NOTEBOOK_TEXT:
                        report.notes.append(
                            f"the notebook printed more than {MAX_NOTEBOOK_TEXT // 2**20} MiB: what "
                            f"{_label(cell, index)} and the cells after it printed is not kept"
                        )
                    kept, size = [], MAX_NOTEBOOK_TEXT + 1
                shown += size
                cell.outputs = [nbformat.from_dict(o) for o in kept]
            if run.error == "Timeout":
                report.status = "timed out"
                report.notes.append(
                    f"{_label(cell, index)} ran longer than {min(limit, cell_timeout):g} s and was "
                    "stopped; the other cells were graded"
                )
                if not kernel.usable:
                    report.notes.append("the kernel could not be interrupted: the cells after it were not run")
                    break
            elif run.error == "OutputLimit":
                stopped = f"grading stopped at {_label(cell, index)}: {kernel.over_limit}"
                report.notes.append(f"{stopped}, the most the grader takes: the cells after it were not run")
                report.limits.append(f"output: {_label(cell, index)}: {kernel.over_limit}")
                break
            elif run.error == "KernelDied":
                report.status = "kernel died"
                report.notes.append(
                    f"the kernel died while running {_label(cell, index)} (a crash such as os._exit "
                    f"or a segfault, or memory beyond {memory_mb} MiB): the cells after it were not run"
                )
                break
            elif run.error == "MemoryError":
                report.notes.append(f"{_label(cell, index)} ran out of memory (the limit is {memory_mb} MiB)")
        if kernel.usable:
            kernel.run(HARNESS, 30)
        secret = secret_inputs(key, context) if key else contextlib.nullcontext()
        # the checks run here, in the grader's process: their messages in the submission's language
        with secret, i18n.use_language(language):
            for index, cell in tests:
                grade_id = cell.metadata["nbgrader"]["grade_id"]
                if stopped:
                    verdict = Verdict(grade_id, False, f"not tested: {stopped}", "OutputLimit")
                else:
                    verdict = judge_cell(kernel, grade_id, tests_source[grade_id], budget)
                report.verdicts[grade_id] = verdict
                cell.outputs = verdict_outputs(verdict)
                cell.metadata[VERDICT_KEY] = verdict_metadata(verdict)
                cell.execution_count = None
                if verdict.ename == "OutputLimit" and not stopped:
                    stopped = f"grading stopped at `{grade_id}`: {kernel.over_limit}"
                    report.notes.append(f"{stopped}, the most the grader takes: the tests after it were not run")
                    report.limits.append(f"output: `{grade_id}` (a call of your function): {kernel.over_limit}")
                elif verdict.ename == "Timeout":
                    report.status = report.status or "timed out"
                    report.notes.append(f"`{grade_id}`: {verdict.message}")
                elif verdict.ename == "KernelDied" and report.status != "kernel died":
                    report.status = "kernel died"
                    report.notes.append(
                        f"the kernel died while `{grade_id}` was testing your code: {verdict.message}; "
                        "the tests after it could not run"
                    )
    except (Exception, GradingStopped) as error:  # noqa: BLE001 - the kernel could not even start (or died): every test fails, with why
        report.status = report.status or "kernel died"
        report.notes.append(f"the notebook's kernel could not run ({type(error).__name__}: {str(error)[:200]})")
        for index, cell in tests:
            grade_id = cell.metadata["nbgrader"]["grade_id"]
            verdict = report.verdicts.get(grade_id) or Verdict(
                grade_id, False, "the kernel could not run", "KernelDied"
            )
            report.verdicts[grade_id] = verdict
            cell.outputs = verdict_outputs(verdict)
            cell.metadata[VERDICT_KEY] = verdict_metadata(verdict)
    finally:
        if kernel is not None:
            kernel_supply().retire(kernel)
    if len(report.notes) > MAX_NOTES:  # e.g. a thousand cells that raise MemoryError: one line in the report
        report.notes[MAX_NOTES - 1 :] = [f"and {len(report.notes) - MAX_NOTES + 1} more notes like these"]
    return report


@read_once
def _instructor_tests(path: Path) -> dict[str, str]:
    return instructor_tests(nbformat.read(path, as_version=4))


class Judge(CourseFolders):
    """nbgrader's execution step, replaced by the judge (``Autograde.autograde_preprocessors``)."""

    timeout = Integer(60, help="seconds for each cell and each call of a student function").tag(config=True)
    budget = Integer(480, help="seconds for a whole notebook, all cells and tests").tag(config=True)
    memory_mb = Integer(2048, help="memory of a grading kernel, MiB").tag(config=True)
    key_file = Unicode("", help="the grading key (grading_key.py); empty: the course's").tag(config=True)
    key = Bytes(b"", help="the grading key itself (a worker's, in memory); empty: key_file's").tag(config=True)

    def preprocess(self, nb, resources):
        from . import grading_key

        assignment, student, name = notebook_key(resources)
        adopted = ADOPTED.pop((assignment, student, name), None)
        if adopted is None or len(adopted.instructors) != len(nb.cells):  # never judge what was not cleaned
            raise RuntimeError(
                f"{assignment}/{name} of {student} was not cleaned by AdoptRelease: it must end "
                "Autograde.sanitize_preprocessors (nbgrader_config.py)"
            )
        root = Path(self.config.CourseDirectory.get("root", REPO))
        key_file = Path(self.key_file) if self.key_file else grading_key.key_path(root)
        key = self.key or grading_key.load_or_create(key_file)  # a worker's is in memory (grade_worker.py)
        tests_source = dict(_instructor_tests(self.source_notebook(assignment, name)))
        code = [
            c.source
            for c in nb.cells
            if c.cell_type == "code" and c.get("metadata", {}).get("nbgrader", {}).get("grade_id") not in tests_source
        ]
        context = f"{assignment}/{name}/{student}/{code_fingerprint(code)}"
        report = judge_notebook(
            nb,
            tests_source=tests_source,
            key=key,
            context=context,
            instructors=adopted.instructors,
            cell_timeout=self.timeout,
            budget_seconds=self.budget,
            memory_mb=self.memory_mb,
            assignment=assignment,
            language=adopted.language,
        )
        REPORTS[(assignment, student, name)] = report
        return nb, resources
