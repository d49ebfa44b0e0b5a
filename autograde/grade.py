"""The instructor's command line: every step of the pipeline, by name (release, collect, autograde, feedback, export, report,
similarity).

    python -m autograde.grade setup     ASSIGNMENT            record it in the gradebook (once)
    python -m autograde.grade release   ASSIGNMENT [--language ru] [--due "2026-12-10 17:00 Europe/Berlin" | --due none]
                                                              put notebooks/ASSIGNMENT in the exchange
    python -m autograde.grade collect   ASSIGNMENT            from the exchange
    python -m autograde.grade collect   ASSIGNMENT --zip FILE.zip [--regexp RE]    an LMS download
    python -m autograde.grade collect   ASSIGNMENT --folder DIR    DIR/<student>/ASSIGNMENT/*.ipynb
    python -m autograde.grade autograde ASSIGNMENT [--workers N | --scheduler ADDRESS] [--force] [--cell-timeout S]
    python -m autograde.grade feedback  ASSIGNMENT [--release]
    python -m autograde.grade export    [ASSIGNMENT ...] [--format csv|canvas|moodle] [--per-exercise] [--output F]
    python -m autograde.grade report    ASSIGNMENT [--language ru]    statuses; class report (HTML + CSV, class_report.py)
    python -m autograde.grade similarity ASSIGNMENT [--language ru]   similar submissions (CSV, HTML, PNG, similarity.py)
    python -m autograde.grade all       ASSIGNMENT [--zip F | --folder D | --exchange-collect] [--release-feedback]
                                        [--language ru]       the lines and reports in the instructor's language
    python -m autograde.grade bench     [--submissions 40] [--workers N]

Every command works on the course root (the repository, or ``--root``) with the layout of
``autograde/nbgrader_config.py``. The exchange is where nbgrader's configuration puts it (``Exchange.root``,
as nbgrader's own commands find it), or ``--exchange DIR`` for every command alike. The gradebook is the
SQLite file class/gradebook.db, or the database ``--db URL`` names (default: $HEADS_AND_MASKS_GRADEBOOK_URL,
which ``make ... DB=URL`` sets), e.g. ``postgresql+psycopg://heads_grader@127.0.0.1/heads_and_masks`` for
several graders at once (docs/instructors.md). ``autograde`` is safe to run again: what is already graded
from the same files is skipped, and a run that was interrupted resumes. See docs/instructors.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from heads_and_masks.i18n import ngettext

from .after_grading import (
    export_command,
    export_csv,
    feedback_command,
    give_feedback,
    print_report,
    read_due,
    report_command,
    set_and_say_due_date,
    similarity_command,
)

# Only the standard library here (and in after_grading): a grading command starts the workers' fork server before
# it imports the pipeline (``main``), so that both imports run at once, on two cores.


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=None, help="course root (default: the repository)")
    parser.add_argument(
        "--exchange", type=Path, default=None, help="nbgrader's exchange folder (default: nbgrader's Exchange.root)"
    )
    parser.add_argument("--course-id", default="heads-and-masks")
    parser.add_argument(
        "--db",
        default=None,
        metavar="URL",
        help="the gradebook's database, a SQLAlchemy URL (default: $HEADS_AND_MASKS_GRADEBOOK_URL, else the SQLite "
        "file class/gradebook.db)",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    for name, command in (("setup", setup_command), ("report", report_command), ("similarity", similarity_command)):
        simple_parser = commands.add_parser(name)
        simple_parser.add_argument("assignment")
        simple_parser.set_defaults(func=command)
        if name in ("report", "similarity"):
            add_report_language(simple_parser)

    release_parser = commands.add_parser("release")
    release_parser.add_argument("assignment")
    release_parser.set_defaults(func=release_command)
    release_parser.add_argument(
        "--language",
        default="en",
        help='the language of the notebooks released ("ru": notebooks-ru/; a locale such as ru_RU.UTF-8 too; '
        "a language the course does not speak: English)",
    )
    release_parser.add_argument(
        "--due",
        default=None,
        metavar="WHEN",
        help='the due date, with its time zone ("2026-12-10 17:00 Europe/Berlin"); "none": no due date '
        "(default: the one the gradebook has, if any)",
    )

    def add_collect_options(p):
        p.add_argument("--zip", type=Path, action="append", default=[], help="an LMS download (repeatable)")
        p.add_argument("--regexp", default=None, help="zip_collect's named_regexp (student_id, file_id)")
        p.add_argument("--folder", type=Path, default=None, help="a folder <student>/<assignment>/...")

    def add_grade_options(p):
        p.add_argument("--workers", type=int, default=None, help="worker processes (default: one per core)")
        p.add_argument(
            "--scheduler",
            default=None,
            metavar="ADDRESS",
            help="grade on an existing Dask cluster with TLS (e.g. tls://head:8786) instead of on this machine",
        )
        p.add_argument(
            "--insecure-scheduler",
            action="store_true",
            help="allow a plain tcp:// --scheduler (whoever reaches it runs code as you: docs/instructors.md)",
        )
        p.add_argument("--force", action="store_true", help="grade again what is already graded")
        p.add_argument("--cell-timeout", type=int, default=None, help="seconds per cell (default: config)")
        p.add_argument("--submission-timeout", type=float, default=None, help="seconds per submission")
        p.add_argument("--memory-mb", type=int, default=None, help="memory limit of each kernel, MiB")
        p.add_argument("--quiet", action="store_true", help="no progress bar")

    collect_parser = commands.add_parser("collect")
    collect_parser.add_argument("assignment")
    collect_parser.set_defaults(func=collect_submissions)
    add_collect_options(collect_parser)

    autograde_parser = commands.add_parser("autograde")
    autograde_parser.add_argument("assignment")
    autograde_parser.set_defaults(func=autograde_all)
    add_grade_options(autograde_parser)

    feedback_parser = commands.add_parser("feedback")
    feedback_parser.add_argument("assignment")
    feedback_parser.set_defaults(func=feedback_command)
    feedback_parser.add_argument("--release", action="store_true", help="release it through the exchange")

    export_parser = commands.add_parser("export")
    export_parser.add_argument("assignments", nargs="*")
    export_parser.set_defaults(func=export_command)
    export_parser.add_argument(
        "--format",
        choices=("csv", "canvas", "moodle"),
        default="csv",
        help="csv: the course's CSV (default); canvas, moodle: the file that LMS's gradebook import reads",
    )
    export_parser.add_argument(
        "--per-exercise", action="store_true", help="canvas, moodle: one column per exercise, not per assignment"
    )
    export_parser.add_argument(
        "--output", type=Path, default=None, help="default: class/grades.csv, class/grades-canvas.csv, ..."
    )

    everything_parser = commands.add_parser("all", help="collect, autograde, feedback, export, report")
    everything_parser.add_argument("assignment")
    everything_parser.set_defaults(func=all_command)
    add_collect_options(everything_parser)
    add_grade_options(everything_parser)
    everything_parser.add_argument("--exchange-collect", action="store_true", help="collect from the exchange")
    everything_parser.add_argument("--release-feedback", action="store_true")
    everything_parser.add_argument("--output", type=Path, default=None)
    add_report_language(everything_parser)

    bench_parser = commands.add_parser("bench", help="serial vs parallel grading throughput")
    bench_parser.add_argument("--assignment", default="00_start_here")
    bench_parser.set_defaults(func=bench_command)
    bench_parser.add_argument("--submissions", type=int, default=40)
    bench_parser.add_argument("--workers", type=int, default=None)
    return parser


def collected_from_files(n_submissions: int, where: str) -> str:
    """How many submissions were collected from a folder or the LMS's files."""
    template = ngettext(
        "collected {n} submission from {where}", "collected {n} submissions from {where}", n_submissions
    )
    return template.format(n=n_submissions, where=where)


def collected_from_exchange(where: str, n_students: int) -> str:
    """How many students handed in through the exchange."""
    template = ngettext(
        "collected from the exchange {where}: {n} student has a submission",
        "collected from the exchange {where}: {n} students have a submission",
        n_students,
    )
    return template.format(n=n_students, where=where)


def graded_summary(n_students: int, problems: int, assignment: str) -> str:
    """The last line of a grading run."""
    template = ngettext(
        "{n} student, {problems} with something to look at (python -m autograde.grade report {assignment})",
        "{n} students, {problems} with something to look at (python -m autograde.grade report {assignment})",
        n_students,
    )
    return template.format(n=n_students, problems=problems, assignment=assignment)


def add_report_language(parser: argparse.ArgumentParser) -> None:
    """``--language``: the instructor's language, for what the command prints and the reports it writes (the
    students' feedback is always in the language of the notebook each handed in)."""
    parser.add_argument(
        "--language",
        dest="report_language",
        default=None,
        help='the language of the lines printed and the reports written ("ru"; a locale such as ru_RU.UTF-8 '
        "too, as `make grade LANG=...` passes it; a language the course does not speak: English)",
    )


def report_language(requested: str | None) -> str | None:
    """The language an instructor asked the reports in (``--language``), one the course speaks, else English;
    None when not asked (then the package's own choice: $HEADS_AND_MASKS_LANGUAGE, else English)."""
    from autograde.course import release_language

    return release_language(requested) if requested else None


def collect_submissions(course, args) -> None:
    from autograde import collect

    if args.zip:
        students = collect.collect_zip(course, args.assignment, args.zip, args.regexp)
        print(collected_from_files(len(students), f"{len(args.zip)} LMS file(s)"))
    elif args.folder:
        students = collect.collect_folder(course, args.assignment, args.folder)
        print(collected_from_files(len(students), str(args.folder)))
        if not students:  # most often a folder laid out another way: say which way is expected
            print(f"  nothing to collect: {collect.folder_layout_hint(args.assignment, args.folder)}")
    else:
        students = collect.collect_exchange(course, args.assignment)
        print(collected_from_exchange(course.exchange_location.describe(), len(students)))


def autograde_all(course, args) -> None:
    from autograde import cluster, pool
    from autograde.results import Status
    from autograde.kernel.sandbox import HiddenFromKernels

    try:
        results = pool.grade(
            course,
            args.assignment,
            workers=args.workers,
            force=args.force,
            cell_timeout=args.cell_timeout,
            submission_timeout=args.submission_timeout,
            memory_mb=args.memory_mb,
            scheduler=args.scheduler,
            insecure_scheduler=args.insecure_scheduler,
            progress=not args.quiet,
        )
    except (
        cluster.InsecureScheduler,
        pool.GradingInProgress,
        HiddenFromKernels,
    ) as refused:  # said plainly, before grading
        raise SystemExit(f"error: {refused}") from None
    except KeyboardInterrupt:  # Ctrl-C: the run's folders are already removed; no traceback
        from autograde.run_folder import stopped

        raise SystemExit(stopped("Ctrl-C")) from None
    problems = sum(r.status != Status.GRADED for r in results.values())
    print(graded_summary(len(results), problems, args.assignment))


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # What these commands write (submissions, gradebook, logs, grades, reports) is the instructor's alone: on a
    # shared JupyterHub host other users may reach the course folder. Where students must reach what is
    # published (the exchange), its modes are set explicitly (exchange.py, nbgrader); Course.make_private
    # covers what was made before. The umask is given back on return: a caller that runs the command in its own
    # process (a test, a notebook) keeps its own for what it makes afterwards.
    callers_umask = os.umask(0o077)
    try:
        if args.command in ("autograde", "all") and not args.scheduler:
            from autograde.worker import fork_server

            fork_server.start()  # the local cluster's workers will be forked from it: its imports start now

        from autograde.exchange import ExchangeProblem

        try:
            return run_command(args)
        except ExchangeProblem as problem:  # said in one line, with what to do
            raise SystemExit(f"error: {problem}") from None
    finally:
        os.umask(callers_umask)


def run_command(args) -> int:
    from autograde.course import REPO, Course, PasswordInURL, configured_gradebook_url, without_password

    try:
        database = without_password(args.db or configured_gradebook_url())
    except PasswordInURL as refused:  # said before anything connects
        raise SystemExit(f"error: {refused}") from None
    course = Course(root=args.root or REPO, exchange=args.exchange, course_id=args.course_id, database=database)
    move_class_data(course.root)
    named = [args.assignment] if getattr(args, "assignment", None) else list(getattr(args, "assignments", None) or [])
    source = course.path("source")
    for assignment in named:  # a typo is said plainly, before any step starts
        if source.is_dir() and not (source / assignment).is_dir():
            known = ", ".join(sorted(p.name for p in source.iterdir() if p.is_dir()))
            raise SystemExit(
                f"error: the course has no assignment {assignment!r} (no {source / assignment}); it has: {known}"
            )
    from heads_and_masks.i18n import use_language

    # the instructor's language for what the command says; each student's feedback stays in their notebook's
    with use_language(report_language(getattr(args, "report_language", None))):
        args.func(course, args)  # the sub-command's function (build_parser: set_defaults(func=...))
    return 0


def move_class_data(root: Path) -> None:
    """A course graded before the class's data had a folder of its own keeps it in ``autograde/``: moved to
    ``class/`` on the first command (this one, or the instructor's lab), said in one line; stopped, with what
    to do, when both places hold some of it (class_folder.py)."""
    from autograde.class_folder import OldLayoutInTheWay, move_old_layout

    try:
        moved = move_old_layout(root)
    except OldLayoutInTheWay as problem:
        raise SystemExit(f"error: {problem}") from None
    if moved:
        print(moved)


def setup_command(course, args) -> None:
    from autograde.course import setup

    for warning in setup(course, args.assignment, force=True):
        print("warning:", warning)
    print(f"{args.assignment} is in the gradebook ({course.describe_gradebook()})")


def release_command(course, args) -> None:
    from autograde.course import release, release_language

    due = read_due(args.due)  # a due date that cannot be read stops the release before it starts
    language = release_language(args.language)
    for warning in release(course, args.assignment, language):
        print("warning:", warning)
    print(f"released {args.assignment} ({language}) to the exchange {course.exchange_location.describe()}")
    print(set_and_say_due_date(course, args.assignment, due))


def all_command(course, args) -> None:
    """``all``: the same steps as the commands of each, one after another."""
    if args.zip or args.folder or args.exchange_collect:
        collect_submissions(course, args)
    autograde_all(course, args)
    give_feedback(course, args.assignment, args.release_feedback)
    export_csv(course, args.output, assignments=None)
    print_report(course, args.assignment)


def bench_command(course, args) -> None:
    from autograde import throughput

    print(throughput.describe(throughput.grading_throughput_benchmark(args.assignment, args.submissions, args.workers)))


def end_without_teardown(status: list) -> None:
    """The last exit handler: once the command's work is done and every other handler ran (gradebook
    sessions closed, logs flushed, the cluster and its kernels stopped), the process ends at once. What
    Python would still do is free its modules one by one, which after the imports of a grading run
    (nbgrader, nbconvert, Dask, SQLAlchemy, IPython) takes 0.3-0.4 s of CPU and writes nothing."""
    code = status[0]
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code if isinstance(code, int) else 0 if code is None else 1)  # SystemExit("message") is 1


if __name__ == "__main__":
    import atexit

    status = [1]  # what an uncaught exception ends with (its traceback is printed before the handlers run)
    atexit.register(end_without_teardown, status)  # registered first, so it runs last
    try:
        status[0] = main()
    except SystemExit as stop:
        status[0] = stop.code
        raise
