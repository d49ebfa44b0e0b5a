"""The static scan flags every trick of the attack catalog and nothing in honest answers."""

from __future__ import annotations

import textwrap

import pytest
from catalog import catalogs
from autograde.scan import scan_notebook
from submissions import submission

ATTACKS = {
    "input_transformer": """
        ip = get_ipython()
        ip.input_transformers_cleanup.append(lambda lines: [] if any("check_" in l for l in lines) else lines)
    """,
    "ast_transformer": """
        import ast
        class Blank(ast.NodeTransformer):
            def visit_Module(self, node):
                return ast.Module(body=[], type_ignores=[])
        get_ipython().ast_transformers.append(Blank())
    """,
    "event_callback": """
        get_ipython().events.register("pre_run_cell", lambda info: None)
    """,
    "trace_function": """
        import sys
        sys.settrace(lambda *a: None)
    """,
    "patched_numpy": """
        np.allclose = lambda *a, **k: True
    """,
    "always_equal": """
        class Anything(np.ndarray):
            def __eq__(self, other):
                return True
    """,
    "array_ufunc": """
        class Fake:
            def __array_ufunc__(self, *args, **kwargs):
                return 0
    """,
    "builtins": """
        import builtins
        builtins.isinstance = lambda *a: True
    """,
    "course_reference": """
        from heads_and_masks.attention import attention as reference
    """,
    "closure_digging": """
        f = some_function.__closure__[0].cell_contents
    """,
    "ctypes": """
        import ctypes
    """,
    "network": """
        import socket
        socket.create_connection(("example.org", 80))
    """,
}


def _with_attack(assignment, source):
    exercise = next(iter(catalogs()[assignment][1].cells)) if catalogs()[assignment][1].cells else None
    notebook = submission(assignment, {})
    for cell in notebook.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == exercise:
            cell.source = cell.source + "\n\n" + textwrap.dedent(source).strip()
    return notebook


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_each_trick_is_flagged(name):
    findings = scan_notebook(_with_attack("00_start_here", ATTACKS[name]), "00_start_here")
    assert findings, f"the scan missed the trick {name}"
    assert all(str(f) for f in findings)


def test_an_added_cell_is_scanned_too():
    import nbformat

    notebook = submission("00_start_here", {})
    notebook.cells.insert(3, nbformat.v4.new_code_cell("get_ipython().events.register('post_run_cell', print)"))
    assert scan_notebook(notebook, "00_start_here")


def test_untouched_and_solution_notebooks_are_clean():
    for assignment in catalogs():
        assert scan_notebook(submission(assignment, {}), assignment) == []
        assert scan_notebook(submission(assignment, {}, keep_stubs=True), assignment) == []


@pytest.mark.parametrize(
    "assignment,answer", [(a, x) for a, answers in sorted(catalogs().items()) for x in answers if x.correct]
)
def test_honest_catalog_answers_are_not_flagged(assignment, answer):
    notebook = submission(assignment, {k: answer.source(k) for k in answer.cells})
    assert scan_notebook(notebook, assignment) == []
