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
import builtins
import copy
import dataclasses
import hashlib
import io
import keyword
import math
import statistics
import tokenize
from itertools import combinations
from pathlib import Path

K = 5  # tokens in a k-gram: ``v1 = v2 + v3`` is one
WINDOW = 4  # winnowing window: every shared run of K + WINDOW - 1 = 8 tokens leaves a common fingerprint
MAX_CELL_BYTES = 200_000  # an answer cell beyond this is enormous: its first MAX_CELL_BYTES are compared
MIN_TOKENS = 16  # an answer of fewer of the student's own tokens is too short to tell copying from chance
FLOOR = 0.5  # the lowest threshold, for long answers; shorter ones get more (threshold)
SPREAD = 4.0  # how many robust standard deviations above the class's median a flagged pair lies at least
MIN_DEVIATION = 0.05  # a class whose scores hardly vary still needs a margin above its median
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


def strip_given(tree: ast.Module, course_imports: set[str]) -> None:
    """Drop what is not the student's own: docstrings (any statement that is a bare string) and the course's
    imports; a body left empty gets ``pass``."""
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if not isinstance(body, list) or not body or not isinstance(body[0], ast.stmt):
                continue
            kept = [s for s in body if not _given(s, course_imports)]
            if not kept and field == "body":
                kept = [ast.copy_location(ast.Pass(), body[0])]
            setattr(node, field, kept)


def _given(statement: ast.stmt, course_imports: set[str]) -> bool:
    """A docstring (any statement that is a bare string) or an import the course's notebook makes itself."""
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
        return isinstance(statement.value.value, str)
    names = imported_names(statement)
    return bool(names) and set(names) <= course_imports


def bound_names(node: ast.AST) -> set[str]:
    """Every name ``node`` binds: arguments, assignment and loop targets, inner functions, ``as`` names."""
    names = set()
    for inner in ast.walk(node):
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
        is_function = isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        local = bound_names(statement) - given if is_function else set()
        occurrences = sorted(
            (n.lineno, n.col_offset, name)
            for n in ast.walk(statement)
            for name in [_name_of(n)]
            if name in local and n is not statement
        )
        numbers: dict[str, str] = {}
        for _, _, name in occurrences:
            numbers.setdefault(name, f"v{len(numbers) + 1}")
        for node in ast.walk(statement):
            name = _name_of(node)
            if name is None:
                continue
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
    statement gives its header (``for v1 in range(v2):``) and then its body's statements."""
    tree = copy.deepcopy(tree)
    strip_given(tree, imports)
    rename(tree, given)
    tree = ast.fix_missing_locations(SortCommutative().visit(tree))
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


def normalise(source: str, release: Release) -> tuple[Tokens, str]:
    """The student's own code in ``source`` as normalised tokens, and why it is listed ("" if it is not)."""
    problem = ""
    size = len(source.encode("utf-8", "replace"))
    if size > MAX_CELL_BYTES:
        source = source.encode("utf-8", "replace")[:MAX_CELL_BYTES].decode("utf-8", "ignore")
        problem = f"enormous ({size // 1000} kB, the bound is {MAX_CELL_BYTES // 1000} kB a cell): its first {MAX_CELL_BYTES // 1000} kB are compared"
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError) as error:  # ValueError: a null byte
        where = f"line {error.lineno}: " if getattr(error, "lineno", None) else ""
        reason = f"cannot be parsed ({where}{getattr(error, 'msg', error)}): compared on its tokens as written"
        return tokens_as_written(source, release), "; ".join(filter(None, [problem, reason]))
    except RecursionError:
        return tokens_as_written(source, release), "; ".join(filter(None, [problem, "nested too deeply to parse"]))
    found = Tokens()
    try:
        units = normalised_units(tree, release.given_names, release.imports)
    except RecursionError:
        return tokens_as_written(source, release), "; ".join(filter(None, [problem, "nested too deeply to parse"]))
    for tokens, first, last in units:
        if tuple(tokens) in release.statements or tokens == ["pass"]:
            continue  # the template's statements, kept as released
        for token in tokens:
            found.text.append(token)
            found.lines.append((first, last))
    if not found.text and not problem:
        problem = "empty: nothing of the student's own (the cell is as released, or blank)"
    return found, problem


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
class Answer:
    """One student's answer to one exercise, ready to compare."""

    student: str
    exercise: str
    source: str
    tokens: Tokens
    prints: dict[int, list[int]]
    problem: str = ""

    @classmethod
    def of(cls, student: str, exercise: str, source: str, release: Release) -> Answer:
        tokens, problem = normalise(source, release)
        return cls(student, exercise, source, tokens, fingerprints(tokens.text), problem)

    def matched_lines(self, shared: set[int]) -> set[int]:
        """The lines of the source that the shared fingerprints came from."""
        lines = set()
        for value in shared:
            for position in self.prints[value]:
                for first, last in self.tokens.lines[position : position + K]:
                    lines.update(range(first, last + 1))
        return lines


def score(a: Answer, b: Answer) -> float:
    """The share of the smaller answer's fingerprints that the other answer has too (0 to 1)."""
    smaller = min(len(a.prints), len(b.prints))
    if not smaller:
        return 0.0
    return len(a.prints.keys() & b.prints.keys()) / smaller


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
        return min(len(self.a.tokens.text), len(self.b.tokens.text))


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


def threshold(class_level: float, n_tokens: int) -> float:
    """A pair is flagged at this score or above: above the floor for its size AND far above the class."""
    return max(size_floor(n_tokens), class_level)


def compare_exercise(name: str, answers: list[Answer]) -> ExerciseResult:
    """Every pair of ``answers`` (one exercise), scored; the pairs at or above their threshold kept."""
    compared = [a for a in answers if a.prints]
    scored = [(a, b, score(a, b)) for a, b in combinations(compared, 2)]
    scores = [s for _, _, s in scored]
    median = statistics.median(scores) if scores else 0.0
    deviation = 1.4826 * statistics.median([abs(s - median) for s in scores]) if scores else 0.0
    level = median + SPREAD * max(deviation, MIN_DEVIATION) if len(compared) >= MIN_CLASS else 0.0
    flagged = []
    for a, b, value in scored:
        limit = threshold(level, min(len(a.tokens.text), len(b.tokens.text)))
        if value >= limit:
            shared = a.prints.keys() & b.prints.keys()
            flagged.append(Pair(name, a, b, value, limit, a.matched_lines(shared), b.matched_lines(shared)))
    flagged.sort(key=lambda p: (-p.score, p.a.student, p.b.student))
    return ExerciseResult(name, scores, median, deviation, level, flagged, len(compared))


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
            answer = Answer.of(student, exercise, source, release)
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
        return nbformat.reads(path.read_text(encoding="utf-8", errors="replace"), as_version=4)
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
