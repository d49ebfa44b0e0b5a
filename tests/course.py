"""Helpers shared by the tests: the repository, its assignments, its notebooks, the grading sandbox.

(Imported as ``course``; ``conftest`` only holds fixtures, since tests/browser has a conftest too.)
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import functools
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]
# CI sets CI=true: there a missing tool (a browser, bubblewrap, root) fails a test instead of skipping it
IN_CI = os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
for extra in (REPO / "tools", REPO / "tests"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

# Make sure the venv's own tools (alembic, jupyter, nbgrader) are found by subprocesses.
os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
os.environ.setdefault("MPLBACKEND", "Agg")

ASSIGNMENTS = sorted(p.name for p in (REPO / "solutions").iterdir() if p.is_dir() and p.name[:2].isdigit())


def solution_notebook(assignment: str, language: str | None = None) -> nbformat.NotebookNode:
    """The instructor's version (``language``: another language's, e.g. "ru": solutions-ru/)."""
    folder = "solutions" if language is None else f"solutions-{language}"
    return nbformat.read(REPO / folder / assignment / f"{assignment}.ipynb", as_version=4)


def student_notebook(assignment: str, language: str | None = None) -> nbformat.NotebookNode:
    """The released version (``language``: another language's, e.g. "ru": notebooks-ru/)."""
    folder = "notebooks" if language is None else f"notebooks-{language}"
    return nbformat.read(REPO / folder / assignment / f"{assignment}.ipynb", as_version=4)


def kernel_reply_language_info() -> dict:
    """What a real ``python3`` kernel of this environment replies of its language (``kernel_info``): what
    JupyterLab writes into a notebook's metadata as the kernel comes up."""
    from jupyter_client.manager import start_new_kernel

    manager, client = start_new_kernel(kernel_name="python3")
    try:
        reply = client.kernel_info(reply=True, timeout=60)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    return reply["content"]["language_info"]


def require_sandbox() -> None:
    """Sandboxed grading needs bubblewrap: fail in CI without it, skip (saying how to get it) elsewhere."""
    from autograde.kernel.sandbox import sandbox_available

    available, why = sandbox_available()
    if available:
        return
    message = f"the grading sandbox is not available: {why}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message + " (as root: apt-get install bubblewrap; CI installs it)")


# ---------------------------------------------------------------------------------------------
# Grading through the instructor's pipeline (the one path: collect, grade, feedback, export)
# ---------------------------------------------------------------------------------------------
CELL_TIMEOUT = 30  # seconds per cell and per call in the suite's class runs (instructors' default: 60)
TEST_KEY = "a grading key for the test suite only: 7c2f0e9a51d84b6f93a0c1e2d4b5a6f7\n"


@dataclasses.dataclass(frozen=True)
class Symlink:
    """A symbolic link a student leaves in a handed-in folder."""

    target: str


@dataclasses.dataclass
class ClassRun:
    course: object  # autograde.course.Course
    assignment: str
    results: dict[str, object]  # student -> autograde.results.Result, with its autograded notebook loaded


def grade_class(
    assignment: str,
    submissions: dict[str, object],
    root: Path,
    *,
    workers: int = 2,
    key: str = TEST_KEY,
    database: str | None = None,
    before_grading=None,
    **grade_options,
) -> ClassRun:
    """Grade ``{student: notebook}`` (or ``{student: {file name: bytes}}``) for one assignment the way an
    instructor does: a course root at ``root``, the submissions collected from a folder, graded in
    parallel by ``pool.grade``. Every test that grades goes through here.

    ``database``: the gradebook's URL (default: the course's SQLite file, with every assignment set up);
    ``before_grading(course)``: called once the submissions are collected, just before grading starts."""
    from autograde import collect, pool
    from autograde.course import Course

    shutil.copytree(_template_course(), root / "course", symlinks=True)
    course = Course(root=root / "course", database=database)
    (course.root / "class" / "grading-key").write_text(key)
    folder = root / "handed-in"
    for student, content in submissions.items():
        target = folder / student / assignment
        target.mkdir(parents=True, exist_ok=True)
        if isinstance(content, nbformat.NotebookNode):
            nbformat.write(content, target / f"{assignment}.ipynb")
        else:  # {file name: bytes, or a Symlink}
            for name, data in content.items():
                if isinstance(data, Symlink):
                    os.symlink(data.target, target / name)
                else:
                    (target / name).write_bytes(data if isinstance(data, bytes) else str(data).encode())
    collect.collect_folder(course, assignment, folder)
    if before_grading is not None:
        before_grading(course)
    results = pool.grade(course, assignment, workers=workers, progress=False, **grade_options)
    for result in results.values():
        result.load_notebook(course)
    return ClassRun(course, assignment, results)


def assert_one_submission_each(course, assignment: str, students: list[str]) -> None:
    """In the gradebook, every student with a collected submission has one submission, with one grade a cell."""
    from sqlalchemy import create_engine, text

    from autograde.results import grade_cells

    engine = create_engine(course.db_url)  # the course's gradebook, on whichever database it is
    with engine.connect() as db:
        per_student = dict(
            db.execute(text("select student_id, count(*) from submitted_assignment group by student_id")).all()
        )
        grades = dict(
            db.execute(
                text(
                    "select sa.student_id, count(*) from grade g join submitted_notebook sn on g.notebook_id = sn.id "
                    "join submitted_assignment sa on sn.assignment_id = sa.id group by sa.student_id"
                )
            ).all()
        )
    engine.dispose()
    cells = len(grade_cells(course, assignment))
    for student in students:
        if course.path("submitted", student, assignment).is_dir():
            assert per_student.get(student) == 1, (student, per_student)
            assert grades.get(student) == cells, (student, grades)


_SCRATCH = Path(tempfile.mkdtemp(prefix="hm-tests-"))
atexit.register(shutil.rmtree, _SCRATCH, True)


@functools.cache
def _template_course() -> Path:
    """A course root with every assignment in its gradebook, made once; each grading test copies it."""
    from autograde.course import make_course_copy, setup

    course = make_course_copy(_SCRATCH / f"template-{os.getpid()}")  # (the process grading ahead has its own)
    course.runtime_dir("work")  # the class's folder, 0700, where each grading test writes its key
    for assignment in ASSIGNMENTS:
        setup(course, assignment)
    return course.root


def graded_batch(assignment: str) -> ClassRun:
    """One grading run per assignment for the whole suite: the untouched notebook, the solutions, every
    catalog answer and every attack on that assignment, graded together (tests read their parts).

    Graded ahead by another process when the session's tests will read it (``grade_ahead``), else here.
    A run that failed fails every test that reads it, with the run's own error."""
    require_sandbox()
    if assignment not in _CLASS_RUNS:
        try:
            _CLASS_RUNS[assignment] = _graded_ahead(assignment) or _graded_batch(assignment, os.getpid())
        except Exception as error:  # noqa: BLE001 - the run's own error, raised in every test that reads it
            _CLASS_RUNS[assignment] = error
    run = _CLASS_RUNS[assignment]
    if isinstance(run, Exception):
        raise run
    return run


_CLASS_RUNS: dict[str, ClassRun | Exception] = {}


# The class runs graded ahead: while the first tests of a session run (browsers, kernels: about one core),
# another process grades the class runs the later tests will read, on the core they leave idle, in the
# order they will read them. It grades them as any test does (``_graded_batch``, so ``grade_class``, so
# ``pool.grade``) into this session's scratch folder, and leaves beside each course a file saying it is
# done or why it failed; the tests read the run from the course, as an instructor's report does.
_AHEAD: subprocess.Popen | None = None
_AHEAD_OF: list[str] = []
_DONE, _FAILED = "graded-ahead", "failed-ahead"


def grade_ahead(assignments: list[str]) -> None:
    """Start grading the class runs of ``assignments`` (in that order) in another process."""
    global _AHEAD
    from autograde.kernel.sandbox import sandbox_available

    assignments = list(dict.fromkeys(assignments))
    if not assignments or _AHEAD is not None or not sandbox_available()[0]:
        return  # without the sandbox graded_batch says why, test by test
    _AHEAD_OF[:] = assignments
    code = f"import sys; sys.path.insert(0, {str(REPO / 'tests')!r}); import course; course._grade_ahead_here()"
    with open(_SCRATCH / "graded-ahead.log", "wb") as log:
        _AHEAD = subprocess.Popen(
            [sys.executable, "-c", code, str(_SCRATCH), *assignments],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # stopped with everything it started (stop_grading_ahead)
        )


def _grade_ahead_here() -> None:
    """(In the process grade_ahead starts) grade each class run, and do each job (``module:function``), into the
    parent's scratch folder."""
    global _SCRATCH
    _SCRATCH = Path(sys.argv[1])
    _stop_with_the_session(os.getppid())
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))  # stopped: its atexit clean-ups still run (accounts, folders)
    for work in sys.argv[2:]:
        try:
            if ":" in work:
                module, function = work.split(":")
                result = getattr(importlib.import_module(module), function)()
                written = _SCRATCH / f"{work}.json.part"
                written.write_text(json.dumps(result))
                written.rename(_SCRATCH / f"{work}.json")
            else:
                _graded_batch(work, os.getpid())
        except BaseException as error:  # said to the tests that read this run or job
            import traceback

            written = _SCRATCH / f"{work}.{_FAILED}.part"
            written.write_text(traceback.format_exc())
            written.rename(_SCRATCH / f"{work}.{_FAILED}")  # whole when the tests see it
            if isinstance(error, (SystemExit, KeyboardInterrupt)):
                raise  # stopped (SIGTERM, Ctrl-C): nothing more is done
        else:
            (_SCRATCH / f"{work}.{_DONE}").touch()


def _stop_with_the_session(session: int) -> None:
    """(In the process grading ahead) stop, with everything it started, once the pytest process ``session`` is gone
    without stopping it (killed by a timeout or a signal, its atexit never ran): two such orphans once went on
    grading every class run for twenty minutes, on a machine others were measuring on."""
    import threading
    import time

    def watch() -> None:
        while os.getppid() == session:
            time.sleep(1)
        os.killpg(0, signal.SIGTERM)  # its own group (start_new_session), as stop_grading_ahead does
        time.sleep(20)
        os.killpg(0, signal.SIGKILL)

    threading.Thread(target=watch, name="stop-with-the-session", daemon=True).start()


def _graded_ahead(assignment: str) -> ClassRun | None:
    """The class run of ``assignment`` graded ahead (waiting for it), or None if it is not graded ahead."""
    from autograde.course import Course
    from autograde.results import read_results

    if not _waited_ahead(assignment, f"the class run of {assignment}, graded ahead"):
        return None
    course = Course(root=_class_run_root(assignment, _AHEAD.pid) / "course")
    results = read_results(course, assignment)
    for result in results.values():
        result.load_notebook(course)
    return ClassRun(course, assignment, results)


def _waited_ahead(work: str, what: str, *, failure_raised: bool = True) -> bool:
    """Whether ``work`` (an assignment's class run, or a job) was done ahead, waiting for it; its failure raised
    (or, with ``failure_raised=False``, taken as not done)."""
    import time

    if _AHEAD is None or work not in _AHEAD_OF:
        return False
    done, failed = _SCRATCH / f"{work}.{_DONE}", _SCRATCH / f"{work}.{_FAILED}"
    while not (done.exists() or failed.exists()):
        if _AHEAD.poll() is not None and not (done.exists() or failed.exists()):  # ended before it: do it here
            return False
        time.sleep(0.2)
    if failed.exists() and failure_raised:
        raise RuntimeError(f"{what} failed:\n{failed.read_text()}")
    return done.exists()


def done_ahead(job: str, here):
    """What the job ``module:function`` returned (plain data, through JSON), done ahead by the process grading
    ahead when the session asked it to (``tests/conftest.py``, ``AHEAD_JOBS``), else by ``here()`` now: work that
    is mostly waiting (timeouts, other users' processes) waits beside the tests before it."""
    if _waited_ahead(job, f"{job}, done ahead", failure_raised=False):
        return json.loads((_SCRATCH / f"{job}.json").read_text())
    return json.loads(json.dumps(here()))  # failed ahead or not asked: here, where pytest says why (fail or skip)


def stop_grading_ahead() -> None:
    """Stop the process grading ahead, with its workers and kernels (the session is ending)."""
    if _AHEAD is not None and _AHEAD.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(_AHEAD.pid, signal.SIGTERM)
        try:
            _AHEAD.wait(timeout=20)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(_AHEAD.pid, signal.SIGKILL)
            _AHEAD.wait()


def _class_run_root(assignment: str, process: int) -> Path:
    return _SCRATCH / f"class-runs-{process}" / assignment  # a run graded here never meets one graded ahead


def _graded_batch(assignment: str, process: int) -> ClassRun:
    from catalog import catalogs
    from catalog.attacks import ATTACKS, BALLAST_ATTACKS, PROBE
    from catalog.boundary import HELPER_ATTACKS
    from submissions import in_language, submission

    submissions: dict[str, object] = {"untouched": student_notebook(assignment), "solution": submission(assignment, {})}
    for answer in catalogs().get(assignment, []):
        english = submission(assignment, {k: answer.source(k) for k in answer.cells}, keep_stubs=answer.untouched)
        submissions[f"catalog-{answer.name}"] = english
        # the same answer handed in the Russian notebook (tests/test_catalogs_russian.py): one more student, same run
        submissions[f"catalog-ru-{answer.name}"] = in_language(english, assignment, "ru")
    for attack in ATTACKS:
        if attack.assignment == assignment:
            submissions[f"attack-{attack.name}"] = attack.submission()
    for attack in HELPER_ATTACKS:  # tests/test_boundary.py reads these
        if attack.assignment == assignment:
            submissions[f"helper-{attack.name}"] = attack.submission()
    for attack in BALLAST_ATTACKS:  # and these
        if attack.assignment == assignment:
            submissions[f"ballast-{attack.name}"] = attack.submission()
    if assignment == "00_start_here":
        probe = submission(assignment, {})
        probe.cells.insert(1, nbformat.v4.new_code_cell(PROBE))
        submissions["probe"] = probe
    return grade_class(assignment, submissions, _class_run_root(assignment, process), cell_timeout=CELL_TIMEOUT)
