"""Text to syntax tree, through the lark grammar in grammar.lark. Nothing here evaluates text."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import ExpressionError
from .nodes import FUNCTIONS, BinOp, Call, Neg, Node, Num, Var

_GRAMMAR = Path(__file__).with_name("grammar.lark")

# Readable names for the grammar's terminals, used in "expected ..." messages.
_TERMINAL_NAMES = {
    "NUMBER": "a number", "NAME": "a name", "LPAR": "'('", "RPAR": "')'", "PLUS": "'+'",
    "MINUS": "'-'", "STAR": "'*'", "SLASH": "'/'", "POW": "'^'", "COMMA": "','", "$END": "end of text",
}


@lru_cache(maxsize=1)
def _lark_parser() -> Any:
    # lark is imported on first use so that `import ma` stays cheap.
    from lark import Lark

    return Lark(_GRAMMAR.read_text(), parser="lalr", propagate_positions=True, maybe_placeholders=False)


def _expected(tokens: Iterable[str]) -> str:
    names = sorted({_TERMINAL_NAMES.get(t, t) for t in tokens})
    return " or ".join(names)


def parse_tree(text: str) -> Node:
    """Parse ``text`` into a syntax tree; raise ExpressionError naming the column on bad input."""
    if not isinstance(text, str):
        raise ExpressionError(repr(text), f"an expression must be a str, not {type(text).__name__}")
    if not text.strip():
        raise ExpressionError(text, "empty expression", 1, "a number, a name or '('")
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

    try:
        tree = _lark_parser().parse(text)
    except UnexpectedCharacters as exc:
        raise ExpressionError(text, f"unexpected character {text[exc.pos_in_stream]!r}", exc.column,  # type: ignore[index]
                              _expected(exc.allowed or set())) from None
    except UnexpectedToken as exc:
        if exc.token.type == "$END":
            raise ExpressionError(text, "unexpected end of expression", len(text) + 1,
                                  _expected(exc.expected)) from None
        raise ExpressionError(text, f"unexpected {exc.token.value!r}", exc.column,
                              _expected(exc.expected)) from None
    except UnexpectedEOF as exc:
        raise ExpressionError(text, "unexpected end of expression", len(text) + 1,
                              _expected(exc.expected)) from None
    except UnexpectedInput as exc:  # any other lark complaint, still with a position
        raise ExpressionError(text, "cannot parse", getattr(exc, "column", 0) or 0) from None
    return _to_node(text, tree)


_BINARY = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "^"}


def _to_node(text: str, tree: Any) -> Node:
    from lark import Token

    if isinstance(tree, Token):  # a bare NUMBER or NAME cannot reach here: rules wrap them
        raise ExpressionError(text, f"unexpected token {tree!s}", tree.column or 0)
    column = tree.meta.column if not tree.meta.empty else 0
    rule = tree.data
    if rule == "number":
        token = tree.children[0]
        raw = str(token)
        value: int | float = int(raw) if raw.isdigit() else float(raw)
        return Num(value, token.column)
    if rule == "var":
        token = tree.children[0]
        if str(token) in FUNCTIONS:
            raise ExpressionError(text, f"function {str(token)!r} used without arguments", token.column,
                                  f"'{token}('")
        return Var(str(token), token.column)
    if rule == "neg":
        return Neg(_to_node(text, tree.children[0]), column)
    if rule == "pos":
        return _to_node(text, tree.children[0])
    if rule in _BINARY:
        operands = [c for c in tree.children if not isinstance(c, Token)]
        left, right = _to_node(text, operands[0]), _to_node(text, operands[1])
        # Errors of / and ^ (division by zero, domain) point at the right operand.
        return BinOp(_BINARY[rule], left, right, right.column or column)
    if rule == "call":
        name_token, args_tree = tree.children
        name = str(name_token)
        args = tuple(_to_node(text, a) for a in args_tree.children)
        arity = FUNCTIONS.get(name, -1)
        if arity == -1:
            known = ", ".join(sorted(FUNCTIONS))
            raise ExpressionError(text, f"unknown function {name!r}", name_token.column, f"one of {known}")
        if arity is None and len(args) < 2:
            raise ExpressionError(text, f"{name}() takes two or more arguments, got {len(args)}",
                                  name_token.column)
        if arity is not None and len(args) != arity:
            plural = "s" if arity != 1 else ""
            raise ExpressionError(text, f"{name}() takes {arity} argument{plural}, got {len(args)}",
                                  name_token.column)
        return Call(name, args, name_token.column)
    raise ExpressionError(text, f"unsupported construct {rule!r}", column)
