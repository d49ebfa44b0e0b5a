"""After grading: which submissions of an assignment are alike, exercise by exercise (issue 39).

``python -m autograde.grade similarity ASSIGNMENT`` (``make similarity``) compares every pair of submissions,
one exercise (one graded answer cell, by its nbgrader grade id) at a time, and writes for the instructor alone
(``autograde/reports/``, never the feedback): a CSV of the pairs above their threshold, one HTML page with
those pairs side by side, and a PNG of the class's scores per exercise.

What is compared is the student's own code, normalised so that the usual disguises change nothing:

1. What everybody has is not evidence: the statements the release's cell already held (the ``def`` line, the
   stub ``raise NotImplementedError()``), the course's imports, docstrings and comments are dropped.
2. Python's own ``ast`` normalises the rest: every name the answer binds is renamed (``v1``, ``v2``, ... in the
   order they appear, counted afresh in each function, so that reordering functions renames nothing), the
   answer's own helper functions become ``F``, and the operands of ``+`` and ``*`` are sorted.
3. Each statement is written out again (``ast.unparse``) and cut into tokens by Python's ``tokenize``; blank
   lines and layout are gone, and every token remembers the lines of the submission it came from.
4. Fingerprints: hashes of every run of ``K`` tokens, thinned by copydetect's winnowing (Schleimer, Wilkerson
   and Aiken, 2003), which keeps at least one fingerprint of every shared run of ``K + WINDOW - 1`` tokens.

The score of a pair is the share of the smaller answer's fingerprints found in the other one (the overlap
coefficient, not Jaccard's index): a copy that was padded with code of its own, or whose loop was split in two,
keeps its score. A pair is flagged when its score reaches its threshold, the larger of two figures
(:func:`threshold`): a floor that rises as the smaller answer gets shorter (a short exercise has few ways to be
right), and the class's own level of that exercise, its median score plus ``SPREAD`` robust standard
deviations (what independent answers to that exercise share; measured from ``MIN_CLASS`` answers on, below
which a median and a spread are noise and the floor decides alone). A number flags a pair for a person to read,
side by side; it accuses nobody (docs/instructors.md, Similar submissions).

A submission that is empty, cannot be parsed, or is enormous is listed with its reason and compared as far as
possible (an unparseable one on its tokens as written, an enormous one on its first ``MAX_CELL_BYTES``); it
never stops the comparison of the others.
"""

from __future__ import annotations

import ast
import base64
import builtins
import copy
import csv
import dataclasses
import hashlib
import html
import io
import json
import keyword
import math
import statistics
import tokenize
from collections import Counter
from itertools import combinations
from pathlib import Path

from .bounds import notebook_shape, structure_limits

K = 5  # tokens in a k-gram: ``v1 = v2 + v3`` is one
WINDOW = 4  # winnowing window: every shared run of K + WINDOW - 1 = 8 tokens leaves a common fingerprint
MAX_CELL_BYTES = 200_000  # an answer cell beyond this is enormous: its first MAX_CELL_BYTES are compared
MIN_TOKENS = 16  # an answer of fewer of the student's own tokens is too short to tell copying from chance
FLOOR = 0.5  # the lowest threshold, for long answers; shorter ones get more (threshold)
SPREAD = 4.0  # how many robust standard deviations above the class's median a flagged pair lies at least
MIN_DEVIATION = 0.05  # a class whose scores hardly vary still needs a margin above its median
COMMON_SHARE = 0.05  # a fingerprint in more than this share of the class's answers is common to the class
COMMON_MIN = 5  # ... and in more answers than this: a ring of five copies is never "common"
MIN_CLASS = 10  # fewer answers to an exercise: too few pairs to measure the class's level (the floor alone)

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


# ---------------------------------------------------------------------------------------------
# Fingerprints and scores
# ---------------------------------------------------------------------------------------------


def fingerprints(tokens: list[str]) -> dict[int, list[int]]:
    """fingerprint -> the positions of the k-grams it stands for: hashes of every run of K tokens, winnowed.

    The hash is BLAKE2b's (48 bits, exact in the float buffer of copydetect's winnowing), not Python's own
    ``hash``, which differs from one process to the next: the same class gives the same scores every run."""
    from copydetect.utils import winnow
    import numpy as np

    if len(tokens) < K:
        return {}
    grams = ("\x1f".join(tokens[i : i + K]).encode("utf-8", "replace") for i in range(len(tokens) - K + 1))
    hashes = np.array([int.from_bytes(hashlib.blake2b(g, digest_size=6).digest(), "big") for g in grams], np.int64)
    selected, positions = winnow(hashes, WINDOW, remove_duplicates=False)
    found: dict[int, list[int]] = {}
    for value, position in zip(selected.tolist(), positions.tolist(), strict=True):
        found.setdefault(value, []).append(position)
    return found


@dataclasses.dataclass
class View:
    """One reading of an answer: its tokens (each with its lines), their fingerprints, and of those the ones
    not common to the class (set by compare_exercise)."""

    tokens: Tokens
    prints: dict[int, list[int]]
    kept: frozenset[int] = frozenset()

    @classmethod
    def of(cls, tokens: Tokens) -> View:
        prints = fingerprints(tokens.text)
        return cls(tokens, prints, frozenset(prints))

    def matched_lines(self, shared: set[int]) -> set[int]:
        """The lines of the source that the shared fingerprints came from."""
        lines = set()
        for value in shared:
            for position in self.prints[value]:
                for first, last in self.tokens.lines[position : position + K]:
                    lines.update(range(first, last + 1))
        return lines


@dataclasses.dataclass
class Answer:
    """One student's answer to one exercise, ready to compare: normalised when it parses; as written (names
    as ``V``) when it, or the answer it is compared with, does not."""

    student: str
    exercise: str
    source: str  # as handed in, cut to MAX_CELL_BYTES
    release: Release
    normalised: View | None  # None: it cannot be parsed
    problem: str = ""
    _as_written: View | None = None

    @classmethod
    def of(cls, student: str, exercise: str, source: str, release: Release) -> Answer:
        source, too_big = bounded(one_newline(source))
        tokens, problem = normalise(source, release)
        problem = "; ".join(filter(None, [too_big, problem]))
        return cls(student, exercise, source, release, View.of(tokens) if tokens is not None else None, problem)

    @property
    def parsed(self) -> bool:
        return self.normalised is not None

    @property
    def as_written(self) -> View:
        if self._as_written is None:
            self._as_written = View.of(tokens_as_written(self.source, self.release))
        return self._as_written

    def view(self, normalised: bool) -> View:
        return self.normalised if normalised else self.as_written

    @property
    def size(self) -> int:
        """Tokens of the student's own code."""
        return len((self.normalised or self.as_written).tokens.text)


def score(a: View, b: View) -> float:
    """The share of the smaller answer's fingerprints that the other answer has too (0 to 1), of those that are
    not common to the class."""
    smaller = min(len(a.kept), len(b.kept))
    if not smaller:
        return 0.0
    return len(a.kept & b.kept) / smaller


def size_floor(n_tokens: int) -> float:
    """The lowest score that flags a pair whose smaller answer has ``n_tokens`` of its own: FLOOR for a long
    answer, more for a short one (+2/sqrt(n): 0.9 at 25 tokens, 0.7 at 100), above 1 (never) below MIN_TOKENS.
    Chance agreement between independent answers shrinks like 1/sqrt(n) as there are more ways to write them."""
    if n_tokens < MIN_TOKENS:
        return math.inf
    return FLOOR + 2 / math.sqrt(n_tokens)


@dataclasses.dataclass
class Pair:
    exercise: str
    a: Answer
    b: Answer
    score: float
    threshold: float
    lines_a: set[int] = dataclasses.field(default_factory=set)
    lines_b: set[int] = dataclasses.field(default_factory=set)

    @property
    def size(self) -> int:
        return min(self.a.size, self.b.size)


@dataclasses.dataclass
class ExerciseResult:
    """One exercise across the class: every pair's score, the class's level, and the flagged pairs."""

    name: str
    scores: list[float]
    median: float
    deviation: float  # the robust standard deviation of the scores: 1.4826 x their median absolute deviation
    class_level: float  # median + SPREAD x deviation (0 when the class is too small to measure it)
    flagged: list[Pair]
    compared: int  # answers compared
    median_tokens: float = 0.0  # the size of the median answer, in tokens of the student's own


def threshold(class_level: float, n_tokens: int) -> float:
    """A pair is flagged at this score or above: above the floor for its size AND far above the class."""
    return max(size_floor(n_tokens), class_level)


def common_fingerprints(views: list[View]) -> set[int]:
    """The fingerprints found in more answers than COMMON_SHARE of the class (and more than COMMON_MIN): the
    natural way of writing that part of the exercise, not evidence (as MOSS ignores passages found in many
    submissions). A one-line answer that a fifth of the class writes alike is no reason to look at any pair."""
    counts = Counter(value for view in views for value in view.prints)
    limit = max(COMMON_MIN, COMMON_SHARE * len(views))
    return {value for value, count in counts.items() if count > limit}


def compare_exercise(name: str, answers: list[Answer]) -> ExerciseResult:
    """Every pair of ``answers`` (one exercise), scored; the pairs at or above their threshold kept. A pair
    with an answer that cannot be parsed is compared on both answers' tokens as written."""
    readings = [True] + ([False] if any(not a.parsed for a in answers) else [])
    for normalised in readings:
        views = [a.view(normalised) for a in answers if normalised is False or a.parsed]
        common = common_fingerprints(views)
        for view in views:
            view.kept = frozenset(view.prints.keys() - common)
    compared = [a for a in answers if (a.normalised or a.as_written).prints]  # the class: who wrote code
    scored = []
    for a, b in combinations(compared, 2):
        normalised = a.parsed and b.parsed
        scored.append((a, b, normalised, score(a.view(normalised), b.view(normalised))))
    scores = [s for *_, s in scored]
    median = statistics.median(scores) if scores else 0.0
    deviation = 1.4826 * statistics.median([abs(s - median) for s in scores]) if scores else 0.0
    level = median + SPREAD * max(deviation, MIN_DEVIATION) if len(compared) >= MIN_CLASS else 0.0
    flagged = []
    for a, b, normalised, value in scored:
        limit = threshold(level, min(a.size, b.size))
        if value >= limit:
            first, second = a.view(normalised), b.view(normalised)
            shared = first.kept & second.kept
            flagged.append(Pair(name, a, b, value, limit, first.matched_lines(shared), second.matched_lines(shared)))
    flagged.sort(key=lambda p: (-p.score, p.a.student, p.b.student))
    sizes = [a.size for a in compared]
    return ExerciseResult(
        name, scores, median, deviation, level, flagged, len(compared), statistics.median(sizes) if sizes else 0.0
    )


def compare(
    submissions: dict[str, dict[str, str]], releases: dict[str, Release]
) -> tuple[list[ExerciseResult], list[tuple[str, str, str]]]:
    """Compare a class: ``submissions`` student -> exercise -> the answer cell's source, ``releases`` exercise ->
    what its release gives. Returns each exercise's result and the listed answers (student, exercise, reason)."""
    results, listed = [], []
    for exercise, release in releases.items():
        answers = []
        for student in sorted(submissions):
            source = submissions[student].get(exercise)
            if source is None:
                listed.append((student, exercise, "no answer cell with this grade id in the submission"))
                continue
            try:
                answer = Answer.of(student, exercise, source, release)
            except Exception as error:  # noqa: BLE001 - one answer never stops the comparison of the others
                listed.append((student, exercise, f"could not be compared ({type(error).__name__}): left out"))
                continue
            if answer.problem:
                listed.append((student, exercise, answer.problem))
            answers.append(answer)
        results.append(compare_exercise(exercise, answers))
    return results, listed


# ---------------------------------------------------------------------------------------------
# Reading the course: the release's answer cells, and each student's
# ---------------------------------------------------------------------------------------------

MAX_NOTEBOOK_BYTES = 50_000_000  # a notebook file beyond this is not read (collect.py bounds them too)


def read_notebook(path: Path):
    """The notebook at ``path`` (nbformat 4), or raise ValueError saying why it cannot be read."""
    import nbformat

    size = path.stat().st_size
    if size > MAX_NOTEBOOK_BYTES:
        raise ValueError(
            f"the file is enormous ({size // 1_000_000} MB, the bound is {MAX_NOTEBOOK_BYTES // 1_000_000} MB)"
        )
    try:
        raw = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except Exception as error:  # noqa: BLE001 - anything a student's file can make json raise
        raise ValueError(f"it is not a notebook ({type(error).__name__})") from None
    passed = structure_limits(notebook_shape(raw))  # (a notebook past a bound costs nbformat minutes and GBs)
    if passed:
        raise ValueError(f"it has {'; '.join(passed)}")
    try:
        return nbformat.reads(json.dumps(raw), as_version=4)
    except Exception as error:  # noqa: BLE001 - anything a student's file can make nbformat raise
        raise ValueError(f"it is not a notebook ({type(error).__name__})") from None


def answer_cells(notebook) -> dict[str, str]:
    """grade id -> source of each code answer cell (nbgrader's own test of what an answer is); the first of
    two cells with one grade id."""
    from .course import grade_id, is_answer

    found: dict[str, str] = {}
    for cell in notebook.cells:
        if cell.get("cell_type") == "code" and is_answer(cell) and isinstance(grade_id(cell), str):
            found.setdefault(grade_id(cell), cell.get("source") if isinstance(cell.get("source"), str) else "")
    return found


def releases(course, assignment: str) -> dict[str, Release]:
    """exercise (answer cell's grade id) -> what the release gives, from the released notebooks."""
    found = {}
    for path in sorted(course.path("release", assignment=assignment).glob("*.ipynb")):
        notebook = read_notebook(path)
        code = [c.source for c in notebook.cells if c.cell_type == "code"]
        for exercise, source in answer_cells(notebook).items():
            found[exercise] = Release.of(source, code)
    return found


def submissions(course, assignment: str) -> tuple[dict[str, dict[str, str]], list[tuple[str, str, str]]]:
    """student -> exercise -> answer source, as handed in (``submitted/``: whatever the grading made of it), and
    the notebooks that could not be read (student, notebook, reason)."""
    from .course import students_with_submissions

    found, listed = {}, []
    for student in students_with_submissions(course, assignment):
        answers: dict[str, str] = {}
        for path in sorted(course.path("submitted", student, assignment).glob("*.ipynb")):
            try:
                answers.update(answer_cells(read_notebook(path)))
            except (ValueError, OSError) as error:
                listed.append((student, path.name, f"the notebook cannot be read: {error}"))
        found[student] = answers
    return found, listed


# ---------------------------------------------------------------------------------------------
# The report: a CSV, one HTML page, one PNG (for the instructor alone: reports/, never the feedback)
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Report:
    assignment: str
    exercises: list[ExerciseResult]
    listed: list[tuple[str, str, str]]  # (student, exercise or notebook, reason)
    n_students: int

    @property
    def flagged(self) -> list[Pair]:
        return [pair for exercise in self.exercises for pair in exercise.flagged]


def run(course, assignment: str) -> Report:
    """Compare every pair of submissions of ``assignment`` (``submitted/``), exercise by exercise."""
    given = releases(course, assignment)
    handed_in, unreadable = submissions(course, assignment)
    results, listed = compare(handed_in, given)
    unread = {student for student, _, _ in unreadable}
    listed = unreadable + [row for row in listed if not (row[0] in unread and row[2].startswith("no answer cell"))]
    return Report(assignment, results, listed, len(handed_in))


CSV_HEADER = ["assignment", "exercise", "student", "other_student", "score", "threshold", "note"]


def csv_rows(report: Report) -> list[dict]:
    """One row per flagged pair (score and threshold), then one per listed answer (its reason)."""
    from .export import spreadsheet_safe

    rows = [
        {
            "assignment": report.assignment,
            "exercise": pair.exercise,
            "student": pair.a.student,
            "other_student": pair.b.student,
            "score": f"{pair.score:.3f}",
            "threshold": f"{pair.threshold:.3f}",
            "note": "",
        }
        for pair in report.flagged
    ]
    rows += [
        {"assignment": report.assignment, "exercise": exercise, "student": student, "note": reason}
        for student, exercise, reason in report.listed
    ]
    return [{k: spreadsheet_safe(row.get(k, "")) for k in CSV_HEADER} for row in rows]


def distribution_picture(report: Report) -> tuple[bytes, str]:
    """The class's pair scores per exercise, with the class's level and the size floor drawn: PNG bytes and
    the picture said in words (its alt text)."""
    from heads_and_masks.figure_style import course_style

    shown = report.exercises or [ExerciseResult("(no exercise)", [], 0.0, 0.0, 0.0, [], 0)]
    with course_style():  # the course's text sizes (12 px and up), as in every picture a person reads
        png, words = _draw_distribution(report.assignment, shown)
    alt = (
        f"Histograms of the scores of every pair of answers of {report.assignment}, one per exercise, "
        "with the size floor as a dotted line, the class level as a dashed line and flagged pairs as triangles. "
        + " ".join(words)
    )
    return png, alt


def _draw_distribution(assignment: str, shown: list[ExerciseResult]) -> tuple[bytes, list[str]]:
    import numpy as np
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, NullFormatter

    columns = min(3, len(shown))
    rows = math.ceil(len(shown) / columns)
    figure = Figure(figsize=(4.4 * columns, 3.6 * rows), layout="constrained")
    axes = figure.subplots(rows, columns, squeeze=False)
    words = []
    for axis, exercise in zip(axes.flat, shown, strict=False):
        counts, _, _ = axis.hist(exercise.scores, bins=np.linspace(0, 1, 21), color="#577590", edgecolor="white")
        axis.set_yscale("log")  # a class of 300 has 44,850 pairs, nearly all low: the few high ones stay visible
        axis.set_ylim(0.5, max(2.0, counts.max() * 2 if len(counts) else 2.0))
        axis.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
        axis.yaxis.set_minor_formatter(NullFormatter())
        floor = typical_floor(exercise)
        if math.isfinite(floor) and floor <= 1:
            axis.axvline(floor, color="#222", linestyle=":", linewidth=1.5, label=f"size floor {floor:.2f}")
        if 0 < exercise.class_level <= 1:
            axis.axvline(exercise.class_level, color="#c8553d", linestyle="--", linewidth=1.5, label="class level")
        for pair in exercise.flagged:  # each flagged pair as a tick under the axis: seen without colour
            axis.plot(
                [pair.score],
                [0],
                marker="^",
                color="#c8553d",
                markersize=8,
                clip_on=False,
                transform=axis.get_xaxis_transform(),
            )
        axis.set(xlim=(0, 1), title=exercise.name, xlabel="score (fingerprints in common)", ylabel="pairs")
        axis.spines[["top", "right"]].set_visible(False)
        if axis.get_legend_handles_labels()[0]:  # below the axes: never on a bar or a line
            axis.legend(frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.3), ncols=2)
        words.append(describe_exercise(exercise))
    for axis in list(axes.flat)[len(shown) :]:
        axis.set_axis_off()
    figure.suptitle(f"{assignment}: scores of every pair of answers, per exercise (triangles: flagged pairs)")
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue(), words


def typical_floor(exercise: ExerciseResult) -> float:
    """The size floor for the exercise's median answer (each pair has its own: the figure only shows one)."""
    return size_floor(int(exercise.median_tokens)) if exercise.compared else math.inf


def describe_exercise(exercise: ExerciseResult) -> str:
    """One exercise's numbers in a sentence (the picture's alt text, the page's table)."""
    flagged = len(exercise.flagged)
    pairs = "1 pair flagged" if flagged == 1 else f"{flagged} pairs flagged"
    level = f"class level {exercise.class_level:.2f}" if exercise.class_level else "class too small for a class level"
    return f"{exercise.name}: {len(exercise.scores)} pairs, median score {exercise.median:.2f}, {level}, {pairs}."


STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1300px; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; margin-top: 2em; border-bottom: 1px solid #ddd; }
h3 { font-size: 1.1em; margin-top: 1.5em; } h4 { font-size: 1em; margin: 1em 0 0.3em; } h5 { font-size: 0.95em; margin: 0.3em 0; }
table { border-collapse: collapse; margin: 0.5em 0 1em; } td, th { padding: 0.15em 0.6em; text-align: left;
 vertical-align: top; border-bottom: 1px solid #eee; } th { background: #f4f4f4; } td.n { text-align: right; }
.wide { overflow-x: auto; } .sides { display: flex; gap: 1em; align-items: flex-start; } .side { flex: 1; min-width: 0; overflow-x: auto; }
table.code td { font-family: ui-monospace, monospace; font-size: 0.85em; white-space: pre; border: none;
 padding: 0 0.4em; } table.code td.line { color: #555; text-align: right; } table.code td.mark { font-weight: bold; }
tr.match td { background: #fff1b8; } img { max-width: 100%; } .muted { color: #555; }
"""

MATCH_MARKER = "match"  # the text that marks a matched line, beside its shading: nothing is said by colour alone
LONG_ANSWER = 60  # lines: a longer answer shows only its matched lines, with CONTEXT lines around them
CONTEXT = 3


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def side_html(answer: Answer, matched: set[int]) -> str:
    """One answer as a table of lines: number, the marker on a matched line, the code. A long answer shows its
    matched lines with CONTEXT lines around them; the lines left out are counted."""
    lines = source_lines(answer.source)
    shown = set(range(1, len(lines) + 1))
    if len(lines) > LONG_ANSWER:
        shown = {n for m in matched for n in range(m - CONTEXT, m + CONTEXT + 1)} | set(range(1, CONTEXT + 1))
    rows, skipped = [], 0
    for n, line in enumerate(lines, start=1):
        if n not in shown:
            skipped += 1
            continue
        if skipped:
            rows.append(f"<tr><td></td><td></td><td class='muted'>{lines_left_out(skipped)}</td></tr>")
            skipped = 0
        marker, row_class = (MATCH_MARKER, " class='match'") if n in matched else ("", "")
        rows.append(f"<tr{row_class}><td class='line'>{n}</td><td class='mark'>{marker}</td><td>{_e(line)}</td></tr>")
    if skipped:
        rows.append(f"<tr><td></td><td></td><td class='muted'>{lines_left_out(skipped)}</td></tr>")
    heading = f"{_e(answer.student)}: {matched_count(len(matched & set(range(1, len(lines) + 1))), len(lines))}"
    return (
        # a region of its own that scrolls sideways: focusable, so that a keyboard scrolls it too
        f"<div class='side' tabindex='0' role='region' aria-label='{_e(answer.student)}: code'>"
        f"<h5>{heading}</h5><table class='code'>"
        "<tr><th>line</th><th>marker</th><th>code</th></tr>" + "".join(rows) + "</table></div>"
    )


def lines_left_out(n: int) -> str:
    return "1 line without a match, not shown" if n == 1 else f"{n} lines without a match, not shown"


def matched_count(matched: int, total: int) -> str:
    return f"1 of {total} lines matches" if matched == 1 else f"{matched} of {total} lines match"


def render_html(report: Report, picture: bytes, alt: str) -> str:
    """The page: what the score means, the class's distribution, the flagged pairs side by side, the listed
    answers. Self-contained (the picture inside), no script, every student text escaped."""
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'\">"
        f"<title>Similar submissions: {_e(report.assignment)}</title><style>{STYLE}</style></head><body>",
        f"<h1>Similar submissions: {_e(report.assignment)}</h1>",
        f"<p>{len(report.flagged)} pairs of answers above their threshold, among {report.n_students} submissions "
        "compared exercise by exercise. For the instructor only: nothing here reaches students' feedback.</p>",
        "<h2>What the score means, and what it does not</h2>",
        "<p>The score of a pair is the share of the shorter answer's fingerprints (hashes of runs of "
        f"{K} tokens of its own code, after renaming its variables, sorting the operands of + and *, and dropping "
        "comments, docstrings, blank lines, the course's imports and what the released cell already held) that "
        "the other answer has too; fingerprints found in more than "
        f"{COMMON_SHARE:.0%} of the class's answers (and more than {COMMON_MIN}) are the natural way of writing "
        "that part and are left out. A pair is listed when its score reaches the larger of two figures: a floor that "
        f"rises as the shorter answer gets shorter ({FLOOR:g} + 2/&radic;tokens; never below {MIN_TOKENS} tokens: "
        f"a short exercise has few ways to be right) and the class's level for that exercise, its median score "
        f"plus {SPREAD:g} robust standard deviations (from {MIN_CLASS} answers on).</p>",
        "<p>A listed pair is a reason to read two answers side by side, not a finding: students who worked "
        "together as allowed, a hint given in class, or an exercise with one natural answer make answers alike. "
        "A number accuses nobody.</p>",
        "<h2>The class's scores</h2>",
        f"<img alt='{_e(alt)}' src='data:image/png;base64,{base64.b64encode(picture).decode('ascii')}'>",
        # a table too wide for a narrow window (or 200 % zoom) scrolls in its own box, which a keyboard can reach
        "<div class='wide' tabindex='0' role='region' aria-label='Scores of the class, by exercise'>"
        "<table><tr><th>exercise</th><th>answers compared</th><th>pairs</th><th>median score</th>"
        "<th>robust spread</th><th>class level</th><th>median size (tokens)</th><th>pairs flagged</th></tr>",
    ]
    for exercise in report.exercises:
        level = f"{exercise.class_level:.2f}" if exercise.class_level else "class too small"
        parts.append(
            f"<tr><td><code>{_e(exercise.name)}</code></td><td class='n'>{exercise.compared}</td>"
            f"<td class='n'>{len(exercise.scores)}</td><td class='n'>{exercise.median:.2f}</td>"
            f"<td class='n'>{exercise.deviation:.2f}</td><td class='n'>{level}</td>"
            f"<td class='n'>{exercise.median_tokens:g}</td><td class='n'>{len(exercise.flagged)}</td></tr>"
        )
    parts.append("</table></div>")
    parts.append("<h2>Pairs above their threshold</h2>")
    parts.append(
        f"<p>Lines that share a fingerprint with the other answer are marked <b>{MATCH_MARKER}</b> (and shaded).</p>"
    )
    for exercise in report.exercises:
        parts.append(f"<h3 id='{_e(exercise.name)}'>Exercise {_e(exercise.name)}</h3>")
        if not exercise.flagged:
            parts.append("<p>No pair above its threshold.</p>")
        for pair in exercise.flagged:
            parts.append(
                f"<h4>{_e(pair.a.student)} and {_e(pair.b.student)}: score {pair.score:.2f}, threshold "
                f"{pair.threshold:.2f}, {pair.size} tokens in the shorter answer</h4>"
                f"<div class='sides'>{side_html(pair.a, pair.lines_a)}{side_html(pair.b, pair.lines_b)}</div>"
            )
    parts.append("<h2>Answers listed with a reason</h2>")
    if report.listed:
        parts.append("<p>Compared as far as possible; none of them stopped the comparison of the others.</p>")
        parts.append("<table><tr><th>student</th><th>exercise or notebook</th><th>reason</th></tr>")
        for student, exercise, reason in report.listed:
            parts.append(f"<tr><td>{_e(student)}</td><td><code>{_e(exercise)}</code></td><td>{_e(reason)}</td></tr>")
        parts.append("</table>")
    else:
        parts.append("<p>Every answer was compared in full.</p>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def write(course, assignment: str) -> tuple[Report, dict[str, Path]]:
    """Compare the class and write ``reports/ASSIGNMENT-similarity.{csv,html,png}`` (the instructor's alone)."""
    report = run(course, assignment)
    folder = course.runtime_dir("reports")
    paths = {kind: folder / f"{assignment}-similarity.{kind}" for kind in ("csv", "html", "png")}
    picture, alt = distribution_picture(report)
    paths["png"].write_bytes(picture)
    # a student's text may hold what UTF-8 cannot encode (a lone surrogate: \ud800 in the notebook JSON is
    # valid JSON): written as an escape, never an error that leaves the class without a report
    paths["html"].write_text(render_html(report, picture, alt), encoding="utf-8", errors="backslashreplace")
    with open(paths["csv"], "w", newline="", encoding="utf-8", errors="backslashreplace") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_HEADER, quoting=csv.QUOTE_ALL)  # see export.spreadsheet_safe
        writer.writeheader()
        writer.writerows(csv_rows(report))
    return report, paths


def summary(report: Report) -> str:
    """What the command says: the assignment, the pairs flagged per exercise, the listed answers."""
    flagged = len(report.flagged)
    lines = [
        f"{report.assignment}: {report.n_students} submissions compared; "
        + ("1 pair above its threshold" if flagged == 1 else f"{flagged} pairs above their threshold")
    ]
    lines += ["  " + describe_exercise(exercise) for exercise in report.exercises]
    if report.listed:
        many = "answers" if len(report.listed) > 1 else "answer"
        lines.append(f"  {len(report.listed)} {many} listed with a reason (empty, unparseable, enormous, unreadable)")
    return "\n".join(lines)
