"""The trust boundary, tested as a hostile class: attackers and honest students graded in one run.

The run goes through everything an instructor runs (collect from a folder, grade in parallel,
feedback with release, CSV, report), with a root-owned canary file outside every scratch folder and
a canary variable in the grader's environment. Then, for every attacker: no points above the blank
notebook; for the boundary: the canary file keeps its content and mode, the canary variable and the
hidden tests appear in no feedback, no autograded notebook, no CSV and no report, the disk holds no
more than the class handed in; and the honest classmates keep full marks.
"""

from __future__ import annotations

import atexit
import copy
import csv
import functools
import json
import os
import re
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest
from catalog import boundary
from catalog.attacks import BALLAST_ATTACKS
from course import (
    REPO,
    TEST_KEY,
    ClassRun,
    Symlink,
    done_ahead,
    grade_class,
    graded_batch,
    require_sandbox,
    solution_notebook,
    student_notebook,
)
from submissions import submission

pytestmark = [
    pytest.mark.slow,
    # what nbformat says of a hand-in with a duplicated or a missing cell id (claims_instructor_ids), read on purpose
    pytest.mark.filterwarnings("ignore::nbformat.warnings.DuplicateCellId"),
    pytest.mark.filterwarnings("ignore::nbformat.warnings.MissingIDFieldWarning"),
]
ASSIGNMENT = boundary.ASSIGNMENT
HONEST = [f"honest{i}" for i in range(3)]
LONG_ID = "x" * 250
ESCAPE_ID = "eve\x1b[2K\x1b[1Gall good"
FORMULA_ID = "=1+2"
CLASHED_ID = "Ann Lee"  # its safe folder name is public: another student hands in under exactly that name
# Who grades (issue 37 §4): root (CI, a course server), or an instructor's ordinary Unix account (a JupyterHub),
# whose kernels all share its uid. The instructor grades a smaller class: the attacks that uid sharing is about
# (the instructor's files, home, gradebook and key, the other kernels' processes and files, the environment).
GRADERS = ["root", "instructor"]
INSTRUCTOR_CLASS = [
    *HONEST,
    "links_for_root",
    "fills_the_disk",
    "reads_the_environment",
    "hunts_the_hidden_tests",
    "hogs_processes",
    "reaches_the_instructor",
    "signals_every_process",
    "writes_its_view",
    "resets_its_memory_peak",
    "fills_its_socket_folder",
    "holds_shared_memory",  # (no memory cgroup without root: what it holds is on the record, docs/security.md)
    "hides_in_a_child",
]


@functools.cache
def hostile_class():
    """The whole hostile class, graded by us (root, in CI), read back from its course: graded ahead, beside the
    tests before this file, when the session collected a test that reads it (conftest AHEAD_JOBS)."""
    return _read_back(done_ahead("test_boundary:hostile_class_graded", hostile_class_graded))


def hostile_class_graded() -> dict:
    """(The work of hostile_class, in this process or the one grading ahead) grade the hostile class in the
    session's scratch folder (the graded class, its canary and hand-ins: removed with it, none left in /tmp)."""
    require_sandbox()
    import course

    scratch = Path(tempfile.mkdtemp(prefix="boundary-", dir=course._SCRATCH))
    canary = _canary(scratch)
    canary_env = "canary-" + secrets.token_hex(8)
    os.environ["HEADS_AND_MASKS_TEST_CANARY"] = canary_env  # the grader's environment (workers inherit it)
    hand_ins = _hand_ins(canary, scratch / "course")
    made = _what_was_made(*_grade_hostile_class(hand_ins, scratch))
    return {**made, "canary": str(canary), "canary_env": canary_env}


def _what_was_made(run, feedback_files, csv_path, rows, report, class_csv) -> dict:
    """Where a graded hostile class is, and what its steps returned, as plain data (``_read_back`` reads it)."""
    return {
        "course": str(run.course.root),
        "feedback": [str(p) for p in feedback_files],
        "csv": str(csv_path),
        "rows": json.loads(json.dumps(rows, default=str)),
        "report": report,
        "class_csv": str(class_csv),
    }


def _read_back(made: dict):
    """The graded class ``made`` describes: (run, canary, canary variable, feedback files, CSV, rows, report,
    class report CSV)."""
    from autograde.course import Course
    from autograde.results import read_results

    course = Course(root=Path(made["course"]))
    results = read_results(course, ASSIGNMENT)
    for result in results.values():
        result.load_notebook(course)
    run = ClassRun(course, ASSIGNMENT, results)
    files = [Path(p) for p in made["feedback"]]
    csv_path, class_csv = Path(made["csv"]), Path(made["class_csv"])
    return run, Path(made["canary"]), made["canary_env"], files, csv_path, made["rows"], made["report"], class_csv


def _canary(folder: Path) -> Path:
    canary = folder / "canary.txt"
    canary.write_text("the canary's own words\n")
    os.chmod(canary, 0o600)
    return canary


def _hand_ins(canary: Path, course_root: Path) -> dict[str, object]:
    """Every hand-in of the hostile class (``canary``: the file the attacks aim at; ``course_root``: where the
    class is graded, which a student who knows the instructor's layout can guess)."""
    hand_ins: dict[str, object] = {name: submission(ASSIGNMENT, {}) for name in HONEST}
    for name, code in {**boundary.CODE_ATTACKS, **boundary.UID_ATTACKS}.items():
        code = code.replace("{CANARY}", str(canary)).replace("{COURSE}", str(course_root))
        hand_ins[name] = submission(ASSIGNMENT, {"attention": code.strip("\n")})
    from heads_and_masks.checks.start_here import check_attention

    hand_ins["seed_table"] = submission(ASSIGNMENT, {"attention": boundary.seed_table_attack(check_attention).strip()})
    solutions_path = str(Path(__file__).resolve().parents[1] / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    hand_ins["linked_solutions"] = {
        f"{ASSIGNMENT}.ipynb": Symlink(solutions_path),
        "solutions.html": Symlink(solutions_path),
    }
    hand_ins["dangling_link"] = {
        f"{ASSIGNMENT}.ipynb": nbformat.writes(submission(ASSIGNMENT, {})).encode(),
        "notes.html": Symlink("/nonexistent/file"),
    }
    hand_ins["deep_json"] = {f"{ASSIGNMENT}.ipynb": b"[" * 200_000 + b"]" * 200_000}
    hand_ins["not_utf8"] = {f"{ASSIGNMENT}.ipynb": bytes(range(128, 256)) * 10}
    hand_ins[LONG_ID] = submission(ASSIGNMENT, {})
    hand_ins[FORMULA_ID] = submission(ASSIGNMENT, {})
    hand_ins[ESCAPE_ID] = submission(ASSIGNMENT, {})
    # a markdown cell of HTML and script, for whoever opens the feedback
    xss = submission(ASSIGNMENT, {})
    xss.cells.insert(1, nbformat.v4.new_markdown_cell(boundary.XSS))
    hand_ins["writes_html"] = xss
    # a raw cell of HTML (nbconvert puts raw cells into the page as they are), and a file whose name
    # starts a formula at its `;` (a spreadsheet in a locale that separates CSV fields with `;`)
    raw = submission(ASSIGNMENT, {})
    raw.cells.insert(1, nbformat.v4.new_raw_cell(boundary.RAW_HTML))
    raw.metadata["jupytext"] = {"formats": boundary.PAIRED_FORMATS}  # for the instructor's lab, which has Jupytext
    for cell in raw.cells:  # tags become HTML classes of the cells in the feedback and the formgrader
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "test_attention":
            cell.metadata["tags"] = [boundary.HIDING_TAG]
    # the judge's verdict records (what the class report reads) written by the student: on the test cell a pass,
    # on the written answer a misconception of another notebook
    forger = submission(ASSIGNMENT, {"attention": boundary.WRONG.strip("\n")})
    for cell in forger.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "test_attention":
            cell.metadata["heads_and_masks"] = {"passed": True, "answered": True, "misconception": None}
        elif cell.metadata.get("nbgrader", {}).get("grade_id", "").startswith("written_"):
            cell.metadata["heads_and_masks"] = {"passed": False, "answered": True, "misconception": boundary.FORGED_ID}
    hand_ins["forges_verdicts"] = forger
    # many cells that each print as much as a cell may keep: the graded notebook (and its feedback) would grow
    chatty = submission(ASSIGNMENT, {})
    chatty.cells[1:1] = [nbformat.v4.new_code_cell(boundary.PRINTS_A_LOT) for _ in range(40)]
    chatty.cells[41:41] = [nbformat.v4.new_code_cell("raise MemoryError") for _ in range(40)]  # a note each
    hand_ins["prints_a_lot"] = chatty
    crowded = json.loads(nbformat.writes(submission(ASSIGNMENT, {})))  # written as JSON: nbformat would validate
    crowded["cells"][1:1] = [  # each cell it would validate
        {"cell_type": "markdown", "id": f"m{i}", "metadata": {}, "source": "x"} for i in range(boundary.MANY_CELLS)
    ]
    hand_ins["many_cells"] = {f"{ASSIGNMENT}.ipynb": json.dumps(crowded).encode()}
    hand_ins["writes_raw_html"] = {f"{ASSIGNMENT}.ipynb": nbformat.writes(raw).encode(), boundary.FORMULA_FILE: b"x"}
    # the test cell's metadata turned so that it would look like the student's own code
    for flag, value in (("solution", True), ("grade", False), ("locked", False)):
        tampered = submission(ASSIGNMENT, {"attention": boundary.SOURCE_SPY.strip()})
        test_cell = next(
            c for c in tampered.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "test_attention"
        )
        test_cell.metadata["nbgrader"][flag] = value
        test_cell.source = "print('✓ everything passes')"
        tampered.cells.append(nbformat.v4.new_code_cell(boundary.SPY_REPORT))
        hand_ins[f"test_cell_{flag}_{str(value).lower()}"] = tampered
    # a folder named like another student's safe id, and a submission time of the student's choosing
    hand_ins[CLASHED_ID] = submission(ASSIGNMENT, {})
    from autograde.submission_files import safe_id

    hand_ins[safe_id(CLASHED_ID)] = student_notebook(ASSIGNMENT)
    hand_ins["backdated"] = {
        f"{ASSIGNMENT}.ipynb": nbformat.writes(submission(ASSIGNMENT, {})).encode(),
        "timestamp.txt": b"2000-01-01 00:00:00.000000 UTC",
    }
    hand_ins.update(_graded_copy_hand_ins())
    return hand_ins


def _grade_hostile_class(hand_ins: dict[str, object], scratch: Path):
    """Grade the class at ``scratch``/course as an instructor does, then feedback, CSV and both reports."""
    run = grade_class(ASSIGNMENT, hand_ins, scratch, cell_timeout=20)
    from autograde.export import export_grades
    from autograde.feedback import feedback
    from autograde.report import report as write_report

    feedback_files = feedback(run.course, ASSIGNMENT, release_to_students=True)
    csv_path = run.course.root / "class" / "grades.csv"
    rows = export_grades(run.course, csv_path, [ASSIGNMENT])
    report = write_report(run.course, ASSIGNMENT)
    from autograde.class_report import write as write_class_report

    class_csv = write_class_report(run.course, ASSIGNMENT)[1]
    return run, feedback_files, csv_path, rows, report, class_csv


def _by_original(run, original: str):
    from autograde.submission_files import safe_id

    return run.results[safe_id(original)]


def _hidden_lines() -> set[str]:
    from autograde.feedback_filter import split_hidden

    return {
        line.strip()
        for c in solution_notebook(ASSIGNMENT).cells
        if c.cell_type == "code"
        for line in split_hidden(c.source)[1]
        if len(line.strip()) >= 8
    }


def _everything_written(run) -> str:
    """Every text the pipeline wrote for people to read: autograded notebooks, feedback, CSV, report, logs."""
    texts = []
    for path in run.course.runtime_root.rglob("*"):
        if (
            path.is_file()
            and path.suffix in (".ipynb", ".html", ".csv", ".txt", ".json")
            and "results" not in path.parts
        ):
            texts.append(path.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(texts)


TAMPERED = ["test_cell_solution_true", "test_cell_grade_false", "test_cell_locked_false"]


@pytest.mark.parametrize(
    "attacker, grader",
    [(name, "root") for name in [*boundary.CODE_ATTACKS, *boundary.UID_ATTACKS, "seed_table", *TAMPERED]]
    + [(name, "instructor") for name in INSTRUCTOR_CLASS if name not in HONEST],
)
def test_attacker_earns_nothing(attacker, grader):
    run = graded_by(grader)[0]
    result = run.results[attacker]
    assert result.total == 0, f"{attacker} earned {result.scores} ({result.line()})"


def _full_marks(result) -> bool:
    """Every autograded point, and the model written answers waiting for a person (none of them lost)."""
    return (
        result.autograded_max > 0
        and result.autograded_total == result.autograded_max
        and sorted(result.pending) == sorted(result.written) != []
    )


@pytest.mark.parametrize("grader", GRADERS)
def test_honest_classmates_keep_full_marks(grader):
    run = graded_by(grader)[0]
    for name in [*HONEST, "dangling_link"] if grader == "root" else HONEST:
        result = run.results[name]
        assert _full_marks(result), f"{name}: {result.scores} ({result.line()})"
    if grader != "root":
        return
    for name in (LONG_ID, FORMULA_ID, ESCAPE_ID, CLASHED_ID, "backdated", "writes_html"):
        result = _by_original(run, name)
        assert _full_marks(result), f"{name!r}: {result.scores} ({result.line()})"


@pytest.mark.parametrize("grader", GRADERS)
def test_graders_canary_is_untouched(grader):
    """The grader's own file (root's, or the instructor's: then every kernel has its owner's uid)."""
    _, canary, *_ = graded_by(grader)
    assert not canary.is_symlink()
    assert canary.read_text() == "the canary's own words\n"
    info = canary.stat()
    assert stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == canary.parent.stat().st_uid


@pytest.mark.parametrize("grader", GRADERS)
def test_grader_environment_and_hidden_tests_reach_nobody(grader):
    run, _, canary_env, feedback_files, *_ = graded_by(grader)
    written = _everything_written(run)
    assert canary_env not in written, "a variable of the grader's environment was written out"
    assert feedback_files, "no feedback was made"
    feedback = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in feedback_files)
    leaked = [line for line in _hidden_lines() if line in feedback]
    assert not leaked, f"hidden tests in feedback: {leaked[:2]}"
    autograded = "\n".join(
        p.read_text(errors="replace") for p in (run.course.root / "class" / "autograded").rglob("*.ipynb")
    )
    found = run.results["hunts_the_hidden_tests"].notebook
    assert found is not None
    assert "thorough=True" not in "\n".join(
        str(o)
        for c in found.cells
        if not c.get("metadata", {}).get("nbgrader", {}).get("grade")
        for o in c.get("outputs", [])
    ), "a hidden test was visible to student code"
    assert canary_env not in autograded


def test_feedback_holds_only_what_the_grader_made():
    run, _, _, feedback_files, *_ = hostile_class()
    for folder in (run.course.root / "class" / "feedback").glob(f"*/{ASSIGNMENT}"):
        names = sorted(p.name for p in folder.iterdir())
        assert names == [f"{ASSIGNMENT}.html", "timestamp.txt"], f"{folder.parent.name}: {names}"
        assert not any(p.is_symlink() for p in folder.iterdir())
    assert (run.course.root / "class" / "feedback" / f"{ASSIGNMENT}-for-lms.zip").is_file(), (
        "feedback of a folder collection must be released as a bundle for the LMS"
    )


@pytest.mark.parametrize("grader", GRADERS)
def test_disk_holds_no_more_than_the_class_handed_in(grader):
    run = graded_by(grader)[0]
    total = sum(p.stat().st_size for p in run.course.root.rglob("*") if p.is_file() and not p.is_symlink())
    assert total < 200 * 2**20, f"the course root grew to {total / 2**20:.0f} MiB"
    assert not any(p.is_symlink() for p in run.course.runtime_root.rglob("*"))


def test_bad_hand_ins_get_their_own_status():
    run = hostile_class()[0]
    assert run.results["linked_solutions"].status == "missing", run.results["linked_solutions"].line()
    assert run.results["deep_json"].status == "invalid notebook", run.results["deep_json"].line()
    assert run.results["not_utf8"].status == "invalid notebook", run.results["not_utf8"].line()
    assert run.results["crashes_in_the_test"].status == "kernel died", run.results["crashes_in_the_test"].line()
    assert "the kernel died while" in " ".join(run.results["crashes_in_the_test"].notes)  # naming the cell or test
    assert run.results["holds_shared_memory"].status == "kernel died", run.results["holds_shared_memory"].line()
    assert run.results["loops_in_the_test"].status == "timed out", run.results["loops_in_the_test"].line()


def _unquoted(line: str) -> str:
    """A CSV line without its quoted fields."""
    return re.sub(r'"(?:[^"]|"")*"', "", line)


def test_csv_and_report_are_complete_and_inert():
    run, _, _, _, csv_path, rows, report, class_csv = hostile_class()
    with open(csv_path, newline="", encoding="utf-8") as handle:
        table = list(csv.DictReader(handle))
    assert len(table) == len(run.results) == len(rows)
    for row in table:
        for value in row.values():
            assert not value[:1] in ("=", "+", "@") or value[1:2] == "", f"a formula reached the CSV: {value!r}"
            assert "\x1b" not in value
    originals = {row["student_as_submitted"] for row in table}
    assert "'=1+2" in originals and LONG_ID in originals
    assert "\x1b" not in report and len(report.splitlines()) >= 3
    for name in ("deep_json", "crashes_in_the_test", "linked_solutions"):
        assert name in report
    # no `;` outside a quoted field: a spreadsheet that splits fields at `;` would start a cell there
    text = csv_path.read_text(encoding="utf-8")
    assert boundary.FORMULA_FILE[:17] in text, "the file name should be in the notes (else this proves nothing)"
    for path in (csv_path, class_csv):
        for line in path.read_text(encoding="utf-8").splitlines():
            assert ";" not in _unquoted(line), f"{path.name}: a `;` outside quotes: {line[:200]}"


def test_instructor_test_source_never_runs_in_a_kernel():
    run = hostile_class()[0]
    for name in TAMPERED:
        result = run.results[name]
        assert result.total == 0, result.line()
        notebook = result.notebook
        if notebook is None:  # nbgrader itself refused the tampered metadata: nothing ran at all
            assert "nbgrader could not grade it" in result.line(), result.line()
            continue
        printed = "\n".join(
            o.get("text", "") for c in notebook.cells for o in c.get("outputs", []) if o.get("output_type") == "stream"
        )
        assert "SPY" in printed, "the spy did not report (the test is not testing anything)"
        assert "check_attention" not in printed and "thorough" not in printed, printed[:500]


def test_student_html_is_shown_as_text():
    run, _, _, feedback_files, *_ = hostile_class()
    page = next(p for p in feedback_files if p.parent.parent.name == "writes_html").read_text(encoding="utf-8")
    assert "<script>document.title" not in page and '<img src="x"' not in page  # no live tag, only text
    assert "&lt;script&gt;" in page, "the student's text should still be shown, as text"
    graded = nbformat.writes(run.results["writes_html"].notebook)
    assert "```text" in graded  # formgrader shows the graded notebook: the same fence


def test_the_judges_verdicts_cannot_be_forged():
    run = hostile_class()[0]
    from autograde.class_marks import FAILED, PENDING, read_assignment

    assert run.results["forges_verdicts"].autograded_total == 0, run.results["forges_verdicts"].line()
    marks = {m.exercise: m for m in read_assignment(run.course, ASSIGNMENT).marks if m.student == "forges_verdicts"}
    written = [m for e, m in marks.items() if e.startswith("written_")]
    assert marks["attention"].outcome == FAILED, marks["attention"]
    assert written and all(m.outcome == PENDING and not m.misconceptions for m in written), written
    assert not any(boundary.FORGED_ID in m.misconceptions for m in marks.values()), marks


def test_student_raw_cells_are_shown_as_text():
    run, _, _, feedback_files, *_ = hostile_class()
    assert _full_marks(run.results["writes_raw_html"]), run.results["writes_raw_html"].line()
    page = next(p for p in feedback_files if p.parent.parent.name == "writes_raw_html").read_text(encoding="utf-8")
    assert "phish.invalid" in page, "the student's raw cell should still be shown, as text"
    assert '<a href="https://phish.invalid' not in page and '<div class="alert' not in page, "raw HTML reached the page"
    graded = run.results["writes_raw_html"].notebook
    assert not [c for c in graded.cells if c.cell_type == "raw"], "the formgrader would render the raw cell as HTML"
    # a tag is a class of the cell's HTML: "x hidden" hid the test cell and its verdict (CSS .hidden)
    assert "celltag_" not in page and not [c for c in graded.cells if "tags" in c.metadata], "the student's tags"


def test_the_graded_notebook_opened_in_the_instructors_lab_writes_nothing_else():
    """The formgrader links to the graded notebook; the instructor's lab (Jupytext's contents manager) opens
    and saves it: the submission's own notebook metadata must not make it write files elsewhere."""
    from jupyter_server.services.contents.filemanager import FileContentsManager
    from jupytext import build_sync_jupytext_contents_manager_class

    run = hostile_class()[0]
    root = run.course.root
    path = f"class/autograded/writes_raw_html/{ASSIGNMENT}/{ASSIGNMENT}.ipynb"
    assert "jupytext" not in nbformat.read(root / path, as_version=4).metadata

    def files():
        return {p for p in root.rglob("*") if p.is_file() and ".ipynb_checkpoints" not in p.parts}

    before = files()
    lab = build_sync_jupytext_contents_manager_class(FileContentsManager)(root_dir=str(root))
    lab.save(lab.get(path), path)  # Ctrl-S, or the lab's autosave
    assert files() == before, f"the lab wrote {sorted(map(str, files() - before))}"


def test_a_notebook_that_prints_a_lot_keeps_a_small_graded_notebook():
    run = hostile_class()[0]
    from autograde.judge import MAX_NOTEBOOK_TEXT

    result = run.results["prints_a_lot"]
    assert _full_marks(result), result.line()
    graded = run.course.root / "class" / "autograded" / "prints_a_lot" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    printed = sum(len(o.get("text", "")) for c in result.notebook.cells for o in c.get("outputs", []))
    assert printed > MAX_NOTEBOOK_TEXT / 2, "the notebook should keep what it printed, up to the limit"
    assert graded.stat().st_size < 1.5 * MAX_NOTEBOOK_TEXT, f"graded notebook of {graded.stat().st_size} bytes"
    assert "printed more than" in " ".join(result.notes), result.notes
    from autograde.judge import MAX_NOTES

    assert "ran out of memory" in " ".join(result.notes) and len(result.notes) <= MAX_NOTES + 3, result.notes


def test_a_flood_of_printed_lines_is_cut_as_it_arrives():
    """A cell printing reply-like lines as fast as it can: the grader keeps the last few MiB of it, and ends the
    kernel once it sent MAX_KERNEL_OUTPUT (instead of taking all it prints until the cell's time runs out)."""
    require_sandbox()
    from autograde.kernel.kernel_client import MAX_KERNEL_OUTPUT, MAX_STDOUT, StudentKernel

    kernel = StudentKernel(memory_mb=1024, cpu_seconds=60)
    received = 0
    receive = kernel.client.get_iopub_msg

    def counting(*args, **kwargs):  # what reached the grader (ZeroMQ drops what overflows the queues)
        nonlocal received
        message = receive(*args, **kwargs)
        if message["msg_type"] == "stream":
            received += len(message["content"].get("text", ""))
        return message

    kernel.client.get_iopub_msg = counting
    try:
        run = kernel.run(boundary.PRINT_FLOOD, timeout=30)
    finally:
        kernel.shutdown()
    assert run.error == "OutputLimit" and f"more than {MAX_KERNEL_OUTPUT // 2**20} MiB" in kernel.over_limit, (
        run.error,
        kernel.over_limit,
    )
    assert MAX_KERNEL_OUTPUT < received <= MAX_KERNEL_OUTPUT + 2 * 2**20, f"{received} characters arrived"
    assert len(run.stdout) <= MAX_STDOUT + 2 * 2**20, f"the grader kept {len(run.stdout)} characters of {received}"


def _resident_mib() -> float:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def test_what_a_kernel_sends_unread_waits_in_the_kernels_memory():
    """A kernel printing 15 MB messages while the grader reads nothing (it is busy elsewhere): the grader's
    memory grows by a few messages, not by everything sent (ZeroMQ queued 1000 messages by default)."""
    require_sandbox()
    import time

    from autograde.kernel.kernel_client import StudentKernel

    kernel = StudentKernel(memory_mb=2048, cpu_seconds=60)
    try:
        before = peak = _resident_mib()
        kernel.client.execute(boundary.SEND_FLOOD)  # nobody reads its messages for 8 s
        for _ in range(16):
            time.sleep(0.5)
            peak = max(peak, _resident_mib())
    finally:
        kernel.shutdown()
    assert peak - before < 250, f"the grader grew by {peak - before:.0f} MiB"  # 90 MiB here; 661 MiB with 1000


def test_one_huge_line_of_output_ends_its_notebook_at_once():
    """120 MB printed as one line: the grader takes no message over its limit, and ends the kernel at that cell
    instead of waiting out the time of every cell after it (what held a worker for its whole budget)."""
    run, *_, report, _ = hostile_class()
    from autograde.kernel.kernel_client import MAX_MESSAGE_BYTES

    result = run.results["prints_one_huge_line"]
    limits = " ".join(result.limits)
    assert f"larger than {MAX_MESSAGE_BYTES // 2**20} MiB" in limits and limits.startswith("output:"), result.limits
    assert "grading stopped at" in " ".join(result.notes), result.notes
    assert result.status != "timed out" and "ran longer than" not in " ".join(result.notes), result.line()
    assert "prints_one_huge_line: output:" in report, report


def test_a_hand_in_of_many_cells_is_refused_before_any_step_spends_on_it():
    """150,000 tiny markdown cells under the size cap: refused at inspection with its cost, never graded, never
    rendered as feedback; the report names the bound, and the honest classmates are graded as usual."""
    run, _, _, feedback_files, _, rows, report, _ = hostile_class()
    from autograde.bounds import MAX_CELLS

    result = run.results["many_cells"]
    assert result.status == "invalid notebook", result.line()
    assert result.limits and result.limits[0].startswith("notebook structure:"), result.limits
    assert f"{boundary.MANY_CELLS + 16:,} cells, over the limit of {MAX_CELLS:,}" in result.limits[0], result.limits
    assert not (run.course.root / "class" / "autograded" / "many_cells").exists()
    assert not [p for p in feedback_files if "many_cells" in p.parts]
    assert "many_cells: notebook structure:" in report and "without trouble" not in report, report
    assert "over the limit" in next(r["notes"] for r in rows if r["student"] == "many_cells")


def test_a_feedback_page_over_its_bound_is_a_note_and_the_next_page_is_made_all_the_same():
    """Each page is made in a process of its own within a time and a memory bound: a page over either is not made,
    the student's result says which bound and what it cost, and the call goes on to the next student."""
    import shutil

    from autograde.course import Course
    from autograde.feedback import feedback
    from autograde.report import report as write_report
    from autograde.results import read_results

    run = hostile_class()[0]
    course = Course(root=run.course.root.parent / "feedback-bounds")  # a copy: the class's own pages stay
    shutil.copytree(run.course.root, course.root, symlinks=True)
    students = ["honest1", "honest2"]
    assert feedback(course, ASSIGNMENT, students=students, memory_mb=150) == []
    assert feedback(course, ASSIGNMENT, students=students, seconds=0) == []
    results = read_results(course, ASSIGNMENT)
    for student in students:
        notes = " ".join(results[student].notes)
        assert "it needed more than 150 MiB of memory" in notes and "it took longer than 0 s" in notes, notes
        assert results[student].limits[-1].startswith("feedback time: stopped after"), results[student].limits
        assert f"{student}: feedback time:" in write_report(course, ASSIGNMENT)
    assert len(feedback(course, ASSIGNMENT, students=students)) == 2  # within the bounds: made, the notes gone
    assert not any(r.limits for s, r in read_results(course, ASSIGNMENT).items() if s in students)


def test_a_borrowed_id_never_replaces_a_classmate():
    run = hostile_class()[0]
    from autograde.submission_files import safe_id

    owner = run.results[safe_id(CLASHED_ID)]
    assert _full_marks(owner), owner.line()
    clashers = [r for s, r in run.results.items() if "-clash-" in s]
    assert len(clashers) == 1 and clashers[0].total == 0 and "already belongs" in " ".join(clashers[0].notes)


def test_submission_time_is_the_collections_not_the_students():
    run = hostile_class()[0]
    from autograde.course import gradebook

    with gradebook(run.course) as book:
        stamp = book.find_submission(ASSIGNMENT, "backdated").timestamp
    assert stamp is not None and stamp.year >= 2025, stamp


# ---------------------------------------------------------------------------------------------
# The graded copy (issue 36 §5): each cell's metadata is the release's, the instructor's cells are known by
# their names (grade id, cell id), never by their text (the hand-ins: tests/catalog/boundary.py)
# ---------------------------------------------------------------------------------------------
def _grade_id(cell) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def _released_prose() -> list:
    """The released notebook's markdown cells that are not nbgrader's (the instructor's text)."""
    return [c for c in student_notebook(ASSIGNMENT).cells if c.cell_type == "markdown" and not _grade_id(c)]


def _graded_copy_hand_ins() -> dict[str, object]:
    prose = _released_prose()
    demo = next(c for c in student_notebook(ASSIGNMENT).cells if c.cell_type == "code" and "print(" in c.source)
    hider = submission(ASSIGNMENT, {"attention": boundary.WRONG.strip("\n")})
    for cell in hider.cells:
        if _grade_id(cell) in ("attention", "test_attention"):
            cell.metadata.update(copy.deepcopy(boundary.HIDING_METADATA))
    copier = submission(ASSIGNMENT, {})
    copier.cells[0].cell_type = "raw"  # the title, same text and id, now raw
    copier.cells.insert(2, nbformat.v4.new_raw_cell(prose[1].source))
    copier.cells.append(nbformat.v4.new_code_cell(demo.source))
    claimer = submission(ASSIGNMENT, {"attention": boundary.WRONG.strip("\n")})
    test_cell = next(c for c in claimer.cells if _grade_id(c) == "test_attention")
    claim = nbformat.v4.new_code_cell(boundary.PRINTS_WHO_WROTE_IT, metadata=copy.deepcopy(test_cell.metadata))
    claimer.cells.insert(claimer.cells.index(test_cell) + 1, claim)
    phish = nbformat.v4.new_markdown_cell(boundary.PHISH_MARKDOWN)
    phish["id"] = prose[0]["id"]  # before the released cell of that id: nbformat renames the later one
    claimer.cells.insert(0, phish)
    next(c for c in claimer.cells if c.get("id") == prose[2]["id"]).pop("id")
    forger = submission(ASSIGNMENT, {"attention": boundary.WRONG.strip("\n")})
    forger.cells.append(
        nbformat.v4.new_code_cell('print("extra credit")', metadata={"nbgrader": boundary.FORGED_GRADE_CELL})
    )
    return {
        "hides_a_failing_test": hider,
        "copies_instructor_cells": copier,
        # as JSON, as the student wrote it: nbformat would repair the ids when writing it
        "claims_instructor_ids": {f"{ASSIGNMENT}.ipynb": json.dumps(claimer).encode()},
        "forges_a_grade_cell": forger,
    }


GRADED_COPY_ATTACKERS = ["hides_a_failing_test", "claims_instructor_ids", "forges_a_grade_cell"]


@pytest.mark.parametrize("attacker", GRADED_COPY_ATTACKERS)
def test_forged_cells_earn_nothing(attacker):
    result = hostile_class()[0].results[attacker]
    assert result.total == 0, f"{attacker} earned {result.scores} ({result.line()})"


def _feedback_page(feedback_files, student: str) -> str:
    return next(p for p in feedback_files if p.parent.parent.name == student).read_text(encoding="utf-8")


def test_a_hidden_failing_test_is_shown_as_the_instructor_made_it():
    """A test cell folded away by the submission's metadata (hidden input and output, collapsed, left out of
    the page) is shown in the graded notebook and in the feedback as the release shows it."""
    from autograde.verdicts import VERDICT_KEY

    run, _, _, feedback_files, *_ = hostile_class()
    released = {_grade_id(c): c.metadata for c in student_notebook(ASSIGNMENT).cells if _grade_id(c)}
    graded = run.results["hides_a_failing_test"].notebook
    for cell in graded.cells:
        if _grade_id(cell):
            shown = {k: v for k, v in cell.metadata.items() if k != VERDICT_KEY}
            assert shown == released[_grade_id(cell)], f"{_grade_id(cell)}: {cell.metadata}"
    for name, result in run.results.items():  # the release folds nothing away: no graded notebook does
        for cell in result.notebook.cells if result.notebook else []:
            folded = {"jupyter", "collapsed", "transient", "scrolled"} & set(cell.metadata)
            assert not folded, f"{name}: a cell keeps the submission's {sorted(folded)}"
    page = _feedback_page(feedback_files, "hides_a_failing_test")
    assert "check_attention" in page, "the test cell's source is left out of the feedback"
    assert "CheckFailed" in page, "the failing verdict is left out of the feedback"


def test_a_copy_of_an_instructor_cell_is_the_students():
    """A released cell's text in a cell of the student's (a new cell, or a released cell of another type) is the
    student's: shown as text, its outputs kept; the released cells where they were stay the instructor's."""
    run, _, _, feedback_files, *_ = hostile_class()
    result = run.results["copies_instructor_cells"]
    assert _full_marks(result), result.line()
    graded = result.notebook
    prose, released = _released_prose(), student_notebook(ASSIGNMENT)
    assert not [c for c in graded.cells if c.cell_type == "raw"], "a raw cell of the student's is rendered as HTML"
    assert graded.cells[0].source.startswith("```text") and prose[0].source in graded.cells[0].source
    copies = [c for c in graded.cells if prose[1].source in c.source]
    assert [c.source == prose[1].source for c in copies] == [True, False], "the copy is shown as text"
    demo = next(c for c in released.cells if c.cell_type == "code" and "print(" in c.source)
    assert graded.cells[-1].source == demo.source and graded.cells[-1].outputs, "the student's copy printed nothing"
    page = _feedback_page(feedback_files, "copies_instructor_cells")
    assert "<notebook>" not in page and "&lt;notebook&gt;" in page, "released text became HTML in the page"


def test_a_claimed_id_names_no_instructor_cell():
    """A cell of the student's with the test's grade id is judged with the instructor's source; a second cell
    with a released cell's id, or a released cell without its id, is the student's (shown as text)."""
    run, _, _, feedback_files, *_ = hostile_class()
    graded = run.results["claims_instructor_ids"].notebook
    tests = [c for c in graded.cells if _grade_id(c) == "test_attention"]
    assert len(tests) == 1 and "check_attention" in tests[0].source, [c.source for c in tests]
    printed = json.dumps([c.get("outputs", []) for c in graded.cells])
    assert "the student ran this cell" not in printed, "the student's claimed test cell ran as the student's code"
    prose = _released_prose()
    assert graded.cells[0].source.startswith("```text") and "phish.invalid" in graded.cells[0].source
    no_id = next(c for c in graded.cells if prose[2].source in c.source)
    assert no_id.source.startswith("```text"), "a cell without its released id is the student's"
    page = _feedback_page(feedback_files, "claims_instructor_ids")
    assert "phish.invalid" in page and '<a href="https://phish.invalid' not in page, "the student's HTML is live"


# ---------------------------------------------------------------------------------------------
# Grading without root (issue 37 §4): the same class, graded by an ordinary Unix user who owns a copy of the
# course (an instructor on a JupyterHub). Every kernel then has the instructor's uid: what keeps a student
# from the instructor's files and from the other kernels is the sandbox's view alone (docs/security.md).
# ---------------------------------------------------------------------------------------------
def graded_by(grader: str):
    return hostile_class() if grader == "root" else hostile_class_without_root()


def _cannot(why: str):
    """No ordinary user to grade as: a failure in CI (root there: it must work), a skip elsewhere."""
    if os.environ.get("CI"):
        pytest.fail(f"cannot grade as an ordinary user: {why}")
    pytest.skip(f"cannot grade as an ordinary user: {why}")


@functools.cache
def hostile_class_without_root():
    """INSTRUCTOR_CLASS graded by a Unix user made for it, in its home beside the repository (not under /tmp:
    that is where a kernel gets a folder of its own), with a Python it may run; read back here."""
    require_sandbox()
    if os.geteuid() != 0:
        _cannot("the tests do not run as root (then the class graded above was graded without root)")
    name, home = _instructor_account()
    python = _instructor_python(name, home)  # the command that runs it as the instructor
    from course import _template_course

    shutil.copytree(_template_course(), home / "template", symlinks=True)
    subprocess.run(["chown", "-R", f"{name}:{name}", str(home / "template")], check=True)
    canary_env = "canary-" + secrets.token_hex(8)
    code = f"import sys; sys.path.insert(0, {str(REPO / 'tests')!r}); import test_boundary; test_boundary._grade_here()"
    graded = subprocess.run(
        [*python, "-c", code, str(home)],
        env=_instructor_env(home, HEADS_AND_MASKS_TEST_CANARY=canary_env),
        cwd=home,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert graded.returncode == 0, f"grading as {name} failed:\n{graded.stdout[-2000:]}\n{graded.stderr[-4000:]}"
    made = json.loads((home / "graded.json").read_text())
    return _read_back({**made, "canary": str(home / "canary.txt"), "canary_env": canary_env})


def _grade_here() -> None:
    """(Run as the instructor by hostile_class_without_root) grade INSTRUCTOR_CLASS in its home, say where."""
    import course

    home = Path(sys.argv[1])
    course._template_course = lambda: home / "template"  # the course set up by the test, now this user's
    canary = _canary(home)
    every = _hand_ins(canary, home / "class" / "course")
    made = _what_was_made(*_grade_hostile_class({name: every[name] for name in INSTRUCTOR_CLASS}, home / "class"))
    (home / "graded.json").write_text(json.dumps(made))


def _as_user(name: str) -> list[str]:
    return [shutil.which("setpriv"), f"--reuid={name}", f"--regid={name}", "--init-groups", "--"]


def _instructor_env(home: Path, **more: str) -> dict[str, str]:
    return {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8", **more}


@functools.cache
def _instructor_account() -> tuple[str, Path]:
    """An ordinary Unix user of a name no other run takes, its home beside the repository; gone at exit."""
    name = f"hm-instructor-{secrets.token_hex(4)}"
    home = REPO.parent / f".{name}"
    made = subprocess.run(
        ["useradd", "--home-dir", str(home), "--no-create-home", "--shell", "/usr/sbin/nologin", "--user-group", name],
        capture_output=True,
        text=True,
    )
    if made.returncode != 0:
        _cannot(f"useradd {name}: {made.stderr.strip()}")
    atexit.register(_remove_account, name, home)
    home.mkdir(mode=0o700)
    shutil.chown(home, name, name)
    return name, home


def _remove_account(name: str, home: Path) -> None:
    subprocess.run(["userdel", name], capture_output=True)
    shutil.rmtree(home, ignore_errors=True)


@functools.cache  # one probe per account (its home's .interpreter is made once)
def _instructor_python(name: str, home: Path) -> list[str]:
    """How the instructor runs our Python (this environment's packages, the same interpreter): as themself, in a
    view of the files in which the interpreter's own folder is theirs to read when it lives under a folder no
    other user may enter (such as root's pyenv under /root: a copy would not do, its C library names that
    path). On a hub the instructor's Python is their own; in CI it is readable by all and nothing is changed."""
    interpreter = Path(os.path.realpath(sys.executable)).parent.parent
    closed = next((f for f in [*reversed(interpreter.parents), interpreter] if f.stat().st_mode & 0o005 != 0o005), None)
    run = [*_as_user(name), sys.executable]
    if closed is not None:  # a private mount namespace: an empty tmpfs over the closed folder, the interpreter in it
        kept = home / ".interpreter"
        kept.mkdir()
        script = (
            'mount --bind "$1" "$2" && mount -t tmpfs -o mode=0755,size=1m tmpfs "$3" && mkdir -p "$1" '
            '&& mount --bind "$2" "$1" && shift 3 && exec "$@"'
        )
        wrap = ["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, "sh"]
        run = [*wrap, str(interpreter), str(kept), str(closed), *run]
    # its packages, and every folder of its Python that a kernel is shown (bubblewrap binds them as the instructor)
    probe = (
        "import os, distributed, ipykernel, nbgrader, numpy; from autograde.kernel.sandbox import python_paths; "
        "assert all(os.access(p, os.R_OK | os.X_OK) for p in python_paths())"
    )
    ran = subprocess.run([*run, "-c", probe], env=_instructor_env(home), cwd=home, capture_output=True, text=True)
    if ran.returncode != 0:
        _cannot(f"{sys.executable} does not run as {name}: {ran.stderr.strip()[-500:]}")
    return run


@pytest.mark.parametrize("grader", GRADERS)
def test_the_gradebook_and_the_key_are_out_of_reach(grader):
    """A kernel with the instructor's uid, told where the course is: it neither reads nor changes the
    gradebook, the grading key or the instructor's files (it raises whatever it found, for us to read)."""
    run, canary, *_ = graded_by(grader)
    runtime = run.course.runtime_root
    assert (runtime / "grading-key").read_text() == TEST_KEY
    assert b"pwned" not in (runtime / "gradebook.db").read_bytes()
    found = "\n".join(
        o.get("evalue", "") for c in run.results["reaches_the_instructor"].notebook.cells for o in c.get("outputs", [])
    )
    assert "REACHED" in found, "the attack reported nothing (the test proves nothing)"
    for secret in (TEST_KEY.strip(), "the canary's own words", "SQLite format"):
        assert secret not in found, f"a kernel read {secret[:30]!r}"
    assert "wrote " not in found and "chmod " not in found, found
    listed = [line for line in found.splitlines() if ": " not in line]  # what its globs found (the rest: its reads)
    assert not [line for line in listed if line.startswith(str(run.course.root))], found


@pytest.mark.parametrize("grader", GRADERS)
def test_a_kernel_writes_only_its_own_folders(grader):
    """Every folder of a kernel's view but its own (scratch, /tmp, /dev/shm) is read-only to it: bubblewrap's root
    and the folders on the way to its binds are memory no cap counts, and the kernel's own without root."""
    run = graded_by(grader)[0]
    said = [o.get("evalue", "") for c in run.results["writes_its_view"].notebook.cells for o in c.get("outputs", [])]
    wrote = next((line for line in said if line.startswith("WROTE IN")), None)
    assert wrote is not None, f"the attack reported nothing (the test proves nothing): {said}"
    assert wrote == "WROTE IN []", wrote


@pytest.mark.parametrize("grader", GRADERS)
def test_a_kernel_cannot_reset_what_the_grader_measures(grader):
    """A kernel's /proc is read-only to it: without root the grader measures a call's memory from the peak resident
    set of the kernel's processes in /proc (``resources.MemoryMeter``), which a process could otherwise reset itself
    (``/proc/self/clear_refs``) after building the whole score matrix, and be measured as a tiled kernel."""
    run = graded_by(grader)[0]
    said = [
        o.get("evalue", "") for c in run.results["resets_its_memory_peak"].notebook.cells for o in c.get("outputs", [])
    ]
    reset = next((line for line in said if line.startswith("RESET")), None)
    assert reset is not None, f"the attack reported nothing (the test proves nothing): {said}"
    assert reset == "RESET []", reset


@pytest.mark.parametrize("grader", GRADERS)
def test_a_kernel_starts_a_child_only_where_a_memory_cgroup_counts_it(grader):
    """Without root the meter reads the kernel's processes from /proc at the end of a call: a child started and
    ended within it (the whole score matrix built there, the answer sent back through a pipe) goes unseen. Such a
    kernel starts no process at all, by any call (threads still work: the class's honest students keep full
    marks). As root a memory cgroup counts every child, and a kernel may start them (up to its pids limit)."""
    run = graded_by(grader)[0]
    said = [o.get("evalue", "") for c in run.results["hides_in_a_child"].notebook.cells for o in c.get("outputs", [])]
    children = next((line for line in said if line.startswith("CHILDREN")), None)
    assert children is not None, f"the attack reported nothing (the test proves nothing): {said}"
    if grader == "root" and _root_has_a_memory_cgroup():
        assert "fork" in children, f"a root grader's kernels may start processes (a cgroup counts them): {children}"
    else:
        assert children == "CHILDREN []", f"a kernel no memory cgroup counts started processes: {children}"


def _root_has_a_memory_cgroup() -> bool:
    from autograde.kernel.resources import Cgroups

    probe = Cgroups(f"probe-{os.getpid()}", 2**30, 64)
    try:
        return probe.memory_files() is not None
    finally:
        probe.remove()


@pytest.mark.parametrize("grader", GRADERS)
def test_a_kernel_writes_nothing_into_its_socket_folder(grader):
    """The kernel's socket folder is the one folder of its view on the grader's disk (not a capped tmpfs): once the
    kernel is connected it is read-only to the kernel, which owns it when the grader is not root (the same uid)."""
    run = graded_by(grader)[0]
    said = [
        o.get("evalue", "") for c in run.results["fills_its_socket_folder"].notebook.cells for o in c.get("outputs", [])
    ]
    wrote = next((line for line in said if line.startswith("WROTE MiB")), None)
    assert wrote is not None, f"the attack reported nothing (the test proves nothing): {said}"
    assert wrote == "WROTE MiB 0", wrote


# ------------------------------------------------------------------ helpers of the package that answered (issue 36)
@pytest.mark.parametrize("attack", boundary.HELPER_ATTACKS, ids=lambda a: f"{a.assignment}:{a.name}")
def test_a_helper_of_the_package_answers_nothing(attack):
    """Graded in its assignment's class run, beside the solution: the helper is not in the kernel (or only
    raises), so the answer earns nothing on its exercise, and the honest solution keeps full marks."""
    run = graded_batch(attack.assignment)
    result = run.results[f"helper-{attack.name}"]
    attacked = [g for g in result.scores if g.startswith(f"test_{attack.exercise}")]
    assert attacked, result.line()
    earned = sum(result.scores[g] for g in attacked)
    assert earned == 0, (
        f"{attack.name} earned {earned} on {attack.exercise} (before issue 36: {attack.earned_before}; {result.line()})"
    )
    assert _full_marks(run.results["solution"]), run.results["solution"].line()


# ------------------------------------------------------------------ a ballast given back as the call starts (issue 36)
# The packed float32 triangle with a ballast earned 2 points as root while the graded n was 8192 (its 128 MiB fit in
# 04's kernels); at n = 16384 it is 512 MiB and meets MemoryError (docs/security.md, tools/memory_budget.py).


@pytest.mark.parametrize("attack", BALLAST_ATTACKS, ids=lambda attack: attack.name)
def test_a_ballast_earns_nothing_on_the_memory_test(attack):
    """Graded in 04's class run: memory held by the answer cell and given back as the call starts hides the whole
    score matrix from a measurement of the call's growth, but not from the limit of 04's kernels, which the matrix
    at the graded n (16384) does not fit in. The count and memory tests earn nothing; the solution keeps full marks."""
    run = graded_batch(attack.assignment)
    result = run.results[f"ballast-{attack.name}"]
    attacked = [g for g in result.scores if g in attack.tests]
    assert sorted(attacked) == sorted(attack.tests), result.line()
    earned = sum(result.scores[g] for g in attacked)
    assert earned == 0, f"{attack.name} earned {earned} on {attacked} ({attack.why}; {result.line()})"
    assert _full_marks(run.results["solution"]), run.results["solution"].line()


@functools.cache
def ballasts_graded_without_root() -> dict[str, dict[str, float]]:
    """The solution and every ballast of 04, graded by an ordinary Unix user (a hub's instructor: no cgroup, every
    kernel under the instructor's uid, only 04's RLIMIT_DATA and RLIMIT_AS); student -> grade id -> points."""
    require_sandbox()
    if os.geteuid() != 0:
        _cannot("the tests do not run as root (then the class graded above was graded without root)")
    name, home = _instructor_account()
    python = _instructor_python(name, home)
    from course import _template_course

    if not (home / "template").exists():  # (the hostile class graded by the same account may have copied it)
        shutil.copytree(_template_course(), home / "template", symlinks=True)
        subprocess.run(["chown", "-R", f"{name}:{name}", str(home / "template")], check=True)
    code = f"import sys; sys.path.insert(0, {str(REPO / 'tests')!r}); import test_boundary; test_boundary._grade_ballasts_here()"
    graded = subprocess.run(
        [*python, "-c", code, str(home)],
        env=_instructor_env(home),
        cwd=home,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert graded.returncode == 0, f"grading as {name} failed:\n{graded.stdout[-2000:]}\n{graded.stderr[-4000:]}"
    return json.loads((home / "ballasts.json").read_text())


def _grade_ballasts_here() -> None:
    """(Run as the instructor by ballasts_graded_without_root) grade 04's solution and ballasts in its home."""
    import course

    home = Path(sys.argv[1])
    course._template_course = lambda: home / "template"
    hand_ins = {"solution": submission(BALLAST_ATTACKS[0].assignment, {})}
    hand_ins |= {f"ballast-{attack.name}": attack.submission() for attack in BALLAST_ATTACKS}
    run = grade_class(BALLAST_ATTACKS[0].assignment, hand_ins, home / "ballasts", cell_timeout=course.CELL_TIMEOUT)
    graded = {}
    for student, result in run.results.items():
        result.load_notebook(run.course)
        said = {  # what each graded test cell of the attacked exercise printed or raised
            cell.metadata["nbgrader"]["grade_id"]: " ".join(
                o.get("evalue", "") or "".join(o.get("text", "")) for o in cell.get("outputs", [])
            )[-600:]
            for cell in result.notebook.cells
            if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "") in BALLAST_ATTACKS[0].tests
        }
        graded[student] = {"scores": dict(result.scores), "said": said}
    (home / "ballasts.json").write_text(json.dumps(graded))


@pytest.mark.parametrize("attack", BALLAST_ATTACKS, ids=lambda attack: attack.name)
def test_a_ballast_earns_nothing_graded_without_root(attack):
    """The ballasts again, graded by an instructor without root (red team, second round: the first round only
    emulated it). Without root there is no memory cgroup: 04's RLIMIT_DATA and RLIMIT_AS alone bound the kernel.
    The run is mostly its ballasts' cell timeouts: it is done ahead, beside the tests before it."""
    graded = done_ahead("test_boundary:ballasts_graded_without_root", ballasts_graded_without_root)
    attacked = {g: p for g, p in graded[f"ballast-{attack.name}"]["scores"].items() if g in attack.tests}
    assert sorted(attacked) == sorted(attack.tests), graded[f"ballast-{attack.name}"]
    said = graded[f"ballast-{attack.name}"]["said"]
    assert sum(attacked.values()) == 0, f"{attack.name} earned {attacked} graded without root ({attack.why}): {said}"
    solution = graded["solution"]
    assert all(solution["scores"][g] > 0 for g in attack.tests), f"the solution lost points without root: {solution}"
    print(f"{attack.name}, graded without root: {attacked}; {said}")  # what it met (pytest -s shows it)
