"""Test classes for autograde/similarity.py, built from the catalogs of sample answers (tests/catalog/).

Independent answers are the catalog's correct answers, one student per style. A planted copy is one of them
under a disguise a student would use (:data:`DISGUISES`), handed in by a student of its own. Everything here
works on source text: no grading, no kernel.
"""

from __future__ import annotations

import ast
import dataclasses
import io
import shutil
import tokenize
from pathlib import Path

import nbformat
from catalog import catalogs

from autograde import similarity
from autograde.course import REPO, Course, grade_id


def releases(assignment: str) -> dict[str, similarity.Release]:
    """What the course's release gives for each exercise of ``assignment`` (read as make similarity reads it)."""
    return similarity.releases(Course(root=REPO), assignment)


# ---------------------------------------------------------------------------------------------
# The disguises: each takes an answer's source and returns it disguised, or None where it does not apply
# ---------------------------------------------------------------------------------------------


def _local_names(tree: ast.Module) -> set[str]:
    """The names a student may rename freely: assigned inside a function (parameters are the release's)."""
    names = set()
    for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        for node in ast.walk(function):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names


def renamed(source: str) -> str | None:
    """Every local variable under another name, edited in the text (comments and layout stay)."""
    names = _local_names(ast.parse(source))
    if not names:
        return None
    new = {name: f"my_{name}_value" for name in names}
    lines = source.splitlines(keepends=True)
    edits, previous, depth = [], None, 0
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    for i, token in enumerate(tokens):
        if token.type == tokenize.OP and token.string in "([{":
            depth += 1
        elif token.type == tokenize.OP and token.string in ")]}":
            depth -= 1
        after = tokens[i + 1].string if i + 1 < len(tokens) else ""
        keyword_argument = depth > 0 and after == "=" and previous != "for"
        if token.type == tokenize.NAME and token.string in new and previous != "." and not keyword_argument:
            edits.append((*token.start, token.string))
        if token.type not in (tokenize.NL, tokenize.COMMENT):
            previous = token.string
    for row, column, name in sorted(edits, reverse=True):
        line = lines[row - 1]
        lines[row - 1] = line[:column] + new[name] + line[column + len(name) :]
    return "".join(lines)


def reordered(source: str) -> str | None:
    """The cell's top-level functions (and other statements) in the reverse order."""
    tree = ast.parse(source)
    if len(tree.body) < 2:
        return None
    lines = source.splitlines()
    blocks = []
    for statement in tree.body:
        first = min([statement.lineno] + [d.lineno for d in getattr(statement, "decorator_list", [])])
        blocks.append("\n".join(lines[first - 1 : statement.end_lineno]))
    return "\n\n\n".join(reversed(blocks)) + "\n"


def recommented(source: str) -> str:
    """The comments replaced by others, and blank lines added."""
    comments = [t for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT]
    lines = source.splitlines()
    for comment in sorted(comments, key=lambda t: t.start, reverse=True):
        row, column = comment.start
        lines[row - 1] = lines[row - 1][:column].rstrip()
    out = []
    for number, line in enumerate(lines):
        if line.strip():
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f"{indent}# step {number}: my own reasoning here")
        out.append(line)
        if number % 2:
            out.append("")
    return "\n".join(out) + "\n"


class _SwapOperands(ast.NodeTransformer):
    def __init__(self):
        self.swapped = 0

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, (ast.Add, ast.Mult)):
            node.left, node.right = node.right, node.left
            self.swapped += 1
        return node


def commuted(source: str) -> str | None:
    """``a = b + c`` written ``a = c + b``: the operands of every ``+`` and ``*`` swapped."""
    swap = _SwapOperands()
    tree = swap.visit(ast.parse(source))
    return ast.unparse(tree) + "\n" if swap.swapped else None


def loop_split(source: str) -> str | None:
    """The first ``for`` loop of two or more statements written as two loops over the same range."""
    tree = ast.parse(source)
    for parent in ast.walk(tree):
        for field in ("body", "orelse"):
            body = getattr(parent, field, None)
            if not isinstance(body, list):
                continue
            for i, statement in enumerate(body):
                if isinstance(statement, ast.For) and len(statement.body) >= 2 and not statement.orelse:
                    half = len(statement.body) // 2
                    first = ast.For(statement.target, statement.iter, statement.body[:half], [])
                    second = ast.For(statement.target, statement.iter, statement.body[half:], [])
                    body[i : i + 1] = [first, second]
                    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"
    return None


DISGUISES = {
    "renamed variables": renamed,
    "reordered functions": reordered,
    "changed comments and blank lines": recommented,
    "a + b written b + a": commuted,
    "a loop split in two": loop_split,
}


# ---------------------------------------------------------------------------------------------
# The classes
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class TestClass:
    """One assignment's class: student -> exercise -> source, and which pairs are planted copies."""

    assignment: str
    submissions: dict[str, dict[str, str]]
    planted: dict[str, set[frozenset[str]]]  # exercise -> pairs of students, one a copy of the other
    independent: dict[str, set[frozenset[str]]]  # exercise -> pairs of independently written answers


def shares_pasted_text(first: str, second: str, run: int = 3) -> bool:
    """Whether two catalog answers share ``run`` consecutive lines verbatim (the catalog pastes one helper,
    e.g. the learner's own ``attention``, into several styles): such a pair is not independent."""

    def runs(source: str) -> set[tuple[str, ...]]:
        lines = [line.strip() for line in source.splitlines() if line.strip()]
        return {tuple(lines[i : i + run]) for i in range(len(lines) - run + 1)}

    return bool(runs(first) & runs(second))


def build_class(assignment: str, disguise: str | None) -> TestClass:
    """The catalog's correct answers of ``assignment`` (one student each, only the exercises it answers) and,
    with a ``disguise``, for each exercise it applies to, one copier of one style (the styles take turns)."""
    styles = [a for a in catalogs()[assignment] if a.correct]
    submissions = {f"style-{a.name}": {g: a.source(g) for g in a.cells} for a in styles}
    planted: dict[str, set[frozenset[str]]] = {}
    independent: dict[str, set[frozenset[str]]] = {}
    exercises = sorted({g for a in styles for g in a.cells})
    for exercise in exercises:
        having = [a for a in styles if exercise in a.cells]
        independent[exercise] = {
            frozenset((f"style-{a.name}", f"style-{b.name}"))
            for i, a in enumerate(having)
            for b in having[i + 1 :]
            if not shares_pasted_text(a.source(exercise), b.source(exercise))
        }
    if disguise is not None:
        for turn, exercise in enumerate(exercises):
            having = [a for a in styles if exercise in a.cells]
            ordered = having[turn % len(having) :] + having[: turn % len(having)]
            for original in ordered:  # the first style the disguise applies to
                copied = DISGUISES[disguise](original.source(exercise))
                if copied is not None:
                    copier = f"copier-of-{original.name}-{exercise}"
                    submissions[copier] = {exercise: copied}
                    planted[exercise] = {frozenset((copier, f"style-{original.name}"))}
                    break
    return TestClass(assignment, submissions, planted, independent)


def write_class(root: Path, test_class: TestClass) -> Course:
    """A course at ``root`` with the assignment's release and each student's notebook in ``submitted/``: the
    released notebook with the student's answer cells written in (what a student hands in). No grading."""
    released = REPO / "notebooks" / test_class.assignment
    shutil.copytree(released, root / "notebooks" / test_class.assignment)
    for student, answers in test_class.submissions.items():
        folder = root / "class" / "submitted" / student / test_class.assignment
        folder.mkdir(parents=True)
        for path in released.glob("*.ipynb"):
            notebook = nbformat.read(path, as_version=4)
            for cell in notebook.cells:
                if grade_id(cell) in answers and cell.cell_type == "code":
                    cell.source = answers[grade_id(cell)]
            nbformat.write(notebook, folder / path.name)
    return Course(root=root)
