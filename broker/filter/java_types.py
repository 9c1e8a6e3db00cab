"""Java value semantics the SQL92 filter depends on.

RocketMQ evaluates selectors over Java objects: ``Integer``, ``Long``,
``Double``, ``String`` and ``Boolean``. Python has one ``int``, so each
expression node carries a static type tag instead:

    ``I`` Integer, ``L`` Long, ``D`` Double, ``S`` String, ``B`` Boolean,
    ``N`` always null.

:func:`comparator` returns the Java ``ComparisonExpression.__compare`` of two
tagged types (string operands are converted to the other side's type with
``Integer.valueOf``/``Long.valueOf``/``Double.valueOf``/``Boolean.valueOf``;
unrelated types compare as -1). Conversion failures raise
:class:`EvaluationError`, which makes the message not match.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

__all__ = [
    "EvaluationError",
    "INT_MIN",
    "INT_MAX",
    "LONG_MIN",
    "LONG_MAX",
    "parse_java_int",
    "parse_java_long",
    "parse_java_double",
    "parse_java_boolean",
    "double_compare",
    "comparator",
    "java_type_name",
]

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


class EvaluationError(Exception):
    """Evaluating an expression failed (Java threw); the message does not match."""


# Integer.parseInt: optional sign, then decimal digits (Character.digit accepts Unicode Nd digits).
_INT_RE = re.compile(r"[+-]?\d+\Z")
# Double.valueOf (FloatingDecimal): surrounding chars <= ' ' trimmed, ASCII digits,
# NaN/Infinity, hex floats, optional f/F/d/D suffix.
_DOUBLE_RE = re.compile(
    r"""[+-]?(?:
        NaN
      | Infinity
      | (?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFdD]?
      | 0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?\d+[fFdD]?
    )\Z""",
    re.VERBOSE | re.ASCII,
)
_JAVA_TRIM = "".join(chr(i) for i in range(0x21))


def _parse_integral(s: str, lo: int, hi: int, what: str) -> int:
    # str.isdecimal() is Unicode Nd, the digits Java's Character.digit(c, 10) takes
    if not s.isdecimal() and _INT_RE.match(s) is None:
        raise EvaluationError(f"For input string: {s!r} ({what})")
    v = int(s)
    if v < lo or v > hi:
        raise EvaluationError(f"For input string: {s!r} ({what} out of range)")
    return v


def parse_java_int(s: str) -> int:
    """``Integer.valueOf(String)``; raises EvaluationError like NumberFormatException."""
    return _parse_integral(s, INT_MIN, INT_MAX, "Integer")


def parse_java_long(s: str) -> int:
    """``Long.valueOf(String)``; raises EvaluationError like NumberFormatException."""
    return _parse_integral(s, LONG_MIN, LONG_MAX, "Long")


def parse_java_double(s: str) -> float:
    """``Double.valueOf(String)``; raises EvaluationError like NumberFormatException."""
    if s.isascii() and "_" not in s:
        # Fast path: for ASCII text without '_' Python's float() accepts what Java
        # accepts, except the NaN/Infinity spellings (checked below) and the
        # forms float() refuses (suffix, hex: handled by the full grammar).
        try:
            v = float(s)
        except ValueError:
            pass
        else:
            if v - v == 0.0:  # finite
                return v
    t = s.strip(_JAVA_TRIM)
    if _DOUBLE_RE.match(t) is None:
        raise EvaluationError(f"For input string: {s!r} (Double)")
    if t[-1] in "fFdD":  # no valid form ends in these letters except the type suffix
        t = t[:-1]
    body = t.lstrip("+-")
    neg = t.startswith("-")
    if body == "NaN":
        return math.nan
    if body == "Infinity":
        return -math.inf if neg else math.inf
    if body[:2] in ("0x", "0X"):
        v = float.fromhex(body)
        return -v if neg else v
    return float(t)


def parse_java_boolean(s: str) -> bool:
    """``Boolean.valueOf(String)``: true iff ``"true"`` ignoring case; never fails."""
    return len(s) == 4 and s.lower() == "true"


def double_compare(a: float, b: float) -> int:
    """``Double.compare``: NaN is above everything and equal to itself; -0.0 < 0.0."""
    if a < b:
        return -1
    if a > b:
        return 1
    a_nan = a != a
    b_nan = b != b
    if a_nan or b_nan:
        return int(a_nan) - int(b_nan)
    sa = math.copysign(1.0, a)
    sb = math.copysign(1.0, b)
    return (sa > sb) - (sa < sb)


def _int_cmp(a: int, b: int) -> int:
    return (a > b) - (a < b)


def _bool_cmp(a: bool, b: bool) -> int:
    return (a > b) - (a < b)


def _str_cmp(a: str, b: str) -> int:
    # Only its sign against 0 matters (equality); ordering of strings goes through Double.
    return (a > b) - (a < b)


def _minus_one(_a, _b) -> int:
    return -1


def _class_cast(_a, _b) -> int:
    # Boolean on the left, String on the right: Java casts the Boolean to String.
    raise EvaluationError("java.lang.ClassCastException: Boolean cannot be cast to String")


def _never(_a, _b) -> int:  # pragma: no cover - null operands never reach a comparator
    raise EvaluationError("null operand")


_INTEGRAL = {"I": parse_java_int, "L": parse_java_long}


def comparator(lt: str, rt: str) -> Callable[[object, object], int]:
    """Java ``__compare(lv, rv)`` for static types ``lt``/``rt`` (with string conversion on)."""
    if lt == "N" or rt == "N":
        return _never
    if lt == rt:
        return {"I": _int_cmp, "L": _int_cmp, "D": double_compare, "S": _str_cmp, "B": _bool_cmp}[lt]
    if lt == "B":
        return _class_cast if rt == "S" else _minus_one
    if rt == "B":
        if lt == "S":
            return lambda a, b: _bool_cmp(parse_java_boolean(a), b)
        return _minus_one
    if lt in "IL":
        if rt in "IL":
            return _int_cmp
        if rt == "D":
            return lambda a, b: double_compare(float(a), b)
        conv = _INTEGRAL[lt]
        return lambda a, b: _int_cmp(a, conv(b))
    if lt == "D":
        if rt in "IL":
            return lambda a, b: double_compare(a, float(b))
        return lambda a, b: double_compare(a, parse_java_double(b))
    # lt == "S", rt numeric
    if rt == "D":
        return lambda a, b: double_compare(parse_java_double(a), b)
    conv = _INTEGRAL[rt]
    return lambda a, b: _int_cmp(conv(a), b)


def java_type_name(t: str) -> str:
    """Java class name of a static type tag (for messages)."""
    return {"I": "Integer", "L": "Long", "D": "Double", "S": "String", "B": "Boolean", "N": "null"}[t]
