"""No import cycle among ``autograde``'s modules nor among ``heads_and_masks``'s, and ``kernel/`` imports no step of the pipeline: each folder can be
read from its imports down.

A cycle (``a`` imports ``b``, which imports ``a``, often from inside a function so that it runs at all) means
neither module can be understood, tested or moved without the other. Every import counts, also one inside a
function: it is a dependency all the same, only a later one.
"""

from __future__ import annotations

import ast
import functools

from course import REPO
from test_inside import imported_modules


def module_name(path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def absolute(name: str, importer: str, is_package: bool) -> str:
    """``name`` as written in ``importer`` (``.x``, ``..y.z`` or absolute), made absolute."""
    level = len(name) - len(name.lstrip("."))
    if not level:
        return name
    base = importer.split(".")
    base = base[: len(base) - level + (1 if is_package else 0)]
    return ".".join(base + ([name[level:]] if name[level:] else []))


@functools.cache  # parsed once for the tests (0.2 s)
def import_graph(package: str = "autograde") -> dict[str, set[str]]:
    """{module: the modules of ``package`` it imports}, ``from package import module`` included."""
    paths = {module_name(path): path for path in (REPO / package).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        is_package = path.name == "__init__.py"
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = absolute("." * node.level + (node.module or ""), module, is_package)
                found |= {f"{source}.{alias.name}" for alias in node.names if f"{source}.{alias.name}" in paths}
                found.add(source)
        found |= {absolute(name, module, is_package) for name in imported_modules(tree)}
        graph[module] = {name for name in found if name in paths and name != module and name != package}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle through each module that is on one (a depth-first walk: Tarjan's strongly connected parts)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in sorted(graph.get(module, ())):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            part = []
            while True:
                member = stack.pop()
                part.append(member)
                if member == module:
                    break
            if len(part) > 1:
                found.append(sorted(part))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_the_graph_sees_every_kind_of_import():
    """The walk finds imports written every way autograde writes them (else no cycle could be found)."""
    graph = import_graph()
    assert "autograde.kernel.sandbox" in graph["autograde.kernel.kernel_manager"]  # from . import sandbox
    assert "autograde.kernel.zygote" in graph["autograde.kernel.kernel_manager"]  # from .zygote import Zygote
    assert "autograde.inside.harness" in graph["autograde.kernel.wire"]  # from ..inside.harness import MAX_DEPTH
    assert "autograde.kernel.wire" in graph["autograde.verdicts"]  # from .kernel.wire import decode
    assert "autograde.grading_key" in graph["autograde.worker.warm_up"]  # from autograde import grading_key
    # in a function: from .. import judge; from ..kernel import kernel_supply
    assert {"autograde.judge", "autograde.kernel.kernel_supply"} <= graph["autograde.worker.grade_worker"]


def test_no_import_cycle_in_autograde():
    found = cycles(import_graph())
    assert not found, f"import cycles among autograde's modules (each a group that imports itself round): {found}"


def test_no_import_cycle_in_the_course_package():
    """The course package too: grading mode's import hook builds on ``widgets.base``, so it is not in ``grading``."""
    found = cycles(import_graph("heads_and_masks"))
    assert not found, f"import cycles among heads_and_masks's modules: {found}"


def test_what_starts_and_talks_to_a_kernel_imports_no_step_of_the_pipeline():
    """``kernel/`` is read on its own by a reviewer (docs/security.md): it imports only itself and ``inside/``."""
    outside = {
        module: sorted(name for name in imported if not name.startswith(("autograde.kernel", "autograde.inside")))
        for module, imported in import_graph().items()
        if module.startswith("autograde.kernel")
    }
    assert not any(outside.values()), f"kernel/ imports the pipeline: { {m: n for m, n in outside.items() if n} }"
