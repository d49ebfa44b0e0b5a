"""The page of ``make similarity``: what a score means, the class's scores, each flagged pair side by side with its
matched lines marked (in words too, not by shading alone), and the answers listed with a reason.

One self-contained HTML page for the instructor alone (``class/reports/``): the picture inside, no script, a
Content-Security-Policy that fetches nothing, and every student text escaped (``_e``). It is written in the
report's language; the comparison itself is ``similarity.py``'s.
"""

from __future__ import annotations

import base64
import html

from heads_and_masks.i18n import N_, _, in_prose, ngettext, number, translated

from .report import written_in
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
