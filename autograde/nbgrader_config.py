"""nbgrader configuration of the course, wired to the repository's layout.

    solutions/<assignment>/          the source (instructor version, with solutions and hidden tests)
    notebooks/<assignment>/          the release (student version), committed
    class/                           the class's folder, never committed (autograde/class_folder.py):
    class/submitted|autograded|feedback|solution/<student>/<assignment>/
    class/gradebook.db               the gradebook (or the database server that
                                     $HEADS_AND_MASKS_GRADEBOOK_URL names: docs/instructors.md)
    class/grading-key                the instructor's secret for hidden inputs (grading_key.py)

Run nbgrader from this folder (``cd autograde && nbgrader ...``) or through the Makefile targets.
"""

import os
import sys

c = get_config()  # noqa: F821 (provided by traitlets when nbgrader loads this file)

here = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.course_id = "heads-and-masks"
c.CourseDirectory.root = os.path.dirname(here)
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "notebooks"
c.CourseDirectory.submitted_directory = "class/submitted"
c.CourseDirectory.autograded_directory = "class/autograded"
c.CourseDirectory.feedback_directory = "class/feedback"
c.CourseDirectory.solution_directory = "class/solution"
# The gradebook: the SQLite file in the class's folder, or the database server the instructor named for every grader
# (HEADS_AND_MASKS_GRADEBOOK_URL, e.g. postgresql+psycopg://heads_grader@127.0.0.1/heads_and_masks), read as the grading commands read it.
from autograde.course import configured_gradebook_url  # noqa: E402

class_folder = os.path.join(os.path.dirname(here), "class")  # the class's folder (autograde/class_folder.py)
c.CourseDirectory.db_url = configured_gradebook_url() or "sqlite:///" + os.path.join(class_folder, "gradebook.db")
if not configured_gradebook_url():  # SQLite makes the file, not its folder (a fresh course: formgrader, hub roster)
    os.makedirs(class_folder, mode=0o700, exist_ok=True)
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", ".DS_Store"]

# A test cell that a student deleted is put back and judged, instead of silently scoring nothing.
c.OverwriteCells.add_missing_cells = True
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}

from autograde.adopt_release import AdoptRelease  # noqa: E402
from autograde.feedback_filter import HideHiddenTests, SayInLanguage, SayLate, SayPending  # noqa: E402
from autograde.feedback_math import TypesetMath  # noqa: E402
from autograde.judge import Judge  # noqa: E402
from autograde.kernel.sandbox import sandbox_available  # noqa: E402
import nbgrader  # noqa: E402 (already imported: nbgrader is reading this file)
from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor  # noqa: E402
from nbgrader.preprocessors import (  # noqa: E402 - after the configuration above, as the imports before it
    AssignLatePenalties,
    CheckCellMetadata,
    ClearOutput,
    DeduplicateIds,
    GetGrades,
    LimitOutput,
    OverwriteCells,
    OverwriteKernelspec,
    SaveAutoGrades,
)

# nbgrader's own sanitizing, then the course's: the submitted notebook's metadata and every cell's become the
# release's, and the student's text is shown as text (adopt_release.py), before the judge runs any of its code.
c.Autograde.sanitize_preprocessors = [
    ClearOutput,
    DeduplicateIds,
    OverwriteKernelspec,
    OverwriteCells,
    CheckCellMetadata,
    AdoptRelease,
]

# The judge replaces nbgrader's Execute: the student's code runs in a sandboxed kernel, every test
# cell runs in the grader's own process against it (judge.py). Limits per cell and per notebook.
c.Autograde.autograde_preprocessors = [
    Judge,
    ClearMetadataPreprocessor,
    LimitOutput,
    SaveAutoGrades,
    AssignLatePenalties,
    CheckCellMetadata,
]
c.Judge.timeout = 60
c.Judge.budget = 480
c.Judge.memory_mb = 2048
SANDBOXED, WHY_NOT_SANDBOXED = sandbox_available()
if not SANDBOXED:
    print(f"WARNING: GRADING UNSANDBOXED: {WHY_NOT_SANDBOXED}", file=sys.stderr)
c.LimitOutput.max_lines = 1000

# The course's late policy (autograde/late_policy.py, docs/instructors.md): nbgrader's AssignLatePenalties asks it
# for the penalty of each graded notebook of a submission that came after the assignment's due date.
from autograde.late_policy import CourseLatePolicy  # noqa: E402

c.AssignLatePenalties.plugin_class = CourseLatePolicy
c.CourseLatePolicy.grace_minutes = 15  # a slow upload, a clock a minute off: still on time
c.CourseLatePolicy.share_per_day = 0.10  # of the assignment's points, for each day or part of a day late
c.CourseLatePolicy.max_share = 0.50  # work a week late still earns half its points
c.LimitOutput.max_traceback = 100

# Feedback for students never shows the hidden tests (nbgrader's own feedback would), and says "pending" for a
# written answer nobody graded yet (nbgrader's says "Score: 0.0 / 2.0"): the course's feedback template, found
# before nbgrader's own (its name stays "feedback": nbgrader's API and formgrader ask for that name). nbgrader's
# folder stays on the list: the formgrader's own page template ("formgrade") is there.
# Formulas are typeset into MathML as the page is made (autograde/feedback_math.py): the page loads no MathJax
# from a CDN, and reads the same offline, from the file, or from JupyterLab's sandboxed /files/.
c.GenerateFeedback.preprocessors = [
    SayInLanguage,  # first: the page's words, in the language of the notebook the student submitted
    HideHiddenTests,
    GetGrades,
    SayPending,
    SayLate,
    TypesetMath,
    CSSHTMLHeaderPreprocessor,
]
nbgrader_templates = os.path.join(os.path.dirname(nbgrader.__file__), "server_extensions", "formgrader", "templates")
c.HTMLExporter.extra_template_basedirs = [os.path.join(here, "templates"), nbgrader_templates]

# Validate in a learner's words (the instructor's lab and `nbgrader validate` here): autograde/validator.py.
from autograde.validator import use_course_validator  # noqa: E402

use_course_validator()
