"""Several graders, one gradebook (issue 38, section 3): the course's gradebook on a PostgreSQL server.

A class of three is autograded while two graders, each in their own formgrader (the instructor's lab,
``tools/lab.py --instructor``, as each teaching assistant runs it), write manual grades through nbgrader's
formgrader REST API, the calls its page makes: one gives the written answer its score, the other writes a
comment on every answer, each as soon as a student's autograde is in the gradebook, while the next students
are still being graded and merged. Afterwards every grade is there (the autograder's, both graders'), none
lost or overwritten, each formgrader shows what the other wrote, and the exported CSV says the same.

The same test runs on the course's default SQLite file. On PostgreSQL the server is Debian's, started by the
session's fixture on 127.0.0.1 as an unprivileged account (the server refuses to run as root) with a cluster
of its own in a temporary folder, and removed at the end; the role and the database are made with the
commands docs/instructors.md gives. The rows are also read from the server itself (psycopg, not through the
course's code): a course that ignored the URL and wrote its SQLite file would be caught there.
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
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import unix_users
from course import REPO, grade_class, require_sandbox
from lab_process import LabProcess, free_port
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

    @property
    def url(self) -> str:
        """The gradebook's URL, as an instructor gives it (DB=...): the course's role, over TCP on 127.0.0.1."""
        from sqlalchemy.engine import URL

        return URL.create("postgresql+psycopg", ROLE, PASSWORD, "127.0.0.1", self.port, DATABASE).render_as_string(
            hide_password=False
        )

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
        server = PostgresServer(binaries, user, sockets, free_port())
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
            # docs/instructors.md, "Several graders": the course's role and its database
            server.psql(f"CREATE ROLE {ROLE} LOGIN PASSWORD '{PASSWORD}'", f"CREATE DATABASE {DATABASE} OWNER {ROLE}")
            yield server
        finally:
            unix_users.run_as(
                user, [str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"], check=False
            )
            shutil.rmtree(folder, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# A grader: their own formgrader, and what they do in it
# ---------------------------------------------------------------------------------------------


class Grader(threading.Thread):
    """A grader at work in their own formgrader: for each student announced, the written answer's score
    (``what="scores"``) or a comment on every answer (``what="comments"``), through the formgrader's API."""

    def __init__(self, lab: LabProcess, what: str):
        super().__init__(daemon=True)
        self.lab, self.what = lab, what
        self.students: queue.Queue[str | None] = queue.Queue()
        self.written: dict[tuple[str, str], object] = {}  # (student, cell) -> what the server said it saved
        self.error: BaseException | None = None

    def call(self, path: str, body: dict | None = None):
        request = urllib.request.Request(
            f"{self.lab.base_url}/formgrader/api/{path}",
            data=None if body is None else json.dumps(body).encode(),
            method="GET" if body is None else "PUT",
            headers={"Authorization": f"token {self.lab.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=WAIT) as response:  # noqa: S310 (127.0.0.1)
            return json.loads(response.read())

    def run(self) -> None:
        try:
            self.lab.request("/formgrader/api/status", deadline=time.monotonic() + WAIT)
            while (student := self.students.get()) is not None:
                self.grade(student)
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

    def grade(self, student: str) -> None:
        notebook = self.submission_id(student)
        if self.what == "scores":
            for grade in self.call(f"grades?submission_id={notebook}"):
                if grade["name"] == WRITTEN:
                    saved = self.call(f"grade/{grade['id']}", {"manual_score": SCORES[student], "extra_credit": None})
                    self.written[student, WRITTEN] = saved["manual_score"]
        else:
            for comment in self.call(f"comments?submission_id={notebook}"):
                text = comment_text(student, comment["name"])
                saved = self.call(f"comment/{comment['id']}", {"manual_comment": text})
                self.written[student, comment["name"]] = saved["manual_comment"]


def comment_text(student: str, cell: str) -> str:
    return f"The second grader read {student}'s {cell}."


def _as_instructor_lab(root: Path) -> None:
    """The repository's instructor lab (tools/lab.py, its configuration, the course's nbgrader_config.py) around
    the course, as tests/browser/test_browser_formgrader.py makes it."""
    (root / "tools").mkdir(exist_ok=True)
    shutil.copy(REPO / "tools" / "lab.py", root / "tools" / "lab.py")
    shutil.copytree(REPO / "tools" / "lab_config", root / "tools" / "lab_config")
    shutil.copytree(REPO / "tools" / "instructor_lab_data", root / "tools" / "instructor_lab_data")
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    for module in (REPO / "autograde").glob("*.py"):
        shutil.copy(module, root / "autograde" / module.name)
    shutil.copytree(REPO / "autograde" / "templates", root / "autograde" / "templates", dirs_exist_ok=True)


# ---------------------------------------------------------------------------------------------
# The class
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_two_graders_and_the_autograder_share_one_gradebook(backend, request, tmp_path, monkeypatch):
    require_sandbox()
    server = request.getfixturevalue("postgres") if backend == "postgresql" else None
    database = server.url if server else None
    # the formgrader's servers read it as make sets it (DB=...): autograde/nbgrader_config.py
    if database:
        monkeypatch.setenv(GRADEBOOK_URL_VARIABLE, database)
    else:
        monkeypatch.delenv(GRADEBOOK_URL_VARIABLE, raising=False)
    answers = {s: submission(A, {WRITTEN: f"{s.title()} writes: the largest score is subtracted."}) for s in STUDENTS}
    graders: list[Grader] = []
    labs: list[LabProcess] = []

    def start_graders(course) -> None:
        """The instructor sets the assignment up (its tables made once), then two graders open their formgraders."""
        setup(course, A)
        _as_instructor_lab(course.root)
        for number, what in enumerate(("scores", "comments")):
            lab = LabProcess(course.root, runtime=tmp_path / f"runtime-{number}", arguments=("--instructor",))
            labs.append(lab.start())
            graders.append(Grader(lab, what))
            graders[-1].start()

    def announce(result) -> None:  # each student's autograde, merged: both graders go to it at once
        for grader in graders:
            grader.students.put(result.student)

    try:
        run = grade_class(
            A, answers, tmp_path, workers=1, database=database, before_grading=start_graders, on_result=announce
        )
        for grader in graders:
            grader.students.put(None)
            grader.join(timeout=WAIT * 2)
            assert not grader.is_alive(), f"the {grader.what} grader did not finish:\n{grader.lab.output[-3000:]}"
            assert grader.error is None, (
                f"the {grader.what} grader failed: {grader.error!r}\n{grader.lab.output[-3000:]}"
            )
        course = run.course
        assert course.db_url == (database or f"sqlite:///{course.gradebook_path}")

        # what each grader's server answered it saved
        assert graders[0].written == {(s, WRITTEN): SCORES[s] for s in STUDENTS}
        comments = {key: value for key, value in graders[1].written.items()}
        assert {s for s, _ in comments} == set(STUDENTS) and all(v == comment_text(*k) for k, v in comments.items())

        # every grade is in the course's gradebook: the autograder's, the first grader's, the second's
        expected_auto = {s: run.results[s].autograded_total for s in STUDENTS}
        assert all(run.results[s].status.value == "graded" for s in STUDENTS), {
            s: r.line() for s, r in run.results.items()
        }
        with gradebook(course) as gb:
            for student in STUDENTS:
                notebook = gb.find_submission_notebook(A, A, student)
                grades = {g.name: g for g in notebook.grades}
                assert grades[WRITTEN].manual_score == SCORES[student] and not grades[WRITTEN].needs_manual_grade
                assert grades["test_attention"].auto_score == expected_auto[student] == 4.0
                assert {c.name: c.manual_comment for c in notebook.comments} == {
                    cell: text for (who, cell), text in comments.items() if who == student
                }
                assert notebook.score == SCORES[student] + expected_auto[student]

        # each formgrader shows what the other grader wrote (one database, not two)
        for grader, other in ((graders[0], graders[1]), (graders[1], graders[0])):
            for student in STUDENTS:
                notebook = grader.submission_id(student)
                shown = {g["name"]: g["manual_score"] for g in grader.call(f"grades?submission_id={notebook}")}
                said = {c["name"]: c["manual_comment"] for c in grader.call(f"comments?submission_id={notebook}")}
                assert shown[WRITTEN] == SCORES[student], (grader.what, student, shown)
                assert said == {cell: text for (who, cell), text in comments.items() if who == student}, said

        # the rows are where the URL says: read from that database itself, not through the course's code
        assert _rows_in(database, course) == {s: SCORES[s] for s in STUDENTS}

        # the exported CSV says the same
        from autograde.export import export_grades, exercises

        written_column = next(e for e, cells in exercises(course, A).items() if WRITTEN in cells)
        export_grades(course, tmp_path / "grades.csv", [A])
        with open(tmp_path / "grades.csv", newline="", encoding="utf-8") as handle:
            rows = {row["student"]: row for row in csv.DictReader(handle)}
        assert set(rows) == set(STUDENTS), rows
        for student in STUDENTS:
            row = rows[student]
            assert row["status"] == "graded" and row[written_column] == f"{SCORES[student]:g}", row
            assert row["total"] == f"{SCORES[student] + expected_auto[student]:g}" and row["max_total"] == "6", row
    finally:
        for grader in graders:
            grader.students.put(None)
        for lab in labs:
            if lab.process is not None:
                lab.stop()


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
        with psycopg.connect(
            host=url.host, port=url.port, user=url.username, password=url.password, dbname=url.database
        ) as connection:
            return dict(connection.execute(query, (WRITTEN,)).fetchall())
    import sqlite3

    connection = sqlite3.connect(course.gradebook_path)
    try:
        return dict(connection.execute(query.replace("%s", "?"), (WRITTEN,)).fetchall())
    finally:
        connection.close()
