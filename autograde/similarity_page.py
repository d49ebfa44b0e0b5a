"""The page of ``make similarity``: what a score means, the class's scores, each flagged pair side by side with its
matched lines marked (in words too, not by shading alone), and the answers listed with a reason.

One self-contained HTML page for the instructor alone (``class/reports/``): the picture inside, no script, a
Content-Security-Policy that fetches nothing, and every student text escaped: the page is laid out by
``templates/similarity/page.html.j2``, whose environment escapes every value it writes (autoescape). It is written in the
report's language; the comparison itself is ``similarity.py``'s.
"""

from __future__ import annotations

import base64

from markupsafe import Markup

from heads_and_masks.i18n import N_, _, in_prose, ngettext, number, translated

from .pages import page_template, written_in
from .similarity_scores import (
    Answer,
    COMMON_MIN,
    COMMON_SHARE,
    FLOOR,
    K,
    MIN_CLASS,
    SPREAD,
    Report,
)
from .similarity_tokens import MIN_TOKENS, source_lines

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


def side(answer: Answer, matched: set[int]) -> dict:
    """One answer as rows of lines: number, whether it matches, the code. A long answer shows its matched lines
    with CONTEXT lines around them; the lines left out are counted in a row of their own."""
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
            rows.append({"left_out": lines_left_out(skipped)})
            skipped = 0
        rows.append({"n": n, "matched": n in matched, "code": line, "left_out": ""})
    if skipped:
        rows.append({"left_out": lines_left_out(skipped)})
    count = matched_count(len(matched & set(range(1, len(lines) + 1))), len(lines))
    return {
        "label": _("{student}: code").format(student=answer.student),
        "heading": f"{answer.student}: {count}",
        "rows": rows,
    }


def lines_left_out(n: int) -> str:
    return ngettext("{n} line without a match, not shown", "{n} lines without a match, not shown", n).format(n=n)


def matched_count(matched: int, total: int) -> str:
    return ngettext("{n} of {total} lines matches", "{n} of {total} lines match", matched).format(
        n=matched, total=total
    )


def page_texts(report: Report) -> dict:
    """Every sentence, heading and label of the page, in the report's language (the template lays them out)."""
    flagged = len(report.flagged)
    return {
        "title": _("Similar submissions: {assignment}").format(assignment=report.assignment),
        "flagged": ngettext(
            "{n} pair of answers above its threshold, among {students} submissions compared exercise by exercise.",
            "{n} pairs of answers above their threshold, among {students} submissions compared exercise by exercise.",
            flagged,
        ).format(n=flagged, students=report.n_students),
        "instructor_only": _("For the instructor only: nothing here reaches students' feedback."),
        "meaning": _("What the score means, and what it does not"),
        "score": _(
            "The score of a pair is the share of the shorter answer's fingerprints (hashes of runs of {k} tokens "
            "of its own code, after renaming its variables, sorting the operands of + and *, and dropping "
            "comments, docstrings, blank lines, the course's imports and what the released cell already held) "
            "that the other answer has too; fingerprints found in more than {common_share} of the class's "
            "answers (and more than {common_min}) are the natural way of writing that part and are left out."
        ).format(k=K, common_share=in_prose(f"{COMMON_SHARE:.0%}"), common_min=COMMON_MIN),
        "listed_when": _(
            "A pair is listed when its score reaches the larger of two figures: a floor that rises as the shorter "
            "answer gets shorter ({floor} + 2/√tokens; never below {min_tokens} tokens: a short exercise has few "
            "ways to be right) and the class's level for that exercise, its median score plus {spread} robust "
            "standard deviations (from {min_class} answers on)."
        ).format(floor=number(FLOOR), min_tokens=MIN_TOKENS, spread=number(SPREAD), min_class=MIN_CLASS),
        "accuses_nobody": _(
            "A listed pair is a reason to read two answers side by side, not a finding: students who worked "
            "together as allowed, a hint given in class, or an exercise with one natural answer make answers "
            "alike. A number accuses nobody."
        ),
        "scores_heading": _("The class's scores"),
        "scores_region": _("Scores of the class, by exercise"),
        "score_columns": [
            _("exercise"),
            _("answers compared"),
            _("pairs"),
            _("median score"),
            _("robust spread"),
            _("class level"),
            _("median size (tokens)"),
            _("pairs flagged"),
        ],
        "pairs_heading": _("Pairs above their threshold"),
        # the sentence's own text escaped, and the marker in bold where the translation puts it
        "marked": Markup.escape(
            _("Lines that share a fingerprint with the other answer are marked {marker} (and shaded).")
        ).format(marker=Markup("<b>{}</b>").format(translated(MATCH_MARKER))),
        "match": translated(MATCH_MARKER),
        "no_pair": _("No pair above its threshold."),
        "line": _("line"),
        "marker": _("marker"),
        "code": _("code"),
        "listed_heading": _("Answers listed with a reason"),
        "listed_intro": _("Compared as far as possible; none of them stopped the comparison of the others."),
        "student": _("student"),
        "exercise_or_notebook": _("exercise or notebook"),
        "reason": _("reason"),
        "compared_in_full": _("Every answer was compared in full."),
    }


def render_html(report: Report, picture: bytes, alt: str) -> str:
    """The page: what the score means, the class's distribution, the flagged pairs side by side, the listed
    answers. Self-contained (the picture inside), no script, every student text escaped by the template."""
    exercises = []
    for exercise in report.exercises:
        said = _(
            "{student} and {other_student}: score {score}, threshold {threshold}, {size} tokens in the shorter answer"
        )
        exercises.append(
            {
                "name": exercise.name,
                "heading": _("Exercise {exercise}").format(exercise=exercise.name),
                "compared": exercise.compared,
                "pairs": len(exercise.scores),
                "median": number(exercise.median, ".2f"),
                "deviation": number(exercise.deviation, ".2f"),
                "level": number(exercise.class_level, ".2f") if exercise.class_level else _("class too small"),
                "median_tokens": number(exercise.median_tokens),
                "n_flagged": len(exercise.flagged),
                "flagged": [
                    {
                        "said": said.format(
                            student=pair.a.student,
                            other_student=pair.b.student,
                            score=number(pair.score, ".2f"),
                            threshold=number(pair.threshold, ".2f"),
                            size=pair.size,
                        ),
                        "a": side(pair.a, pair.lines_a),
                        "b": side(pair.b, pair.lines_b),
                    }
                    for pair in exercise.flagged
                ],
            }
        )
    return (
        page_template("similarity", "page.html.j2").render(
            language=written_in(),
            t=page_texts(report),
            style=STYLE,
            alt=alt,
            picture=base64.b64encode(picture).decode("ascii"),
            exercises=exercises,
            listed=report.listed,
        )
        + "\n"
    )
