"""Numbers written as people read them, in readouts, labels and tables.

Counts get thousands separators (4,027,056,128, not 4.027e+09); other numbers get a few significant
digits in plain positional notation (0.07292, 13.7, 13,744), never an exponent; and a number too
small to matter at that precision is written 0 (an entropy of 1.07e-28 bits is an entropy of 0).
Separators and the decimal sign are the current language's (i18n.in_prose: 4 027 056 128 and 13,7 in Russian).
"""

from __future__ import annotations

import math
import numbers

from .i18n import in_prose

SMALLEST_SHOWN = 1e-6  # below this magnitude a number is written 0


def readable_number(value, digits: int = 4) -> str:
    """``value`` as text: ints with thousands separators; floats with ``digits`` significant digits
    (whole numbers from ``10**(digits - 1)`` on, with separators), no exponent, tiny ones as 0; in the current
    language's way of writing numbers."""
    return in_prose(_english_digits(value, digits))


def _english_digits(value, digits: int) -> str:
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return f"{int(value):,}"
    x = float(value)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if abs(x) < SMALLEST_SHOWN:
        return "0"
    if abs(x) >= 10 ** (digits - 1):
        return f"{x:,.0f}"
    decimals = digits - 1 - math.floor(math.log10(abs(x)))  # digits significant digits in all
    text = f"{x:,.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "0") else text
