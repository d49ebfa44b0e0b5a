"""Similarity, its first half: an answer as the student's own code, normalised to tokens (each with the lines it
came from), so that renaming, reordering and the release's given code hide no copying (see ``similarity.py``)."""

from __future__ import annotations

import ast
import builtins
import copy
import dataclasses
import io
import keyword
import tokenize


MAX_CELL_BYTES = 200_000  # an answer cell beyond this is enormous: its first MAX_CELL_BYTES are compared
MIN_TOKENS = 16  # an answer of fewer of the student's own tokens is too short to tell copying from chance

STRUCTURE = {tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING, tokenize.ENDMARKER}
KNOWN_NAMES = set(dir(builtins)) | set(keyword.kwlist)


# ---------------------------------------------------------------------------------------------
# One answer: the student's own code as normalised tokens, each with the lines it came from
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Tokens:
    """Normalised tokens, and for each the first and last line of the source it came from."""

    text: list[str] = dataclasses.field(default_factory=list)
    lines: list[tuple[int, int]] = dataclasses.field(default_factory=list)

    def add(self, code: str, first: int, last: int) -> None:
        for token in python_tokens(code):
            self.text.append(token)
            self.lines.append((first, last))


def python_tokens(code: str) -> list[str]:
    """Python's own tokens of ``code``, without comments and layout; as many as can be read."""
    found = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type not in STRUCTURE and token.type != tokenize.COMMENT:
                found.append(token.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):  # unfinished: what was read is kept
        pass
    return found


@dataclasses.dataclass
class Release:
    """What the release gives for one exercise: its cell's statements (normalised), the names it defines,
    and the course's imports (every import of the release notebook)."""

    statements: set[tuple[str, ...]]
    given_names: set[str]
    imports: set[str]
    lines: set[str]  # its lines as written, for an answer that cannot be parsed

    @classmethod
    def of(cls, cell_source: str, notebook_sources: list[str] = ()) -> Release:
        imports = set()
        for source in [cell_source, *notebook_sources]:
            try:
                tree = ast.parse(source)
            except SyntaxError:
                continue
            imports |= {imported for node in tree.body for imported in imported_names(node)}
        given, statements = set(), set()
        try:
            tree = ast.parse(cell_source)
        except SyntaxError:
            tree = None
        if tree is not None:
            given = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
            units = normalised_units(tree, given, imports)
            statements = {tuple(tokens) for tokens, _, _ in units}
        lines = {line.strip() for line in cell_source.splitlines() if line.strip()}
        return cls(statements, given, imports, lines)


def imported_names(node: ast.stmt) -> list[str]:
    """``import numpy as np`` -> ["numpy as np"]; ``from a import b`` -> ["a.b as b"]: one string per name."""
    if isinstance(node, ast.Import):
        return [f"{a.name} as {a.asname or a.name}" for a in node.names]
    if isinstance(node, ast.ImportFrom):
        return [f"{'.' * node.level}{node.module or ''}.{a.name} as {a.asname or a.name}" for a in node.names]
    return []


def strip_given(tree: ast.AST, course_imports: set[str]) -> None:
    """Drop what is not the student's own: docstrings (any statement that is a bare string) and the course's
    imports; a body left empty gets ``pass``. Only statements are visited (expressions hold none)."""
    for field in BLOCKS:
        body = getattr(tree, field, None)
        if not isinstance(body, list) or not body:
            continue
        if isinstance(body[0], ast.stmt):
            kept = [s for s in body if not _given(s, course_imports)]
            if not kept and field == "body":
                kept = [ast.copy_location(ast.Pass(), body[0])]
            setattr(tree, field, kept)
        for inner in getattr(tree, field):  # statements, or a try's handlers and a match's cases
            strip_given(inner, course_imports)


def _given(statement: ast.stmt, course_imports: set[str]) -> bool:
    """A docstring (any statement that is a bare string) or an import the course's notebook makes itself."""
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
        return isinstance(statement.value.value, str)
    names = imported_names(statement)
    return bool(names) and set(names) <= course_imports


def bound_names(node: ast.AST, inside: list[ast.AST] | None = None) -> set[str]:
    """Every name ``node`` binds: arguments, assignment and loop targets, inner functions, ``as`` names
    (``inside``: its nodes, when they are already listed)."""
    names = set()
    for inner in ast.walk(node) if inside is None else inside:
        if isinstance(inner, ast.arg):
            names.add(inner.arg)
        elif isinstance(inner, ast.Name) and isinstance(inner.ctx, (ast.Store, ast.Del)):
            names.add(inner.id)
        elif isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and inner is not node:
            names.add(inner.name)
        elif isinstance(inner, ast.ExceptHandler) and inner.name:
            names.add(inner.name)
        elif isinstance(inner, ast.alias):
            names.add((inner.asname or inner.name).split(".")[0])
    return names


def rename(tree: ast.Module, given: set[str]) -> None:
    """Rename what the student named: in each top-level function, its own names become ``v1``, ``v2``, ... in
    the order they first appear; the cell's own top-level names (helpers, constants) become ``F``. The names
    the release gives (the graded function) and every other name (numpy, builtins, earlier cells) stay."""
    top_level = set()
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            top_level.add(statement.name)
        else:
            top_level |= bound_names(statement)
    top_level -= given
    for statement in tree.body:
        nodes = list(ast.walk(statement))
        named = [(node, name) for node in nodes for name in [_name_of(node)] if name is not None]
        is_function = isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        local = bound_names(statement, nodes) - given if is_function else set()
        occurrences = sorted(
            (node.lineno, node.col_offset, name) for node, name in named if name in local and node is not statement
        )
        numbers: dict[str, str] = {}
        for _, _, name in occurrences:
            numbers.setdefault(name, f"v{len(numbers) + 1}")
        for node, name in named:
            new = numbers.get(name) if node is not statement else None
            new = new or ("F" if name in top_level else None)
            if new:
                _set_name(node, new)


def _name_of(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.arg):
        return node.arg
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    if isinstance(node, ast.ExceptHandler):
        return node.name
    return None


def _set_name(node: ast.AST, new: str) -> None:
    if isinstance(node, ast.Name):
        node.id = new
    elif isinstance(node, ast.arg):
        node.arg = new
    else:
        node.name = new


class SortCommutative(ast.NodeTransformer):
    """``c + b`` and ``b + c`` alike: a chain of ``+`` (or of ``*``) gets its operands in one order."""

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        if not isinstance(node.op, (ast.Add, ast.Mult)):
            return node
        operands = self._chain(node, type(node.op))
        operands.sort(key=ast.dump)
        joined = operands[0]
        for operand in operands[1:]:
            joined = ast.copy_location(ast.BinOp(joined, type(node.op)(), operand), node)
        return joined

    def _chain(self, node: ast.AST, op: type) -> list[ast.AST]:
        if isinstance(node, ast.BinOp) and isinstance(node.op, op):
            return self._chain(node.left, op) + self._chain(node.right, op)
        return [node]


BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def normalised_units(tree: ast.Module, given: set[str], imports: set[str]) -> list[tuple[list[str], int, int]]:
    """The normalised statements of ``tree``: (tokens, first line, last line) each, in source order; a compound
    statement gives its header (``for v1 in range(v2):``) and then its body's statements. ``tree`` is changed."""
    strip_given(tree, imports)
    rename(tree, given)
    tree = SortCommutative().visit(tree)  # its new nodes take their locations from the old (copy_location)
    units: list[tuple[list[str], int, int]] = []

    def visit(statement: ast.AST) -> None:
        blocks = [getattr(statement, field) for field in BLOCKS if getattr(statement, field, None)]
        if not blocks:
            units.append((python_tokens(ast.unparse(statement)), statement.lineno, statement.end_lineno))
            return
        units.append((header_tokens(statement), statement.lineno, _header_end(statement)))
        for block in blocks:
            for inner in block:
                visit(inner)

    for statement in tree.body:
        visit(statement)
    return units


def header_tokens(statement: ast.AST) -> list[str]:
    """The tokens of a compound statement's header: ``def f(v1):``, ``for v1 in v2:``, ``except E as v1:``."""
    if isinstance(statement, ast.ExceptHandler):
        shell = copy.copy(statement)
        shell.body = [ast.Pass()]
        return python_tokens(ast.unparse(shell))[:-1]  # without the placeholder body's ``pass``
    if isinstance(statement, ast.Try) or type(statement).__name__ in ("TryStar", "Match", "match_case"):
        return [type(statement).__name__.lower()]  # its parts follow as units of their own
    shell = copy.copy(statement)
    shell.body = [ast.Pass()]
    if hasattr(shell, "orelse"):
        shell.orelse = []
    return python_tokens(ast.unparse(shell))[:-1]


def _header_end(statement: ast.AST) -> int:
    first_inner = min(
        inner.lineno for field in BLOCKS for inner in getattr(statement, field, None) or [] if hasattr(inner, "lineno")
    )
    return max(statement.lineno, first_inner - 1)


def tokens_as_written(source: str, release: Release) -> Tokens:
    """An answer that cannot be parsed: Python's tokens as written, every name that is not a keyword, a builtin
    or an attribute as ``V`` (nothing to tell locals from globals without a tree), the release's lines dropped."""
    found = Tokens()
    previous = ""
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type in STRUCTURE or token.type == tokenize.COMMENT:
                continue
            if token.line.strip() in release.lines:
                continue
            text = token.string
            if token.type == tokenize.NAME and text not in KNOWN_NAMES and previous != ".":
                text = "V"
            found.text.append(text)
            found.lines.append((token.start[0], token.end[0]))
            previous = token.string
    except (tokenize.TokenError, IndentationError, SyntaxError):  # unfinished: what was read is compared
        pass
    return found


def normalise(source: str, release: Release) -> tuple[Tokens | None, str]:
    """The student's own code in ``source`` as normalised tokens, or None when it cannot be parsed; and the
    reason it is listed, or ""."""
    try:
        units = normalised_units(ast.parse(source), release.given_names, release.imports)
    except (SyntaxError, ValueError) as error:  # ValueError: a null byte
        where = f"line {error.lineno}: " if getattr(error, "lineno", None) else ""
        return None, f"cannot be parsed ({where}{getattr(error, 'msg', error)}): compared on its tokens as written"
    except RecursionError:
        return None, "nested too deeply to parse: compared on its tokens as written"
    found = Tokens()
    for tokens, first, last in units:
        if tuple(tokens) in release.statements or tokens == ["pass"]:
            continue  # the template's statements, kept as released
        for token in tokens:
            found.text.append(token)
            found.lines.append((first, last))
    return found, "" if found.text else "empty: nothing of the student's own (the cell is as released, or blank)"


def one_newline(source: str) -> str:
    """``source`` with ``\r\n`` and ``\r`` as ``\n``: the only line break of the parser's, the tokenizer's and the
    page's line numbers alike. (``str.splitlines`` also breaks at ``\u2028``, ``\x0c`` and others, which are
    not line breaks to Python: a comment full of them moved the page's marks off the matched code.)"""
    return source.replace("\r\n", "\n").replace("\r", "\n")


def source_lines(source: str) -> list[str]:
    """The lines of a source, numbered from 1 as the parser and the tokenizer number them."""
    lines = source.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def bounded(source: str) -> tuple[str, str]:
    """``source`` cut to MAX_CELL_BYTES, and the reason it is listed when it was cut ("" if not)."""
    data = source.encode("utf-8", "replace")
    if len(data) <= MAX_CELL_BYTES:
        return source, ""
    limit = MAX_CELL_BYTES // 1000
    return (
        data[:MAX_CELL_BYTES].decode("utf-8", "ignore"),
        f"enormous ({len(data) // 1000} kB, the bound is {limit} kB a cell): its first {limit} kB are compared",
    )
