"""Step 0, the course: where everything lives, and the one way nbgrader is called on it.

A :class:`Course` is a course root laid out as in ``nbgrader_config.py`` (the repository itself, or a
copy for tests and benchmarks). Every nbgrader command of the pipeline (generate, release, autograde,
feedback, release feedback) goes through :meth:`Course.nbgrader`: nbgrader's own Python API
(``NbGraderAPI``) with the course's ``nbgrader_config.py`` and this course's folders. Which cells are
answers and which are tests is nbgrader's to say (``nbgrader.utils``), never read by hand.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import shutil
import sys
from pathlib import Path

import nbformat

from .class_folder import CLASS_FOLDER
from .exchange import ExchangeLocation, ExchangeProblem, close_inbound, configured_exchange, prepare
from .kernel_language import tell_notebooks_their_kernel

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
STEPS = ("source", "release", "submitted", "autograded", "feedback", "solution")
EXCHANGE_COMMANDS = ("release_assignment", "release_feedback")  # nbgrader's, of those the pipeline runs
# The gradebook's database, when it is not the SQLite file class/gradebook.db: a SQLAlchemy URL such as
# postgresql+psycopg://heads_grader@127.0.0.1/heads_and_masks, so that several graders (formgrader) and the autograder share one
# database server (docs/instructors.md). Read by autograde/grade.py (every make target) and by
# autograde/nbgrader_config.py (nbgrader's own commands, the formgrader).
GRADEBOOK_URL_VARIABLE = "HEADS_AND_MASKS_GRADEBOOK_URL"


class PasswordInURL(ValueError):
    """A gradebook URL that carries its password, which every user of the machine could read."""


def without_password(url: str | None) -> str | None:
    """``url`` as it is, or PasswordInURL when it holds a password: a command's line (``make grade DB=...``,
    ``--db``) is readable by every user of the machine in /proc/PID/cmdline, students on a shared hub included,
    for as long as the command runs. libpq reads the password from the grader's own ~/.pgpass instead."""
    if url is None:
        return None
    from sqlalchemy.engine import make_url

    if make_url(url).password is not None:
        raise PasswordInURL(
            "the gradebook's URL holds a password, which every user of this machine can read in the command's "
            "line (/proc/PID/cmdline) while it runs. Give the URL without it (postgresql+psycopg://ROLE@HOST/DB) "
            "and keep the password in your ~/.pgpass, mode 600 (docs/instructors.md, Several graders, one "
            "gradebook); then change the role's password, since this one was on a command line."
        )
    return url


def configured_gradebook_url(environ=os.environ) -> str | None:
    """The gradebook URL the instructor set (``make ... DB=``, or the variable), or None: the SQLite file."""
    return environ.get(GRADEBOOK_URL_VARIABLE) or None


def share_gradebook_engines() -> None:
    """One SQLAlchemy engine per gradebook file in this process, instead of one per ``Gradebook`` that
    nbgrader opens (about ten per submission graded). An engine keeps the SQL it has compiled, so each
    statement is compiled once per process rather than once per ``Gradebook``: about 0.04 s of CPU per
    submission in a worker, a sixth of its own share. ``Gradebook.close`` still returns the engine's
    connections (``dispose``); only the compiled statements outlive it."""
    import functools

    import nbgrader.api

    if not hasattr(nbgrader.api.create_engine, "cache_info"):  # once per process
        nbgrader.api.create_engine = functools.lru_cache(maxsize=16)(nbgrader.api.create_engine)


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1))


# ---------------------------------------------------------------------------------------------
# Cells, as nbgrader sees them
# ---------------------------------------------------------------------------------------------


def grade_id(cell) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def is_answer(cell) -> bool:
    from nbgrader.utils import is_solution

    return is_solution(cell)


def is_test(cell) -> bool:
    """A graded cell that is not an answer: nbgrader's autograded test cell."""
    from nbgrader.utils import is_grade, is_solution

    return is_grade(cell) and not is_solution(cell)


# ---------------------------------------------------------------------------------------------
# The course
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Course:
    """A course root laid out as in nbgrader_config.py (the repository itself, or a copy for tests)."""

    root: Path = REPO
    exchange: Path | None = None  # nbgrader's exchange folder (None: where nbgrader's configuration puts it)
    course_id: str = "heads-and-masks"
    source: str = "solutions"
    release: str = "notebooks"
    submitted: str = f"{CLASS_FOLDER}/submitted"
    autograded: str = f"{CLASS_FOLDER}/autograded"
    feedback: str = f"{CLASS_FOLDER}/feedback"
    solution: str = f"{CLASS_FOLDER}/solution"
    runtime: str = CLASS_FOLDER  # the class's folder: gradebook.db, grading-key, results/, reports/, work/, logs/
    database: str | None = None  # the gradebook's SQLAlchemy URL (None: the SQLite file class/gradebook.db)

    def __post_init__(self):
        self.root = Path(self.root).resolve()
        if self.exchange is not None:
            self.exchange = Path(self.exchange).resolve()

    def path(self, step: str, student: str | None = None, assignment: str | None = None) -> Path:
        folder = self.root / getattr(self, step)
        if student is not None:
            folder = folder / student
        if assignment is not None:
            folder = folder / assignment
        return folder

    @functools.cached_property
    def exchange_location(self) -> ExchangeLocation:
        """The one exchange folder of every command (release, collect, release feedback), decided once:
        the one given (``--exchange``, ``EXCHANGE=``) or the one nbgrader's own commands use."""
        if self.exchange is not None:
            return ExchangeLocation(self.exchange, "given with --exchange or EXCHANGE=")
        return configured_exchange(HERE / "nbgrader_config.py")

    @property
    def exchange_root(self) -> Path:
        return self.exchange_location.root

    @property
    def runtime_root(self) -> Path:
        """The class's folder (class_folder.py): everything grading keeps of this class."""
        return self.root / self.runtime

    @property
    def gradebook_path(self) -> Path:
        return self.runtime_root / "gradebook.db"

    @property
    def db_url(self) -> str:
        return self.database or f"sqlite:///{self.gradebook_path}"

    @property
    def gradebook_in_file(self) -> bool:
        """Whether the gradebook is the course's SQLite file (not a database server's)."""
        return self.database is None

    def has_gradebook(self) -> bool:
        """Whether there is a gradebook to read: the SQLite file exists, or a database server is named
        (opening it there makes nbgrader's tables if the database is still empty)."""
        return not self.gradebook_in_file or self.gradebook_path.exists()

    def describe_gradebook(self) -> str:
        """Where the gradebook is, for a message: the file, or the server's URL without its password."""
        if self.gradebook_in_file:
            return str(self.gradebook_path)
        from sqlalchemy.engine import make_url

        return make_url(self.database).render_as_string(hide_password=True)

    def runtime_dir(self, *parts: str) -> Path:
        folder = self.runtime_root / Path(*parts)
        if not folder.is_dir():  # the class's folder, and its top folder (logs, work, ...), are the instructor's alone
            self.runtime_root.mkdir(mode=0o700, parents=True, exist_ok=True)
            (self.runtime_root / parts[0]).mkdir(mode=0o700, exist_ok=True)
            folder.mkdir(parents=True, exist_ok=True)
        return folder

    def make_private(self) -> None:
        """What grading keeps, readable by the instructor alone: the gradebook (every grade, every hidden
        test), the exported grades (the CSV and the LMS files), and the folders of submissions, graded notebooks,
        feedback, results, reports, logs and grading's work files (folders 0700, files 0600; nbgrader writes its
        notebooks 0644, so the folders are what hides them). On a shared JupyterHub host the course folder may be in reach of
        every student. The class's folder itself is made 0700; the grading key is made 0600 (grading_key.py)."""
        runtime = self.runtime_root
        # the class's folder, the gradebook's file (none when it is on a database server), the CSV, the LMS files
        kept = [runtime, self.gradebook_path, runtime / "grades.csv", *runtime.glob("grades-*.csv")]
        kept += [runtime / name for name in ("results", "reports", "logs", "work")]
        kept += [self.path(step) for step in ("submitted", "autograded", "feedback", "solution")]
        for path in kept:
            if path.exists() and not path.is_symlink():
                os.chmod(path, 0o700 if path.is_dir() else 0o600)

    def assignments(self) -> list[str]:
        return sorted(p.name for p in self.path("source").iterdir() if p.is_dir() and p.name[:2].isdigit())

    def config(self, settings: dict | None = None, **folders: str):
        """The course's ``nbgrader_config.py`` pointed at this course (``folders``: e.g. release=...).

        ``settings``: more traitlets settings by dotted name, e.g. ``{"Judge.timeout": 10}``.
        """
        from traitlets.config import Config
        from traitlets.config.loader import PyFileConfigLoader

        config = PyFileConfigLoader("nbgrader_config.py", path=str(HERE)).load_config()
        overrides = Config()
        overrides.CourseDirectory.root = str(self.root)
        overrides.CourseDirectory.course_id = self.course_id
        overrides.CourseDirectory.db_url = self.db_url
        for step in STEPS:
            overrides.CourseDirectory[f"{step}_directory"] = str(folders.get(step, getattr(self, step)))
        for dotted, value in (settings or {}).items():
            section, name = dotted.rsplit(".", 1)
            overrides[section][name] = value
        config.merge(overrides)
        return config

    def nbgrader(
        self,
        command: str,
        assignment: str,
        student: str | None = None,
        *,
        settings: dict | None = None,
        check: bool = True,
        **folders: str,
    ) -> dict:
        """Run one nbgrader command (a method of ``NbGraderAPI``: ``generate_assignment``,
        ``release_assignment``, ``autograde``, ``generate_feedback``, ``release_feedback``) on this course.

        Returns nbgrader's answer: ``{"success": bool, "log": str, "error": str}``. With ``check``, a
        failure raises RuntimeError with nbgrader's log.
        """
        from nbgrader.apps.api import NbGraderAPI
        from nbgrader.coursedir import CourseDirectory

        # nbgrader runs some helpers by name (alembic, for the gradebook): this interpreter's first.
        bin_dir = str(Path(sys.executable).parent)
        if os.environ.get("PATH", "").split(os.pathsep)[0] != bin_dir:
            os.environ["PATH"] = os.pathsep.join([bin_dir, os.environ.get("PATH", "")])
        if command in EXCHANGE_COMMANDS:  # the course's one exchange, whatever configuration nbgrader finds
            settings = {"Exchange.root": str(self.exchange_root), **(settings or {})}
        config = self.config(settings, **folders)
        api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
        arguments = [assignment] if student is None else [assignment, student]
        answer = getattr(api, command)(*arguments)
        if answer is None:  # nbgrader's exchange commands say nothing on platforms without an exchange
            answer = {"success": False, "error": f"{command} is not available here"}
        answer.setdefault("log", "")
        answer.setdefault("error", "")
        if check and not answer["success"]:
            raise RuntimeError(
                f"`nbgrader {command} {' '.join(arguments)}` failed:\n{answer['log']}\n{answer['error']}"
            )
        return answer


def last_error_line(log: str) -> str:
    """The line of a log (what ``Course.nbgrader`` answered) that most likely says what went wrong."""
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    for line in reversed(lines):
        if "Error" in line or "error" in line:
            return line[:300]
    return lines[-1][:300] if lines else "(no log)"


def gradebook(course: Course):
    from nbgrader.api import Gradebook

    if course.gradebook_in_file:
        course.gradebook_path.parent.mkdir(parents=True, exist_ok=True)
    return Gradebook(course.db_url, course.course_id)


def make_course_copy(root: Path, exchange: Path | None = None, database: str | None = None) -> Course:
    """A fresh course root with this repository's solutions/ and notebooks/, and each other language's release
    (notebooks-ru/: the grader compares a Russian submission with it), for tests and benchmarks."""
    from heads_and_masks import i18n

    root = Path(root)
    releases = [f"notebooks-{language}" for language in sorted(i18n.course_languages() - {i18n.ENGLISH})]
    for name in ["solutions", "notebooks", *releases]:
        if (REPO / name).is_dir():
            shutil.copytree(
                REPO / name, root / name, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__")
            )
    return Course(root=root, exchange=exchange, database=database)


# ---------------------------------------------------------------------------------------------
# Setting up and releasing an assignment
# ---------------------------------------------------------------------------------------------


def in_gradebook(course: Course, assignment: str) -> bool:
    from nbgrader.api import MissingEntry

    if not course.has_gradebook():
        return False
    with gradebook(course) as gb:
        try:
            return bool(gb.find_assignment(assignment).notebooks)
        except MissingEntry:
            return False


def setup(course: Course, assignment: str, force: bool = False) -> list[str]:
    """Record the assignment (its cells and hidden tests) in the course's gradebook.

    ``generate_assignment`` does it; its release goes to a scratch folder and is compared with the
    committed ``notebooks/``, which is never rewritten here. Returns warnings (e.g. stale notebooks).
    """
    if in_gradebook(course, assignment) and not force:
        return []
    scratch = course.runtime_dir("work", "release-check")
    shutil.rmtree(scratch / assignment, ignore_errors=True)
    course.nbgrader("generate_assignment", assignment, release=str(scratch))
    warnings = []
    released = course.path("release", assignment=assignment)
    for built in sorted((scratch / assignment).glob("*.ipynb")):
        committed = released / built.name
        if not committed.exists() or _comparable(committed) != _comparable(built):
            warnings.append(
                f"{committed.relative_to(course.root)} differs from what the solutions generate: "
                "run `make notebooks` before releasing"
            )
    shutil.rmtree(scratch, ignore_errors=True)
    return warnings


def _comparable(path: Path) -> str:
    return json.dumps(nbformat.read(path, as_version=4), sort_keys=True)


def release_language(requested: str | None) -> str:
    """The language of the course an instructor asked for ("ru", "ru-RU", a locale such as "ru_RU.UTF-8", as
    ``make release LANG=ru`` passes it): one the course speaks (heads_and_masks.i18n), else English."""
    from heads_and_masks import i18n

    code = (requested or "").strip().replace("-", "_").split("_")[0].split(".")[0].lower()
    return code if code in i18n.course_languages() else i18n.ENGLISH


def released_folder(course: Course, assignment: str, language: str) -> Path:
    """A language's student notebooks of ``assignment``: ``notebooks/`` in English, ``notebooks-ru/`` in Russian
    (the grader finds a submission's release the same way: adopt_release.language_release)."""
    from .adopt_release import language_release

    return language_release(course.path("release"), language) / assignment


def release(course: Course, assignment: str, language: str = "en") -> list[str]:
    """Put the student notebooks (``notebooks/<assignment>``, or ``notebooks-ru/<assignment>`` in Russian) into
    the exchange for students to fetch, each told what its kernel will say of its language
    (``kernel_language.py``), as `make lab`'s copies are. One language per release: the grader reads each
    submission's language from its notebook, so a student who worked in the other language is graded alike.

    The exchange's folders get the modes every student needs (``exchange.py``) before and after nbgrader's
    ``release_assignment``; what stops the release is an ExchangeProblem, said in one line."""
    warnings = prepare(course.exchange_location)
    warnings += setup(course, assignment)
    released = released_folder(course, assignment, language)
    if not released.is_dir():
        raise ExchangeProblem(f"there is no {released} to release: run `make notebooks` first")
    # what students fetch opens unmodified: a copy told what the kernel of this environment, theirs, replies of
    # its language (kernel_language.py) is released; the committed notebooks stay machine-neutral
    handed_out = course.runtime_dir("work", "release")
    shutil.rmtree(handed_out / assignment, ignore_errors=True)  # what a release killed half-way left
    try:
        shutil.copytree(released, handed_out / assignment)
        tell_notebooks_their_kernel(handed_out / assignment)
        answer = course.nbgrader(
            "release_assignment",
            assignment,
            settings={"ExchangeReleaseAssignment.force": True},
            check=False,
            release=str(handed_out),
        )
    finally:
        shutil.rmtree(handed_out, ignore_errors=True)
    if not answer["success"]:
        raise ExchangeProblem(
            f"nbgrader could not release {assignment} to the exchange {course.exchange_location.describe()}: "
            + last_error_line(answer["log"] + answer["error"])
        )
    close_inbound(course.exchange_root / course.course_id)
    return warnings


def set_due_date(course: Course, assignment: str, due) -> None:
    """Record the assignment's due date in the gradebook (nbgrader's ``duedate``: a naive UTC time, or None for
    no due date), where grading, the exports and the formgrader read it (late_policy.py)."""
    with gradebook(course) as gb:
        gb.update_or_create_assignment(assignment, duedate=due)


def due_date(course: Course, assignment: str):
    """The assignment's due date (naive UTC) from the gradebook, or None: no submission of it is late."""
    from nbgrader.api import MissingEntry

    if not course.has_gradebook():
        return None
    with gradebook(course) as gb:
        try:
            return gb.find_assignment(assignment).duedate
        except MissingEntry:
            return None


# ---------------------------------------------------------------------------------------------
# Who and what is expected
# ---------------------------------------------------------------------------------------------


def expected_notebooks(course: Course, assignment: str) -> list[str]:
    return sorted(p.stem for p in course.path("release", assignment=assignment).glob("*.ipynb")) or sorted(
        p.stem for p in course.path("source", assignment=assignment).glob("*.ipynb")
    )


def students_with_submissions(course: Course, assignment: str) -> list[str]:
    base = course.path("submitted")
    if not base.exists():
        return []
    return sorted(p.name for p in base.iterdir() if (p / assignment).is_dir())


def roster(course: Course, assignment: str) -> list[str]:
    """Every student the course knows: in the gradebook, with a submission, graded before, or named in a note
    of the collection (e.g. an account whose only folder in the exchange was refused: the report names it)."""
    students = set(students_with_submissions(course, assignment))
    record = course.runtime_root / "results" / "collection.json"
    if record.exists():
        students |= set(json.loads(record.read_text()).get("notes", {}).get(assignment, {}))
    if course.has_gradebook():
        with gradebook(course) as gb:
            students |= {s.id for s in gb.students}
    results = course.runtime_root / "results" / assignment
    if results.exists():
        students |= {p.stem for p in results.glob("*.json")}
    return sorted(students)
