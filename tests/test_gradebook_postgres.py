"""Several graders, one gradebook (issue 38, section 3): the course's gradebook on a PostgreSQL server.

A class of three is autograded while two graders, each in their own formgrader (the instructor's lab,
``tools/lab.py --instructor``, as each teaching assistant runs it), write manual grades through the formgrader's
REST API, the calls its page makes: one gives the written answer its score, the other writes a comment on
every answer, each as soon as a student's autograde is merged, while the next students are still being graded
and merged. Then the instructor grades the class again (``--force``) and the graders revise every student
after the run has taken its copy of the gradebook for the workers and before it merges the later students.
Afterwards every grade is there (the autograder's, both graders' last), none lost or overwritten, each
formgrader shows what the other wrote, the rows read from the database itself agree, and so does the CSV.

Why the formgrader's API and not nbgrader's Gradebook from two processes: a formgrader server starts in a few
seconds here, and through it the graders write as they do in practice, with nbgrader's own handlers and the
one long-lived gradebook session each server keeps.

The same test runs on the course's default SQLite file. On PostgreSQL the server is Debian's, started by the
session's fixture on 127.0.0.1 as an unprivileged account (the server refuses to run as root) with a cluster
of its own in a temporary folder, and removed at the end; the role and the database are the ones
docs/instructors.md makes (the role by SQL rather than createuser's password prompt), and the password
comes from a password file, as there. The test fails
when the course ignores the URL (the graders' formgraders, on the server, never see a submission) and when a
merge writes back the workers' stale copy of a grade row (the graders' revision of the students merged
after it is lost: 0.5 where 1.5 was saved), on both databases.
"""

from __future__ import annotations

import csv
import dataclasses
import glob
import json
import os
import pwd
import queue
import shutil
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import pytest
import unix_users
from course import REPO, grade_class, require_sandbox
from lab_process import LabProcess, free_port, instructor_lab_around
from submissions import submission

from autograde.course import GRADEBOOK_URL_VARIABLE, gradebook, setup

pytestmark = pytest.mark.slow

A = "00_start_here"
WRITTEN = "written_largest_score"  # the written answer a person grades (2 points)
STUDENTS = ("alice", "bob", "carol")
SCORES = {"alice": 2.0, "bob": 0.5, "carol": 1.5}  # what the first grader gives each written answer
ROLE, PASSWORD, DATABASE = "heads_grader", "a password for the test only", "heads_and_masks"
WAIT = 60.0  # seconds a grader waits for its server, or for a submission the autograder has announced


# ---------------------------------------------------------------------------------------------
# A PostgreSQL server of the test's own
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class PostgresServer:
    bin: Path
    user: str
    sockets: Path
    port: int
    passwords: Path  # a ~/.pgpass for the course's role (docs/instructors.md), read by libpq through PGPASSFILE

    @property
    def url(self) -> str:
        """The gradebook's URL, as an instructor gives it (DB=...): the course's role, over TCP on 127.0.0.1, with
        no password in it (libpq finds it in the password file)."""
        return f"postgresql+psycopg://{ROLE}@127.0.0.1:{self.port}/{DATABASE}"

    def psql(self, *statements: str) -> None:
        """Run SQL as the cluster's superuser, over its private socket (as ``sudo -u postgres psql``)."""
        command = [str(self.bin / "psql"), "-h", str(self.sockets), "-p", str(self.port), "-U", "postgres"]
        command += ["-d", "postgres", "-v", "ON_ERROR_STOP=1", *(f"--command={s}" for s in statements)]
        unix_users.run_as(self.user, command)


def _postgres_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parts[4]))
    if not found:
        message = "PostgreSQL's server is not installed (/usr/lib/postgresql/*/bin)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message + " (as root: apt-get install postgresql; CI installs it)")
    return Path(found[-1]).parent


@pytest.fixture(scope="session")
def postgres():
    """A PostgreSQL server on 127.0.0.1 for the session: its cluster made by initdb in a temporary folder, run by
    an account made for it, with the course's role and database; stopped and removed, account included, at the end."""
    binaries = _postgres_bin()
    with unix_users.accounts("postgres") as made:
        user = made["postgres"]
        account = pwd.getpwnam(user)
        folder = Path(tempfile.mkdtemp(prefix="hm-postgres-"))
        os.chown(folder, account.pw_uid, account.pw_gid)
        data, sockets = folder / "data", folder / "sockets"
        unix_users.run_as(user, ["mkdir", "-m", "700", str(sockets)])
        server = PostgresServer(binaries, user, sockets, free_port(), folder / "pgpass")
        try:
            # the superuser reaches it through the socket folder only its account may open; every other
            # connection comes over TCP with a password
            initdb = [str(binaries / "initdb"), "-D", str(data), "-U", "postgres", "--auth-local=trust"]
            initdb += ["--auth-host=scram-sha-256", "--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions"]
            unix_users.run_as(user, initdb)
            options = f"-k {sockets} -h 127.0.0.1 -p {server.port} -c fsync=off"
            unix_users.run_as(
                user,
                [str(binaries / "pg_ctl"), "-D", str(data), "-l", str(folder / "server.log"), "-w", "-t", "60"]
                + ["-o", options, "start"],
            )
            # docs/instructors.md, "Several graders": the course's role (createuser --pwprompt there) and its database
            server.psql(f"CREATE ROLE {ROLE} LOGIN PASSWORD '{PASSWORD}'", f"CREATE DATABASE {DATABASE} OWNER {ROLE}")
            server.passwords.write_text(f"127.0.0.1:{server.port}:{DATABASE}:{ROLE}:{PASSWORD}\n")
            server.passwords.chmod(0o600)  # (libpq ignores a password file others may read)
            yield server
        finally:
            unix_users.run_as(
                user, [str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"], check=False
            )
            shutil.rmtree(folder, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# A grader: their own formgrader, and what they do in it
# ---------------------------------------------------------------------------------------------


def score(student: str, revision: int) -> float:
    """What the first grader gives a written answer (out of 2), at their first reading or on revising it."""
    return SCORES[student] if revision == 1 else 2.0 - SCORES[student]


def comment_text(student: str, cell: str, revision: int) -> str:
    return f"The second grader read {student}'s {cell} (reading {revision})."


class Grader(threading.Thread):
    """A grader at work in their own formgrader, through its REST API (the calls its page makes): for each
    (student, revision) handed to it, the written answer's score (``what="scores"``) or a comment on every
    answer (``what="comments"``)."""

    def __init__(self, lab: LabProcess, what: str):
        super().__init__(daemon=True)
        self.lab, self.what = lab, what
        self.work: queue.Queue[tuple[str, int] | None] = queue.Queue()
        self.ready = threading.Event()  # its formgrader answers
        self.written: dict[tuple[str, str], object] = {}  # (student, cell) -> what the server last said it saved
        self.error: BaseException | None = None

    def call(self, path: str, body: dict | None = None):
        request = urllib.request.Request(  # noqa: S310 - the test's own lab on 127.0.0.1
            f"{self.lab.base_url}/formgrader/api/{path}",
            data=None if body is None else json.dumps(body).encode(),
            method="GET" if body is None else "PUT",
            headers={"Authorization": f"token {self.lab.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=WAIT) as response:  # noqa: S310 (127.0.0.1)
            return json.loads(response.read())

    def run(self) -> None:
        try:
            status, body = self.lab.request("/formgrader/api/status", deadline=time.monotonic() + WAIT)
            assert status == 200, f"the formgrader answered {status}: {body[:500]}"
            self.ready.set()
            while (task := self.work.get()) is not None:
                try:
                    if self.error is None:
                        self.grade(*task)
                finally:
                    self.work.task_done()
        except BaseException as error:  # noqa: BLE001 - said by the test
            self.error = error

    def grade(self, student: str, revision: int) -> None:
        try:
            notebook = self.submission_id(student)
            if self.what == "scores":
                for grade in self.call(f"grades?submission_id={notebook}"):
                    if grade["name"] == WRITTEN:
                        given = {"manual_score": score(student, revision), "extra_credit": None}
                        self.written[student, WRITTEN] = self.call(f"grade/{grade['id']}", given)["manual_score"]
            else:
                for comment in self.call(f"comments?submission_id={notebook}"):
                    given = {"manual_comment": comment_text(student, comment["name"], revision)}
                    self.written[student, comment["name"]] = self.call(f"comment/{comment['id']}", given)[
                        "manual_comment"
                    ]
        except BaseException as error:  # noqa: BLE001 - said by the test
            self.error = error

    def submission_id(self, student: str) -> str:
        """The student's submitted notebook, once the formgrader lists it (the autograder has merged it)."""
        deadline = time.monotonic() + WAIT
        while True:
            listed = {s["student"]: s["id"] for s in self.call(f"submitted_notebooks/{A}/{A}")}
            if student in listed:
                return listed[student]
            assert time.monotonic() < deadline, f"{student}'s submission never reached this formgrader: {listed}"
            time.sleep(0.2)

    def finish(self, timeout: float = WAIT * 2) -> None:
        """Wait until it has done all it was given; fail with what went wrong."""
        deadline = time.monotonic() + timeout
        while self.work.unfinished_tasks and self.error is None and self.is_alive():
            assert time.monotonic() < deadline, f"the {self.what} grader did not finish:\n{self.lab.output[-3000:]}"
            time.sleep(0.05)
        assert self.error is None, f"the {self.what} grader failed: {self.error!r}\n{self.lab.output[-3000:]}"


# ---------------------------------------------------------------------------------------------
# The class
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_two_graders_and_the_autograder_share_one_gradebook(backend, request, tmp_path, monkeypatch):
    """First grading: each grader reads a student as soon as the autograder has merged them, while the next
    ones are graded and merged. Then the instructor grades the class again (``--force``, as after fixing a
    test) and the graders revise every student meanwhile: after the run has started (its copy of the gradebook
    for the workers is taken) and before the later students' autogrades are merged, the merges of the
    students the graders just revised. The merge writes the autograder's columns only: every revision stays."""
    from autograde import pool
    from autograde.export import export_grades, exercises

    require_sandbox()
    server = request.getfixturevalue("postgres") if backend == "postgresql" else None
    database = server.url if server else None
    # the formgraders read it as make sets it (DB=...): autograde/nbgrader_config.py
    if database:
        monkeypatch.setenv(GRADEBOOK_URL_VARIABLE, database)
        monkeypatch.setenv("PGPASSFILE", str(server.passwords))  # each grader's ~/.pgpass
    else:
        monkeypatch.delenv(GRADEBOOK_URL_VARIABLE, raising=False)
    answers = {s: submission(A, {WRITTEN: f"{s.title()} writes: the largest score is subtracted."}) for s in STUDENTS}
    graders: list[Grader] = []

    def start_graders(course) -> None:
        """Two graders open their formgraders while the instructor sets the assignment up (nbgrader's tables made
        once, before any formgrader opens the gradebook: on its first call); the class is graded once both answer."""
        instructor_lab_around(course.root)
        for number, what in enumerate(("scores", "comments")):
            lab = LabProcess(course.root, runtime=tmp_path / f"runtime-{number}", arguments=("--instructor",))
            graders.append(Grader(lab.start(), what))
            graders[-1].start()
        setup(course, A)
        for grader in graders:
            assert grader.ready.wait(WAIT) or grader.error, f"no formgrader:\n{grader.lab.output[-3000:]}"

    def first_reading(result) -> None:  # a student's autograde is merged: both graders go to it at once
        for grader in graders:
            grader.work.put((result.student, 1))

    second_run: list[str] = []  # the students in the order the second run merged them, and when the graders revised

    def revise_after_the_first_merge(result) -> None:
        second_run.append(result.student)
        if len(second_run) == 1:  # the run's copy for the workers is taken, one student is merged: revise everyone
            for grader in graders:
                for student in STUDENTS:
                    grader.work.put((student, 2))
            for grader in graders:
                grader.finish()
            second_run.append("(revised)")

    try:
        run = grade_class(
            A, answers, tmp_path, workers=1, database=database, before_grading=start_graders, on_result=first_reading
        )
        for grader in graders:
            grader.finish()
        course = run.course
        assert course.db_url == (database or f"sqlite:///{course.gradebook_path}")
        assert all(r.status.value == "graded" and r.autograded_total == 4.0 for r in run.results.values()), {
            s: r.line() for s, r in run.results.items()
        }
        _check_every_grade(course, graders, revision=1)

        again = pool.grade(course, A, workers=1, force=True, progress=False, on_result=revise_after_the_first_merge)
        assert all(r.status.value == "graded" and r.autograded_total == 4.0 for r in again.values())
        # two students' autogrades were merged after the graders had revised them (the order is Dask's)
        assert second_run[1] == "(revised)" and sorted(second_run[:1] + second_run[2:]) == sorted(STUDENTS), second_run
        _check_every_grade(course, graders, revision=2)

        # each formgrader shows what the other grader wrote (one database, not two)
        for grader in graders:
            for student in STUDENTS:
                notebook = grader.submission_id(student)
                shown = {g["name"]: g["manual_score"] for g in grader.call(f"grades?submission_id={notebook}")}
                said = {c["name"]: c["manual_comment"] for c in grader.call(f"comments?submission_id={notebook}")}
                assert shown[WRITTEN] == score(student, 2), (grader.what, student, shown)
                assert said == {cell: comment_text(student, cell, 2) for cell in said} and len(said) == 2, said

        # the rows are where the URL says: read from that database itself, not through the course's code
        assert _rows_in(database, course) == {s: score(s, 2) for s in STUDENTS}

        # the exported CSV says the same
        written_column = next(e for e, cells in exercises(course, A).items() if WRITTEN in cells)
        export_grades(course, tmp_path / "grades.csv", [A])
        with open(tmp_path / "grades.csv", newline="", encoding="utf-8") as handle:
            rows = {row["student"]: row for row in csv.DictReader(handle)}
        assert set(rows) == set(STUDENTS), rows
        for student in STUDENTS:
            row = rows[student]
            assert row["status"] == "graded" and row[written_column] == f"{score(student, 2):g}", row
            assert row["total"] == f"{score(student, 2) + 4:g}" and row["max_total"] == "6", row
    finally:
        for grader in graders:
            grader.work.put(None)
            grader.lab.stop()


def _check_every_grade(course, graders: list[Grader], revision: int) -> None:
    """Each grader's last writes, as its server said it saved them, are all in the gradebook, beside the
    autograder's scores."""
    scores, comments = graders
    assert scores.written == {(s, WRITTEN): score(s, revision) for s in STUDENTS}, scores.written
    assert len(comments.written) == 2 * len(STUDENTS), comments.written  # the code answer and the written one
    assert all(text == comment_text(s, cell, revision) for (s, cell), text in comments.written.items())
    with gradebook(course) as gb:
        for student in STUDENTS:
            notebook = gb.find_submission_notebook(A, A, student)
            grades = {g.name: g for g in notebook.grades}
            assert grades[WRITTEN].manual_score == score(student, revision), (student, revision)
            assert grades["test_attention"].auto_score == 4.0, (student, revision)
            assert {(student, c.name): c.manual_comment for c in notebook.comments} == {
                key: text for key, text in comments.written.items() if key[0] == student
            }
            assert notebook.score == score(student, revision) + 4.0


def _rows_in(database: str | None, course) -> dict[str, float]:
    """student -> the written answer's manual score, read straight from the database: the server's with psycopg,
    else the SQLite file with sqlite3."""
    query = (
        "SELECT sa.student_id, g.manual_score FROM grade g JOIN grade_cells gc ON g.cell_id = gc.id"
        " JOIN base_cell bc ON gc.id = bc.id JOIN submitted_notebook sn ON g.notebook_id = sn.id"
        " JOIN submitted_assignment sa ON sn.assignment_id = sa.id WHERE bc.name = %s"
    )
    if database:
        import psycopg
        from sqlalchemy.engine import make_url

        url = make_url(database)
        with psycopg.connect(host=url.host, port=url.port, user=url.username, dbname=url.database) as connection:
            return dict(connection.execute(query, (WRITTEN,)).fetchall())
    import sqlite3

    connection = sqlite3.connect(course.gradebook_path)
    try:
        return dict(connection.execute(query.replace("%s", "?"), (WRITTEN,)).fetchall())
    finally:
        connection.close()


def test_the_database_setting_reaches_every_reader_of_the_gradebook(monkeypatch):
    """One setting, read the same by the grading commands (grade.py, from DB= or --db) and by nbgrader's own
    commands and the formgrader (autograde/nbgrader_config.py); unset, both use the SQLite file. A message
    names the server without the password."""
    from traitlets.config.loader import PyFileConfigLoader

    from autograde.course import Course
    from autograde.grade import build_parser

    url = "postgresql+psycopg://heads_grader:secret@127.0.0.1:5432/heads_and_masks"

    def nbgrader_db_url() -> str:
        config = PyFileConfigLoader("nbgrader_config.py", path=str(REPO / "autograde")).load_config()
        return config.CourseDirectory.db_url

    def graded_course(*arguments: str) -> Course:
        from autograde.course import configured_gradebook_url

        args = build_parser().parse_args([*arguments, "report", A])
        return Course(root=REPO, database=args.db or configured_gradebook_url())

    monkeypatch.delenv(GRADEBOOK_URL_VARIABLE, raising=False)
    assert nbgrader_db_url() == graded_course().db_url == f"sqlite:///{REPO / 'class' / 'gradebook.db'}"
    assert graded_course().gradebook_in_file and graded_course("--db", url).db_url == url

    monkeypatch.setenv(GRADEBOOK_URL_VARIABLE, url)
    course = graded_course()
    assert nbgrader_db_url() == course.db_url == course.config().CourseDirectory.db_url == url
    assert not course.gradebook_in_file and course.has_gradebook()
    assert (
        "secret" not in course.describe_gradebook() and "127.0.0.1:5432/heads_and_masks" in course.describe_gradebook()
    )


@pytest.mark.parametrize("given", ["--db", "DB=", "instructor-lab DB="])
def test_a_gradebook_url_holding_its_password_is_refused(given, tmp_path):
    """Red team: every user of the machine reads every process's command line (/proc/PID/cmdline), students on
    the class's hub included, so ``make grade DB=postgresql+psycopg://heads_grader:PASSWORD@...`` (or ``--db``)
    showed the shared gradebook's password to the class for as long as the run lasted. The grading commands now
    refuse such a URL before anything connects, and say where the password goes; nothing echoes it. So does
    ``make instructor-lab DB=...`` (tools/lab.py), before its formgrader connects."""
    import subprocess
    import sys

    password = "hunter2-" + os.urandom(4).hex()
    url = f"postgresql+psycopg://heads_grader:{password}@127.0.0.1:5432/heads_and_masks"
    grade = [sys.executable, "-m", "autograde.grade", "--root", str(tmp_path)]
    env = {k: v for k, v in os.environ.items() if k != GRADEBOOK_URL_VARIABLE}
    if given == "--db":
        command = [*grade, "--db", url, "export"]
    else:  # what make's DB= sets
        env[GRADEBOOK_URL_VARIABLE] = url
        command = [*grade, "export"]
    if given == "instructor-lab DB=":
        # --version: were the URL let through, JupyterLab would print its version and stop, not serve
        command = [sys.executable, str(REPO / "tools" / "lab.py"), "--instructor", "--version"]
    ran = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert ran.returncode != 0, f"the command ran with a password in its URL:\n{ran.stdout}{ran.stderr}"
    assert "holds a password" in ran.stderr and "~/.pgpass" in ran.stderr, ran.stderr
    assert password not in ran.stdout + ran.stderr
