"""The instructor's grading pipeline of Heads & Masks, on nbgrader, one module per step:

    course.py-like layout and gradebook ...  classroom.py   (release, grading runs, results, feedback, export, report)
    collection of submissions .............  collect.py     (exchange, LMS zip, folder: only regular notebook files)
    the sandbox of every grading kernel ...  sandbox.py     (+ kernel_launch.py, run inside it)
    the judge of every test cell ..........  judge.py       (student code in the kernel, tests in the grader)
    the instructor's secret ...............  grading_key.py (hidden inputs drawn from it)
    one grading worker ....................  grade_worker.py
    feedback without hidden tests .........  feedback_filter.py
    a scan for suspicious code ............  scan.py
    the command line ......................  grade.py       (python -m autograde.grade --help)

``nbgrader_config.py`` wires nbgrader to the course's layout and puts the judge in place of
nbgrader's own execution step. docs/instructors.md walks through a term; docs/security.md says
what a submission can and cannot reach.
"""
import sys as _sys

# jsonschema (which nbformat imports) compiles an IRI grammar when it finds rfc3987_syntax installed:
# about 1.2 s of CPU in every grading process, for a string format no notebook schema uses. Marking the
# module absent (unless something imported it already) makes jsonschema skip that one format check.
_sys.modules.setdefault("rfc3987_syntax", None)
