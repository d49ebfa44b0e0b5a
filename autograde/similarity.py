"""After grading: which submissions of an assignment are alike, exercise by exercise (issue 39).

``python -m autograde.grade similarity ASSIGNMENT`` (``make similarity``) compares every pair of submissions,
one exercise (one graded answer cell, by its nbgrader grade id) at a time, and writes for the instructor alone
(``class/reports/``, never the feedback): a CSV of the pairs above their threshold, one HTML page with
those pairs side by side, and a PNG of the class's scores per exercise.

What is compared is the student's own code, normalised so that the usual disguises change nothing:

1. What everybody has is not evidence: the statements the release's cell already held (the ``def`` line, the
   stub ``raise NotImplementedError()``), the course's imports, docstrings and comments are dropped.
2. Python's own ``ast`` normalises the rest: every name the answer binds is renamed (``v1``, ``v2``, ... in the
   order they appear, counted afresh in each function, so that reordering functions renames nothing), the
   answer's own helper functions become ``F``, and the operands of ``+`` and ``*`` are sorted.
3. Each statement is written out again (``ast.unparse``) and cut into tokens by Python's ``tokenize``; blank
   lines and layout are gone, and every token remembers the lines of the submission it came from.
4. Fingerprints: hashes of every run of ``K`` tokens, thinned by copydetect's winnowing (Schleimer, Wilkerson
   and Aiken, 2003), which keeps at least one fingerprint of every shared run of ``K + WINDOW - 1`` tokens.

The score of a pair is the share of the smaller answer's fingerprints found in the other one (the overlap
coefficient, not Jaccard's index): a copy that was padded with code of its own, or whose loop was split in two,
keeps its score. A pair is flagged when its score reaches its threshold, the larger of two figures
(:func:`threshold`): a floor that rises as the smaller answer gets shorter (a short exercise has few ways to be
right), and the class's own level of that exercise, its median score plus ``SPREAD`` robust standard
deviations (what independent answers to that exercise share; measured from ``MIN_CLASS`` answers on, below
which a median and a spread are noise and the floor decides alone). A number flags a pair for a person to read,
side by side; it accuses nobody (docs/instructors.md, Similar submissions).

A submission that is empty, cannot be parsed, or is enormous is listed with its reason and compared as far as
possible (an unparseable one on its tokens as written, an enormous one on its first ``MAX_CELL_BYTES``); it
never stops the comparison of the others.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

from heads_and_masks.i18n import _, ngettext, number

from .bounds import notebook_shape, structure_limits

from .similarity_scores import (
    ExerciseResult,
    Report,
    compare,
    size_floor,
)
from .similarity_page import render_html
from .similarity_tokens import Release

# ---------------------------------------------------------------------------------------------
# Reading the course: the release's answer cells, and each student's
# ---------------------------------------------------------------------------------------------

MAX_NOTEBOOK_BYTES = 50_000_000  # a notebook file beyond this is not read (collect.py bounds them too)


def read_notebook(path: Path):
    """The notebook at ``path`` (nbformat 4), or raise ValueError saying why it cannot be read."""
    import nbformat

    size = path.stat().st_size
    if size > MAX_NOTEBOOK_BYTES:
        raise ValueError(
            f"the file is enormous ({size // 1_000_000} MB, the bound is {MAX_NOTEBOOK_BYTES // 1_000_000} MB)"
        )
    try:
        raw = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except Exception as error:  # noqa: BLE001 - anything a student's file can make json raise
        raise ValueError(f"it is not a notebook ({type(error).__name__})") from None
    passed = structure_limits(notebook_shape(raw))  # (a notebook past a bound costs nbformat minutes and GBs)
    if passed:
        raise ValueError(f"it has {'; '.join(passed)}")
    try:
        return nbformat.reads(json.dumps(raw), as_version=4)
    except Exception as error:  # noqa: BLE001 - anything a student's file can make nbformat raise
        raise ValueError(f"it is not a notebook ({type(error).__name__})") from None


def answer_cells(notebook) -> dict[str, str]:
    """grade id -> source of each code answer cell (nbgrader's own test of what an answer is); the first of
    two cells with one grade id."""
    from .course import grade_id, is_answer

    found: dict[str, str] = {}
    for cell in notebook.cells:
        if cell.get("cell_type") == "code" and is_answer(cell) and isinstance(grade_id(cell), str):
            found.setdefault(grade_id(cell), cell.get("source") if isinstance(cell.get("source"), str) else "")
    return found


def releases(course, assignment: str) -> dict[str, Release]:
    """exercise (answer cell's grade id) -> what the release gives, from the released notebooks."""
    found = {}
    for path in sorted(course.path("release", assignment=assignment).glob("*.ipynb")):
        notebook = read_notebook(path)
        code = [c.source for c in notebook.cells if c.cell_type == "code"]
        for exercise, source in answer_cells(notebook).items():
            found[exercise] = Release.of(source, code)
    return found


def submissions(course, assignment: str) -> tuple[dict[str, dict[str, str]], list[tuple[str, str, str]]]:
    """student -> exercise -> answer source, as handed in (``submitted/``: whatever the grading made of it), and
    the notebooks that could not be read (student, notebook, reason)."""
    from .course import students_with_submissions

    found, listed = {}, []
    for student in students_with_submissions(course, assignment):
        answers: dict[str, str] = {}
        for path in sorted(course.path("submitted", student, assignment).glob("*.ipynb")):
            try:
                answers.update(answer_cells(read_notebook(path)))
            except (ValueError, OSError) as error:
                listed.append((student, path.name, f"the notebook cannot be read: {error}"))
        found[student] = answers
    return found, listed


# ---------------------------------------------------------------------------------------------
# The report: a CSV, one HTML page, one PNG (for the instructor alone: reports/, never the feedback)
# ---------------------------------------------------------------------------------------------


def run(course, assignment: str) -> Report:
    """Compare every pair of submissions of ``assignment`` (``submitted/``), exercise by exercise."""
    given = releases(course, assignment)
    handed_in, unreadable = submissions(course, assignment)
    results, listed = compare(handed_in, given)
    unread = {student for student, _notebook, _reason in unreadable}
    listed = unreadable + [row for row in listed if not (row[0] in unread and row[2].startswith("no answer cell"))]
    return Report(assignment, results, listed, len(handed_in))


CSV_HEADER = ["assignment", "exercise", "student", "other_student", "score", "threshold", "note"]


def csv_rows(report: Report) -> list[dict]:
    """One row per flagged pair (score and threshold), then one per listed answer (its reason)."""
    from .export import spreadsheet_safe

    rows = [
        {
            "assignment": report.assignment,
            "exercise": pair.exercise,
            "student": pair.a.student,
            "other_student": pair.b.student,
            "score": f"{pair.score:.3f}",
            "threshold": f"{pair.threshold:.3f}",
            "note": "",
        }
        for pair in report.flagged
    ]
    rows += [
        {"assignment": report.assignment, "exercise": exercise, "student": student, "note": reason}
        for student, exercise, reason in report.listed
    ]
    return [{k: spreadsheet_safe(row.get(k, "")) for k in CSV_HEADER} for row in rows]


def distribution_picture(report: Report) -> tuple[bytes, str]:
    """The class's pair scores per exercise, with the class's level and the size floor drawn: PNG bytes and
    the picture said in words (its alt text)."""
    from heads_and_masks.figure_style import course_style

    shown = report.exercises or [ExerciseResult(_("(no exercise)"), [], 0.0, 0.0, 0.0, [], 0)]
    with course_style():  # the course's text sizes (12 px and up), as in every picture a person reads
        png, words = _draw_distribution(report.assignment, shown)
    alt = _(
        "Histograms of the scores of every pair of answers of {assignment}, one per exercise, with the size floor "
        "as a dotted line, the class level as a dashed line and flagged pairs as triangles."
    ).format(assignment=report.assignment)
    return png, " ".join([alt, *words])


def _draw_distribution(assignment: str, shown: list[ExerciseResult]) -> tuple[bytes, list[str]]:
    import numpy as np
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, NullFormatter

    columns = min(3, len(shown))
    rows = math.ceil(len(shown) / columns)
    figure = Figure(figsize=(4.4 * columns, 3.6 * rows), layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False)
    words = []
    for axis, exercise in zip(axes.flat, shown, strict=False):
        counts, _edges, _bars = axis.hist(
            exercise.scores, bins=np.linspace(0, 1, 21), color="#577590", edgecolor="white"
        )
        axis.set_yscale("log")  # a class of 300 has 44,850 pairs, nearly all low: the few high ones stay visible
        axis.set_ylim(0.5, max(2.0, counts.max() * 2 if len(counts) else 2.0))
        axis.yaxis.set_major_formatter(FuncFormatter(lambda value, _position: f"{value:g}"))
        axis.yaxis.set_minor_formatter(NullFormatter())
        floor = typical_floor(exercise)
        if math.isfinite(floor) and floor <= 1:
            axis.axvline(
                floor,
                color="#222",
                linestyle=":",
                linewidth=1.5,
                label=_("size floor {floor}").format(floor=number(floor, ".2f")),
            )
        if 0 < exercise.class_level <= 1:
            axis.axvline(exercise.class_level, color="#c8553d", linestyle="--", linewidth=1.5, label=_("class level"))
        for pair in exercise.flagged:  # each flagged pair as a tick under the axis: seen without colour
            axis.plot(
                [pair.score],
                [0],
                marker="^",
                color="#c8553d",
                markersize=8,
                clip_on=False,
                transform=axis.get_xaxis_transform(),
            )
        axis.set(xlim=(0, 1), title=exercise.name, xlabel=_("score (fingerprints in common)"), ylabel=_("pairs"))
        axis.spines[["top", "right"]].set_visible(False)
        if axis.get_legend_handles_labels()[0]:  # below the axes: never on a bar or a line
            axis.legend(frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncols=2)
        words.append(describe_exercise(exercise))
    for axis in list(axes.flat)[len(shown) :]:
        axis.set_axis_off()
    figure.suptitle(
        _("{assignment}: scores of every pair of answers, per exercise (triangles: flagged pairs)").format(
            assignment=assignment
        )
    )
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue(), words


def typical_floor(exercise: ExerciseResult) -> float:
    """The size floor for the exercise's median answer (each pair has its own: the figure only shows one)."""
    return size_floor(int(exercise.median_tokens)) if exercise.compared else math.inf


def describe_exercise(exercise: ExerciseResult) -> str:
    """One exercise's numbers in a sentence (the picture's alt text, the page's table)."""
    flagged = len(exercise.flagged)
    if exercise.class_level:
        sentence = ngettext(
            "{exercise}: {pairs} pairs, median score {median}, class level {level}, {n} pair flagged.",
            "{exercise}: {pairs} pairs, median score {median}, class level {level}, {n} pairs flagged.",
            flagged,
        )
    else:
        sentence = ngettext(
            "{exercise}: {pairs} pairs, median score {median}, class too small for a class level, {n} pair flagged.",
            "{exercise}: {pairs} pairs, median score {median}, class too small for a class level, {n} pairs flagged.",
            flagged,
        )
    return sentence.format(
        exercise=exercise.name,
        pairs=len(exercise.scores),
        median=number(exercise.median, ".2f"),
        level=number(exercise.class_level, ".2f"),
        n=flagged,
    )


def write(course, assignment: str) -> tuple[Report, dict[str, Path]]:
    """Compare the class and write ``reports/ASSIGNMENT-similarity.{csv,html,png}`` (the instructor's alone)."""
    report = run(course, assignment)
    folder = course.runtime_dir("reports")
    paths = {kind: folder / f"{assignment}-similarity.{kind}" for kind in ("csv", "html", "png")}
    picture, alt = distribution_picture(report)
    paths["png"].write_bytes(picture)
    # a student's text may hold what UTF-8 cannot encode (a lone surrogate: \ud800 in the notebook JSON is
    # valid JSON): written as an escape, never an error that leaves the class without a report
    paths["html"].write_text(render_html(report, picture, alt), encoding="utf-8", errors="backslashreplace")
    with open(paths["csv"], "w", newline="", encoding="utf-8", errors="backslashreplace") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_HEADER, quoting=csv.QUOTE_ALL)  # see export.spreadsheet_safe
        writer.writeheader()
        writer.writerows(csv_rows(report))
    return report, paths


def summary(report: Report) -> str:
    """What the command says: the assignment, the pairs flagged per exercise, the listed answers."""
    flagged = len(report.flagged)
    lines = [
        ngettext(
            "{assignment}: {students} submissions compared; {n} pair above its threshold",
            "{assignment}: {students} submissions compared; {n} pairs above their threshold",
            flagged,
        ).format(assignment=report.assignment, students=report.n_students, n=flagged)
    ]
    lines += ["  " + describe_exercise(exercise) for exercise in report.exercises]
    if report.listed:
        listed = len(report.listed)
        lines.append(
            "  "
            + ngettext(
                "{n} answer listed with a reason (empty, unparseable, enormous, unreadable)",
                "{n} answers listed with a reason (empty, unparseable, enormous, unreadable)",
                listed,
            ).format(n=listed)
        )
    return "\n".join(lines)
