"""The rule of ``autograde/inside/``: what runs inside the sandbox imports the standard library, never the grader.

The scripts there are mounted read-only into the sandbox on their own (``sandbox.kernel_view``,
``zygote.zygote_command``), where they run before anything else is imported: they can reach nothing but the
standard library and each other (``import confine``). The judge's harness runs in the grading kernel, after the
student's code, so it may also use what that kernel has: numpy and the course package's stub (``kernel_client.PRELOAD``)
and IPython, whose kernel it is. Nothing inside ever imports the grader's code (``autograde``).
"""

from __future__ import annotations

import ast
import sys

from course import REPO

INSIDE = REPO / "autograde" / "inside"
KERNEL_HAS = {"numpy", "heads_and_masks", "IPython"}  # kernel_client.PRELOAD, and the kernel's own IPython
ALSO_ALLOWED = {"harness.py": KERNEL_HAS}


def imported_modules(tree: ast.AST) -> list[str]:
    """Every module ``tree`` imports by name: its import statements, and ``__import__("x")`` or
    ``importlib.import_module("x")`` with the name written out. A relative import is named ``.x``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            called = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if called in ("__import__", "import_module") and isinstance(node.args[0].value, str):
                found.append(node.args[0].value)
    return found


def test_what_runs_inside_imports_the_standard_library_only():
    siblings = {path.stem for path in INSIDE.glob("*.py")}
    outside = {}
    for path in sorted(INSIDE.rglob("*.py")):
        allowed = set(sys.stdlib_module_names) | siblings | ALSO_ALLOWED.get(path.name, set())
        modules = imported_modules(ast.parse(path.read_text(encoding="utf-8")))
        if forbidden := sorted({m for m in modules if m.split(".")[0] not in allowed}):
            outside[str(path.relative_to(REPO))] = forbidden
    assert not outside, f"inside the sandbox, imports of what is not there (standard library only): {outside}"
