"""Compile SQL92 selectors into Python closures with RocketMQ 4.9.7 semantics.

The lark tree is walked once; every node becomes a closure ``fn(get)`` where
``get`` is the property lookup (``properties.get``). Each node also carries
what Java knows about it at parse time (constant? boolean expression?
property?) and its static type (see java_types), so the parse-time checks of
RocketMQ's ``ComparisonExpression``/``SelectorParser`` apply and comparisons
are specialised (``a > 5`` converts the property with ``Integer.valueOf`` and
compares ints, nothing else).

Evaluation rules (all from RocketMQ's expression classes):

* a property is its string value or null; every value is typed
  Integer/Long/Double (literals), String, Boolean;
* ``=``: null on the left gives null, null on the right gives FALSE, both null
  give TRUE; ``<>`` is ``NOT =``; ``IS NULL``/``IS NOT NULL`` never give null;
* ``> >= < <=``: any null operand gives null; two strings compare as doubles;
* a string against a number/boolean is converted to the other type, a failed
  conversion is an evaluation error (the message does not match);
* AND/OR are three-valued and short-circuit left to right;
* a bare property used as a condition is FALSE (its value is never a Boolean)
  or null;
* unary minus of anything but a number is null.

The message matches only if the result is exactly TRUE.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from broker.filter.java_types import (
    INT_MAX,
    INT_MIN,
    LONG_MAX,
    EvaluationError,
    comparator,
    double_compare,
    parse_java_boolean,
    parse_java_double,
    parse_java_int,
    parse_java_long,
)
from broker.filter.selector_parser import FilterParseError, parse_selector
from common.filter import ExpressionType, parse_tags

if TYPE_CHECKING:  # lark is imported when the first expression is compiled, not at broker start-up
    from lark import Token, Tree

__all__ = [
    "Expression",
    "SqlExpression",
    "TagExpression",
    "compile_expression",
    "clear_expression_cache",
    "EvaluationError",
    "FilterParseError",
]

_Fn = Callable[[Callable[[str], object]], object]

# Java Double.MAX_VALUE / Double.MIN_VALUE as printed by Java, for createFloat's messages.
_DOUBLE_MAX_TEXT = "1.7976931348623157E308"
_DOUBLE_MIN_TEXT = "4.9E-324"
_DOUBLE_MIN = 5e-324

# kinds of nodes, as Java's class hierarchy sees them
_CONST = "const"  # ConstantExpression (number or string)
_BOOL_CONST = "bool_const"  # BooleanConstantExpression TRUE/FALSE/NULL
_PROP = "prop"  # PropertyExpression
_BOOL = "bool"  # any other BooleanExpression
_OTHER = "other"  # unary minus


class _Node:
    __slots__ = ("kind", "jtype", "fn", "value", "name", "text")

    def __init__(self, kind: str, jtype: str, fn: _Fn, text: str, value=None, name: str | None = None):
        self.kind = kind
        self.jtype = jtype
        self.fn = fn
        self.text = text
        self.value = value
        self.name = name

    @property
    def is_constant(self) -> bool:
        return self.kind in (_CONST, _BOOL_CONST)

    @property
    def is_boolean(self) -> bool:
        return self.kind in (_BOOL_CONST, _BOOL)


def _const_fn(v) -> _Fn:
    return lambda get: v


class _Compiler:
    """One compilation of one expression string."""

    def __init__(self, source: str):
        self.source = source

    # -- helpers ------------------------------------------------------------

    def text_of(self, t: Tree | Token) -> str:
        # imported on first use: the SQL92 compiler (lark) stays off start-up (start-up time)
        from lark import Token

        if isinstance(t, Token):
            return str(t)
        meta = t.meta
        if getattr(meta, "empty", True):
            return "?"
        return self.source[meta.start_pos : meta.end_pos]

    def error(self, t: Tree | Token, msg: str) -> FilterParseError:
        # imported on first use: the SQL92 compiler (lark) stays off start-up (start-up time)
        from lark import Token

        line = getattr(t, "line", None) if isinstance(t, Token) else getattr(t.meta, "line", None)
        col = getattr(t, "column", None) if isinstance(t, Token) else getattr(t.meta, "column", None)
        where = f" (at line {line}, column {col})" if line is not None else ""
        return FilterParseError(f"Invalid MessageSelector: {msg}{where}")

    def as_boolean(self, node: _Node, t: Tree) -> _Node:
        """SelectorParser.asBooleanExpression."""
        if node.is_boolean:
            return node
        if node.kind == _PROP:
            name = node.name

            def cast(get, name=name):
                # a property value is a String, never a Boolean
                return None if get(name) is None else False

            return _Node(_BOOL, "B", cast, node.text)
        raise self.error(t, f"Expression will not result in a boolean value: {node.text}")

    def check_less_than_operand(self, node: _Node, t: Tree) -> None:
        if node.is_constant:
            if node.jtype in ("I", "L", "D"):
                return
            raise self.error(t, f"Value '{node.text}' cannot be compared.")
        if node.is_boolean:
            raise self.error(t, f"Value '{node.text}' cannot be compared.")

    def check_equal_operand(self, node: _Node, t: Tree) -> None:
        if node.is_constant and node.value is None:
            raise self.error(t, f"'{node.text}' cannot be compared.")

    # -- dispatch -------------------------------------------------------------

    def compile(self, t: Tree | Token) -> _Node:
        # imported on first use: the SQL92 compiler (lark) stays off start-up (start-up time)
        from lark import Token

        if isinstance(t, Token):  # pragma: no cover - the grammar wraps every token in a rule
            raise self.error(t, f"unexpected token {t!r}")
        handler = getattr(self, "c_" + t.data, None)
        if handler is None:  # pragma: no cover - grammar and compiler out of sync
            raise self.error(t, f"unsupported construct {t.data}")
        return handler(t)

    def c_start(self, t: Tree) -> _Node:
        return self.as_boolean(self.compile(t.children[0]), t)

    # -- literals ---------------------------------------------------------------

    def c_string(self, t: Tree) -> _Node:
        image = str(t.children[0])
        v = image[1:-1].replace("''", "'")
        return _Node(_CONST, "S", _const_fn(v), self.text_of(t), value=v)

    def c_decimal(self, t: Tree) -> _Node:
        text = str(t.children[0])
        digits = text[:-1] if text[-1] in "lL" else text
        v = int(digits)
        if v > LONG_MAX:
            raise self.error(t, f'For input string: "{digits}" (out of the range of Long)')
        jtype = "I" if INT_MIN <= v <= INT_MAX else "L"
        return _Node(_CONST, jtype, _const_fn(v), self.text_of(t), value=v)

    def c_float(self, t: Tree) -> _Node:
        text = str(t.children[0])
        v = float(text)
        if v > 1.7976931348623157e308:
            raise self.error(t, f"{text} is greater than {_DOUBLE_MAX_TEXT}")
        if v < _DOUBLE_MIN:
            # RocketMQ 4.9.7 compares with Double.MIN_VALUE, the smallest *positive*
            # double, so even 0.0 is refused; kept for compatibility.
            raise self.error(t, f"{text} is less than {_DOUBLE_MIN_TEXT}")
        return _Node(_CONST, "D", _const_fn(v), self.text_of(t), value=v)

    def c_true(self, t: Tree) -> _Node:
        return _Node(_BOOL_CONST, "B", _const_fn(True), "TRUE", value=True)

    def c_false(self, t: Tree) -> _Node:
        return _Node(_BOOL_CONST, "B", _const_fn(False), "FALSE", value=False)

    def c_null(self, t: Tree) -> _Node:
        return _Node(_BOOL_CONST, "N", _const_fn(None), "NULL", value=None)

    def c_prop(self, t: Tree) -> _Node:
        name = str(t.children[0])
        return _Node(_PROP, "S", lambda get, name=name: get(name), name, name=name)

    # -- unary --------------------------------------------------------------------

    def c_neg(self, t: Tree) -> _Node:
        operand = self.compile(t.children[0])
        text = self.text_of(t)
        if operand.kind in (_CONST, _OTHER) and operand.jtype in ("I", "L", "D"):
            # Negating a literal cannot overflow: literals are >= 0 and <= Long.MAX_VALUE.
            v = -operand.value
            return _Node(_OTHER, operand.jtype, _const_fn(v), text, value=v)
        if operand.kind == _BOOL:
            inner = operand.fn

            def neg_bool(get, inner=inner):
                inner(get)  # evaluated for its errors; a Boolean is not a Number
                return None

            return _Node(_OTHER, "N", neg_bool, text)
        # strings, properties (string values), booleans and null negate to null
        return _Node(_OTHER, "N", _const_fn(None), text)

    def c_not_(self, t: Tree) -> _Node:
        operand = self.as_boolean(self.compile(t.children[0]), t)
        inner = operand.fn

        def not_(get, inner=inner):
            v = inner(get)
            return None if v is None else not v

        return _Node(_BOOL, "B", not_, self.text_of(t))

    # -- logic ----------------------------------------------------------------------

    def _chain(self, t: Tree, op: str) -> list[_Node]:
        """Operands of a left-nested AND/OR chain, in source order, without recursing down it."""
        # imported on first use: the SQL92 compiler (lark) stays off start-up (start-up time)
        from lark import Tree

        rights: list[Tree] = []
        node = t
        while isinstance(node, Tree) and node.data == op:
            rights.append(node.children[1])
            node = node.children[0]
        operands = [node] + rights[::-1]
        return [self.as_boolean(self.compile(c), t) for c in operands]

    def c_and_(self, t: Tree) -> _Node:
        return _logic_and([n.fn for n in self._chain(t, "and_")], self.text_of(t))

    def c_or_(self, t: Tree) -> _Node:
        return _logic_or([n.fn for n in self._chain(t, "or_")], self.text_of(t))

    # -- equality ---------------------------------------------------------------------

    def _equal(self, left: _Node, right: _Node, t: Tree) -> _Node:
        """ComparisonExpression.createEqual (with its operand checks)."""
        self.check_equal_operand(left, t)
        self.check_equal_operand(right, t)
        if left.is_constant and right.is_constant and left.is_boolean and not right.is_boolean:
            raise self.error(t, f"'{left.text}' cannot be compared with '{right.text}'")
        return self._do_equal(left, right, t)

    def _do_equal(self, left: _Node, right: _Node, t: Tree) -> _Node:
        text = self.text_of(t)
        if left.kind == _PROP and right.is_constant and right.value is not None:
            return _Node(_BOOL, "B", _prop_equals_const(left.name, right.jtype, right.value), text)
        cmp = comparator(left.jtype, right.jtype)
        lf, rf = left.fn, right.fn

        def eq(get, lf=lf, rf=rf, cmp=cmp):
            lv = lf(get)
            rv = rf(get)
            if lv is None:
                return True if rv is None else None
            if rv is None:
                return False
            return cmp(lv, rv) == 0

        return _Node(_BOOL, "B", eq, text)

    def c_eq(self, t: Tree) -> _Node:
        return self._equal(self.compile(t.children[0]), self.compile(t.children[1]), t)

    def c_ne(self, t: Tree) -> _Node:
        inner = self._equal(self.compile(t.children[0]), self.compile(t.children[1]), t).fn

        def ne(get, inner=inner):
            v = inner(get)
            return None if v is None else not v

        return _Node(_BOOL, "B", ne, self.text_of(t))

    def c_is_null(self, t: Tree) -> _Node:
        left = self.compile(t.children[0])
        lf = left.fn
        return _Node(_BOOL, "B", lambda get, lf=lf: lf(get) is None, self.text_of(t))

    def c_is_not_null(self, t: Tree) -> _Node:
        left = self.compile(t.children[0])
        lf = left.fn
        return _Node(_BOOL, "B", lambda get, lf=lf: lf(get) is not None, self.text_of(t))

    # -- ordering ------------------------------------------------------------------------

    def _ordering(self, left: _Node, right: _Node, op: str, t: Tree, text: str | None = None) -> _Node:
        """createGreaterThan / GreaterThanEqual / LessThan / LessThanEqual."""
        self.check_less_than_operand(left, t)
        self.check_less_than_operand(right, t)
        test = _TESTS[op]
        text = text if text is not None else self.text_of(t)
        if left.kind == _PROP and right.kind in (_CONST, _OTHER) and right.value is not None:
            # right is a number here: check_less_than_operand refused other constants,
            # and a non-null folded negation is numeric
            return _Node(_BOOL, "B", _prop_order_const(left.name, right.jtype, right.value, test), text)
        if left.jtype == "S" and right.jtype == "S":
            cmp = _string_order_compare
        else:
            cmp = comparator(left.jtype, right.jtype)
        lf, rf = left.fn, right.fn

        def order(get, lf=lf, rf=rf, cmp=cmp, test=test):
            lv = lf(get)
            if lv is None:
                return None
            rv = rf(get)
            if rv is None:
                return None
            return test(cmp(lv, rv))

        return _Node(_BOOL, "B", order, text)

    def _binary_ordering(self, t: Tree, op: str) -> _Node:
        return self._ordering(self.compile(t.children[0]), self.compile(t.children[1]), op, t)

    def c_gt(self, t: Tree) -> _Node:
        return self._binary_ordering(t, ">")

    def c_ge(self, t: Tree) -> _Node:
        return self._binary_ordering(t, ">=")

    def c_lt(self, t: Tree) -> _Node:
        return self._binary_ordering(t, "<")

    def c_le(self, t: Tree) -> _Node:
        return self._binary_ordering(t, "<=")

    def c_between(self, t: Tree) -> _Node:
        value, low, high = (self.compile(c) for c in t.children)
        if low.is_constant and high.is_constant:
            if low.value is None or high.value is None:
                raise self.error(t, "Illegal values of between, values can not be null!")
            try:
                bad = comparator(high.jtype, low.jtype)(high.value, low.value) < 0
            except EvaluationError as e:
                raise self.error(t, str(e)) from None
            if bad:
                raise self.error(
                    t,
                    f"Illegal values of between, left value({low.text}) must less than or equal to "
                    f"right value({high.text})",
                )
        ge = self._ordering(value, low, ">=", t)
        le = self._ordering(value, high, "<=", t)
        return _logic_and([ge.fn, le.fn], self.text_of(t))

    def c_not_between(self, t: Tree) -> _Node:
        value, low, high = (self.compile(c) for c in t.children)
        lt = self._ordering(value, low, "<", t)
        gt = self._ordering(value, high, ">", t)
        return _logic_or([lt.fn, gt.fn], self.text_of(t))

    # -- IN ------------------------------------------------------------------------------------

    def _in(self, t: Tree, negate: bool) -> _Node:
        left = self.compile(t.children[0])
        if left.kind != _PROP:
            raise self.error(t, f"Expected a property for In expression, got: {left.text}")
        values = frozenset(str(s)[1:-1].replace("''", "'") for s in t.children[1].children)
        name = left.name

        def in_(get, name=name, values=values, negate=negate):
            v = get(name)
            if v is None:
                return None
            return (v in values) is not negate

        return _Node(_BOOL, "B", in_, self.text_of(t))

    def c_in_(self, t: Tree) -> _Node:
        return self._in(t, False)

    def c_not_in(self, t: Tree) -> _Node:
        return self._in(t, True)


def _logic_chain(fns: list[_Fn], text: str, stop: bool) -> _Node:
    """A chain of one logic operator, left to right: the first operand that is ``stop`` (FALSE for
    AND, TRUE for OR) decides; else null if any operand was null, else ``not stop``."""
    done = not stop
    if len(fns) == 2:
        lf, rf = fns

        def two(get, lf=lf, rf=rf, stop=stop, done=done):
            lv = lf(get)
            if lv is stop:
                return stop
            rv = rf(get)
            if rv is stop:
                return stop
            if lv is None or rv is None:
                return None
            return done

        return _Node(_BOOL, "B", two, text)
    fns_t = tuple(fns)

    def chain(get, fns=fns_t, stop=stop, done=done):
        unknown = False
        for f in fns:
            v = f(get)
            if v is stop:
                return stop
            if v is None:
                unknown = True
        return None if unknown else done

    return _Node(_BOOL, "B", chain, text)


def _logic_and(fns: list[_Fn], text: str) -> _Node:
    """LogicExpression.createAND folded over a chain: ((a AND b) AND c) stops at the first FALSE."""
    return _logic_chain(fns, text, False)


def _logic_or(fns: list[_Fn], text: str) -> _Node:
    """LogicExpression.createOR folded over a chain (stops at the first TRUE)."""
    return _logic_chain(fns, text, True)


_TESTS: dict[str, Callable[[int], bool]] = {
    ">": lambda c: c > 0,
    ">=": lambda c: c >= 0,
    "<": lambda c: c < 0,
    "<=": lambda c: c <= 0,
}


def _string_order_compare(a: str, b: str) -> int:
    """Ordering two strings: both must parse as doubles (ComparisonExpression.evaluate)."""
    try:
        return double_compare(parse_java_double(a), parse_java_double(b))
    except EvaluationError:
        raise EvaluationError(
            f"It's illegal to compare string by '>=', '>', '<', '<='. lv={a}, rv={b}"
        ) from None


def _prop_equals_const(name: str, jtype: str, c) -> _Fn:
    """``property = constant`` specialised by the constant's type."""
    if jtype == "S":

        def eq(get, name=name, c=c):
            v = get(name)
            return None if v is None else v == c

    elif jtype == "I":

        def eq(get, name=name, c=c):
            v = get(name)
            return None if v is None else parse_java_int(v) == c

    elif jtype == "L":

        def eq(get, name=name, c=c):
            v = get(name)
            return None if v is None else parse_java_long(v) == c

    elif jtype == "D":

        def eq(get, name=name, c=c):
            v = get(name)
            return None if v is None else double_compare(parse_java_double(v), c) == 0

    else:  # "B"

        def eq(get, name=name, c=c):
            v = get(name)
            return None if v is None else parse_java_boolean(v) is c

    return eq


def _prop_order_const(name: str, jtype: str, c, test: Callable[[int], bool]) -> _Fn:
    """``property <op> numeric constant`` specialised (the constant is I, L or D)."""
    if jtype == "D":

        def order(get, name=name, c=c, test=test):
            v = get(name)
            if v is None:
                return None
            d = parse_java_double(v)
            # fast path; NaN and signed zeros need Double.compare
            if d < c:
                return test(-1)
            if d > c:
                return test(1)
            return test(double_compare(d, c))

        return order
    conv = parse_java_int if jtype == "I" else parse_java_long

    def order_int(get, name=name, c=c, test=test, conv=conv):
        v = get(name)
        if v is None:
            return None
        n = conv(v)
        return test((n > c) - (n < c))

    return order_int


_EMPTY: dict[str, str] = {}


class Expression:
    """A compiled filter expression."""

    __slots__ = ("expression_type", "expression")

    def __init__(self, expression_type: str, expression: str):
        self.expression_type = expression_type
        self.expression = expression

    def evaluate(self, properties: Mapping[str, str] | None) -> bool:
        """True only if the expression is exactly TRUE for ``properties``; errors count as no match."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.expression_type!r}, {self.expression!r})"


class SqlExpression(Expression):
    """A compiled SQL92 selector."""

    __slots__ = ("_fn",)

    def __init__(self, expression: str, fn: _Fn):
        super().__init__(ExpressionType.SQL92, expression)
        self._fn = fn

    def evaluate(self, properties: Mapping[str, str] | None) -> bool:
        get = (properties if properties is not None else _EMPTY).get
        try:
            return self._fn(get) is True
        except Exception:
            # Java logs and treats any evaluation failure as "not matched".
            return False

    def evaluate_raw(self, properties: Mapping[str, str] | None) -> bool | None:
        """Three-valued result (True/False/None); raises EvaluationError like Java would throw."""
        get = (properties if properties is not None else _EMPTY).get
        return self._fn(get)


class TagExpression(Expression):
    """A TAG expression evaluated by tag *string* against the ``TAGS`` property (client-side check)."""

    __slots__ = ("tags", "sub_all")

    def __init__(self, expression: str):
        super().__init__(ExpressionType.TAG, expression)
        try:
            tags, _codes = parse_tags(expression)
        except ValueError as e:
            raise FilterParseError(str(e)) from None
        self.tags = frozenset(tags)
        self.sub_all = not tags and (not expression or expression == "*")

    def evaluate(self, properties: Mapping[str, str] | None) -> bool:
        if self.sub_all:
            return True
        tag = properties.get("TAGS") if properties is not None else None
        return tag is not None and tag in self.tags


def _compile_sql(expression: str) -> SqlExpression:
    tree = parse_selector(expression)
    compiler = _Compiler(expression)
    try:
        node = compiler.compile(tree)
    except RecursionError:
        # e.g. thousands of nested NOTs; AND/OR chains are flattened and fine
        raise FilterParseError("Invalid MessageSelector: expression nested too deeply") from None
    return SqlExpression(expression, node.fn)


_CACHE_MAX = 1024
_cache: OrderedDict[tuple[str, str], Expression | FilterParseError] = OrderedDict()
_cache_lock = threading.Lock()


def compile_expression(expression_type: str, expression: str) -> Expression:
    """Compile (once; results and errors are cached by string) a filter expression.

    ``SQL92`` gives a :class:`SqlExpression`; ``TAG`` (or ``None``/``""``) a
    :class:`TagExpression`. Raises FilterParseError for a bad expression or an
    unknown type.
    """
    if ExpressionType.is_tag_type(expression_type):
        expression_type = ExpressionType.TAG
    key = (expression_type, expression)
    with _cache_lock:
        hit = _cache.get(key)
        if hit is not None:
            _cache.move_to_end(key)
    if hit is None:
        try:
            if expression_type == ExpressionType.SQL92:
                hit = _compile_sql(expression)
            elif expression_type == ExpressionType.TAG:
                hit = TagExpression(expression)
            else:
                hit = FilterParseError(f"Unsupported expression type: {expression_type!r}")
        except FilterParseError as e:
            hit = e
        with _cache_lock:
            _cache[key] = hit
            if len(_cache) > _CACHE_MAX:
                _cache.popitem(last=False)
    if isinstance(hit, FilterParseError):
        raise FilterParseError(str(hit))
    return hit


def clear_expression_cache() -> None:
    """Forget every compiled expression (tests, config reload)."""
    with _cache_lock:
        _cache.clear()
