"""Text to syntax tree, through the lark grammar in grammar.lark. Nothing here evaluates text.

Bounded in every direction (limits.py): the length is checked before lark sees the text, lark's LALR parser
keeps its own stack, and the tree is converted with an explicit stack that refuses nesting past MAX_DEPTH,
so no Python recursion grows with the input. Columns count from the start of the whole text.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import ExpressionError
from .limits import MAX_DEPTH, MAX_INT_DIGITS, MAX_LENGTH, MAX_MAGNITUDE
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


def _expected(tokens: set[str] | frozenset[str]) -> str:
    names = sorted({_TERMINAL_NAMES.get(t, t) for t in tokens})
    return " or ".join(names)


def parse_tree(text: str) -> Node:
    """Parse ``text`` into a syntax tree; raise ExpressionError naming the column on bad input."""
    if not isinstance(text, str):
        raise ExpressionError(repr(text), f"an expression must be a str, not {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise ExpressionError(text, f"expression too long ({len(text)} characters, at most {MAX_LENGTH})",
                              MAX_LENGTH + 1)
    if not text.strip():
        raise ExpressionError(text, "empty expression", 1, "a number, a name or '('")
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

    try:
        tree = _lark_parser().parse(text)
    except UnexpectedCharacters as exc:
        at = int(exc.pos_in_stream or 0)
        raise ExpressionError(text, f"unexpected character {text[at]!r}", at + 1,
                              _expected(exc.allowed or set())) from None
    except UnexpectedToken as exc:
        if exc.token.type == "$END":
            raise ExpressionError(text, "unexpected end of expression", len(text) + 1,
                                  _expected(exc.expected)) from None
        raise ExpressionError(text, f"unexpected {exc.token.value!r}", _position(exc.token) + 1,
                              _expected(exc.expected)) from None
    except UnexpectedEOF as exc:
        raise ExpressionError(text, "unexpected end of expression", len(text) + 1,
                              _expected(exc.expected)) from None
    except UnexpectedInput as exc:  # any other lark complaint, still with a position
        raise ExpressionError(text, "cannot parse", (getattr(exc, "pos_in_stream", -1) or -1) + 1) from None
    return _to_node(text, tree)


_BINARY = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "^"}
_NESTING = frozenset(("group", "neg", "pos", "call"))  # rules whose operands sit one level deeper


def _to_node(text: str, tree: Any) -> Node:
    """Lark tree to syntax tree, post-order with an explicit stack.

    A stack entry is (tree, depth, column of what opened that depth, expanded). Checks happen in the order
    the C parser (ma_expr.c) meets them, so both report the same first problem.
    """
    from lark import Token

    built: list[Node] = []
    stack: list[tuple[Any, int, int, bool]] = [(tree, 0, 1, False)]
    while stack:
        item, depth, opener, expanded = stack.pop()
        if isinstance(item, Token):  # a bare NUMBER or NAME cannot reach here: rules wrap them
            raise ExpressionError(text, f"unexpected token {item!s}", _position(item) + 1)
        rule = item.data
        if expanded:
            built.append(_assemble(text, item, built))
            continue
        if depth > MAX_DEPTH:
            raise ExpressionError(text, f"nested too deeply (more than {MAX_DEPTH} levels of parentheses, "
                                        "function calls, signs and exponents)", opener)
        if rule == "number":
            built.append(_number(text, item.children[0]))
        elif rule == "var":
            built.append(_variable(text, item.children[0]))
        else:
            operands = _operands(item)
            if rule == "call":
                _check_function(text, item.children[0])
            stack.append((item, depth, opener, True))
            if rule == "pow":  # the exponent sits one level deeper, opened by the '^'
                stack.append((operands[1], depth + 1, _position(item.children[1]) + 1, False))
                stack.append((operands[0], depth, opener, False))
                continue
            inner, column = (depth + 1, _column(item)) if rule in _NESTING else (depth, opener)
            stack.extend((child, inner, column, False) for child in reversed(operands))
    (node,) = built
    return node


def _position(token: Any) -> int:
    """0-based offset of a token in the whole text (lark's ``column`` counts within the line)."""
    return int(token.start_pos or 0)


def _operands(tree: Any) -> list[Any]:
    from lark import Token

    if tree.data == "call":
        return list(tree.children[1].children)
    return [c for c in tree.children if not isinstance(c, Token)]


def _column(tree: Any) -> int:
    return tree.meta.start_pos + 1 if not tree.meta.empty else 0


def _assemble(text: str, tree: Any, built: list[Node]) -> Node:
    """The node of ``tree`` from its converted operands, the last entries of ``built`` (removed)."""
    count = len(_operands(tree))
    operands = built[len(built) - count:]
    del built[len(built) - count:]
    rule = tree.data
    if rule in ("group", "pos"):
        return operands[0]
    if rule == "neg":
        return Neg(operands[0], _column(tree))
    if rule in _BINARY:
        left, right = operands
        # Errors of / and ^ (division by zero, domain) point at the right operand.
        return BinOp(_BINARY[rule], left, right, right.column or _column(tree))
    if rule == "call":
        name_token = tree.children[0]
        name, column = str(name_token), _position(name_token) + 1
        arity = FUNCTIONS[name]
        if arity is None and count < 2:
            raise ExpressionError(text, f"{name}() takes two or more arguments, got {count}", column)
        if arity is not None and count != arity:
            plural = "s" if arity != 1 else ""
            raise ExpressionError(text, f"{name}() takes {arity} argument{plural}, got {count}", column)
        return Call(name, tuple(operands), column)
    raise ExpressionError(text, f"unsupported construct {rule!r}", _column(tree))


def _check_function(text: str, name_token: Any) -> None:
    if str(name_token) not in FUNCTIONS:
        known = ", ".join(sorted(FUNCTIONS))
        raise ExpressionError(text, f"unknown function {str(name_token)!r}", _position(name_token) + 1,
                              f"one of {known}")


def _variable(text: str, token: Any) -> Var:
    if str(token) in FUNCTIONS:
        raise ExpressionError(text, f"function {str(token)!r} used without arguments", _position(token) + 1,
                              f"'{token}('")
    return Var(str(token), _position(token) + 1)


def _number(text: str, token: Any) -> Num:
    """A literal; one past MAX_MAGNITUDE is refused before Python converts it (no digit-limit ValueError)."""
    raw, column = str(token), _position(token) + 1
    value: int | float
    if raw.isdigit():
        digits = raw.lstrip("0") or "0"
        value = int(digits) if len(digits) <= MAX_INT_DIGITS else 0
        too_large = len(digits) > MAX_INT_DIGITS or value > MAX_MAGNITUDE
    else:
        value = float(raw)
        too_large = not value <= MAX_MAGNITUDE  # inf (1e999) is past it
    if too_large:
        raise ExpressionError(text, f"number too large (the largest allowed is {MAX_MAGNITUDE!r})", column)
    return Num(value, column)
