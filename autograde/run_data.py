"""What a class run sends its workers besides the submissions: the gradebook as it was when the run began, and
the files of the assignment's source and of its releases (``run_tasks.run_jobs`` puts them in the run's settings).

The shapes of what travels between the coordinator and its workers are typed dicts (plain data: Dask pickles
it), checked where they arrive (``checked``): a field missing, one too many or of another type is refused there,
by name, rather than found later as a KeyError deep in the grading.
"""

from __future__ import annotations

import sqlite3
import types
import typing
import uuid
from pathlib import Path
from typing import TypedDict

from .course import Course


class RunSettings(TypedDict):
    """What every worker of a run receives once (``grade_worker.run_settings``), as plain data."""

    id: str
    course_id: str
    assignment: str
    gradebook: bytes  # zlib of a snapshot of the course gradebook (snapshot_gradebook)
    source: dict[str, bytes]  # {file name: bytes} of the assignment's source
    releases: dict[str, dict[str, bytes]]  # {language: {file name: bytes}} (released_notebooks)
    key: bytes  # the grading key
    submission_timeout: float | None
    config: dict[str, object]  # {"Judge.timeout": ..., "Judge.memory_mb": ..., "Judge.budget": ...}


class Job(TypedDict):
    """One submission, as a grading task receives it (``grade_worker.grade_submission``)."""

    student: str
    files: dict[str, bytes]  # the regular files collection took
    timestamp: str | None
    last: bool  # one of the run's last submissions, one per worker: no kernel is started after it


class _EveryWorkerResult(TypedDict):
    """What every grading task returns, whatever became of its submission."""

    student: str
    ok: bool
    seconds: float
    log: str
    stopped: bool  # the submission's time limit stopped it
    judge_notes: list[str]
    judge_limits: list[str]
    judge_status: str | None


class WorkerResult(_EveryWorkerResult, total=False):
    """What a grading task returns (statuses travel as their values, ``results.Status``)."""

    failure: str  # a Status's value, when not ok
    notebooks: dict  # nbgrader's grades and comments (grade_worker.read_grades), when ok
    timestamp: str | None  # when ok
    autograded: dict[str, bytes]  # written by nbgrader, when ok


class ShapeError(TypeError):
    """Data that came from another process is not the shape its receiver reads (``checked``)."""


def checked(shape: type, data: object) -> dict:
    """``data`` itself if it has the fields of the typed dict ``shape``, no others, each of its declared type;
    else ShapeError naming the field. For data that has just come from another process."""
    name = shape.__name__
    if not isinstance(data, dict):
        raise ShapeError(f"a {name} must be a dict, not {type(data).__name__}")
    missing = sorted(shape.__required_keys__ - data.keys())
    extra = sorted(data.keys() - shape.__required_keys__ - shape.__optional_keys__, key=repr)
    if missing:
        raise ShapeError(f"a {name} lacks the {_fields(missing)}")
    if extra:
        raise ShapeError(f"a {name} has no {_fields(extra)}")
    for field, hint in typing.get_type_hints(shape).items():
        if field in data and not _fits(data[field], hint):
            raise ShapeError(
                f"the field {field!r} of a {name} must be {_spelled(hint)}, not {type(data[field]).__name__}"
            )
    return data


def _fits(value: object, hint) -> bool:
    """Whether ``value`` is of the type ``hint`` (the few the shapes above use), down into dicts and lists."""
    origin, arguments = typing.get_origin(hint), typing.get_args(hint)
    if hint is object:
        return True
    if hint is float:  # an int is a float here, as in the type system; a bool is not a number of seconds
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if origin in (types.UnionType, typing.Union):
        return any(_fits(value, option) for option in arguments)
    if origin is dict:
        return isinstance(value, dict) and all(
            _fits(key, arguments[0]) and _fits(item, arguments[1]) for key, item in value.items()
        )
    if origin is list:
        return isinstance(value, list) and all(_fits(item, arguments[0]) for item in value)
    return isinstance(value, hint)


def _fields(names: list) -> str:
    return ("field " if len(names) == 1 else "fields ") + ", ".join(map(repr, names))


def _spelled(hint) -> str:
    return hint.__name__ if isinstance(hint, type) and not typing.get_args(hint) else str(hint)


def snapshot_gradebook(course: Course) -> bytes:
    """A consistent copy of the course gradebook, as the bytes of a SQLite file, for the workers to start from
    (each grades into its own copy: grade_worker.py). The course's SQLite file is copied with sqlite's backup
    API; a gradebook on a database server, table by table in one transaction (``copy_gradebook``)."""
    work = course.runtime_dir("work")
    for stale in work.glob("snapshot-*.db"):  # left by a run that was killed
        stale.unlink(missing_ok=True)
    target = work / f"snapshot-{uuid.uuid4().hex[:8]}.db"
    try:
        if course.gradebook_in_file:
            source = sqlite3.connect(course.gradebook_path)
            copy = sqlite3.connect(target)
            with copy:
                source.backup(copy)
            source.close()
            copy.close()
        else:
            copy_gradebook(course.db_url, f"sqlite:///{target}")
        return target.read_bytes()
    finally:
        target.unlink(missing_ok=True)


def copy_gradebook(source_url: str, target_url: str) -> None:
    """Copy every row of nbgrader's tables, and its schema version, from one gradebook to a new, empty one.

    From a database server the rows are read in one REPEATABLE READ transaction, which sees the database as it
    was when it began: graders writing meanwhile (formgrader) change nothing of the copy half way. (A SQLite
    source is read as it is; the course's own file is copied with sqlite's backup API instead.)"""
    from nbgrader.api import Base
    from sqlalchemy import create_engine, text

    source, target = create_engine(source_url), create_engine(target_url)
    snapshot = {} if source.dialect.name == "sqlite" else {"isolation_level": "REPEATABLE READ"}
    try:
        Base.metadata.create_all(bind=target)
        with (
            source.connect().execution_options(**snapshot) as reading,
            target.begin() as writing,
        ):
            for table in Base.metadata.sorted_tables:  # a table after those its rows refer to
                rows = [dict(row._mapping) for row in reading.execute(table.select())]
                if rows:
                    writing.execute(table.insert(), rows)
            # nbgrader reads the schema's version from alembic's table (not one of its own models)
            version = reading.execute(text("SELECT version_num FROM alembic_version")).scalar_one()
            writing.execute(text("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)"))
            writing.execute(text("INSERT INTO alembic_version (version_num) VALUES (:version)"), {"version": version})
    finally:
        source.dispose()
        target.dispose()


def released_notebooks(course: Course, assignment: str) -> dict[str, dict[str, bytes]]:
    """{language: {file name: bytes}} of every language the assignment is released in (English: notebooks/, Russian:
    notebooks-ru/): a worker compares each submission with the release of its own language (judge.Judge)."""
    from heads_and_masks import i18n

    from .course import released_folder

    folders = {language: released_folder(course, assignment, language) for language in sorted(i18n.course_languages())}
    return {language: files_of(folder) for language, folder in folders.items() if folder.is_dir()}


def files_of(folder: Path) -> dict[str, bytes]:
    """The regular files at the top of an assignment's folder (the notebooks, and any data they read)."""
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*")) if p.is_file() and not p.is_symlink()}
