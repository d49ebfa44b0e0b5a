"""A static scan of submissions for constructs that can game the grader.

It reads every code cell a student wrote or changed (answer cells, added cells, edited cells) and
lists suspicious constructs: hooks into IPython (input or AST transformers, event callbacks), trace
functions, ``builtins``/``ctypes``/``gc``/``inspect`` tricks, assignments to numpy's attributes,
comparison or array-protocol methods defined on classes, imports of the course package, access to
the environment, processes or the network. A finding does **not** change a score: the submission is
marked "needs review" and the report says where to look.

    python autograde/scan.py ASSIGNMENT NOTEBOOK.ipynb [...]
"""

from __future__ import annotations

import ast
import dataclasses
import re
import sys
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]

SUSPICIOUS_NAMES = {
    "get_ipython": "reaches into the running IPython shell (it can rewrite or skip later cells)",
    "__builtins__": "changes Python's built-in functions",
    "builtins": "changes Python's built-in functions",
    "ctypes": "writes raw memory",
    "gc": "digs through the interpreter's objects",
    "inspect": "inspects the grader's code and frames",
    "importlib": "reloads or replaces modules",
    "subprocess": "starts other programs",
    "socket": "opens network connections",
    "exec": "runs code built at run time",
    "eval": "runs code built at run time",
    "compile": "compiles code at run time",
    "__import__": "imports modules by a computed name",
    "setattr": "changes attributes by name (for example on numpy)",
    "globals": "rewrites the notebook's global names",
    "tracemalloc": "touches the memory tracer (a graded answer's memory is measured outside its kernel)",
    "mmap": "maps memory outside numpy's and Python's allocators (hidden from a memory check)",
}
REDEFINED = {"print": "redefines print (the channel answers travel back to the grader on)"}
SUSPICIOUS_ATTRIBUTES = {
    "settrace": "installs a trace function (it can skip or rewrite the tests' execution)",
    "setprofile": "installs a profile function",
    "input_transformers_cleanup": "installs an IPython input transformer (it can rewrite later cells)",
    "input_transformers_post": "installs an IPython input transformer (it can rewrite later cells)",
    "ast_transformers": "installs an IPython AST transformer (it can rewrite later cells)",
    "events": "registers an IPython event callback",
    "register_magic_function": "defines IPython magics",
    "__closure__": "reads the variables captured by the grader's functions",
    "cell_contents": "reads the variables captured by the grader's functions",
    "__code__": "replaces a function's code",
    "__globals__": "reaches a module's globals through a function",
    "__wrapped__": "unwraps a decorated function",
    "__subclasses__": "walks the class hierarchy (a sandbox escape pattern)",
    "environ": "reads or changes environment variables",
    "system": "runs shell commands",
    "modules": "replaces modules in sys.modules",
}
SUSPICIOUS_METHODS = {
    "__eq__": "defines equality on a class (an always-equal object can fool comparisons)",
    "__ne__": "defines inequality on a class",
    "__array_ufunc__": "overrides numpy's ufuncs for its objects",
    "__array_function__": "overrides numpy's functions for its objects",
    "__array__": "controls how its objects become numpy arrays",
    "__float__": "controls how its objects become numbers",
    "__bool__": "controls how its objects become booleans",
    "__getattr__": "fakes attributes on demand",
}
NUMPY_NAMES = {"np", "numpy"}
COURSE_PACKAGE = "heads_and_masks"


@dataclasses.dataclass(frozen=True)
class Finding:
    cell: str
    line: int
    construct: str
    why: str

    def __str__(self) -> str:
        return f"cell {self.cell}, line {self.line}: `{self.construct}` ({self.why})"


class _Visitor(ast.NodeVisitor):
    def __init__(self, cell: str):
        self.cell = cell
        self.findings: list[Finding] = []

    def add(self, node, construct, why):
        self.findings.append(Finding(self.cell, getattr(node, "lineno", 0), construct, why))

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Store) and node.id in REDEFINED:
            self.add(node, node.id, REDEFINED[node.id])
        if node.id in SUSPICIOUS_NAMES:
            self.add(node, node.id, SUSPICIOUS_NAMES[node.id])
        self.generic_visit(node)

    def visit_Attribute(self, node):
        if node.attr in SUSPICIOUS_ATTRIBUTES:
            self.add(node, f"….{node.attr}", SUSPICIOUS_ATTRIBUTES[node.attr])
        self.generic_visit(node)

    def _check_target(self, target):
        root = target
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(target, ast.Attribute) and isinstance(root, ast.Name) and root.id in NUMPY_NAMES:
            self.add(target, f"{ast.unparse(target)} = …", "replaces part of numpy, which the tests also use")

    def visit_Assign(self, node):
        for target in node.targets:
            self._check_target(target)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self._check_target(node.target)
        self.generic_visit(node)

    def visit_FunctionDef(self, node):
        if node.name in REDEFINED:
            self.add(node, node.name, REDEFINED[node.name])
        if node.name in SUSPICIOUS_METHODS:
            self.add(node, f"def {node.name}", SUSPICIOUS_METHODS[node.name])
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def _check_module(self, node, module: str):
        top = module.split(".")[0]
        if top == COURSE_PACKAGE:
            self.add(
                node,
                f"import {module}",
                "imports the course package, whose reference implementations grade the answers",
            )
        elif top in SUSPICIOUS_NAMES or top in {"sys", "os", "IPython", "pathlib", "shutil"}:
            why = SUSPICIOUS_NAMES.get(top, "reaches the system or the shell running the grader")
            self.add(node, f"import {module}", why)

    def visit_Import(self, node):
        for alias in node.names:
            self._check_module(node, alias.name)

    def visit_ImportFrom(self, node):
        self._check_module(node, node.module or "")


def _release_sources(assignment: str) -> set[str]:
    path = REPO / "notebooks" / assignment / f"{assignment}.ipynb"
    if not path.exists():
        return set()
    release = nbformat.read(path, as_version=4)
    return {cell.source.strip() for cell in release.cells if cell.cell_type == "code"}


def _strip_magics(source: str) -> str:
    # IPython syntax is not Python: comment out magics and shell escapes before parsing
    return "\n".join(("# " + line) if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def scan_notebook(notebook: nbformat.NotebookNode, assignment: str) -> list[Finding]:
    """Findings in every code cell the student wrote or changed."""
    untouched = _release_sources(assignment)
    findings: list[Finding] = []
    for index, cell in enumerate(notebook.cells):
        if cell.get("cell_type") != "code" or cell.source.strip() in untouched:
            continue
        name = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") or f"#{index + 1}"
        source = _strip_magics(cell.source)
        try:
            tree = ast.parse(source)
        except SyntaxError:
            # not Python we can read: fall back to words and patterns
            words = sorted(
                set(SUSPICIOUS_NAMES) | set(SUSPICIOUS_ATTRIBUTES) | set(SUSPICIOUS_METHODS) | {COURSE_PACKAGE}
            )
            patterns = [rf"\b{re.escape(word)}\b" for word in words] + [r"\b(np|numpy)\.[\w.]+\s*=[^=]"]
            for number, line in enumerate(source.splitlines(), 1):
                for pattern in patterns:
                    if re.search(pattern, line):
                        findings.append(
                            Finding(name, number, line.strip()[:60], "appears in a cell that does not parse")
                        )
            continue
        visitor = _Visitor(name)
        visitor.visit(tree)
        findings += visitor.findings
    return findings


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__)
        return 2
    assignment, paths = argv[0], argv[1:]
    flagged = 0
    for path in paths:
        try:
            notebook = nbformat.read(path, as_version=4)
        except Exception as error:  # noqa: BLE001 - report any unreadable file and go on
            print(f"{path}: cannot be read as a notebook: {error}")
            flagged += 1
            continue
        findings = scan_notebook(notebook, assignment)
        flagged += bool(findings)
        print(f"{path}: {'needs review' if findings else 'nothing suspicious'}")
        for finding in findings:
            print(f"  {finding}")
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
