"""nbgrader's exchange as a class uses it: every student a Unix account of its own, the instructor's real commands.

On a machine where no folder of the exchange exists yet, the instructor (root here) releases with
``python -m autograde.grade release`` into the exchange that nbgrader's configuration names (a Jupyter
configuration folder that the students' nbgrader reads too: on a hub, ``/etc/jupyter``). Each student fetches
and submits with nbgrader's own commands, as itself, from its own home (its own ``Exchange.cache``). Then one
student, who has read nbgrader's code, forges: a folder in a classmate's name, newer than her hand-in and
with a submission secret of his choosing; a folder for a student who does not exist; and his own folder,
named and stamped in the year 2000, holding a classmate's notebook hard-linked from where that classmate
left it world-writable. The instructor collects, grades, releases the feedback and reports with
``python -m autograde.grade all --exchange-collect --release-feedback``, and each student fetches feedback.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
import unix_users
from course import require_sandbox
from submissions import submission
from unix_users import home, nbgrader_as, run_as, student_python

from autograde.course import Course, make_course_copy

pytestmark = pytest.mark.slow
A = "00_start_here"
COURSE = "--course=heads-and-masks"
CHOSEN_SECRET = "a secret the forger chose"
FORGE = """
import os, shutil, sys
inbound, victim, me, assignment, stolen, secret = sys.argv[1:]
mine = os.path.expanduser(f"~/{assignment}/{assignment}.ipynb")  # fetched, never answered

def folder(name):
    path = os.path.join(inbound, name)
    os.mkdir(path)
    os.chmod(path, 0o777)
    return path

# in a classmate's name, newer than her hand-in, with a secret of my choosing
forged = folder(f"{victim}+{assignment}+2099-01-01 00:00:00.000000 UTC+forged")
shutil.copy(mine, forged)
open(os.path.join(forged, "submission_secret.txt"), "w").write(secret)
open(os.path.join(forged, "timestamp.txt"), "w").write("2099-01-01 00:00:00.000000 UTC")
# a student nobody knows
shutil.copy(mine, folder(f"ghost+{assignment}+2099-01-01 00:00:00.000000 UTC+invented"))
# my own folder, named, stamped and dated in 2000, with a classmate's work in it (a hard link)
own = folder(f"{me}+{assignment}+2000-01-01 00:00:00.000000 UTC+backdated")
os.link(stolen, os.path.join(own, f"{assignment}.ipynb"))
open(os.path.join(own, "timestamp.txt"), "w").write("2000-01-01 00:00:00.000000 UTC")
for path in (os.path.join(own, "timestamp.txt"), own):  # (the hard-linked file's times are its owner's to set)
    os.utime(path, (946684800, 946684800), follow_symlinks=False)
"""


def _instructor(course: Course, env: dict[str, str], *arguments: str) -> subprocess.CompletedProcess:
    """``python -m autograde.grade`` as the instructor runs it (no --exchange: nbgrader's configuration says)."""
    return subprocess.run(
        [sys.executable, "-m", "autograde.grade", "--root", str(course.root), *arguments],
        env=dict(os.environ, **env),
        capture_output=True,
        text=True,
    )


@pytest.fixture(scope="module")
def exchange_class(tmp_path_factory):
    require_sandbox()
    unix_users.require_root()
    started = time.time()
    place = Path("/tmp") / f"hm-exchange-{os.getpid()}-{os.urandom(3).hex()}"  # made by the release, not here
    exchange = place / "srv" / "nbgrader" / "exchange"
    shared = Path(tempfile.mkdtemp(prefix="hm-exchange-config-"))  # nbgrader's configuration, and answers
    os.chmod(shared, 0o755)
    (shared / "nbgrader_config.py").write_text(f"c = get_config()\nc.Exchange.root = {str(exchange)!r}\n")
    env = {"JUPYTER_CONFIG_DIR": str(shared)}
    nbformat.write(submission(A, {}), shared / "solved.ipynb")
    os.chmod(shared / "solved.ipynb", 0o644)
    course = make_course_copy(tmp_path_factory.mktemp("exchange-course"))
    try:
        with unix_users.accounts("ann", "ben", "mal") as users:
            released = _instructor(course, env, "release", A)
            assert released.returncode == 0, released.stderr[-3000:]
            for role, user in users.items():
                nbgrader_as(user, "fetch_assignment", A, COURSE, env=env)
            for role in ("ann", "ben"):
                run_as(users[role], ["cp", str(shared / "solved.ipynb"), f"{home(users[role])}/{A}/{A}.ipynb"])
                nbgrader_as(users[role], "submit", A, COURSE, env=env)
            # ben leaves a copy of his work writable by everyone; mal forges, in the inbound every user writes to
            careless = home(users["ben"]) / "shared-with-the-class.ipynb"
            run_as(users["ben"], ["cp", str(shared / "solved.ipynb"), str(careless)])
            run_as(users["ben"], ["chmod", "666", str(careless)])
            inbound = exchange / "heads-and-masks" / "inbound"
            forge = [str(inbound), users["ann"], users["mal"], A, str(careless), CHOSEN_SECRET]
            run_as(users["mal"], [student_python(users["mal"]), "-c", FORGE, *forge])

            graded = _instructor(course, env, "all", A, "--exchange-collect", "--release-feedback", "--quiet")
            assert graded.returncode == 0, graded.stdout[-3000:] + graded.stderr[-3000:]
            fetched = {
                role: nbgrader_as(user, "fetch_feedback", A, COURSE, env=env, check=False)
                for role, user in users.items()
            }
            from autograde.results import read_results

            yield {
                "course": course,
                "exchange": exchange,
                "users": users,
                "env": env,
                "started": started,
                "released": released,
                "graded": graded,
                "fetched": fetched,
                "results": read_results(course, A),
                "pages": {role: sorted((home(user) / A / "feedback").rglob("*.html")) for role, user in users.items()},
            }
    finally:
        shutil.rmtree(place, ignore_errors=True)
        shutil.rmtree(shared, ignore_errors=True)


def _full_marks(result) -> bool:
    return result.autograded_max > 0 and result.autograded_total == result.autograded_max


def test_release_makes_an_exchange_every_student_can_use(exchange_class):
    exchange = exchange_class["exchange"]
    assert str(exchange) in exchange_class["released"].stdout, "released elsewhere than nbgrader's configuration says"
    modes = {path: stat.S_IMODE(path.stat().st_mode) for path in [exchange, *exchange.parents][:4]}
    course = exchange / "heads-and-masks"
    assert modes[exchange] == 0o1777, oct(modes[exchange])  # every user writes; only an entry's owner renames it
    for parent in exchange.parents[:3]:  # made by the release on the way (not 0700 as the command's umask)
        assert modes[parent] == 0o755, (parent, oct(modes[parent]))
    assert stat.S_IMODE((course / "outbound").stat().st_mode) == 0o755
    assert stat.S_IMODE((course / "inbound").stat().st_mode) == 0o3733  # nbgrader's 2733, plus sticky
    for role, user in exchange_class["users"].items():  # every student fetched it (the fixture checked), as itself
        assert (home(user) / A / f"{A}.ipynb").stat().st_uid == home(user).stat().st_uid


def test_students_cannot_see_each_others_hand_ins(exchange_class):
    users, exchange = exchange_class["users"], exchange_class["exchange"]
    look = "import os, sys\ntry:\n    print(os.listdir(sys.argv[1]))\nexcept PermissionError:\n    print('refused')"
    for folder in ("inbound", "feedback"):
        answer = run_as(
            users["ben"], [student_python(users["ben"]), "-c", look, str(exchange / "heads-and-masks" / folder)]
        )
        assert answer.stdout.strip() == "refused", (folder, answer.stdout)


def test_each_student_is_the_account_that_handed_in(exchange_class):
    results, users = exchange_class["results"], exchange_class["users"]
    assert "ghost" not in results, "a student nobody knows was invented"
    assert set(results) == set(users.values()), sorted(results)
    for role in ("ann", "ben"):  # ann's own hand-in was graded, not the folder made in her name
        result = results[users[role]]
        assert result.status == "graded" and _full_marks(result), result.line()


def test_the_forger_earns_nothing_and_is_named(exchange_class):
    users, results = exchange_class["users"], exchange_class["results"]
    forger = results[users["mal"]]
    assert forger.total == 0, forger.line()
    notes = " ".join(forger.notes)
    assert f"names `{users['ann']}` but belongs to account `{users['mal']}`" in notes, notes
    assert f"names `ghost` but belongs to account `{users['mal']}`" in notes, notes
    assert f"belongs to account `{users['ben']}`, not to the account that handed it in" in notes, notes
    report = exchange_class["graded"].stdout
    assert users["mal"] in report and "2099-01-01" in report and "ghost" in report, report[-3000:]


def test_submission_time_is_not_the_students_choice(exchange_class):
    from autograde.collect import collected_timestamp
    from autograde.course import gradebook

    course, users = exchange_class["course"], exchange_class["users"]
    earliest, latest = exchange_class["started"] - 1, time.time()
    with gradebook(course) as book:
        for role in ("ann", "ben"):
            stamp = book.find_submission(A, users[role]).timestamp.replace(tzinfo=dt.timezone.utc).timestamp()
            assert earliest <= stamp <= latest, (role, stamp)
    backdated = collected_timestamp(course.path("submitted", users["mal"], A))  # named, written and dated in 2000
    moment = dt.datetime.strptime(backdated, "%Y-%m-%d %H:%M:%S.%f %Z").replace(tzinfo=dt.timezone.utc).timestamp()
    assert earliest <= moment <= latest, backdated


def test_feedback_reaches_the_folders_owner_alone(exchange_class):
    users, pages, fetched = exchange_class["users"], exchange_class["pages"], exchange_class["fetched"]
    for role in ("ann", "ben"):
        assert len(pages[role]) == 1, (role, pages[role], fetched[role].stderr[-2000:])
        assert pages[role][0].stat().st_uid == home(users[role]).stat().st_uid
    # the secret the forger chose for the folder in ann's name releases nothing (before: ann's feedback)
    name = hashlib.md5((CHOSEN_SECRET + A).encode()).hexdigest() + ".html"
    check = "import os, sys\nprint(os.path.exists(sys.argv[1]))"
    released = exchange_class["exchange"] / "heads-and-masks" / "feedback" / name
    assert run_as(users["mal"], [student_python(users["mal"]), "-c", check, str(released)]).stdout.strip() == "False"


def test_every_command_uses_the_exchange_nbgrader_finds(tmp_path, monkeypatch):
    """Without --exchange: where nbgrader's configuration says (as nbgrader's own commands), else its default;
    with it: there, for every command. No inbound there: one line that says where it looked and what to do."""
    from nbgrader.exchange.default.exchange import Exchange

    course = Course(root=tmp_path)
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "empty"))
    if not course.exchange_location.origin.startswith("set in"):  # (a machine-wide configuration may set one)
        assert course.exchange_root == Path(Exchange.root.default_value)
    configured = tmp_path / "config"
    configured.mkdir()
    (configured / "nbgrader_config.py").write_text("c.Exchange.root = '/srv/elsewhere/exchange'\n")
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(configured))
    assert Course(root=tmp_path).exchange_root == Path("/srv/elsewhere/exchange")
    assert Course(root=tmp_path, exchange=tmp_path / "given").exchange_root == tmp_path / "given"

    copy = make_course_copy(tmp_path / "course")
    answer = _instructor(copy, {"JUPYTER_CONFIG_DIR": str(configured)}, "collect", A)
    assert answer.returncode == 1 and "Traceback" not in answer.stderr, answer.stderr[-3000:]
    lines = [line for line in answer.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "/srv/elsewhere/exchange/heads-and-masks/inbound" in lines[0], answer.stderr
    assert str(configured / "nbgrader_config.py") in lines[0], lines[0]  # where that location came from
