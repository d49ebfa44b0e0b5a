"""Deadlines: an assignment's due date, the course's late policy, and how late a submission was.

* **The due date** is nbgrader's own (``Assignment.duedate`` in the gradebook), set when the assignment is
  released (``make release ASSIGNMENT=... DUE="2026-12-10 17:00 Europe/Berlin"``, ``lateness.parse_due``). No
  due date: no submission is late.
* **The submission time** is the one the collection wrote into ``timestamp.txt`` (collect.py: the exchange
  folder's last change, the LMS download's entry date), never a student's own file; nbgrader reads it when it
  grades and keeps it in the gradebook (``SubmittedAssignment.timestamp``), and it says how many seconds after
  the due date it came (``total_seconds_late``).
* **The late policy** is an nbgrader ``LateSubmissionPlugin`` (``CourseLatePolicy``), set in
  ``nbgrader_config.py`` as ``c.AssignLatePenalties.plugin_class``: nbgrader's ``AssignLatePenalties`` asks it
  for each graded notebook's penalty and keeps it in the gradebook (``late_submission_penalty``). Every place
  that shows a grade (the CSV, the LMS files, the report, the feedback) reads both from there
  (``lateness.Lateness``).
"""

from __future__ import annotations

import math
from heads_and_masks.i18n import _, ngettext, number

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Float

from .lateness import DAY


class CourseLatePolicy(LateSubmissionPlugin):
    """The course's late policy: after a grace period, each day or part of a day late costs a share of the
    notebook's points, up to a cap; never more than the points earned (nbgrader's own rule).

    The defaults (15 minutes of grace, 10% a day, at most 50%): a submission that reaches the exchange a few
    minutes after the hour (a slow upload, a clock a minute off) is on time; a day late costs as much as a small
    exercise; and work handed in a week late still earns half its points, because in this course the exercises
    build on each other and doing them late is better than not doing them at all."""

    grace_minutes = Float(15.0, help="minutes after the due date that still count as on time").tag(config=True)
    share_per_day = Float(0.10, help="share of the points taken for each day or part of a day late").tag(config=True)
    max_share = Float(0.50, help="the largest share of the points a late submission can lose").tag(config=True)

    def days_late(self, seconds_late: float) -> int:
        """The days counted against a submission ``seconds_late`` after the due date (0 within the grace)."""
        if seconds_late <= self.grace_minutes * 60:
            return 0
        return math.ceil(seconds_late / DAY)  # counted from the due date: a part of a day is a day

    def penalty(self, seconds_late: float, max_points: float) -> float:
        """The points a submission of ``max_points`` loses for coming ``seconds_late`` after the due date."""
        share = min(self.max_share, self.share_per_day * self.days_late(seconds_late))
        return round(share * max_points, 4)

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float) -> float | None:
        """nbgrader's question for one graded notebook; None: no penalty. nbgrader passes the score, not the
        points the notebook is worth: those come from the gradebook its ``AssignLatePenalties`` (the parent)
        holds open while it asks."""
        asking = self.parent
        notebook = asking.gradebook.find_submission_notebook(asking.notebook_id, asking.assignment_id, student_id)
        points = self.penalty(total_seconds_late, float(notebook.max_score or 0.0))
        return min(points, score) if points > 0 else None

    def describe(self) -> str:
        """The policy in words, for the instructor's report, the student's feedback and the docs."""
        if self.share_per_day <= 0 or self.max_share <= 0:
            return _("A late submission loses no points; how late it came is shown.")
        grace = ngettext(
            "A submission up to {n} minute after the due date counts as on time.",
            "A submission up to {n} minutes after the due date counts as on time.",
            round(self.grace_minutes),
        ).format(n=number(self.grace_minutes, "g"))
        cost = _(
            "After that, each day or part of a day late costs {share} of the assignment's points, up to {most} "
            "of them; a late penalty never takes more than the points earned."
        ).format(share=f"{self.share_per_day:.0%}", most=f"{self.max_share:.0%}")
        return f"{grace} {cost}" if self.grace_minutes > 0 else cost  # two sentences, each whole


def course_policy(config) -> LateSubmissionPlugin:
    """The late policy ``config`` (the course's nbgrader configuration) sets, as nbgrader will make it."""
    from nbgrader.preprocessors import AssignLatePenalties

    return AssignLatePenalties(config=config).plugin_class(config=config)


def describe_policy(config) -> str:
    """The late policy of ``config`` in words (a plug-in of another kind: its name and its own words)."""
    policy = course_policy(config)
    if hasattr(policy, "describe"):
        return policy.describe()
    return f"Late submissions are penalised by {type(policy).__name__}: {(type(policy).__doc__ or '').strip()}"
