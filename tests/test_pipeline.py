"""The grading pipeline's parts that need no grading run: kernel limits and the hook for a sandbox,
feedback without hidden tests, exercise columns, LMS file names, the submission inspection."""
from __future__ import annotations

import re
import subprocess
import sys

import nbformat
import pytest
from course import REPO, ASSIGNMENTS, solution_notebook

import classroom
from feedback_filter import HideHiddenTests, split_hidden
from kernel_guard import GuardedExecute, GuardedKernelManager

LAUNCHER = REPO / "autograde" / "kernel_launch.py"


def test_kernel_launcher_limits_memory_and_keeps_small_work_possible():
    program = ("import numpy as np\n"
               "small = np.ones(10**6).sum()\n"  # 8 MB: fine
               "try:\n    big = np.ones(2**28)\n    print('allocated')\n"  # 2 GiB: refused
               "except MemoryError:\n    print('MemoryError', small)\n")
    run = subprocess.run([sys.executable, str(LAUNCHER), "--memory-mb=512", "--", sys.executable, "-c", program],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "MemoryError 1000000.0", run.stdout


def test_kernel_command_goes_through_prefix_and_launcher():
    manager = GuardedKernelManager(kernel_name="python3", memory_limit_mb=777, command_prefix=["wrapper", "--flag", "--"])
    command = manager.format_kernel_cmd()
    assert command[:3] == ["wrapper", "--flag", "--"]
    assert command[4] == str(LAUNCHER) and "--memory-mb=777" in command
    kernel = command[command.index("--", 4) + 1:]
    assert "ipykernel_launcher" in " ".join(kernel), kernel


def test_configured_kernel_manager_is_honoured():
    """nbgrader's Execute ignores c.Execute.kernel_manager_class; GuardedExecute does not."""
    from traitlets.config import Config

    assert GuardedExecute().kernel_manager_class is GuardedKernelManager
    config = Config()
    config.Execute.kernel_manager_class = "jupyter_client.manager.AsyncKernelManager"
    from jupyter_client.manager import AsyncKernelManager
    assert GuardedExecute(config=config).kernel_manager_class is AsyncKernelManager


def test_course_config_selects_the_guarded_kernels_and_the_feedback_filter():
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(REPO / "autograde")).load_config()
    assert config.Autograde.autograde_preprocessors[0] is GuardedExecute
    assert config.GenerateFeedback.preprocessors[0] is HideHiddenTests
    assert config.OverwriteCells.add_missing_cells is True


def _hidden_of(assignment):
    cells = [c for c in solution_notebook(assignment).cells if c.cell_type == "code"]
    return {line.strip() for c in cells for line in split_hidden(c.source)[1] if len(line.strip()) >= 8}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_feedback_filter_removes_every_hidden_line(assignment):
    notebook = solution_notebook(assignment)
    hidden = _hidden_of(assignment)
    assert hidden, f"{assignment} has no hidden tests"
    sample = sorted(hidden)[0]
    tests = [c for c in notebook.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade")
             and not c.metadata["nbgrader"].get("solution")]
    # what grading leaves: a failing test whose traceback quotes a hidden line, and student output
    # that printed a hidden line
    tests[-1].outputs = [nbformat.v4.new_output("error", ename="CheckFailed", evalue="expected 1, got 2",
                                                traceback=["Traceback", f"----> 3 {sample}", "CheckFailed: expected 1, got 2"])]
    spy = nbformat.v4.new_code_cell("print(secret)")
    spy.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"look:\n{sample}\n")]
    notebook.cells.append(spy)
    cleaned, _ = HideHiddenTests().preprocess(notebook, {})
    text = nbformat.writes(cleaned)
    leaked = [line for line in hidden if line in text]
    assert not leaked, leaked[:3]
    assert "hidden tests ran here" in text
    assert tests[-1].outputs[0].traceback == ["CheckFailed: expected 1, got 2"]


def test_exercise_columns_group_test_cells():
    answers = ["split_heads", "merge_heads", "mha_cost", "attention", "multi_head_attention"]
    assert classroom.exercise_of("test_split_heads_errors", answers) == "split_heads"
    assert classroom.exercise_of("test_multi_head_attention", answers) == "multi_head_attention"
    assert classroom.exercise_of("test_attention", answers) == "attention"
    assert classroom.exercise_of("test_something_else", answers) == "something_else"


@pytest.mark.parametrize("name,student,file", [
    ("doejane_12345_678_00_start_here.ipynb", "doejane", "00_start_here.ipynb"),  # Canvas
    ("doejane_late_12345_678_00_start_here-1.ipynb", "doejane", "00_start_here-1.ipynb"),  # Canvas, resubmitted
    ("Jane Doe_4711_assignsubmission_file_00_start_here.ipynb", "Jane Doe", "00_start_here.ipynb"),  # Moodle
    ("bob_00_start_here.ipynb", "bob", "00_start_here.ipynb"),
])
def test_default_lms_names(name, student, file):
    match = re.match(classroom.default_zip_regexp("00_start_here"), f"/x/extracted/{name}")
    assert match and match["student_id"] == student and match["file_id"] == file


def test_lms_name_of_another_assignment_is_not_collected():
    assert re.match(classroom.default_zip_regexp("00_start_here"), "/x/extracted/bob_01_heads.ipynb") is None


def test_compare_with_release_names_what_was_done_to_test_cells():
    released = nbformat.read(REPO / "notebooks" / ASSIGNMENTS[0] / f"{ASSIGNMENTS[0]}.ipynb", as_version=4)
    tests = [i for i, c in enumerate(released.cells) if classroom._is_test(c)]
    assert tests
    edited = nbformat.from_dict(nbformat.writes(released) and nbformat.reads(nbformat.writes(released), 4))
    edited.cells[tests[0]].source = "print('✓ everything passes')"
    assert any("was edited" in n for n in classroom.compare_with_release(edited, released))
    deleted = nbformat.reads(nbformat.writes(released), 4)
    del deleted.cells[tests[0]]
    assert any("was deleted" in n for n in classroom.compare_with_release(deleted, released))
    assert classroom.compare_with_release(released, released) == []
