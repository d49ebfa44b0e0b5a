"""The grading pipeline's parts that need no grading run: kernel limits, the sandbox's command and
environment, the grading key and the hidden inputs, feedback without hidden tests, exercise columns,
LMS file names, the submission inspection."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from course import REPO, ASSIGNMENTS, solution_notebook

import numpy as np

from autograde.course import is_test
from autograde.export import exercise_of
from autograde.inspection import compare_with_release
from autograde.collect import default_zip_regexp
from autograde.feedback_filter import HideHiddenTests, SayInLanguage, split_hidden
from autograde.kernel.sandbox import PASSED_THROUGH, bwrap_command, kernel_environment, private_uid

LAUNCHER = REPO / "autograde" / "inside" / "kernel_launch.py"


def test_kernel_launcher_limits_memory_and_keeps_small_work_possible():
    program = (
        "import numpy as np\n"
        "small = np.ones(10**6).sum()\n"  # 8 MB: fine
        "try:\n    big = np.ones(2**28)\n    print('allocated')\n"  # 2 GiB: refused
        "except MemoryError:\n    print('MemoryError', small)\n"
    )
    run = subprocess.run(
        [sys.executable, str(LAUNCHER), "--memory-mb=512", "--", sys.executable, "-c", program],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "MemoryError 1000000.0", run.stdout


def test_kernel_environment_is_built_from_nothing(monkeypatch):
    monkeypatch.setenv("INSTRUCTOR_SECRET", "do-not-leak")
    monkeypatch.setenv("HEADS_AND_MASKS_GRADING_KEY_FILE", "/secret/key")
    env = kernel_environment(Path("/tmp/runtime"))
    assert "INSTRUCTOR_SECRET" not in env and "HEADS_AND_MASKS_GRADING_KEY_FILE" not in env
    assert env["HOME"] == "/tmp" and env["HEADS_AND_MASKS_GRADING"] == "1"
    assert set(env) <= {
        "PATH",
        "HOME",
        "TMPDIR",
        "MPLCONFIGDIR",
        "IPYTHONDIR",
        "JUPYTER_RUNTIME_DIR",
        "JUPYTER_CONFIG_DIR",
        "JUPYTER_DATA_DIR",
        "MPLBACKEND",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONNOUSERSITE",
        "LC_ALL",
        "HEADS_AND_MASKS_GRADING",
        *PASSED_THROUGH,
    }


def test_sandbox_command_is_an_allowlist_with_a_capped_private_scratch():
    if not shutil.which("bwrap"):
        pytest.skip("bubblewrap is not installed")
    command = bwrap_command(
        ["python", "-m", "ipykernel_launcher"],
        scratch="/scratch",
        runtime=Path("/tmp/rt"),
        package=Path("/tmp/stub/heads_and_masks"),
        env={"HOME": "/tmp"},
        uid=123456,
        scratch_mb=64,
        cpu_seconds=10,
        max_file_mb=8,
        max_processes=32,
    )
    text = " ".join(command)
    assert "--clearenv" in command and "--unshare-net" in command and "--unshare-pid" in command
    assert "--ro-bind / /" not in text, "the whole file system must not be visible"
    for path in ("/tmp", "/dev/shm", "/scratch"):  # small private tmpfs mounts, never the grader's folders
        index = command.index(path, command.index("--tmpfs") - 1)
        assert command[index - 1] == "--tmpfs" and command[index - 5] == "--size"
        assert int(command[index - 4]) == 64 * 2**20
    assert f"--ro-bind /tmp/stub/heads_and_masks {REPO / 'heads_and_masks'}" in text
    assert "--bind /tmp/rt /tmp/rt" in text and command[command.index("--chdir") + 1] == "/scratch"
    assert "--reuid=123456" in text and "--nproc=32" in text and f"--fsize={8 * 2**20}" in text
    assert str(REPO / "solutions") not in text and str(REPO / "class" / "gradebook.db") not in text


def test_every_kernel_gets_a_uid_of_its_own():
    uids = {private_uid() for _ in range(10)}
    assert len(uids) == 10 and min(uids) >= 100_000


def test_course_config_puts_the_judge_in_place_of_execute():
    from nbgrader.converters import Autograde
    from traitlets.config.loader import PyFileConfigLoader

    from autograde.adopt_release import AdoptRelease
    from autograde.judge import Judge

    config = PyFileConfigLoader("nbgrader_config.py", path=str(REPO / "autograde")).load_config()
    steps = config.Autograde.autograde_preprocessors
    assert steps[0] is Judge and not any(getattr(s, "__name__", "") == "Execute" for s in steps)
    # the submitted notebook is cleaned by nbgrader's own sanitize step, all of it kept, the course's last
    sanitizing = config.Autograde.sanitize_preprocessors
    assert sanitizing == [*Autograde.class_traits()["sanitize_preprocessors"].default(), AdoptRelease]
    # the feedback's language first (the placeholder of a hidden test is said in it), then the hidden tests go,
    # before any step that renders the page
    assert config.GenerateFeedback.preprocessors[:2] == [SayInLanguage, HideHiddenTests]
    assert config.OverwriteCells.add_missing_cells is True


def test_the_judge_refuses_a_notebook_the_sanitize_step_did_not_clean():
    from autograde.judge import Judge

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('graded as it was handed in')")])
    where = {"nbgrader": {"assignment": "00_start_here", "student": "ada", "notebook": "00_start_here"}}
    with pytest.raises(RuntimeError, match="was not cleaned by AdoptRelease"):
        Judge().preprocess(notebook, where)


def test_grading_key_is_made_once_private_and_never_overwritten(tmp_path):
    from autograde import grading_key

    path = tmp_path / "class" / "grading-key"
    first = grading_key.load_or_create(path)
    assert len(first) >= 32 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert grading_key.load_or_create(path) == first
    link = tmp_path / "linked-key"
    link.symlink_to(path)
    with pytest.raises(OSError):
        grading_key.load_or_create(link)  # never read through a link


def test_hidden_inputs_depend_on_the_key_and_the_submission():
    from heads_and_masks.checks.core import rng, secret_inputs

    published = rng(7919).normal(size=5)
    assert np.array_equal(published, np.random.default_rng(7919).normal(size=5))
    with secret_inputs(b"k" * 32, "00/alice/abc"):
        alice = rng(7919).normal(size=5)
        assert np.array_equal(alice, rng(7919).normal(size=5)), "the same submission must get the same inputs"
    with secret_inputs(b"k" * 32, "00/alice/abd"):
        changed = rng(7919).normal(size=5)
    with secret_inputs(b"K" * 32, "00/alice/abc"):
        other_key = rng(7919).normal(size=5)
    assert not np.allclose(alice, published) and not np.allclose(alice, changed) and not np.allclose(alice, other_key)


def _hidden_of(assignment):
    cells = [c for c in solution_notebook(assignment).cells if c.cell_type == "code"]
    return {line.strip() for c in cells for line in split_hidden(c.source)[1] if len(line.strip()) >= 8}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_feedback_filter_removes_every_hidden_line(assignment):
    notebook = solution_notebook(assignment)
    hidden = _hidden_of(assignment)
    assert hidden, f"{assignment} has no hidden tests"
    sample = sorted(hidden)[0]
    tests = [
        c
        for c in notebook.cells
        if c.get("metadata", {}).get("nbgrader", {}).get("grade") and not c.metadata["nbgrader"].get("solution")
    ]
    # what grading leaves: a failing test whose traceback quotes a hidden line, and student output
    # that printed a hidden line
    tests[-1].outputs = [
        nbformat.v4.new_output(
            "error",
            ename="CheckFailed",
            evalue="expected 1, got 2",
            traceback=["Traceback", f"----> 3 {sample}", "CheckFailed: expected 1, got 2"],
        )
    ]
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
    assert exercise_of("test_split_heads_errors", answers) == "split_heads"
    assert exercise_of("test_multi_head_attention", answers) == "multi_head_attention"
    assert exercise_of("test_attention", answers) == "attention"
    assert exercise_of("test_something_else", answers) == "something_else"


@pytest.mark.parametrize(
    "name,student,file",
    [
        ("doejane_12345_678_00_start_here.ipynb", "doejane", "00_start_here.ipynb"),  # Canvas
        ("doejane_late_12345_678_00_start_here-1.ipynb", "doejane", "00_start_here-1.ipynb"),  # Canvas, resubmitted
        ("Jane Doe_4711_assignsubmission_file_00_start_here.ipynb", "Jane Doe", "00_start_here.ipynb"),  # Moodle
        ("bob_00_start_here.ipynb", "bob", "00_start_here.ipynb"),
    ],
)
def test_default_lms_names(name, student, file):
    match = re.match(default_zip_regexp("00_start_here"), name)  # (a path in the zip)
    assert match and match["student_id"] == student and match["file_id"] == file


def test_lms_name_of_another_assignment_is_not_collected():
    assert re.match(default_zip_regexp("00_start_here"), "bob_01_heads.ipynb") is None


def test_compare_with_release_names_what_was_done_to_test_cells():
    released = nbformat.read(REPO / "notebooks" / ASSIGNMENTS[0] / f"{ASSIGNMENTS[0]}.ipynb", as_version=4)
    tests = [i for i, c in enumerate(released.cells) if is_test(c)]
    assert tests
    edited = nbformat.from_dict(nbformat.writes(released) and nbformat.reads(nbformat.writes(released), 4))
    edited.cells[tests[0]].source = "print('✓ everything passes')"
    assert any("was edited" in n for n in compare_with_release(edited, released))
    deleted = nbformat.reads(nbformat.writes(released), 4)
    del deleted.cells[tests[0]]
    assert any("was deleted" in n for n in compare_with_release(deleted, released))
    assert compare_with_release(released, released) == []


@pytest.mark.parametrize("stop", ["CallTimedOut", "KernelGone"])
def test_a_stop_passes_through_the_checks_to_the_judge(stop):
    """A call the grader stopped is a status, never a misconception: the checks catch a learner's
    exceptions (to say "raised TypeError" or "does not raise ValueError"), not the grader's stops."""
    from autograde.kernel import kernel_client
    from heads_and_masks.checks.core import call, expect_value_error

    def stopped(*args):
        raise getattr(kernel_client, stop)("stopped by the grader")

    with pytest.raises(kernel_client.GradingStopped):
        expect_value_error(stopped, np.zeros(3), what="f(bad)", why="bad arguments")
    with pytest.raises(kernel_client.GradingStopped):
        call(stopped, np.zeros(3), what="f(x)")


def test_a_folder_laid_out_another_way_is_explained(tmp_path):
    """`make grade SOURCE=folder/` with notebooks straight in each student's folder collects nothing: the
    instructor is told the layout expected and what is there instead, not just "0 submissions"."""
    from autograde.collect import folder_layout_hint

    for student in ("ana", "ben"):
        (tmp_path / student).mkdir()
        (tmp_path / student / "07_generation.ipynb").write_text("{}")
    hint = folder_layout_hint("07_generation", tmp_path)
    assert f"expected {tmp_path}/<student>/07_generation/*.ipynb" in hint, hint
    assert "ana/{07_generation.ipynb}" in hint and "ben/{07_generation.ipynb}" in hint, hint
    assert "is not a folder" in folder_layout_hint("07_generation", tmp_path / "missing")


def test_a_due_date_is_a_date_a_time_and_a_time_zone():
    """`make release DUE=...`: read as UTC, as nbgrader keeps it; without its zone (an hour off in Berlin), its
    time or a zone this machine knows, the release stops before it starts, saying how to write it."""
    import datetime as dt

    from autograde import grade
    from autograde.lateness import DueDateProblem, parse_due

    assert parse_due("2026-12-10 17:00 Europe/Berlin") == dt.datetime(2026, 12, 10, 16, 0)
    assert parse_due("2026-07-10 17:00 Europe/Berlin") == dt.datetime(2026, 7, 10, 15, 0)  # summer time
    assert parse_due("2026-12-10 17:00:30 UTC") == dt.datetime(2026, 12, 10, 17, 0, 30)
    for wrong, said in (
        ("2026-12-10 17:00", "has no time zone"),
        ("2026-12-10 Europe/Berlin", "has no time of day"),
        ("2026-12-10 17:00 Mars/Olympus", "names no time zone this machine knows"),
        ("next Friday UTC", "is not a date and time"),
    ):
        with pytest.raises(DueDateProblem, match=said):
            parse_due(wrong)
    with pytest.raises(SystemExit, match="error: the due date '2026-12-10 17:00' has no time zone"):
        grade.main(["--root", str(REPO / "no-such-course"), "release", "00_start_here", "--due", "2026-12-10 17:00"])


def test_each_command_names_its_function_and_all_runs_the_same_steps(monkeypatch):
    """``grade.py`` dispatches with argparse's ``set_defaults(func=...)``, and ``all`` calls the functions the
    commands of its steps call (so that a step's message or behaviour cannot differ between the two)."""
    from autograde import grade

    parser = grade.build_parser()
    for argv in (["setup", "a"], ["release", "a"], ["collect", "a"], ["autograde", "a"], ["feedback", "a"],
                 ["export"], ["report", "a"], ["similarity", "a"], ["all", "a"], ["bench"]):  # fmt: skip
        assert callable(getattr(parser.parse_args(argv), "func", None)), f"{argv[0]} names no function"
    steps = []
    for step in ("collect_submissions", "autograde_all", "give_feedback", "export_csv", "print_report"):
        monkeypatch.setattr(grade, step, lambda *args, step=step, **kwargs: steps.append(step))
    grade.all_command(None, parser.parse_args(["all", "a", "--exchange-collect"]))
    assert steps == ["collect_submissions", "autograde_all", "give_feedback", "export_csv", "print_report"]


def test_the_grading_command_gives_its_caller_the_umask_back():
    """The command makes what it writes private (umask 077) and, run in a caller's process (a test, a notebook),
    gives the caller's umask back: under 077 for good, the caller's later files were its own alone (a venv a
    sandboxed kernel then could not read: "the kernel died before it answered")."""
    from autograde import grade

    callers = os.umask(0o022)
    try:
        with pytest.raises(SystemExit):
            grade.main(
                ["--root", str(REPO / "no-such-course"), "release", "00_start_here", "--due", "2026-12-10 17:00"]
            )
        assert os.umask(0o022) == 0o022, "the grading command left its umask (077) in the caller's process"
    finally:
        os.umask(callers)


def test_the_late_policy_counts_days_after_its_grace_and_stops_at_its_cap():
    """The course's plug-in as nbgrader_config.py sets it: 15 minutes of grace, then 10% of the points for each
    day or part of a day, at most 50%."""
    from autograde.course import Course
    from autograde.late_policy import CourseLatePolicy, course_policy
    from autograde.lateness import how_late

    policy = course_policy(Course().config())
    assert type(policy) is CourseLatePolicy
    assert (policy.grace_minutes, policy.share_per_day, policy.max_share) == (15, 0.10, 0.50)
    minute, hour, day = 60, 3600, 86400
    late = [0, 15 * minute, 15 * minute + 1, hour, day, day + 1, 7 * day, 30 * day]
    assert [policy.penalty(seconds, 6) for seconds in late] == [0, 0, 0.6, 0.6, 0.6, 1.2, 3.0, 3.0]
    said = [how_late(seconds) for seconds in (59, hour, 7 * day + 30 * minute, 2 * day + 3 * hour + 5 * minute)]
    assert said == ["1 minute", "1 hour", "7 days", "2 days and 3 hours"]
