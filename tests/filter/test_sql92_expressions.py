"""SQL92 selector semantics: a table of expressions x properties with RocketMQ 4.9.7's results.

``ERR`` means Java throws while evaluating (a failed String->number conversion,
an illegal string ordering, a Boolean cast to String): the message does not match.
"""

from __future__ import annotations

import pytest

from broker.filter import EvaluationError, FilterParseError, clear_expression_cache, compile_expression

ERR = "ERR"

PROPS = {
    "i": "10",
    "neg": "-5",
    "big": "3000000000",
    "huge": "9223372036854775808",
    "f": "3.5",
    "fsuffix": "2.5f",
    "s": "abc",
    "t": "true",
    "tc": "TRUE",
    "no": "false",
    "q": "it's",
    "nan": "NaN",
    "z": "-0",
    "sp": " 7",
    "plus": "+7",
    "TAGS": "TagA",
    "KEYS": "k1 k2",
    "dollar$": "1",
}

CASES = [
    # integers: Integer literal, property converted with Integer.valueOf
    ("i = 10", True),
    ("i > 5", True),
    ("i >= 10", True),
    ("i < 10", False),
    ("i <= 9", False),
    ("i <> 10", False),
    ("i = 10L", True),  # 10L still fits an Integer
    ("plus = 7", True),  # Integer.valueOf accepts a leading '+'
    ("sp = 7", ERR),  # ... but no whitespace
    ("neg < -4", True),
    ("neg = -5", True),
    ("neg > - - -6", True),
    ("i > +5", True),
    # Integer conversion failures: the whole expression errors
    ("f > 3", ERR),  # "3.5" is not an Integer
    ("big > 5", ERR),  # out of Integer range for an Integer literal
    ("big > 2147483648", True),  # Long literal: Long.valueOf
    ("huge > 2147483648", ERR),  # out of Long range
    ("s = 1", ERR),
    ("s = 1 OR i = 10", ERR),  # left side throws before OR can look right
    ("i = 10 OR s = 1", True),  # short-circuit: right side never evaluated
    ("i = 9 AND s = 1", False),  # short-circuit AND
    ("s = 1 AND i = 9", ERR),
    # doubles: Double literal, Double.valueOf, Double.compare semantics
    ("f = 3.5", True),
    ("f > 3.49", True),
    ("f < 3.5E0", False),
    ("f BETWEEN 3.0E0 AND 4.", True),
    ("i = 10.0", True),
    ("i > 9.5", True),
    ("fsuffix = 2.5", True),  # Double.valueOf accepts a type suffix
    ("nan > 1E300", True),  # NaN is above everything in Double.compare
    ("nan = nan", True),
    ("z < 0.5", True),
    ("s > 1.5", ERR),
    (".5 < f", True),
    # strings
    ("s = 'abc'", True),
    ("s = 'ABC'", False),
    ("s <> 'abc'", False),
    ("q = 'it''s'", True),
    ("'abc' = s", True),
    ("KEYS = 'k1 k2'", True),
    ("TAGS = 'TagA'", True),
    ("dollar$ = 1", True),
    # two properties: '=' compares strings, ordering compares as doubles
    ("i = i", True),
    ("i > f", True),
    ("f < i", True),
    ("s > i", ERR),
    ("s = t", False),
    # booleans: Boolean.valueOf of the property
    ("t = TRUE", True),
    ("tc = TRUE", True),
    ("no = FALSE", True),
    ("s = TRUE", False),
    ("s = FALSE", True),
    ("t <> FALSE", True),
    ("TRUE = t", ERR),  # Java casts the Boolean to String
    ("1 = TRUE", False),  # Integer vs Boolean: never equal
    ("(i > 5) = TRUE", True),
    ("(i > 5) = (f > 1.0)", True),
    ("(i > 5) = (f > 1)", ERR),  # "3.5" is not an Integer
    # missing properties and three-valued logic
    ("missing = 'x'", None),
    ("missing <> 'x'", None),
    ("'x' = missing", False),  # null on the right of '=' is FALSE ...
    ("'x' <> missing", True),  # ... so '<>' is TRUE
    ("missing = other", True),  # null = null
    ("missing > 1", None),
    ("missing < 1", None),
    ("missing BETWEEN 1 AND 2", None),
    ("missing NOT BETWEEN 1 AND 2", None),
    ("missing IN ('a')", None),
    ("missing NOT IN ('a')", None),
    ("missing IS NULL", True),
    ("missing IS NOT NULL", False),
    ("i IS NULL", False),
    ("i IS NOT NULL", True),
    ("missing > 1 AND TRUE", None),
    ("missing > 1 AND FALSE", False),
    ("FALSE AND missing > 1", False),
    ("missing > 1 OR TRUE", True),
    ("missing > 1 OR FALSE", None),
    ("NOT (missing > 1)", None),
    ("NOT (i > 1)", False),
    ("NULL", None),
    ("NULL IS NULL", True),
    ("NOT NULL", None),
    ("TRUE", True),
    ("FALSE", False),
    ("TRUE AND NULL", None),
    ("FALSE OR NULL", None),
    # a bare property is a Boolean cast: a String is never TRUE
    ("t", False),
    ("missing", None),
    ("NOT t", True),
    ("t OR i = 10", True),
    # NOT binds tighter than comparisons: NOT i = 10 is (NOT i) = 10
    ("NOT i = 10", False),
    ("NOT (i = 10)", False),
    ("NOT (i = 9)", True),
    # unary minus of anything but a number is null
    ("-i IS NULL", True),
    ("-i = 1", None),
    ("-(i > 1) IS NULL", True),
    ("-'x' IS NULL", True),
    # BETWEEN / NOT BETWEEN
    ("i BETWEEN 10 AND 20", True),
    ("i BETWEEN 11 AND 20", False),
    ("i BETWEEN -5 AND 10", True),
    ("i NOT BETWEEN 11 AND 20", True),
    ("i NOT BETWEEN 10 AND 20", False),
    ("i BETWEEN 1 AND 2 OR i BETWEEN 9 AND 11", True),
    ("i BETWEEN 1 AND 20 AND s = 'abc'", True),
    ("s BETWEEN 1 AND 2", ERR),
    # IN / NOT IN (strings only, compared as strings)
    ("s IN ('abc', 'def')", True),
    ("s IN ('x', 'y', 'z', 'w', 'v', 'abc')", True),
    ("s IN ('ABC')", False),
    ("i IN ('10')", True),
    ("s NOT IN ('abc')", False),
    ("s NOT IN ('x', 'y')", True),
    ("q IN ('it''s')", True),
    ("(s) IN ('abc')", True),
    # case-insensitive keywords, comments, whitespace
    ("i > 5 and s = 'abc'", True),
    ("i > 5 AnD NoT (s = 'x')", True),
    ("s is not null", True),
    ("s Not In ('x')", True),
    ("i between 1 and 20", True),
    ("true", True),
    ("i > 5 -- trailing comment", True),
    ("i > 5 -- comment\n AND s = 'abc'", True),
    ("i /* block\n comment */ > 5", True),
    ("\t i\n>\r5\f", True),
    ("s = 'a -- not a comment'", False),
    # precedence: AND over OR, '=' below '>'
    ("i = 1 OR i = 10 AND s = 'abc'", True),
    ("(i = 1 OR i = 10) AND s = 'x'", False),
    ("i = 10 OR s = 'x' AND FALSE", True),
    ("i > 5 = TRUE", True),
    # chains of AND/OR: evaluated left to right, stopping at the deciding operand
    ("missing > 1 OR FALSE OR i = 10", True),
    ("missing > 1 OR FALSE OR i = 9", None),
    ("i = 10 AND missing > 1 AND TRUE", None),
    ("i = 10 AND missing > 1 AND FALSE", False),
    ("TRUE OR s = 1 OR FALSE", True),
    ("FALSE OR s = 1 OR TRUE", ERR),
    ("FALSE AND s = 1 AND TRUE", False),
    ("TRUE AND TRUE AND TRUE AND i = 10", True),
]


@pytest.mark.parametrize(("expression", "expected"), CASES, ids=[c[0] for c in CASES])
def test_expression_table(expression, expected):
    e = compile_expression("SQL92", expression)
    if expected == ERR:
        with pytest.raises(EvaluationError):
            e.evaluate_raw(PROPS)
        assert e.evaluate(PROPS) is False
    else:
        assert e.evaluate_raw(PROPS) is expected
        assert e.evaluate(PROPS) is (expected is True)


def test_no_properties_means_all_null():
    e = compile_expression("SQL92", "a IS NULL AND b IS NULL")
    assert e.evaluate(None) is True
    assert e.evaluate({}) is True
    assert compile_expression("SQL92", "a = 'x'").evaluate(None) is False


BAD = [
    ("", "empty expression"),
    ("   ", "empty expression"),
    ("a >", "unexpected end of expression"),
    ("a > 5 AND", "unexpected end of expression"),
    ("(a = 1", "expected one of"),
    ("a = 1)", "unexpected ')' at line 1, column 6"),
    ("a = 'abc", "unterminated string literal at line 1, column 5"),
    ("a ! 1", "unexpected character '!' at line 1, column 3"),
    ("a = 1 b", "unexpected 'b' at line 1, column 7"),
    ("a == 1", "unexpected '=' at line 1, column 4"),
    ("a = 05", "unexpected '5'"),
    ("a IN ()", "expected one of: <string literal>"),
    ("a IN (1, 2)", "expected one of: <string literal>"),
    ("a LIKE 'x%'", "unexpected 'LIKE'"),
    ("in = 1", "unexpected keyword 'in'"),
    ("a = 1 OR null = 2", "cannot be compared"),
    ("a = NULL", "'NULL' cannot be compared."),
    ("NULL <> a", "'NULL' cannot be compared."),
    ("a > 'x'", "Value ''x'' cannot be compared."),
    ("a >= TRUE", "Value 'TRUE' cannot be compared."),
    ("(a > 1) > 0", "Value 'a > 1' cannot be compared."),
    ("TRUE = 1", "'TRUE' cannot be compared with '1'"),
    ("5", "Expression will not result in a boolean value: 5"),
    ("'x'", "Expression will not result in a boolean value: 'x'"),
    ("-a", "Expression will not result in a boolean value: -a"),
    ("NOT 5", "Expression will not result in a boolean value: 5"),
    ("a = 1 AND 3", "Expression will not result in a boolean value: 3"),
    ("a BETWEEN 10 AND 1", "Illegal values of between"),
    ("a BETWEEN NULL AND 1", "values can not be null"),
    ("a BETWEEN 'x' AND 'y'", "cannot be compared"),
    ("-a IN ('x')", "Expected a property for In expression"),
    ("a = 9223372036854775808", "9223372036854775808"),
    ("a = 1e400", "is greater than 1.7976931348623157E308"),
    # RocketMQ 4.9.7 refuses float literals below Double.MIN_VALUE, even 0.0
    ("a = 0.0", "0.0 is less than 4.9E-324"),
    ("a > --5\n", "unexpected end of expression"),  # '--' starts a comment
]


@pytest.mark.parametrize(("expression", "message"), BAD, ids=[b[0] or "<empty>" for b in BAD])
def test_bad_expressions(expression, message):
    with pytest.raises(FilterParseError) as ei:
        compile_expression("SQL92", expression)
    assert message in str(ei.value)
    assert str(ei.value).startswith("Invalid MessageSelector")


def test_parse_error_lists_expected_tokens():
    with pytest.raises(FilterParseError) as ei:
        compile_expression("SQL92", "a >")
    msg = str(ei.value)
    for token in ("<identifier>", "<integer>", "<float>", "<string literal>", "NOT", "TRUE"):
        assert token in msg


def test_errors_are_cached_and_repeatable():
    clear_expression_cache()
    for _ in range(2):
        with pytest.raises(FilterParseError, match="unexpected end"):
            compile_expression("SQL92", "a >")


def test_compiled_once_and_cached():
    clear_expression_cache()
    e1 = compile_expression("SQL92", "a > 1")
    e2 = compile_expression("SQL92", "a > 1")
    assert e1 is e2
    assert compile_expression("SQL92", "a > 2") is not e1


def test_unknown_expression_type():
    with pytest.raises(FilterParseError, match="Unsupported expression type"):
        compile_expression("sql92", "a > 1")
    with pytest.raises(FilterParseError, match="Unsupported expression type"):
        compile_expression("CLASS", "a > 1")


def test_tag_expression_checks_tag_strings():
    e = compile_expression("TAG", "TagA || TagB")
    assert e.evaluate({"TAGS": "TagA"}) is True
    assert e.evaluate({"TAGS": "TagC"}) is False
    assert e.evaluate({}) is False
    assert compile_expression("TAG", "*").evaluate({}) is True
    assert compile_expression(None, "").evaluate(None) is True


def test_long_chains_and_deep_parentheses_compile():
    assert compile_expression("SQL92", " AND ".join(["a = 1"] * 1500)).evaluate({"a": "1"}) is True
    assert compile_expression("SQL92", " OR ".join(["a = 2"] * 1500) + " OR a = 1").evaluate({"a": "1"}) is True
    assert compile_expression("SQL92", "(" * 3000 + "a = 1" + ")" * 3000).evaluate({"a": "1"}) is True


def test_overlong_expression_is_refused():
    ok = " AND ".join(["a = 1"] * 1500)  # ~15 KB
    assert compile_expression("SQL92", ok).evaluate({"a": "1"})
    with pytest.raises(FilterParseError, match="expression too long"):
        compile_expression("SQL92", " AND ".join(["a = 1"] * 2000))


def test_too_deep_nesting_is_a_parse_error_not_a_crash():
    with pytest.raises(FilterParseError, match="nested too deeply"):
        compile_expression("SQL92", "NOT " * 3000 + "(a = 1)")
