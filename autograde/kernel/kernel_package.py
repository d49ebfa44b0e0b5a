"""The course package as a grading kernel of one notebook sees it: each module cut down to its allowlist.

:func:`build` writes the package a kernel sees. Each module of the course package is cut down to the names
wanted of it and what they need to run (a function's free names, the names imported from sibling modules,
transitively); everything else (other functions, their source) is not in the file. Display modules
(``widgets/``, ``pictures/``) become stand-ins that define only the wanted names (grading mode idles them
anyway), the checks only raise, a function marked ``@idle_while_grading`` keeps its idle result and none of its
code. A name or module that is not there raises AttributeError / ImportError, saying why.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

# The tables are read through the module as a kernel's package is made, so that a test's change to them holds.
from . import allowlist
from .allowlist import PACKAGE

SOURCE = Path(__file__).resolve().parents[2] / PACKAGE

DISPLAY_PACKAGES = (f"{PACKAGE}.widgets", f"{PACKAGE}.pictures")  # as heads_and_masks.stand_ins
REAL_DISPLAY = {f"{PACKAGE}.widgets", f"{PACKAGE}.widgets.base"}  # real in grading mode: what stand-ins build on


# ------------------------------------------------------------------ reading the course package's source
def _path(module: str) -> Path:
    parts = module.split(".")[1:]
    folder = SOURCE.joinpath(*parts)
    return folder / "__init__.py" if folder.is_dir() else folder.with_suffix(".py")


def _is_package(module: str) -> bool:
    return _path(module).name == "__init__.py"


def _is_display(module: str) -> bool:
    inside = any(module == p or module.startswith(p + ".") for p in DISPLAY_PACKAGES)
    return inside and module not in REAL_DISPLAY


def _is_checks(module: str) -> bool:
    return module == f"{PACKAGE}.checks" or module.startswith(f"{PACKAGE}.checks.")


def _absolute(module: str, node: ast.ImportFrom) -> str:
    """The module an ``from ... import`` of ``module``'s source names."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not _is_package(module):
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _bound(node: ast.stmt) -> list[str]:
    """The top-level names a statement binds."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    if isinstance(node, ast.Assign):
        return [n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def _used(node: ast.AST) -> set[str]:
    """The names a definition reads when it runs (annotations are never evaluated: ``from __future__``)."""
    found: set[str] = set()

    def visit(item: ast.AST) -> None:
        for field, value in ast.iter_fields(item):
            if field in ("annotation", "returns"):
                continue
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.AST):
                    if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load):
                        found.add(child.id)
                    visit(child)

    visit(node)
    return found


def _idle_result(node: ast.AST) -> ast.expr | None:
    """The result of ``@idle_while_grading(result)`` on a function, if it has that decorator."""
    for decorator in getattr(node, "decorator_list", []):
        if isinstance(decorator, ast.Call) and getattr(decorator.func, "id", None) == "idle_while_grading":
            return decorator.args[0] if decorator.args else ast.Name("IDLE", ast.Load())
    return None


def _references() -> dict[str, set[str]]:
    """{module: names of the references it defines} from the package's registry."""
    from heads_and_masks._guard import references

    by_module: dict[str, set[str]] = {}
    for ref in references().values():
        by_module.setdefault(ref.module, set()).add(ref.name)
    return by_module


def _exported_references(references: dict[str, set[str]]) -> set[str]:
    """The references the package's ``__init__`` exports (``hm.causal_mask``)."""
    every = set().union(*references.values())
    tree = ast.parse(_path(PACKAGE).read_text(encoding="utf-8"))
    return {name for node in tree.body if isinstance(node, ast.ImportFrom) for name in _bound(node) if name in every}


# ------------------------------------------------------------------ writing the kernel's package
def _refusal(module: str, assignment: str | None) -> str:
    which = f"notebook {assignment}" if assignment else "a notebook"
    return (
        "\n\ndef __getattr__(name):\n"
        "    raise AttributeError(\n"
        f'        f"{module}.{{name}} is not available while {which} is graded: a grading kernel has only what the "\n'
        '        "notebook\'s own cells use (autograde/kernel/allowlist.py)"\n'
        "    )\n"
    )


def _reference_stub(node: ast.FunctionDef) -> ast.FunctionDef:
    message = (
        f"the course's reference `{node.name}` is not available while a notebook is graded "
        "(graded answers are your own code)"
    )
    # the grader maps the name back to ReferenceUsedError (remote_calls._exception_class): the checks name it
    node.body = ast.parse(
        f"from heads_and_masks._guard import ReferenceUsedError\nraise ReferenceUsedError({message!r})"
    ).body
    node.decorator_list = []
    return node


def _withheld_stub(node: ast.FunctionDef, module: str) -> ast.FunctionDef:
    why = allowlist.WITHHELD[f"{module}.{node.name}"]
    message = (
        f"{module}.{node.name} is not available while a notebook is graded: {why} (graded answers are your own code)"
    )
    node.body = ast.parse(f"raise RuntimeError({message!r})").body
    node.decorator_list = []
    return node


class _Cutter:
    """Cuts every module of the course package down to the names wanted of it, and what those need."""

    def __init__(self, assignment: str | None):
        self.assignment = assignment
        self.references = _references()
        self.wanted = allowlist.wanted_names(assignment)
        for module, names in self.references.items():  # every reference, as a stub that raises
            self.wanted.setdefault(module, set()).update(names)
        self.wanted[PACKAGE].update(_exported_references(self.references))
        self.trees: dict[str, ast.Module] = {}

    def tree(self, module: str) -> ast.Module:
        if module not in self.trees:
            self.trees[module] = ast.parse(_path(module).read_text(encoding="utf-8"))
        return self.trees[module]

    def want(self, module: str, names) -> bool:
        """Add ``names`` to what ``module`` keeps; True if something was new."""
        for parent in _parents(module):
            self.wanted.setdefault(parent, set())
        kept = self.wanted.setdefault(module, set())
        new = set(names) - kept
        kept |= new
        return bool(new)

    def close(self) -> None:
        """Until nothing changes: whatever a kept definition needs is kept too, in its module."""
        for module in list(self.wanted):
            self.want(module, ())  # its packages too
        changed = True
        while changed:
            changed = False
            for module in list(self.wanted):
                for name in self.wanted[module] & _submodules(module):  # `from heads_and_masks import padding`
                    changed |= f"{module}.{name}" not in self.wanted and self.want(f"{module}.{name}", ())
                if _is_display(module) or _is_checks(module):
                    continue
                needs = self.needs(module)
                for target, names in needs.items():
                    changed |= self.want(target, names)

    def kept_nodes(self, module: str) -> list[ast.stmt]:
        """The top-level statements of ``module`` that stay (in their order), before any rewriting."""
        tree = self.tree(module)
        wanted = set(self.wanted.get(module, ()))
        defined = {name for node in tree.body for name in _bound(node)}
        if "*" in wanted:
            wanted = defined
        unknown = wanted - defined - _submodules(module)
        if unknown:
            raise RuntimeError(f"{module} does not define {sorted(unknown)} (autograde/kernel/allowlist.py)")
        by_name = {}
        for node in tree.body:
            for name in _bound(node):
                by_name.setdefault(name, []).append(node)
        references = self.references.get(module, set())
        keep: set[str] = set()
        todo = [n for n in wanted if n in by_name]
        while todo:
            name = todo.pop()
            if name in keep:
                continue
            keep.add(name)
            for node in by_name[name]:
                if (
                    name in references
                    or f"{module}.{name}" in allowlist.WITHHELD
                    or isinstance(node, (ast.Import, ast.ImportFrom))
                ):
                    continue
                if _idle_result(node) is not None:
                    uses = {"idle_while_grading"} | _used(_idle_result(node))
                else:
                    uses = _used(node)
                todo += [n for n in uses if n in by_name and n not in keep]
        kept = []
        for node in tree.body:
            names = _bound(node)
            if isinstance(node, ast.Delete):
                if all(isinstance(t, ast.Name) and t.id in keep for t in node.targets):
                    kept.append(node)
            elif isinstance(node, ast.ImportFrom) and node.module == "__future__":
                kept.append(node)
            elif names and any(n in keep for n in names):
                kept.append(node)
        return kept, keep

    def needs(self, module: str) -> dict[str, set[str]]:
        """{sibling module: names} that the kept part of ``module`` imports from the course package."""
        if not _path(module).is_file():
            return {}
        nodes, keep = self.kept_nodes(module)
        needs: dict[str, set[str]] = {}
        for node in nodes:
            if self._is_reference(module, node):
                needs.setdefault(f"{PACKAGE}._guard", set()).add("ReferenceUsedError")
            if isinstance(node, ast.ImportFrom) and node.module != "__future__":
                source = _absolute(module, node)
                if source == PACKAGE or source.startswith(PACKAGE + "."):
                    for alias in node.names:
                        if (alias.asname or alias.name) in keep:
                            submodule = f"{source}.{alias.name}"
                            if _path(submodule).is_file():
                                needs.setdefault(submodule, set())
                            else:
                                needs.setdefault(source, set()).add(alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith(PACKAGE):
                        needs.setdefault(alias.name, set())
        return needs

    def _is_reference(self, module: str, node: ast.stmt) -> bool:
        return isinstance(node, ast.FunctionDef) and node.name in self.references.get(module, set())

    def source(self, module: str) -> str:
        """The text of ``module`` in the kernel's package."""
        if _is_checks(module):
            return (
                '"""The checks run in the grader, never in a graded notebook\'s kernel: every name here only raises."""'
                "\n\n\ndef __getattr__(name):\n"
                "    def unavailable(*args, **kwargs):\n"
                "        raise RuntimeError(f'{name}: the checks run in the grader while a notebook is graded')\n\n"
                "    return unavailable\n"
            )
        if _is_display(module):
            return self.display_source(module)
        nodes, keep = self.kept_nodes(module)
        tree = self.tree(module)
        body: list[ast.stmt] = []
        if tree.body and isinstance(tree.body[0], ast.Expr) and isinstance(tree.body[0].value, ast.Constant):
            body.append(tree.body[0])  # the docstring
        for node in nodes:
            if isinstance(node, (ast.Import, ast.ImportFrom)) and not (
                isinstance(node, ast.ImportFrom) and node.module == "__future__"
            ):
                node.names = [a for a in node.names if (a.asname or a.name).split(".")[0] in keep]
                if not node.names:
                    continue
            elif self._is_reference(module, node):
                node = _reference_stub(node)
            elif isinstance(node, ast.FunctionDef) and f"{module}.{node.name}" in allowlist.WITHHELD:
                node = _withheld_stub(node, module)
            elif isinstance(node, ast.FunctionDef) and _idle_result(node) is not None:
                # grading mode returns the idle result before the body runs; switched off, the body says so
                node.decorator_list = [d for d in node.decorator_list if _idle_result(_decorated(d)) is not None]
                node.body = ast.parse(
                    f"raise RuntimeError({node.name + ' computes nothing in a grading kernel'!r})"
                ).body
            body.append(node)
        if module == PACKAGE:
            body.append(ast.parse("stand_in_for_display_modules()").body[0])
        text = ast.unparse(ast.Module(body, []))
        return text + "\n" + _refusal(module, self.assignment)

    def display_source(self, module: str) -> str:
        """A display module: its wanted names only, as empty definitions (grading mode makes each an idle
        stand-in; with grading mode switched off they still compute nothing)."""
        wanted = self.wanted.get(module, set())
        kinds = {name: isinstance(node, ast.ClassDef) for node in self.tree(module).body for name in _bound(node)}
        lines = [f'"""{module} as a grading kernel sees it: the names its notebook displays, each idle."""', ""]
        for name in sorted(wanted - _submodules(module)):
            if name not in kinds:
                raise RuntimeError(f"{module} defines no {name!r} (autograde/kernel/allowlist.py)")
            if kinds[name]:
                lines += ["", f"class {name}:", "    pass", ""]
            else:
                lines += ["", f"def {name}(*args, **kwargs):", "    return None", ""]
        return "\n".join(lines) + _refusal(module, self.assignment)


def _decorated(decorator: ast.expr) -> ast.FunctionDef:
    """A bare function with ``decorator`` only (to ask :func:`_idle_result` about one decorator)."""
    return ast.FunctionDef(
        name="_", args=ast.arguments([], [], None, [], [], None, []), body=[], decorator_list=[decorator]
    )


def _parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _submodules(module: str) -> set[str]:
    if not _is_package(module):
        return set()
    folder = _path(module).parent
    return {p.stem for p in folder.glob("*.py") if p.stem != "__init__"} | {
        p.name for p in folder.iterdir() if (p / "__init__.py").is_file()
    }


def build(into: Path, assignment: str | None) -> Path:
    """Write the package a grading kernel of ``assignment`` imports into ``into / "heads_and_masks"``."""
    cutter = _Cutter(assignment)
    cutter.close()
    target = Path(into) / PACKAGE
    for module in sorted(cutter.wanted):
        if not _path(module).is_file():
            raise RuntimeError(f"no module {module} in the course package (autograde/kernel/allowlist.py)")
        path = target.joinpath(*module.split(".")[1:])
        path = path / "__init__.py" if _is_package(module) else path.with_suffix(".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(cutter.source(module), encoding="utf-8")
    for path in [Path(into), *Path(into).rglob("*")]:  # readable by the kernel's own uid
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    return target
