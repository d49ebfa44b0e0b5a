"""Deadlines without nbgrader's machinery: reading a due date, how late a submission came, in numbers and words.

What the course's late policy takes for it is nbgrader's plug-in (late_policy.py); what is here is read by
every place that shows a grade (results, the CSV, the LMS files, the report, the feedback) without importing
nbgrader (about 1.4 s) just for that.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import zoneinfo
from heads_and_masks.i18n import _, ngettext, number

DAY = 24 * 3600


# ---------------------------------------------------------------------------------------------
# The due date
# ---------------------------------------------------------------------------------------------


class DueDateProblem(ValueError):
    """A due date that cannot be read, said with what is expected."""


EXAMPLE = "2026-12-10 17:00 Europe/Berlin"


def parse_due(text: str) -> dt.datetime:
    """``"2026-12-10 17:00 Europe/Berlin"`` (a date, a time, a time zone) as a naive UTC time, as nbgrader
    keeps times. The zone is required: a bare time would be read as UTC, an hour or more off in most places."""
    when, _space, zone = text.strip().rpartition(" ")
    if not when or zone[:1].isdigit():  # "2026-12-10 17:00": the last word is the time, not a zone
        raise DueDateProblem(f"the due date {text!r} has no time zone: write it as {EXAMPLE!r}")
    try:
        moment = dt.datetime.fromisoformat(when.strip())
    except ValueError:
        raise DueDateProblem(f"the due date {text!r} is not a date and time: write it as {EXAMPLE!r}") from None
    if ":" not in when:
        raise DueDateProblem(f"the due date {text!r} has no time of day: write it as {EXAMPLE!r}")
    if moment.tzinfo is not None:
        raise DueDateProblem(f"the due date {text!r} gives its zone twice: write it as {EXAMPLE!r}")
    try:
        zone_info = zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise DueDateProblem(
            f"the due date {text!r} names no time zone this machine knows ({zone!r}): end it with one such as "
            "Europe/Berlin, America/New_York or UTC"
        ) from None
    return moment.replace(tzinfo=zone_info).astimezone(dt.timezone.utc).replace(tzinfo=None)


def shown_time(moment: dt.datetime | None) -> str:
    """A gradebook time (naive UTC) for people: ``2026-12-10 16:00 UTC``; empty for none."""
    return moment.strftime("%Y-%m-%d %H:%M UTC") if moment else ""


# ---------------------------------------------------------------------------------------------
# How late a submission was, as the gradebook records it
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Lateness:
    """One submission against its due date: when it came, how late, and the points the policy took."""

    submitted: dt.datetime | None = None  # naive UTC, the collection's time
    due: dt.datetime | None = None  # naive UTC (with the student's extension, if nbgrader has one)
    seconds: float = 0.0  # after the due date; 0 when on time or when there is no due date
    penalty: float = 0.0  # points

    @classmethod
    def of(cls, submission) -> Lateness:
        """From nbgrader's ``SubmittedAssignment`` (a gradebook row)."""
        return cls(
            submission.timestamp,
            submission.duedate,
            float(submission.total_seconds_late or 0.0),
            float(submission.late_submission_penalty or 0.0),
        )

    @property
    def late(self) -> bool:
        return self.seconds > 0

    @property
    def hours(self) -> float:
        return self.seconds / 3600


def how_late(seconds: float) -> str:
    """``seconds`` in words, the two largest units: "1 hour", "7 days and 2 hours", "3 minutes"."""
    minutes = max(1, round(seconds / 60)) if seconds > 0 else 0
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    units = [
        ngettext("{n} day", "{n} days", days).format(n=days) if days else "",
        ngettext("{n} hour", "{n} hours", hours).format(n=hours) if hours else "",
        ngettext("{n} minute", "{n} minutes", minutes).format(n=minutes) if minutes and not days else "",
    ]
    said = [unit for unit in units if unit][:2]
    if len(said) == 2:
        return _("{larger} and {smaller}").format(larger=said[0], smaller=said[1])
    return said[0] if said else ngettext("{n} minute", "{n} minutes", 0).format(n=0)


def late_sentence(lateness: Lateness) -> str:
    """What a late submission cost, in a whole sentence (empty when it was on time)."""
    if not lateness.late:
        return ""
    late, due = how_late(lateness.seconds), shown_time(lateness.due)
    if lateness.penalty <= 0:
        return _("This submission came {late} after the due date ({due}): the late policy took no points off.").format(
            late=late, due=due
        )
    # plural rules count whole numbers: 0.6 points are "points" (Russian: "0,6 балла", the form of 2)
    count = 1 if lateness.penalty == 1 else 2
    return ngettext(
        "This submission came {late} after the due date ({due}): the late policy took {points} point off.",
        "This submission came {late} after the due date ({due}): the late policy took {points} points off.",
        count,
    ).format(late=late, due=due, points=number(lateness.penalty, "g"))
