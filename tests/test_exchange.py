"""nbgrader's exchange as a class uses it: every student a Unix account of its own, the instructor's real commands.

On a machine where no folder of the exchange exists yet, the instructor (root here) releases with
``python -m autograde.grade release`` into the exchange that nbgrader's configuration names (a Jupyter
configuration folder that the students' nbgrader reads too: on a hub, ``/etc/jupyter``). The course's roster
(``class/accounts.csv``) gives each account its student id. Each student fetches and submits with
nbgrader's own commands, as itself, from its own home (its own ``Exchange.cache``): alice solves it, bob hands
it in untouched, carol answers wrongly. Then mal, who has read nbgrader's code, forges: a folder in alice's
name, newer than her hand-in and with a submission secret of his choosing; a folder for a student who does
not exist; and his own folder, named, stamped and dated in the year 2000, holding alice's notebook
hard-linked from where she left it writable by everyone. And eve, who has an account on the machine but is
not on the course's roster, hands it in too. The assignment was due an hour before its release (``--due``):
alice, to look on time, hands it in again in a folder of her own, named, stamped and dated in the year 2000,
and removes her first hand-in (its name, which inbound does not let her list, given to her here). The instructor runs ``python -m autograde.grade all
--exchange-collect --release-feedback``, killed as soon as a submission is graded and run again to the end;
each student fetches feedback as itself.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest
import unix_users
from course import REPO, assert_one_submission_each, kernel_reply_language_info, require_sandbox
from submissions import submission
from unix_users import home, nbgrader_as, run_as, student_python

from autograde.course import Course, make_course_copy

pytestmark = pytest.mark.slow
A = "00_start_here"
COURSE = "--course=heads-and-masks"
CHOSEN_SECRET = "a secret the forger chose"
WRONG = (
    "def attention(q, k, v, mask=None):\n    s = q @ np.swapaxes(k, -1, -2)\n"
    "    if mask is not None:\n        s = np.where(mask, s, -1e30)\n"
    "    e = np.exp(s - s.max(-1, keepdims=True)) * (1 if mask is None else mask)\n"
    "    t = e.sum(-1, keepdims=True)\n    return np.divide(e, t, out=np.zeros_like(e), where=t > 0) @ v\n"
)
ANSWERS = {"alice": {}, "bob": None, "carol": {"attention": WRONG}}  # None: handed in as released
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


# alice's second hand-in: her own answer and submission secret (nbgrader keeps it in her cache), in a folder of
# hers named, stamped and dated as if handed in in the year 2000; then her first hand-in is removed, so that only
# a time read from what she wrote could make her look on time
BACKDATE = """
import os, pwd, shutil, sys
inbound, assignment, answer, first = sys.argv[1:]
me = pwd.getpwuid(os.getuid()).pw_name
home = os.path.expanduser("~")
cached = [os.path.join(d, "submission_secret.txt") for d, _, names in os.walk(home)
          if "nbgrader_cache" in d and "submission_secret.txt" in names]
own = os.path.join(inbound, f"{me}+{assignment}+2000-01-01 00:00:00.000000 UTC+backdated")
os.mkdir(own)
os.chmod(own, 0o777)
shutil.copy(answer, os.path.join(own, f"{assignment}.ipynb"))
shutil.copy(cached[0], os.path.join(own, "submission_secret.txt"))
open(os.path.join(own, "timestamp.txt"), "w").write("2000-01-01 00:00:00.000000 UTC")
for name in (f"{assignment}.ipynb", "submission_secret.txt", "timestamp.txt", ""):
    os.utime(os.path.join(own, name), (946684800, 946684800))
shutil.rmtree(os.path.join(inbound, first))
"""


def _instructor_command(course: Course, *arguments: str) -> list[str]:
    """``python -m autograde.grade`` as the instructor runs it (no --exchange: nbgrader's configuration says)."""
    return [sys.executable, "-m", "autograde.grade", "--root", str(course.root), *arguments]


def _instructor(course: Course, env: dict[str, str], *arguments: str) -> subprocess.CompletedProcess:
    command = _instructor_command(course, *arguments)
    return subprocess.run(command, env=dict(os.environ, **env), capture_output=True, text=True)


def _grade_killed_then_resumed(course: Course, env: dict[str, str]) -> tuple[dict, subprocess.CompletedProcess]:
    """The whole routine, killed as soon as a submission is graded in a kernel, then run again to the end.
    Returns the results recorded before the kill and the second run."""
    from autograde.results import read_results

    routine = ["all", A, "--exchange-collect", "--release-feedback", "--workers=2", "--quiet"]
    process = subprocess.Popen(
        _instructor_command(course, *routine),
        env=dict(os.environ, **env),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    records = course.root / "class" / "results" / A
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and process.poll() is None:
        if any((records / f"{student}.json").exists() for student in ANSWERS):
            break
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    before = {student: result for student, result in read_results(course, A).items() if student in ANSWERS}
    return before, _instructor(course, env, *routine)


def _at_once(work, students) -> dict:
    """``{student: work(student)}``, every student's work begun at once, as a class's students each run their own
    commands (each a process of its own: nbgrader's start-up, mostly, overlaps); an error is raised as it came."""
    students = list(students)
    with ThreadPoolExecutor(max_workers=len(students)) as pool:
        return dict(zip(students, pool.map(work, students), strict=True))


@pytest.fixture(scope="module")
def exchange_class(tmp_path_factory):
    require_sandbox()
    unix_users.require_root()
    started = time.time()
    place = Path("/tmp") / f"hm-exchange-{os.getpid()}-{os.urandom(3).hex()}"  # made by the release, not here
    exchange = place / "srv" / "nbgrader" / "exchange"
    shared = Path(tempfile.mkdtemp(prefix="hm-exchange-config-"))  # nbgrader's configuration, and the answers
    os.chmod(shared, 0o755)
    (shared / "nbgrader_config.py").write_text(f"c = get_config()\nc.Exchange.root = {str(exchange)!r}\n")
    env = {"JUPYTER_CONFIG_DIR": str(shared)}
    course = make_course_copy(tmp_path_factory.mktemp("exchange-course"))
    try:
        with unix_users.accounts(*ANSWERS, "mal", "eve") as users:
            course.runtime_dir("work")  # the class's folder, where the instructor writes the roster
            roster = "".join(f"{account},{student}\n" for student, account in users.items() if student != "eve")
            (course.root / "class" / "accounts.csv").write_text("account,student_id\n" + roster)
            due = dt.datetime.fromtimestamp(started - 3600, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
            released = _instructor(course, env, "release", A, "--due", due)
            assert released.returncode == 0, released.stderr[-3000:]
            _at_once(lambda student: nbgrader_as(users[student], "fetch_assignment", A, COURSE, env=env), users)

            def hand_in(student: str) -> None:
                answer = ANSWERS.get(student)  # (eve, off the roster, hands in what she fetched)
                if answer is not None:  # the student's own edit: a file of theirs
                    nbformat.write(submission(A, answer), shared / f"{student}.ipynb")
                    os.chmod(shared / f"{student}.ipynb", 0o644)
                    run_as(
                        users[student],
                        ["cp", str(shared / f"{student}.ipynb"), f"{home(users[student])}/{A}/{A}.ipynb"],
                    )
                nbgrader_as(users[student], "submit", A, COURSE, env=env)

            _at_once(hand_in, [*ANSWERS, "eve"])
            # alice leaves a copy of her work writable by everyone; mal forges, in the inbound every user writes to
            careless = home(users["alice"]) / "shared-with-the-class.ipynb"
            run_as(users["alice"], ["cp", str(shared / "alice.ipynb"), str(careless)])
            run_as(users["alice"], ["chmod", "666", str(careless)])
            inbound = exchange / "heads-and-masks" / "inbound"
            forge = [str(inbound), users["alice"], users["mal"], A, str(careless), CHOSEN_SECRET]
            run_as(users["mal"], [student_python(users["mal"]), "-c", FORGE, *forge])
            answer = str(shared / "alice.ipynb")
            hers = home(users["alice"]).stat().st_uid

            def alices_hand_ins() -> list[str]:
                return [p.name for p in inbound.iterdir() if p.lstat().st_uid == hers]

            backdate = [str(inbound), A, answer, *alices_hand_ins()]  # (her first, nbgrader's)
            run_as(users["alice"], [student_python(users["alice"]), "-c", BACKDATE, *backdate])
            assert alices_hand_ins() == [f"{users['alice']}+{A}+2000-01-01 00:00:00.000000 UTC+backdated"]

            before, graded = _grade_killed_then_resumed(course, env)
            assert graded.returncode == 0, graded.stdout[-3000:] + graded.stderr[-3000:]
            fetched = _at_once(
                lambda student: nbgrader_as(users[student], "fetch_feedback", A, COURSE, env=env, check=False), users
            )
            from autograde.results import read_results

            yield {
                "course": course,
                "exchange": exchange,
                "users": users,
                "started": started,
                "released": released,
                "before": before,
                "graded": graded,
                "fetched": fetched,
                "results": read_results(course, A),
                "pages": {
                    student: sorted((home(user) / A / "feedback").rglob("*.html")) for student, user in users.items()
                },
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
    for user in exchange_class["users"].values():  # every student fetched it (the fixture checked), as itself
        assert (home(user) / A / f"{A}.ipynb").stat().st_uid == home(user).stat().st_uid


def test_what_students_fetch_says_what_their_kernel_will_reply(exchange_class):
    """The release tells the copy students fetch what a real kernel of this environment replies of its language, so
    that it opens unmodified (tests/browser/test_browser_hub.py looks at the tab); the committed notebook stays
    machine-neutral. bob handed his fetched copy in untouched: graded 0 (test_each_student_is_the_account_...)."""
    course, users = exchange_class["course"], exchange_class["users"]
    replied = kernel_reply_language_info()
    released = exchange_class["exchange"] / "heads-and-masks" / "outbound" / A / f"{A}.ipynb"
    for copy in (released, home(users["bob"]) / A / f"{A}.ipynb"):
        assert nbformat.read(copy, as_version=4).metadata.language_info == replied, copy
    committed = nbformat.read(course.path("release", assignment=A) / f"{A}.ipynb", as_version=4)
    assert committed.metadata.language_info == {"name": "python"}


def test_students_cannot_see_each_others_hand_ins(exchange_class):
    users, exchange = exchange_class["users"], exchange_class["exchange"]
    look = "import os, sys\ntry:\n    print(os.listdir(sys.argv[1]))\nexcept PermissionError:\n    print('refused')"
    for folder in ("inbound", "feedback"):
        where = str(exchange / "heads-and-masks" / folder)
        answer = run_as(users["bob"], [student_python(users["bob"]), "-c", look, where])
        assert answer.stdout.strip() == "refused", (folder, answer.stdout)


def test_each_student_is_the_account_that_handed_in(exchange_class):
    results, off_roster = exchange_class["results"], exchange_class["users"]["eve"]
    assert set(results) == {*ANSWERS, "mal", off_roster}, f"a student was invented or lost: {sorted(results)}"
    # an account off the roster is no student: named (under its account), nothing of it collected
    assert results[off_roster].status == "missing", results[off_roster].line()
    assert "which is not on the course's roster" in " ".join(results[off_roster].notes), results[off_roster].notes
    # alice's own hand-in was graded, not the folder made in her name (an untouched notebook)
    assert results["alice"].status == "graded" and _full_marks(results["alice"]), results["alice"].line()
    assert {s: (results[s].status, results[s].total) for s in ("bob", "carol")} == {
        "bob": ("graded", 0),
        "carol": ("graded", 0),
    }


def test_the_forger_earns_nothing_and_is_named(exchange_class):
    users, results = exchange_class["users"], exchange_class["results"]
    forger = results["mal"]
    assert forger.total == 0, forger.line()
    notes = " ".join(forger.notes)
    assert f"names `{users['alice']}` but belongs to account `{users['mal']}`" in notes, notes
    assert f"names `ghost` but belongs to account `{users['mal']}`" in notes, notes
    assert f"belongs to account `{users['alice']}`, not to the account that handed it in" in notes, notes
    report = exchange_class["graded"].stdout
    assert "mal:" in report and "2099-01-01" in report and "ghost" in report, report[-3000:]


def test_submission_time_is_not_the_students_choice(exchange_class):
    from autograde.submission_files import collected_timestamp
    from autograde.course import gradebook

    course = exchange_class["course"]
    earliest, latest = exchange_class["started"] - 1, time.time()
    with gradebook(course) as book:
        for student in ANSWERS:
            stamp = book.find_submission(A, student).timestamp.replace(tzinfo=dt.timezone.utc).timestamp()
            assert earliest <= stamp <= latest, (student, stamp)
    for forger in ("mal", "alice"):  # each a folder of their own, named, written and dated in 2000
        backdated = collected_timestamp(course.path("submitted", forger, A))
        moment = dt.datetime.strptime(backdated, "%Y-%m-%d %H:%M:%S.%f %Z").replace(tzinfo=dt.timezone.utc)
        assert earliest <= moment.timestamp() <= latest, (forger, backdated)


def test_a_backdated_hand_in_is_late_all_the_same(exchange_class):
    """Due an hour before the release: alice's hand-in, backdated to 2000 by its name, its timestamp.txt and its
    times, came when the exchange saw it, over an hour late, and loses 10% of the 6 points; so in the CSV."""
    from autograde.export import export_grades

    course, results = exchange_class["course"], exchange_class["results"]
    assert "is due" in exchange_class["released"].stdout, exchange_class["released"].stdout
    alice = results["alice"]
    assert 3600 < alice.seconds_late < 3600 + time.time() - exchange_class["started"], alice.line()
    assert (alice.late_penalty, alice.total) == (0.6, 4), alice.line()
    row = next(r for r in export_grades(course, course.root / "grades.csv") if r["student"] == "alice")
    assert (row["late_penalty"], row["total"]) == ("0.6", "3.4"), row


def test_feedback_reaches_the_folders_owner_alone(exchange_class):
    from autograde.feedback import hidden_lines, leaked_lines

    users, pages, fetched = exchange_class["users"], exchange_class["pages"], exchange_class["fetched"]
    hidden = hidden_lines(exchange_class["course"], A)
    for student in ANSWERS:
        assert len(pages[student]) == 1, (student, pages[student], fetched[student].stderr[-2000:])
        assert pages[student][0].stat().st_uid == home(users[student]).stat().st_uid
        assert not leaked_lines(pages[student][0].read_text(encoding="utf-8"), hidden)
    late = "the late policy took 0.6 points off."  # alice's page says what her lateness cost
    assert late in " ".join(pages["alice"][0].read_text(encoding="utf-8").split()), pages["alice"][0]
    # the secret the forger chose for the folder in alice's name releases nothing (before: alice's feedback)
    name = hashlib.md5((CHOSEN_SECRET + A).encode()).hexdigest() + ".html"
    check = "import os, sys\nprint(os.path.exists(sys.argv[1]))"
    released = exchange_class["exchange"] / "heads-and-masks" / "feedback" / name
    assert run_as(users["mal"], [student_python(users["mal"]), "-c", check, str(released)]).stdout.strip() == "False"


def test_an_interrupted_run_resumes_and_leaves_nothing_to_commit(exchange_class):
    from autograde.export import export_grades

    course, before, results = exchange_class["course"], exchange_class["before"], exchange_class["results"]
    assert 1 <= len(before) < len(ANSWERS), f"the kill came too late to test resuming: {sorted(before)}"
    for student, earlier in before.items():
        assert results[student].graded_at == earlier.graded_at, f"{student} was graded twice"
    assert_one_submission_each(course, A, list(ANSWERS))
    rows = export_grades(course, course.root / "grades.csv")
    assert [(r["student"], r["status"], r["attention"], r["total"]) for r in rows] == [
        ("alice", "graded", "4", "3.4"),  # an hour late: 0.6 of its 6 points off
        ("bob", "graded", "0", "0"),
        ("carol", "graded", "0", "0"),
        (exchange_class["users"]["eve"], "missing", "0", "0"),  # (its account name starts with hm)
        ("mal", "missing", "0", "0"),
    ]
    # What the term left in the course (the grading key the first run made, the gradebook, the submissions,
    # graded notebooks, feedback, records, logs, the roster), were the course this repository: git commits none.
    assert (course.root / "class" / "grading-key").is_file(), "the run made no grading key: nothing was tested"
    assert not (course.root / "autograde").exists(), "the class's data is in its own folder, not the grader's"
    assert stat.S_IMODE(course.runtime_root.stat().st_mode) == 0o700, "the class's folder is the instructor's alone"
    assert _committable(course) == [], "an instructor's `git add -A` would commit these"


def _committable(course: Course) -> list[str]:
    """The files under the course's runtime folder that git would take if the course were this repository."""
    tracked = subprocess.run(["git", "ls-files", course.runtime], cwd=REPO, capture_output=True, text=True)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout: nothing says what git would commit")
    left = sorted(str(p.relative_to(course.root)) for p in course.runtime_root.rglob("*") if p.is_file())
    candidates = [path for path in left if path not in set(tracked.stdout.split())]
    ignored = subprocess.run(
        ["git", "check-ignore", "--no-index", "--stdin"],
        cwd=REPO,
        input="\n".join(candidates),
        capture_output=True,
        text=True,
    ).stdout.split()
    return [path for path in candidates if path not in ignored]


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


def test_an_inbound_that_is_not_the_instructors_is_refused(exchange_class):
    """A course folder or inbound another account owns (a student replaced it) is refused in one line."""
    from autograde.collect import collect_exchange
    from autograde.exchange import ExchangeProblem

    exchange = exchange_class["exchange"]
    course, inbound = (
        Course(root=exchange_class["course"].root, exchange=exchange),
        exchange / "heads-and-masks" / "inbound",
    )
    eve = home(exchange_class["users"]["eve"]).stat()
    mine = inbound.stat()
    os.chown(inbound, eve.st_uid, eve.st_gid)
    try:
        with pytest.raises(ExchangeProblem, match=f"belongs to {exchange_class['users']['eve']}, not to you"):
            collect_exchange(course, A)
    finally:
        os.chown(inbound, mine.st_uid, mine.st_gid)
        os.chmod(inbound, stat.S_IMODE(mine.st_mode))  # (chown clears the setgid bit)


def test_a_secret_two_students_share_releases_neither_page(tmp_path):
    """A submission secret copied from a classmate (nbgrader keeps it in the student's home, which may be readable)
    would release one student's feedback under the other's name: neither is released through the exchange."""
    from autograde.feedback import released_alone
    from autograde.results import Result, Status

    course = Course(root=tmp_path)
    results = {}
    for student, secret in (("alice", "s1"), ("carol", "s1"), ("bob", "s2")):
        folder = course.path("submitted", student, A)
        folder.mkdir(parents=True)
        (folder / "submission_secret.txt").write_text(secret)
        results[student] = Result(student, A, Status.GRADED, {}, {}, [])
    assert released_alone(course, A, sorted(results), results) == ["bob"]
    assert "its submission secret is also carol's" in " ".join(results["alice"].notes)
    assert "its submission secret is also alice's" in " ".join(results["carol"].notes)
    assert results["bob"].notes == []
