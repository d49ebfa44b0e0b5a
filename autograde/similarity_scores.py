"""Similarity, its second half: the fingerprints of each answer, the score of each pair, and the class's level
above which a pair is flagged (see ``similarity.py``)."""

from __future__ import annotations

import dataclasses
import hashlib
import math
import statistics
from collections import Counter
from itertools import combinations


from .similarity_tokens import MIN_TOKENS, Release, Tokens, bounded, normalise, one_newline, tokens_as_written

K = 5  # tokens in a k-gram: ``v1 = v2 + v3`` is one
WINDOW = 4  # winnowing window: every shared run of K + WINDOW - 1 = 8 tokens leaves a common fingerprint
FLOOR = 0.5  # the lowest threshold, for long answers; shorter ones get more (threshold)
SPREAD = 4.0  # how many robust standard deviations above the class's median a flagged pair lies at least
MIN_DEVIATION = 0.05  # a class whose scores hardly vary still needs a margin above its median
COMMON_SHARE = 0.05  # a fingerprint in more than this share of the class's answers is common to the class
COMMON_MIN = 5  # ... and in more answers than this: a ring of five copies is never "common"
MIN_CLASS = 10  # fewer answers to an exercise: too few pairs to measure the class's level (the floor alone)


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


@dataclasses.dataclass
class Report:
    assignment: str
    exercises: list[ExerciseResult]
    listed: list[tuple[str, str, str]]  # (student, exercise or notebook, reason)
    n_students: int

    @property
    def flagged(self) -> list[Pair]:
        return [pair for exercise in self.exercises for pair in exercise.flagged]
