"""Building blocks of the checks: strict result types, comparisons with a measured difference,
calls that record warnings and in-place changes, and diagnosis of known misconceptions.

The functions this module compares with are bound when it is imported, so a learner's code that
later replaces ``np.allclose`` (or anything else on numpy) does not change how it is graded.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import math
import sys
import textwrap
import warnings

import numpy as np

from .._answer_warnings import answer_warnings
from .._guard import ReferenceUsedError, locked
from ..i18n import N_, _, ngettext, number, translated
from .misconceptions import MISCONCEPTIONS

# Bound at import time: learner code that patches numpy afterwards does not reach these.
_type, _isinstance, _len, _repr = builtins.type, builtins.isinstance, builtins.len, builtins.repr
_tuple, _list = builtins.tuple, builtins.list
_ndarray, _float64, _bool = np.ndarray, np.float64, np.bool_
_array, _abs, _max, _isnan, _isfinite = np.array, np.abs, np.max, np.isnan, np.isfinite
_array_equal, _issubdtype, _number, _argmax, _unravel = (
    np.array_equal,
    np.issubdtype,
    np.number,
    np.argmax,
    np.unravel_index,
)
_errstate, _catch_warnings, _simplefilter = np.errstate, warnings.catch_warnings, warnings.simplefilter
_floor, _isclose_scalar = math.floor, math.isclose
# float32 answers are compared at float32's precision; float16 (about 3 digits) is refused, not compared
# at its own: its rounding (6 % of the largest value at 64 eps) would let answers a few % off pass.
_LOWER_PRECISION = (np.dtype(np.float32),)
_TOO_COARSE = (np.dtype(np.float16),)


class CheckFailed(AssertionError):
    """A check found a wrong answer; the message is written for the learner.

    ``misconception`` is the stable identifier of the mistake the check recognised (a key of
    :data:`~heads_and_masks.checks.misconceptions.MISCONCEPTIONS`, e.g. ``"heads.d_h_split"``), or
    None when the answer is wrong in a way no check names. The class report counts these ids; the
    message may change (or be translated), the id does not.
    """

    def __init__(self, message: str = "", misconception: str | None = None):
        super().__init__(message)
        self.misconception = misconception


# Which exercises the running test cell found not written yet (read and cleared by the grader's judge).
_unwritten: list[str] = []


def take_unwritten() -> list[str]:
    """The functions found still holding their stub since the last call (the judge's "not answered")."""
    found = list(_unwritten)
    _unwritten.clear()
    return found


# What the running check has printed, and what its last visible run printed: a test cell runs a check
# once with the visible inputs and again, in the instructor's version, with ``thorough=True`` (the hidden
# tests), which repeats the visible probes first. Their ✓ lines are not printed a second time.
_report: dict | None = None
_visible_lines: dict[str, tuple[str, ...]] = {}
_SAME_ON_MORE = N_("the same on more inputs (hidden tests)")
SAME_ON_MORE_INPUTS = f"✓ {_SAME_ON_MORE}"  # the line in English; printed in the language of the moment


def exercise_check(function):
    """Decorator for every ``check_*`` function: quiet checks, each ✓ line once, a short word for an unwritten exercise.

    nbgrader takes the points of a test cell that wrote anything to stderr, so the computations of
    the check (references, diagnoses of wrong variants) run with warnings silenced. The learner's
    own code is still watched: :func:`call` records its warnings separately. A thorough run (the hidden
    tests) prints only the ✓ lines its visible run did not, or one line saying it passed too.

    An exercise still holding its stub (``raise NotImplementedError()``) is not a wrong answer: the
    check prints one line to stderr (see :func:`not_written_yet`) and returns, so *Run All* goes on
    to the next cell, while nbgrader (and ``nbgrader validate``) count the cell as failed.

    A wrong answer, in the learner's own notebook (:func:`reports_failures`), is reported the same way:
    its message alone on stderr (no traceback of the checks' frames), and *Run All* goes on. Everywhere
    else, and always in the grader, the check raises :class:`CheckFailed`.
    """

    key = f"{function.__module__}.{function.__qualname__}"

    @functools.wraps(function)
    def quiet(*args, **kwargs):
        __tracebackhide__ = True
        global _report
        outer = _report is None  # checks may call checks: the outermost one keeps the record
        thorough = bool(kwargs.get("thorough"))
        if outer:
            _report = {"printed": [], "new": False, "skip": set(_visible_lines.get(key, ())) if thorough else set()}
        report = _report
        try:
            with _catch_warnings(), _errstate(all="ignore"):
                _simplefilter("ignore")
                result = function(*args, **kwargs)
        except NotImplementedError as error:  # from the learner's code: call() reports a library's as a crash
            print(_between_words(not_written_yet(args[0] if args else None, error)), file=sys.stderr)
            _unwritten.append(_name_of(args[0] if args else None))
            return None
        except CheckFailed as failure:
            if not (outer and reports_failures()):
                raise
            print(f"✗ {failure}", file=sys.stderr)
            return None
        finally:
            if outer:
                _report = None
        if outer:
            if not thorough:
                _visible_lines[key] = tuple(report["printed"])
            elif not report["new"]:
                print(f"✓ {translated(_SAME_ON_MORE)}")
        return result

    return quiet


# How a failing check ends. In the learner's own notebook it prints its message on stderr and returns, as an
# unwritten exercise does, so that Run All goes on to the widgets below; nbgrader scores a test cell that wrote to
# stderr 0 exactly as one that raised, so the notebook's Validate still lists it. Everywhere else it raises.
# No setting of the notebook's decides a grade: the grader runs every test cell in its own process, where no code of
# the student's runs (autograde/judge.py), inside failures_raise(), and counts stderr as a failure besides.
_raising = 0  # how many failures_raise() blocks are open


@contextlib.contextmanager
def failures_raise():
    """Within the block a failing check raises :class:`CheckFailed`, wherever it runs (the grader's judge)."""
    global _raising
    _raising += 1
    try:
        yield
    finally:
        _raising -= 1


def reports_failures() -> bool:
    """True when a failing check reports instead of raising: in a Jupyter kernel (a notebook), outside failures_raise()."""
    if _raising:
        return False
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return getattr(shell, "kernel", None) is not None  # a notebook's kernel, not a terminal IPython or a script


def _name_of(function) -> str:
    name = getattr(function, "__name__", None)
    return name if _type(name) is str and name.isidentifier() else "your function"


def _raising_frame(error: BaseException):
    """The innermost frame of the traceback: where the exception was raised."""
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb.tb_frame if tb is not None else None


def _raised_by_a_library(error: NotImplementedError) -> bool:
    """A library refusing an input in words (not the learner's stub, which raises it bare in ``__main__``)."""
    frame = _raising_frame(error)
    return frame is not None and frame.f_globals.get("__name__") != "__main__" and bool(str(error))


# JupyterLab shows stderr with `word-break: break-all`: a line longer than the output's column is cut at any
# character ("your co / de"). At 1100 px with the file browser open the column holds 84 characters of output
# (tests/browser/test_browser_not_written_yet.py), so the message is broken between words at 72.
OUTPUT_COLUMNS = 72
_wrap = textwrap.wrap


def _between_words(message: str) -> str:
    """``message`` broken into lines of at most OUTPUT_COLUMNS characters, only between words."""
    return "\n".join(_wrap(message, OUTPUT_COLUMNS, break_long_words=False, break_on_hyphens=False))


def not_written_yet(function, error: NotImplementedError) -> str:
    """The line a learner reads when their function (or one it calls) still raises NotImplementedError."""
    name = _name_of(function)
    frame = _raising_frame(error)
    raised_in = frame.f_code.co_name if frame is not None else name
    in_learner_code = frame is None or frame.f_globals.get("__name__") == "__main__"
    if in_learner_code and raised_in.isidentifier() and raised_in != name:
        return "✗ " + _(
            "`{name}` cannot be checked yet: it calls `{called}`, which is not written yet "
            "(in `{called}`, replace `raise NotImplementedError()` with your code)"
        ).format(name=name, called=raised_in)
    if str(error):
        return "✗ " + _(
            "`{name}` is not finished: it raised NotImplementedError({said}); "
            "replace `raise NotImplementedError()` with your code"
        ).format(name=name, said=repr(str(error)))
    return "✗ " + _("`{name}` is not written yet: replace `raise NotImplementedError()` with your code").format(
        name=name
    )


def fail(message: str, misconception: str | None = None):
    """Fail the check with ``message`` for the learner and, when the mistake is a known one, its stable id."""
    __tracebackhide__ = True
    if misconception is not None and misconception not in MISCONCEPTIONS:
        raise KeyError(f"unregistered misconception id {misconception!r} (add it to checks/misconceptions.py)")
    raise CheckFailed(message, misconception)


def sentence(text: str) -> str:
    """``text`` ending as a sentence (a failure's message, to which a check adds the likely cause)."""
    text = str(text).rstrip()
    return text if text.endswith((".", "!", "?")) else text + "."


def named(diagnosis) -> tuple:
    """``(wrong, explanation, id)`` from a diagnosis written as that triple or as ``(wrong, explanation)``."""
    wrong, explanation, *rest = diagnosis
    return wrong, explanation, (rest[0] if rest else None)


def passed(message: str) -> None:
    line = f"✓ {message}"
    if _report is not None:
        _report["printed"].append(line)
        if line in _report["skip"]:
            return  # printed by the visible run of this check already
        _report["new"] = True
    print(line)


def plain_array(result, *, what: str, dtype=np.float64) -> np.ndarray:
    """The learner's result as a fresh plain numpy array, or a failure saying what came back.

    Only a real ``numpy.ndarray`` of numbers (or bools) is accepted: subclasses and objects with a
    custom ``__eq__`` or ``__array__`` are refused, so nothing can pretend to be equal.
    """
    __tracebackhide__ = True
    if _type(result) is not _ndarray:
        if result is None:
            fail(
                _("{what} should return a numpy array, but it returned NoneType (did you forget the `return`?)").format(
                    what=what
                ),
                "conventions.no_return",
            )
        fail(
            _("{what} should return a numpy array, but it returned {type}").format(
                what=what, type=_type(result).__name__
            )
        )
    if result.dtype.kind not in "biuf":
        fail(
            _("{what} should return an array of numbers, but its dtype is {dtype}").format(
                what=what, dtype=result.dtype
            )
        )
    if result.dtype in _TOO_COARSE:
        fail(
            _(
                "{what} returned float16 values, which keep only about 3 significant digits: too coarse to check. "
                "Compute (and return) float64, the type of the inputs, or float32"
            ).format(what=what)
        )
    if result.dtype in _LOWER_PRECISION:  # a float32 answer is compared at its own precision
        return _array(result, copy=True)
    return _array(result, dtype=dtype, copy=True)


def plain_bool_array(result, *, what: str) -> np.ndarray:
    __tracebackhide__ = True
    if _type(result) is not _ndarray:
        fail(
            _("{what} should return a numpy array of booleans, but it returned {type}").format(
                what=what, type=_type(result).__name__
            )
        )
    if result.dtype != np.bool_:
        fail(
            _(
                "{what} should return a boolean array (True = may attend), but its dtype is {dtype}: "
                "an additive float mask (0 and -inf) or 0/1 numbers are a different convention"
            ).format(what=what, dtype=result.dtype),
            "mask.not_boolean",
        )
    return _array(result, dtype=bool, copy=True)


def plain_int(result, *, what: str) -> int:
    __tracebackhide__ = True
    if _type(result) is bool or not (_type(result) is int or _isinstance(result, np.integer)):
        if _isinstance(result, float):
            fail(
                _(
                    "{what} should return a whole number (an int), but it returned {value} ({type}): "
                    "use // or int(...) if you divided"
                ).format(what=what, value=_repr(result), type=_type(result).__name__),
                "conventions.not_int",
            )
        fail(
            _("{what} should return a whole number (an int), but it returned {value} ({type})").format(
                what=what, value=_repr(result), type=_type(result).__name__
            )
        )
    return int(result)


def plain_values(result, names: tuple[str, ...], *, what: str) -> tuple | list:
    """The learner's several results (a tuple or a list of as many as ``names``, the exercise's names for them:
    ``("dq", "dk", "dv")``), or a failure saying what came back. Each value is checked by its own caller."""
    __tracebackhide__ = True
    count, listed, kind = _len(names), ", ".join(names), _type(result).__name__
    if result is None:
        fail(
            ngettext(
                "{what} should return {count} value ({names}), but it returned NoneType (did you forget the `return`?).",
                "{what} should return {count} values ({names}), but it returned NoneType (did you forget the `return`?).",
                count,
            ).format(what=what, count=count, names=listed),
            "conventions.no_return",
        )
    if _type(result) not in (_tuple, _list):
        fail(
            ngettext(
                "{what} should return {count} value ({names}), but it returned a {kind}.",
                "{what} should return {count} values ({names}), but it returned a {kind}.",
                count,
            ).format(what=what, count=count, names=listed, kind=kind)
        )
    if _len(result) != count:
        fail(
            ngettext(
                "{what} should return {count} value ({names}), but it returned a {kind} of length {length}.",
                "{what} should return {count} values ({names}), but it returned a {kind} of length {length}.",
                count,
            ).format(what=what, count=count, names=listed, kind=kind, length=_len(result))
        )
    return result


def plain_float(result, *, what: str) -> float:
    __tracebackhide__ = True
    if _type(result) not in (int, float) and not _isinstance(result, (np.floating, np.integer)):
        fail(_("{what} should return a number, but it returned {type}").format(what=what, type=_type(result).__name__))
    return float(result)


def max_difference(actual: np.ndarray, expected: np.ndarray) -> float:
    both_nan = _isnan(actual) & _isnan(expected)
    with _errstate(invalid="ignore", over="ignore"):
        diff = _abs(actual - expected)
    diff[both_nan] = 0.0
    diff[_isnan(diff)] = np.inf
    return float(_max(diff)) if diff.size else 0.0


def is_close(actual: np.ndarray, expected: np.ndarray, *, rtol=1e-6, atol=1e-9) -> bool:
    if actual.shape != expected.shape:
        return False
    with _errstate(invalid="ignore", over="ignore"):
        tolerance = atol + rtol * _abs(expected)
        if actual.dtype in _LOWER_PRECISION and expected.size:
            # the contract fixes values, not the float type: a float32 answer rounds every step to about
            # 1e-7 of the size of the numbers involved, also where the result itself is near 0
            finite = _abs(expected[_isfinite(expected)])
            tolerance = tolerance + 64 * np.finfo(actual.dtype).eps * (float(_max(finite)) if finite.size else 0.0)
        diff = _abs(actual - expected)
    ok = (diff <= tolerance) | (_isnan(actual) & _isnan(expected))
    return bool(ok.all())


def expect_shape(
    actual: np.ndarray, shape: tuple, *, what: str, hint: str = "", misconception: str | None = None
) -> None:
    __tracebackhide__ = True
    if actual.shape != tuple(shape):
        message = _("{what} should have shape {expected}, but it has shape {actual}.").format(
            what=what, expected=tuple(shape), actual=actual.shape
        )
        fail(message + (f" {hint}" if hint else ""), misconception)


def expect_close(
    actual: np.ndarray,
    expected: np.ndarray,
    *,
    what: str,
    diagnoses=(),
    rtol=1e-6,
    atol=1e-9,
    hint: str = "",
    misconception: str | None = None,
) -> None:
    """Fail unless ``actual`` equals ``expected`` within tolerance; name a matching misconception.

    ``diagnoses`` is a sequence of ``(wrong_result, explanation, id)``: when the answer matches one of
    these known wrong results, the explanation is added to the message and the failure carries the
    id. The verdict never depends on them: they only make the message more useful. When none
    matches, the failure carries ``misconception`` (what the ``hint`` names, if it names one).
    """
    __tracebackhide__ = True
    expect_shape(actual, expected.shape, what=what, hint=hint)
    if is_close(actual, expected, rtol=rtol, atol=atol):
        return
    if _isnan(actual).any() and not _isnan(expected).any():
        where = tuple(int(i) for i in _unravel(_argmax(_isnan(actual)), actual.shape))
        message = _("{what} contains NaN (first at index {where}) where a number was expected.").format(
            what=what, where=where
        )
    else:
        difference = max_difference(actual, expected)
        with _errstate(invalid="ignore", over="ignore"):
            where = (
                tuple(int(i) for i in _unravel(_argmax(_abs(actual - expected)), actual.shape)) if actual.size else ()
            )
        message = _(
            "{what} is wrong: it differs from the expected values by up to {difference} "
            "(at index {where}: expected {expected}, got {actual})."
        ).format(
            what=what,
            difference=number(difference, ".3g"),
            where=where,
            expected=number(expected[where], ".6g"),
            actual=number(actual[where], ".6g"),
        )
    for diagnosis in diagnoses:
        wrong, explanation, found = named(diagnosis)
        wrong = _array(wrong, dtype=actual.dtype)
        if wrong.shape == actual.shape and is_close(actual, wrong, rtol=1e-5, atol=1e-8):
            message += " " + _("Likely cause: {explanation}").format(explanation=explanation)
            fail(message, found)
    if hint:
        message += f" {hint}"
    fail(message, misconception)


def raised_by_the_answer(failure: CheckFailed) -> bool:
    """Whether ``failure`` (from ``call``) reports an exception the learner's function raised. ``call`` fails
    inside the ``except`` that caught it, so that exception is the failure's context: a fact, where the message's
    words are in the learner's language ("raised" in English only). Running out of memory is the machine
    refusing, and calling the course's reference is not the answer's own error: neither counts."""
    error = failure.__context__
    return _isinstance(error, Exception) and not _isinstance(error, (MemoryError, ReferenceUsedError))


def copies(*arrays):
    """Fresh copies of the inputs, to hand to the learner's function and detect in-place changes."""
    return tuple(_array(a, copy=True) if a is not None else None for a in arrays)


def call(
    function,
    *args,
    what: str,
    allow_warnings=True,
    memory_hint: str = "",
    memory_misconception: str | None = None,
    names: tuple[str, ...] = (),
    **kwargs,
):
    """Call the learner's function on copies of ``args``; report crashes, warnings, in-place changes.

    The course's reference functions are locked while it runs (an answer must not call them). Warnings are
    recorded instead of printed (a warning on stderr would cost points in nbgrader); with
    ``allow_warnings=False`` a warning is a failure with its text. ``memory_hint`` says what most
    likely made the answer run out of memory on these arguments. ``names`` are the parameters' names in the
    exercise's signature, so that a message about an input changed in place names that input.
    """
    __tracebackhide__ = True
    originals = [a for a in args]
    given = [(_array(a, copy=True) if _type(a) is _ndarray else a) for a in args]
    with answer_warnings() as caught:  # the same policy as the grading kernel's (heads_and_masks._answer_warnings)
        try:
            with locked():
                result = function(*given, **kwargs)
        except ReferenceUsedError as error:
            fail(f"{what}: {error}", "conventions.called_reference")
        except CheckFailed:
            raise
        except NotImplementedError as error:
            if _raised_by_a_library(error):
                fail(_("{what} raised NotImplementedError: {error}").format(what=what, error=error))
            raise  # the exercise is not written yet: exercise_check says so in one line
        except Exception as error:  # noqa: BLE001 - the learner's crash, reported in words
            if _isinstance(error, MemoryError) or "MemoryError" in _repr(error) or "Unable to allocate" in str(error):
                # the error's own words when it has some (also when a remote call reports it in words)
                ran_out = (
                    _(
                        "{what} ran out of memory ({error}): it asked for more memory than it may have here "
                        "(the machine's, or a grading kernel's limit)."
                    )
                    if str(error)
                    else _(
                        "{what} ran out of memory: it asked for more memory than it may have here "
                        "(the machine's, or a grading kernel's limit)."
                    )
                ).format(what=what, error=error)
                fail(
                    ran_out + " " + (memory_hint or _("Does it build an array much larger than its inputs?")),
                    memory_misconception,
                )
            fail(_("{what} raised {type}: {error}").format(what=what, type=_type(error).__name__, error=error))
    for position, (original, handed) in enumerate(zip(originals, given)):
        if (
            _type(original) is _ndarray
            and _type(handed) is _ndarray
            and not _array_equal(original, handed, equal_nan=True)
        ):
            fail(_changed_in_place(what, names[position] if position < _len(names) else None), "conventions.in_place")
    if caught and not allow_warnings:
        first = caught[0]
        fail(
            _(
                "{what} emitted a warning: {category}: {warning}. A correct answer computes "
                "without warnings (they usually mean NaN from inf - inf or 0/0, or an overflow somewhere)"
            ).format(what=what, category=first.category.__name__, warning=first.message),
            "numerics.warning",
        )
    return result


def _changed_in_place(what: str, name: str | None) -> str:
    """The message for an input the learner's function changed: which one, and how to leave it as it was."""
    if name is None:
        return _(
            "{what} changed one of its input arrays in place; copy an input before writing into it (for example "
            "`x = x.copy()`), or build a new array (np.where, np.concatenate): the caller's data must stay as it was"
        ).format(what=what)
    return _(
        "{what} changed its input `{name}` in place; copy it before writing into it (for example "
        "`out = {name}.copy()`, then write into out), or build a new array (np.where, np.concatenate): "
        "the caller's `{name}` must stay as it was"
    ).format(what=what, name=name)


def expect_value_error(function, *args, what: str, why: str):
    """The learner's function must refuse these arguments with a ValueError."""
    __tracebackhide__ = True
    with _catch_warnings(), _errstate(all="ignore"):
        _simplefilter("ignore")
        try:
            with locked():
                result = function(*args)
        except ValueError:
            return
        except ReferenceUsedError as error:
            fail(f"{what}: {error}", "conventions.called_reference")
        except NotImplementedError as error:
            if _raised_by_a_library(error):
                fail(
                    _("{what} should raise ValueError ({why}), but it raised NotImplementedError: {error}").format(
                        what=what, why=why, error=error
                    ),
                    "conventions.no_value_error",
                )
            raise  # the exercise is not written yet: exercise_check says so in one line
        except Exception as error:  # noqa: BLE001 - any other error is the learner's, said in words
            fail(
                _("{what} should raise ValueError ({why}), but it raised {type}: {error}").format(
                    what=what, why=why, type=_type(error).__name__, error=error
                ),
                "conventions.no_value_error",
            )
    if _type(result) is _ndarray:
        returned = _("{what} should raise ValueError ({why}), but it returned a result of shape {shape}").format(
            what=what, why=why, shape=result.shape
        )
    else:
        returned = _("{what} should raise ValueError ({why}), but it returned a result {value}").format(
            what=what, why=why, value=_repr(result)[:60]
        )
    fail(returned, "conventions.no_value_error")


def call_count(function, name: str, args: tuple, kwargs: dict, *, names: tuple, defaults: dict, label: str = ""):
    """Call a learner's function that counts something (bytes, entries): a whole number, without warnings.

    Returns how the call reads (``name(32, 8, batch=4)``, then ``label`` when given), the count, and
    every argument by name in the order of ``names`` (the ``defaults`` of the signature filled in).
    """
    __tracebackhide__ = True
    shown = ", ".join([str(a) for a in args] + [f"{k}={v}" for k, v in kwargs.items()])
    what = f"{name}({shown})" + (f" {label}" if label else "")
    result = plain_int(call(function, *args, what=what, allow_warnings=False, **kwargs), what=what)
    given = {**defaults, **dict(zip(names, args)), **kwargs}
    return what, result, {n: given[n] for n in names}


# Hidden inputs are the instructor's secret. In a notebook (self-study, the solutions) a check's seed
# is used as it is; while the grader judges a submission, in the grader's own process, every seed
# is mixed with the instructor's grading key and the submission (see autograde/grading_key.py), so
# the published seeds of the hidden tests say nothing about the inputs a submission is graded on.
_secret: tuple[bytes, str] | None = None


@contextlib.contextmanager
def secret_inputs(key: bytes, context: str):
    """Within the block, ``rng(seed)`` draws from HMAC(key, context | seed) instead of ``seed``."""
    global _secret
    before, _secret = _secret, (bytes(key), str(context))
    try:
        yield
    finally:
        _secret = before


def rng(seed: int) -> np.random.Generator:
    if _secret is None:
        return np.random.default_rng(seed)
    import hashlib
    import hmac

    key, context = _secret
    digest = hmac.new(key, f"{context}|{seed}".encode("utf-8"), hashlib.sha256).digest()
    return np.random.default_rng(int.from_bytes(digest, "big"))


def secret_draws(count: int, low: int, high: int, *, label: str) -> list[int]:
    """``count`` extra integers in [low, high) drawn from the grading key (none outside grading): for
    checks whose inputs are a fixed list, so that a table of the published list earns nothing."""
    if _secret is None:
        return []
    import zlib

    return [int(v) for v in rng(zlib.crc32(label.encode("utf-8"))).integers(low, high, size=count)]
