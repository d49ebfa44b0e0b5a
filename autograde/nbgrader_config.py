"""nbgrader configuration of the course, wired to the repository's layout.

    solutions/<assignment>/          the source (instructor version, with solutions and hidden tests)
    notebooks/<assignment>/          the release (student version), committed
    autograde/submitted|autograded|feedback|solution/<student>/<assignment>/   runtime, never committed
    autograde/gradebook.db           the gradebook, runtime, never committed

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
c.CourseDirectory.submitted_directory = "autograde/submitted"
c.CourseDirectory.autograded_directory = "autograde/autograded"
c.CourseDirectory.feedback_directory = "autograde/feedback"
c.CourseDirectory.solution_directory = "autograde/solution"
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(here, "gradebook.db")
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", ".DS_Store"]

# A test cell that a student deleted is put back and run, instead of silently scoring nothing.
c.OverwriteCells.add_missing_cells = True
# Each cell gets its own time limit; a cell that loops forever is interrupted, the rest still run.
c.Execute.timeout = 60
c.Execute.interrupt_on_timeout = True
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}

# Kernels that run students' code start through kernel_guard (a per-kernel memory limit, no core
# dumps, one BLAS thread, and a hook to put a sandbox command in front: command_prefix).
here in sys.path or sys.path.insert(0, here)
from kernel_guard import GuardedExecute  # noqa: E402
from feedback_filter import HideHiddenTests  # noqa: E402
from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor  # noqa: E402
from nbgrader.preprocessors import (AssignLatePenalties, CheckCellMetadata, GetGrades,  # noqa: E402
                                    IgnorePattern, LimitOutput, SaveAutoGrades)

c.Autograde.autograde_preprocessors = [GuardedExecute, IgnorePattern, ClearMetadataPreprocessor, LimitOutput,
                                       SaveAutoGrades, AssignLatePenalties, CheckCellMetadata]
c.GuardedKernelManager.memory_limit_mb = 2048
c.GuardedKernelManager.command_prefix = []  # an extra wrapper, if a deployment wants one
# Every grading kernel runs in the bubblewrap sandbox (sandbox.py): no network, no access to the
# solutions, the gradebook, the exchange or other submissions, an unprivileged user, limits.
from sandbox import sandbox_available  # noqa: E402

SANDBOXED, WHY_NOT_SANDBOXED = sandbox_available()
if SANDBOXED:
    c.GuardedExecute.kernel_manager_class = "sandbox.SandboxedKernelManager"
else:
    print(f"WARNING: GRADING UNSANDBOXED: {WHY_NOT_SANDBOXED}", file=sys.stderr)
# Huge outputs are cut (stored outputs are cleared before grading anyway).
c.LimitOutput.max_lines = 1000
c.LimitOutput.max_traceback = 100

# Feedback for students never shows the hidden tests (nbgrader's own feedback would).
c.GenerateFeedback.preprocessors = [HideHiddenTests, GetGrades, CSSHTMLHeaderPreprocessor]
