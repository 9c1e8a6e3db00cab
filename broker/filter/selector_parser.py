"""SQL92 message selector grammar (RocketMQ's JMS-derived SelectorParser) on lark LALR.

Tokens and precedence follow RocketMQ 4.9.7's ``SelectorParser.jj``:

* keywords (``AND OR NOT BETWEEN IN IS NULL TRUE FALSE``) are case-insensitive
  and reserved; identifiers are ``[a-zA-Z_$][a-zA-Z0-9_$]*``;
* ``'...'`` strings with ``''`` for a quote; integers ``0`` or ``[1-9][0-9]*``
  with an optional ``L``; floats ``1.``, ``1.5``, ``.5``, ``1e3``, ``1.5E-3``;
* comments ``-- ...`` (to end of line) and ``/* ... */``;
* precedence, loosest first: OR, AND, ``= <> IS [NOT] NULL``,
  ``> >= < <= [NOT] BETWEEN [NOT] IN``, unary ``+ - NOT``.

Unlike the Java parser, which silently stops at the first token it cannot
use, trailing input is an error here (``a = 1 b`` is rejected, not read as
``a = 1``), and a ``--`` comment may end the input without a newline.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # lark is imported when the first expression is parsed, not at broker start-up
    from lark import Lark, Tree

__all__ = ["FilterParseError", "parse_selector", "GRAMMAR", "RESERVED_WORDS", "MAX_EXPRESSION_LENGTH"]


class FilterParseError(ValueError):
    """The expression is not valid; the message says where and why (SUBSCRIPTION_PARSE_FAILED remark)."""


GRAMMAR = r"""
start: or_expr

?or_expr: and_expr
    | or_expr _OR and_expr                      -> or_

?and_expr: eq_expr
    | and_expr _AND eq_expr                     -> and_

?eq_expr: cmp_expr
    | eq_expr "=" cmp_expr                      -> eq
    | eq_expr "<>" cmp_expr                     -> ne
    | eq_expr _IS _NULL                         -> is_null
    | eq_expr _IS _NOT _NULL                    -> is_not_null

?cmp_expr: unary
    | cmp_expr ">" unary                        -> gt
    | cmp_expr ">=" unary                       -> ge
    | cmp_expr "<" unary                        -> lt
    | cmp_expr "<=" unary                       -> le
    | cmp_expr _BETWEEN unary _AND unary        -> between
    | cmp_expr _NOT _BETWEEN unary _AND unary   -> not_between
    | cmp_expr _IN "(" str_list ")"             -> in_
    | cmp_expr _NOT _IN "(" str_list ")"        -> not_in

?unary: "+" unary
    | "-" unary                                 -> neg
    | _NOT unary                                -> not_
    | primary

?primary: STRING                                -> string
    | DECIMAL                                   -> decimal
    | FLOAT                                     -> float
    | _TRUE                                     -> true
    | _FALSE                                    -> false
    | _NULL                                     -> null
    | ID                                        -> prop
    | "(" or_expr ")"

str_list: STRING ("," STRING)*

_OR: "OR"i
_AND: "AND"i
_NOT: "NOT"i
_IS: "IS"i
_NULL: "NULL"i
_TRUE: "TRUE"i
_FALSE: "FALSE"i
_BETWEEN: "BETWEEN"i
_IN: "IN"i
ID: /[a-z_$][a-z0-9_$]*/i
STRING: /'(?:''|[^'])*'/
FLOAT.3: /(?:[0-9]+\.[0-9]*(?:e[+-]?[0-9]+)?|\.[0-9]+(?:e[+-]?[0-9]+)?|[0-9]+e[+-]?[0-9]+)/i
DECIMAL.2: /0|[1-9][0-9]*l?/i
LINE_COMMENT.5: /--[^\n\r]*/
BLOCK_COMMENT.5: /\/\*[^*]*\*+(?:[^\/*][^*]*\*+)*\//
WS: /[ \t\n\r\f]+/
%ignore WS
%ignore LINE_COMMENT
%ignore BLOCK_COMMENT
"""

# Terminal names as a user would write them, for "expected one of" lists.
_TERMINAL_TEXT = {
    "_OR": "OR",
    "_AND": "AND",
    "_NOT": "NOT",
    "_IS": "IS",
    "_NULL": "NULL",
    "_TRUE": "TRUE",
    "_FALSE": "FALSE",
    "_BETWEEN": "BETWEEN",
    "_IN": "IN",
    "ID": "<identifier>",
    "STRING": "<string literal>",
    "FLOAT": "<float>",
    "DECIMAL": "<integer>",
    "EQUAL": "'='",
    "LESSTHAN": "'<'",
    "MORETHAN": "'>'",
    "__ANON_0": "'<>'",
    "__ANON_1": "'>='",
    "__ANON_2": "'<='",
    "LPAR": "'('",
    "RPAR": "')'",
    "COMMA": "','",
    "PLUS": "'+'",
    "MINUS": "'-'",
    "$END": "<end of expression>",
}

# Not a RocketMQ limit: expressions arrive in heartbeats and compile on the
# broker, so an absurdly long one is refused instead of stalling the broker
# (16 KiB compiles in ~0.1 s; real filters are a few hundred bytes).
MAX_EXPRESSION_LENGTH = 16 * 1024

RESERVED_WORDS = frozenset({"NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS"})

_parser: Lark | None = None
_parser_lock = threading.Lock()


def _get_parser() -> Lark:
    global _parser
    if _parser is None:
        with _parser_lock:
            if _parser is None:
                # imported on first use: the SQL92 compiler (lark) stays off start-up (start-up time)
                from lark import Lark

                p = Lark(GRAMMAR, parser="lalr", propagate_positions=True, maybe_placeholders=False)
                # Anonymous operator terminals get generated names; map them from the pattern text.
                for t in p.terminals:
                    if t.name.startswith("__ANON"):
                        _TERMINAL_TEXT[t.name] = repr(t.pattern.value)
                _parser = p
    return _parser


def _expected_text(names) -> str:
    shown = sorted({_TERMINAL_TEXT.get(n, n) for n in names})
    return ", ".join(shown)


def _describe_token(tok) -> str:
    if tok.type == "$END":
        return "end of expression"
    return repr(str(tok))


def parse_selector(expression: str) -> Tree:
    """Parse ``expression`` into a lark tree; raises FilterParseError with position and expectation."""
    if not isinstance(expression, str):
        raise FilterParseError("Invalid MessageSelector: expression must be a string")
    if not expression.strip():
        raise FilterParseError("Invalid MessageSelector: empty expression")
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise FilterParseError(
            f"Invalid MessageSelector: expression too long ({len(expression)} chars, at most {MAX_EXPRESSION_LENGTH})"
        )
    from lark import Tree
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

    try:
        tree = _get_parser().parse(expression)
    except UnexpectedCharacters as e:
        ch = expression[e.pos_in_stream] if e.pos_in_stream < len(expression) else ""
        if ch == "'":
            what = "unterminated string literal"
        else:
            what = f"unexpected character {ch!r}"
        raise FilterParseError(
            f"Invalid MessageSelector: {what} at line {e.line}, column {e.column}"
        ) from None
    except UnexpectedEOF as e:
        raise FilterParseError(
            f"Invalid MessageSelector: unexpected end of expression; "
            f"expected one of: {_expected_text(e.expected)}"
        ) from None
    except UnexpectedToken as e:
        tok = e.token
        if tok.type == "$END":
            what = "unexpected end of expression"
        else:
            what = f"unexpected {_describe_token(tok)} at line {e.line}, column {e.column}"
        raise FilterParseError(
            f"Invalid MessageSelector: {what}; expected one of: {_expected_text(e.expected)}"
        ) from None
    except UnexpectedInput as e:  # pragma: no cover - other lark input errors
        raise FilterParseError(f"Invalid MessageSelector: {e}") from None
    # The contextual lexer lets a keyword through as an identifier where no
    # keyword fits (``in = 1``); Java reserves them everywhere.
    # (iterative walk: long AND/OR chains make deep trees)
    stack = [tree]
    while stack:
        node = stack.pop()
        for child in node.children:
            if isinstance(child, Tree):
                stack.append(child)
            elif child.type == "ID" and child.upper() in RESERVED_WORDS:
                raise FilterParseError(
                    f"Invalid MessageSelector: unexpected keyword {str(child)!r} at line {child.line}, "
                    f"column {child.column}; keywords cannot be used as property names"
                )
    return tree
