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

import base64
import csv
import dataclasses
import html
import io
import json
import math
from pathlib import Path

from heads_and_masks.i18n import N_, _, in_prose, ngettext, number, translated

from .bounds import notebook_shape, structure_limits
from .report import written_in

from .similarity_scores import (
    Answer,
    COMMON_MIN,
    COMMON_SHARE,
    ExerciseResult,
    FLOOR,
    K,
    MIN_CLASS,
    Pair,
    SPREAD,
    compare,
    size_floor,
)
from .similarity_tokens import MIN_TOKENS, Release, source_lines

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


@dataclasses.dataclass
class Report:
    assignment: str
    exercises: list[ExerciseResult]
    listed: list[tuple[str, str, str]]  # (student, exercise or notebook, reason)
    n_students: int

    @property
    def flagged(self) -> list[Pair]:
        return [pair for exercise in self.exercises for pair in exercise.flagged]


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


STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1300px; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ddd; }
h3 { font-size: 1.1em; margin-top: 1.5em; } h4 { font-size: 1em; margin: 1em 0 0.3em; } h5 { font-size: 0.95em; margin: 0.3em 0; }
table { border-collapse: collapse; margin: 0.5em 0 1em; } td, th { padding: 0.15em 0.6em; text-align: left;
 vertical-align: top; border-bottom: 1px solid #eee; } th { background: #f4f4f4; } td.n { text-align: right; }
.wide { overflow-x: auto; } .sides { display: flex; gap: 1em; align-items: flex-start; } .side { flex: 1; min-width: 0; overflow-x: auto; }
table.code td { font-family: ui-monospace, monospace; font-size: 0.85em; white-space: pre; border: none;
 padding: 0 0.4em; } table.code td.line { color: #555; text-align: right; } table.code td.mark { font-weight: bold; }
tr.match td { background: #fff1b8; } img { max-width: 100%; } .muted { color: #555; }
"""

MATCH_MARKER = N_("match")  # the text that marks a matched line, beside its shading: nothing is said by colour alone
LONG_ANSWER = 60  # lines: a longer answer shows only its matched lines, with CONTEXT lines around them
CONTEXT = 3


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _in(tag: str, text: str) -> str:
    """``text`` (a translated sentence or label) escaped, inside ``<tag>``: written outside the f-strings, where
    the catalogs' extractor finds the message."""
    return f"<{tag}>{_e(text)}</{tag}>"


def side_html(answer: Answer, matched: set[int]) -> str:
    """One answer as a table of lines: number, the marker on a matched line, the code. A long answer shows its
    matched lines with CONTEXT lines around them; the lines left out are counted."""
    lines = source_lines(answer.source)
    shown = set(range(1, len(lines) + 1))
    if len(lines) > LONG_ANSWER:
        shown = {n for m in matched for n in range(m - CONTEXT, m + CONTEXT + 1)} | set(range(1, CONTEXT + 1))
    rows, skipped = [], 0
    for n, line in enumerate(lines, start=1):
        if n not in shown:
            skipped += 1
            continue
        if skipped:
            rows.append(f"<tr><td></td><td></td><td class='muted'>{lines_left_out(skipped)}</td></tr>")
            skipped = 0
        marker, row_class = (_e(translated(MATCH_MARKER)), " class='match'") if n in matched else ("", "")
        rows.append(f"<tr{row_class}><td class='line'>{n}</td><td class='mark'>{marker}</td><td>{_e(line)}</td></tr>")
    if skipped:
        rows.append(f"<tr><td></td><td></td><td class='muted'>{lines_left_out(skipped)}</td></tr>")
    heading = f"{_e(answer.student)}: {matched_count(len(matched & set(range(1, len(lines) + 1))), len(lines))}"
    return (
        # a region of its own that scrolls sideways: focusable, so that a keyboard scrolls it too
        "<div class='side' tabindex='0' role='region' aria-label='"
        + _e(_("{student}: code").format(student=answer.student))
        + f"'><h5>{heading}</h5><table class='code'>"
        + "<tr>"
        + _in("th", _("line"))
        + _in("th", _("marker"))
        + _in("th", _("code"))
        + "</tr>"
        + "".join(rows)
        + "</table></div>"
    )


def lines_left_out(n: int) -> str:
    return _e(ngettext("{n} line without a match, not shown", "{n} lines without a match, not shown", n).format(n=n))


def matched_count(matched: int, total: int) -> str:
    return _e(
        ngettext("{n} of {total} lines matches", "{n} of {total} lines match", matched).format(n=matched, total=total)
    )


def render_html(report: Report, picture: bytes, alt: str) -> str:
    """The page: what the score means, the class's distribution, the flagged pairs side by side, the listed
    answers. Self-contained (the picture inside), no script, every student text escaped."""
    title = _("Similar submissions: {assignment}").format(assignment=report.assignment)
    scores_heading = _("The class's scores")
    flagged = len(report.flagged)
    parts = [
        f"<!DOCTYPE html><html lang='{written_in()}'><head><meta charset='utf-8'>"
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'\">"
        f"<title>{_e(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        "<p>"
        + _e(
            ngettext(
                "{n} pair of answers above its threshold, among {students} submissions compared exercise by exercise.",
                "{n} pairs of answers above their threshold, among {students} submissions compared exercise by "
                "exercise.",
                flagged,
            ).format(n=flagged, students=report.n_students)
        )
        + " "
        + _e(_("For the instructor only: nothing here reaches students' feedback."))
        + "</p>",
        _in("h2", _("What the score means, and what it does not")),
        "<p>"
        + _e(
            _(
                "The score of a pair is the share of the shorter answer's fingerprints (hashes of runs of {k} tokens "
                "of its own code, after renaming its variables, sorting the operands of + and *, and dropping "
                "comments, docstrings, blank lines, the course's imports and what the released cell already held) "
                "that the other answer has too; fingerprints found in more than {common_share} of the class's "
                "answers (and more than {common_min}) are the natural way of writing that part and are left out."
            ).format(k=K, common_share=in_prose(f"{COMMON_SHARE:.0%}"), common_min=COMMON_MIN)
        )
        + " "
        + _e(
            _(
                "A pair is listed when its score reaches the larger of two figures: a floor that rises as the shorter "
                "answer gets shorter ({floor} + 2/√tokens; never below {min_tokens} tokens: a short exercise has few "
                "ways to be right) and the class's level for that exercise, its median score plus {spread} robust "
                "standard deviations (from {min_class} answers on)."
            ).format(floor=number(FLOOR), min_tokens=MIN_TOKENS, spread=number(SPREAD), min_class=MIN_CLASS)
        )
        + "</p>",
        "<p>"
        + _e(
            _(
                "A listed pair is a reason to read two answers side by side, not a finding: students who worked "
                "together as allowed, a hint given in class, or an exercise with one natural answer make answers "
                "alike. A number accuses nobody."
            )
        )
        + "</p>",
        f"<h2>{_e(scores_heading)}</h2>",
        f"<img alt='{_e(alt)}' src='data:image/png;base64,{base64.b64encode(picture).decode('ascii')}'>",
        # a table too wide for a narrow window (or 200 % zoom) scrolls in its own box, which a keyboard can reach
        "<div class='wide' tabindex='0' role='region' aria-label='"
        + _e(_("Scores of the class, by exercise"))
        + "'><table><tr>"
        + "".join(
            _in("th", heading)
            for heading in (
                _("exercise"),
                _("answers compared"),
                _("pairs"),
                _("median score"),
                _("robust spread"),
                _("class level"),
                _("median size (tokens)"),
                _("pairs flagged"),
            )
        )
        + "</tr>",
    ]
    for exercise in report.exercises:
        level = number(exercise.class_level, ".2f") if exercise.class_level else _("class too small")
        parts.append(
            f"<tr><td><code>{_e(exercise.name)}</code></td><td class='n'>{exercise.compared}</td>"
            f"<td class='n'>{len(exercise.scores)}</td><td class='n'>{number(exercise.median, '.2f')}</td>"
            f"<td class='n'>{number(exercise.deviation, '.2f')}</td><td class='n'>{_e(level)}</td>"
            f"<td class='n'>{number(exercise.median_tokens)}</td><td class='n'>{len(exercise.flagged)}</td></tr>"
        )
    parts.append("</table></div>")
    parts.append(_in("h2", _("Pairs above their threshold")))
    parts.append(
        "<p>"
        + _e(_("Lines that share a fingerprint with the other answer are marked {marker} (and shaded).")).replace(
            "{marker}", f"<b>{_e(translated(MATCH_MARKER))}</b>"
        )
        + "</p>"
    )
    for exercise in report.exercises:
        heading = _("Exercise {exercise}").format(exercise=exercise.name)
        parts.append(f"<h3 id='{_e(exercise.name)}'>{_e(heading)}</h3>")
        if not exercise.flagged:
            parts.append(_in("p", _("No pair above its threshold.")))
        for pair in exercise.flagged:
            said = _(
                "{student} and {other_student}: score {score}, threshold {threshold}, {size} tokens in the shorter "
                "answer"
            ).format(
                student=pair.a.student,
                other_student=pair.b.student,
                score=number(pair.score, ".2f"),
                threshold=number(pair.threshold, ".2f"),
                size=pair.size,
            )
            parts.append(
                f"<h4>{_e(said)}</h4>"
                f"<div class='sides'>{side_html(pair.a, pair.lines_a)}{side_html(pair.b, pair.lines_b)}</div>"
            )
    parts.append(_in("h2", _("Answers listed with a reason")))
    if report.listed:
        parts.append(_in("p", _("Compared as far as possible; none of them stopped the comparison of the others.")))
        parts.append(
            "<table><tr>"
            + _in("th", _("student"))
            + _in("th", _("exercise or notebook"))
            + _in("th", _("reason"))
            + "</tr>"
        )
        for student, exercise, reason in report.listed:
            parts.append(f"<tr><td>{_e(student)}</td><td><code>{_e(exercise)}</code></td><td>{_e(reason)}</td></tr>")
        parts.append("</table>")
    else:
        parts.append(_in("p", _("Every answer was compared in full.")))
    parts.append("</body></html>\n")
    return "\n".join(parts)


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
