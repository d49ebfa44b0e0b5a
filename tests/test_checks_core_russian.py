"""The messages of the checks' building blocks (core.py) in Russian: real checks on wrong answers that reach each
way core turns an answer down (no return, a list, float16, a wrong shape, NaN, a crash, a warning, an input changed
in place, memory, no ValueError, a float count), and every message of core.py that comes out has a translation."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pytest
from catalog.nb00_start_here import ANSWERS

from heads_and_masks.checks import core
from heads_and_masks.checks.causal_mask import check_causal_mask, check_causal_mask_bad_n
from heads_and_masks.checks.core import CheckFailed
from heads_and_masks.checks.heads import check_split_heads_errors
from heads_and_masks.checks.kv_heads import check_kv_cache_bytes
from heads_and_masks.checks.start_here import check_attention

from test_not_written_yet import refuses_in_words
from russian_checks import in_russian


def _right_attention():
    namespace = {"np": np}
    exec(next(a for a in ANSWERS if a.correct).source("attention"), namespace)
    return namespace["attention"]


def _wrong_attentions(right):
    """Answers of notebook 00 that core turns down, each with a phrase its Russian report must contain."""

    def changes_q(q, k, v, mask=None):
        out = right(q, k, v, mask)
        q[...] = 0.0
        return out

    def warns(q, k, v, mask=None):
        warnings.warn("this is slow", UserWarning)
        return right(q, k, v, mask)

    def nan_first(q, k, v, mask=None):
        out = right(q, k, v, mask)
        out[..., 0, 0] = np.nan
        return out

    def out_of_memory(q, k, v, mask=None):
        raise MemoryError("Unable to allocate 512. MiB for an array with shape (8192, 8192)")

    return [
        (lambda q, k, v, mask=None: None, "не забыли `return`"),
        (lambda q, k, v, mask=None: [0.0], "ожидался массив numpy, а вернулось list"),
        (lambda q, k, v, mask=None: right(q, k, v, mask).astype(np.float16), "слишком грубо для проверки"),
        (lambda q, k, v, mask=None: right(q, k, v, mask)[..., :1], "ожидалась форма (3, 5)"),
        (lambda q, k, v, mask=None: right(q, k, v, mask) + 0.25, "на величину до 0,25"),
        (nan_first, "NaN (впервые по индексу (0, 0))"),
        (lambda q, k, v, mask=None: q[5], "поднято исключение IndexError"),
        (lambda q, k, v, mask=None: refuses_in_words(q, k, v), "поднято исключение NotImplementedError"),
        (warns, "выдано предупреждение UserWarning"),
        (changes_q, "изменён на месте"),
        (out_of_memory, "не хватило памяти (Unable to allocate"),
    ]


WRONG_MASKS = [
    (check_causal_mask, lambda n: np.tril(np.ones((n, n))), "булев массив (True — можно обращать внимание)"),
    (check_causal_mask, lambda n: [[True]], "ожидался булев массив numpy"),
    (check_causal_mask_bad_n, lambda n: np.zeros((0, 0), bool), "а вернулся результат формы (0, 0)"),
    (check_causal_mask_bad_n, lambda n: None, "а вернулся результат None"),
    (check_causal_mask_bad_n, lambda n: 1 / 0, "а поднято ZeroDivisionError"),
]


# several results in one (a tuple or a list): core.plain_values, as 04, 07, 02 and 08 call it
WRONG_TUPLES = [
    (("dq", "dk", "dv"), None, "ожидалось 3 значения (dq, dk, dv), а вернулось NoneType (не забыли `return`?)"),
    (("out", "computed"), {"out": 0}, "ожидалось 2 значения (out, computed), а вернулось dict"),
    (("w_q", "w_k", "w_v"), [1, 2], "ожидалось 3 значения (w_q, w_k, w_v), а вернулся list длины 2"),
]


def _report(check, answer) -> str:
    with pytest.raises(CheckFailed) as failure:
        check(answer)
    return str(failure.value)


def _split_heads(x, h):
    if x.shape[-1] % h:
        raise ValueError("h must divide the width")
    return x.reshape(x.shape[0], x.shape[1], h, -1).transpose(0, 2, 1, 3)


def test_core_speaks_russian(capsys):
    attentions = _wrong_attentions(_right_attention())
    with in_russian(core):
        reports = [(_report(check_attention, answer), phrase) for answer, phrase in attentions]
        reports += [(_report(check, answer), phrase) for check, answer, phrase in WRONG_MASKS]
        as_float = lambda L, g, d, n, batch=1, bytes_per_value=2: 2.0 * L * g * d * n * batch * bytes_per_value  # noqa: E731
        reports.append((_report(check_kv_cache_bytes, as_float), "если вы делили, используйте //"))
        for names, result, phrase in WRONG_TUPLES:
            reports.append((_report(functools.partial(core.plain_values, names=names, what="f()"), result), phrase))
        check_split_heads_errors(_split_heads)
        capsys.readouterr()
        check_split_heads_errors(_split_heads, thorough=True)  # adds no ✓ line of its own: says so in one
    for report, phrase in reports:
        assert phrase in report, (phrase, report)
    assert capsys.readouterr().out == "✓ то же на других входных данных (скрытые тесты)\n"
