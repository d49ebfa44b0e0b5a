"""The instructor's grading pipeline of Heads & Masks, on nbgrader, one module per step:

    0. the course: its folders, the one way nbgrader is called ..........  course.py
         the released copies, told what their kernel will say ...........  kernel_language.py
         the class's data in class/, and its move from autograde/ .......  class_folder.py
    1. collection of submissions (exchange, LMS zip, folder) ............  collect.py
         the files of one submission, read as untrusted .................  submission_files.py
         nbgrader's exchange: where, its modes, who is who ..............  exchange.py
    2. inspection: can it be graded, what is unusual about it ...........  inspection.py  (+ scan.py)
    3. the pool: every submission graded in parallel, on Dask ...........  pool.py        (+ worker/)
         one task per submission, each result recorded as it comes ......  run_tasks.py
         the Dask cluster and its workers' plugin .......................  cluster.py
         what the run sends its workers (gradebook, source, releases) ...  run_data.py
         each in a sandboxed kernel .....................................  kernel/sandbox.py (+ kernel_manager.py)
           forked from a zygote that imported what kernels import .......  kernel/zygote.py  (+ inside/zygote_server.py)
           or started on its own ........................................  inside/kernel_launch.py
           which confines itself: keyring, no user namespace ............  inside/confine.py
         every test cell judged in the grader ...........................  judge.py       (+ grading_key.py)
           one test cell and its verdict ................................  verdicts.py    (+ kernel/remote_calls.py)
           the student's kernel and the next one, started ahead ...........  kernel/kernel_client.py (+ kernel_supply.py)
           the course package as the kernel sees it .....................  kernel/stub_package.py (+ allowlist, kernel_package)
           answered in the kernel by the harness ........................  inside/harness.py (read back: kernel/wire.py)
    4. results: one record per student, statuses, the gradebook .........  results.py
    5. feedback without the hidden tests ................................  feedback.py    (+ feedback_filter.py)
    6. export: the grades CSV, and the files Canvas and Moodle import ...  export.py
    7. the report, in plain words .......................................  report.py
       and what the class misunderstood, per misconception ..............  class_report.py (+ class_marks.py, pages.py)
       and which submissions are alike, side by side ....................  similarity.py  (+ similarity_tokens.py, similarity_scores.py, similarity_page.py)
    what one submission may cost each step (structure, output, time) ....  bounds.py
    the command line ....................................................  grade.py       (python -m autograde.grade --help)
      its commands after grading (feedback, reports, exports) ...........  after_grading.py
    the throughput measurement (make bench) .............................  throughput.py

The folders say where code runs. ``inside/`` holds what runs inside the sandbox, standard library only
(tests/test_inside.py): the boundary is that folder. ``kernel/`` holds what starts a student's kernel, what it sees
and what talks to it; ``worker/`` the grading worker processes (their fork server, environment and warm-up, and
what one does with a submission). The pipeline's steps stay here, at the top; no module imports itself round
through others (tests/test_import_cycles.py). ``nbgrader_config.py`` wires nbgrader to the course's layout and
puts the judge in place of nbgrader's own execution step. docs/instructors.md walks through a term;
docs/security.md says what a submission can and cannot reach.
"""

import sys as _sys

# jsonschema (which nbformat imports) compiles an IRI grammar when it finds rfc3987_syntax installed:
# about 1.2 s of CPU in every grading process, for a string format no notebook schema uses. Marking the
# module absent (unless something imported it already) makes jsonschema skip that one format check.
_sys.modules.setdefault("rfc3987_syntax", None)
