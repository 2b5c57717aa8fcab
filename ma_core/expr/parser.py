"""Text to syntax tree for the grammar in grammar.lark. Nothing here evaluates text.

An operator-precedence parser with explicit stacks: one pass over the tokens, time and memory linear in the
text, no recursion at all. It meets the limits of limits.py (length before reading, nesting depth as each
construct opens, literal magnitude as each number is read) and every syntax error in the same order and with
the same message as the C runtime's recursive-descent parser (ma_runtime/csrc/libma/ma_expr.c), so both
runtimes report the same first problem at the same column. Columns count from the start of the whole text.
The grammar file stays the reference: the fuzz tests check that lark accepts exactly what this parser does.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..errors import ExpressionError
from .limits import MAX_ARGUMENTS, MAX_DEPTH, MAX_INT_DIGITS, MAX_LENGTH, MAX_MAGNITUDE
from .nodes import FUNCTIONS, BinOp, Call, Neg, Node, Num, Var

# The C tokenizer's classes: ASCII digits and letters, the whitespace of C's isspace.
_TOKEN = re.compile(r"[ \t\n\r\f\v]*(?:(?P<number>(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
                    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>\*\*|[-+*/^(),])|(?P<bad>.)|\Z)", re.DOTALL)

EXPECT_OPERAND = "a number, a name or '('"
_EXPECT_AFTER = {"call": "',' or ')' or an operator", "group": "')' or an operator",
                 "top": "an operator or end of text"}
_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2, "neg": 3, "pos": 3, "^": 4}
_BINARY = frozenset(("+", "-", "*", "/", "^", "**"))
_NESTING = frozenset(("neg", "pos", "^"))  # operators whose operand sits one level deeper


@dataclass
class _Open:
    """An open parenthesis: a group, or a call with the arguments read so far."""

    kind: str  # "group" or "call"
    column: int
    name: str = ""
    args: int = 0
    operators: list[tuple[str, int]] = field(default_factory=list)  # (operator, column) inside it


def parse_tree(text: str) -> Node:
    """Parse ``text`` into a syntax tree; raise ExpressionError naming the column on bad input."""
    if not isinstance(text, str):
        raise ExpressionError(repr(text), f"an expression must be a str, not {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise ExpressionError(text, f"expression too long ({len(text)} characters, at most {MAX_LENGTH})",
                              MAX_LENGTH + 1)
    return _Parser(text).parse()


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.operands: list[Node] = []
        self.outer = _Open("top", 0)  # the whole text, as if parenthesised
        self.opened: list[_Open] = [self.outer]
        self.depth = 0

    def parse(self) -> Node:
        kind, value, column = next(self.tokens)
        if kind == "end":
            raise ExpressionError(self.text, "empty expression", 1, EXPECT_OPERAND)
        expect_operand = True
        while True:
            if expect_operand:
                kind, value, column = self.operand(kind, value, column)
            next_position = self.operator(kind, value, column)
            if next_position == "end":
                (node,) = self.operands
                return node
            expect_operand = next_position == "operand"
            kind, value, column = next(self.tokens)

    # ---- operand position: a number, a name, a call, '(' or a sign -----------------------------------
    def operand(self, kind: str, value: str, column: int) -> tuple[str, str, int]:
        """Read prefixes up to and including one operand; return the token after it."""
        while True:
            if kind == "number":
                self.operands.append(_number(self.text, value, column))
                return next(self.tokens)
            if kind == "name":
                after = next(self.tokens)
                if after[1] != "(":
                    self.operands.append(_variable(self.text, value, column))
                    return after
                if value not in FUNCTIONS:
                    raise ExpressionError(self.text, f"unknown function {value!r}", column,
                                          f"one of {', '.join(sorted(FUNCTIONS))}")
                self.enter(column)
                self.opened.append(_Open("call", column, value))
            elif value == "(":
                self.enter(column)
                self.opened.append(_Open("group", column))
            elif value in ("-", "+"):
                self.enter(column)
                self.opened[-1].operators.append(("neg" if value == "-" else "pos", column))
            else:
                raise self.unexpected(kind, value, column, EXPECT_OPERAND)
            kind, value, column = next(self.tokens)

    # ---- operator position: a binary operator, ',' ')' or the end ------------------------------------
    def operator(self, kind: str, value: str, column: int) -> str:
        """Handle the token after an operand; say what comes next: "operand", "operator" or "end"."""
        inner = self.opened[-1]
        if kind == "op" and value in _BINARY:
            op = "^" if value == "**" else value
            # ^ is right-associative and binds tightest; + - * / reduce what binds at least as tightly.
            while op != "^" and inner.operators and _PRECEDENCE[inner.operators[-1][0]] >= _PRECEDENCE[op]:
                self.reduce(inner)
            if op == "^":
                self.enter(column)
            inner.operators.append((op, column))
            return "operand"
        if kind == "end" and inner is self.outer:
            while inner.operators:
                self.reduce(inner)
            return "end"
        closes = kind == "op" and (value == ")" or (value == "," and inner.kind == "call"))
        if not closes or inner is self.outer:
            raise self.unexpected(kind, value, column, _EXPECT_AFTER[inner.kind])
        while inner.operators:
            self.reduce(inner)
        inner.args += 1
        if inner.args > MAX_ARGUMENTS:
            raise ExpressionError(self.text, "too many arguments", inner.column)
        if value == ",":
            return "operand"
        self.close(inner)
        return "operator"

    def close(self, inner: _Open) -> None:
        """The ')' of a group or a call."""
        self.opened.pop()
        self.depth -= 1
        if inner.kind == "group":
            return
        args = tuple(self.operands[len(self.operands) - inner.args:])
        del self.operands[len(self.operands) - inner.args:]
        arity = FUNCTIONS[inner.name]
        if arity is None and len(args) < 2:
            raise ExpressionError(self.text, f"{inner.name}() takes two or more arguments, got {len(args)}",
                                  inner.column)
        if arity is not None and len(args) != arity:
            plural = "s" if arity != 1 else ""
            raise ExpressionError(self.text, f"{inner.name}() takes {arity} argument{plural}, got {len(args)}",
                                  inner.column)
        self.operands.append(Call(inner.name, args, inner.column))

    def reduce(self, inner: _Open) -> None:
        """Apply the innermost pending operator to its operand(s)."""
        op, column = inner.operators.pop()
        if op in _NESTING:
            self.depth -= 1
        if op == "pos":
            return
        right = self.operands.pop()
        if op == "neg":
            self.operands.append(Neg(right, column))
            return
        left = self.operands.pop()
        # Errors of / and ^ (division by zero, domain) point at the right operand.
        self.operands.append(BinOp(op, left, right, right.column or column))

    def enter(self, column: int) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExpressionError(self.text, f"nested too deeply (more than {MAX_DEPTH} levels of parentheses, "
                                             "function calls, signs and exponents)", column)

    def unexpected(self, kind: str, value: str, column: int, expected: str) -> ExpressionError:
        if kind == "end":
            return ExpressionError(self.text, "unexpected end of expression", column, expected)
        if kind == "bad":
            return ExpressionError(self.text, f"unexpected character {value!r}", column, expected)
        return ExpressionError(self.text, f"unexpected {value!r}", column, expected)


def _tokens(text: str) -> Iterator[tuple[str, str, int]]:
    """(kind, text, column) of each token: number, name, op, bad (any other character), then end forever."""
    position = 0
    while True:
        match = _TOKEN.match(text, position)
        assert match is not None  # the pattern's last alternative matches anywhere
        kind = match.lastgroup or "end"
        start = match.start(kind) if kind != "end" else len(text)
        yield kind, match.group(kind) if kind != "end" else "", start + 1
        if kind == "end":
            while True:
                yield "end", "", len(text) + 1
        position = match.end()


def _variable(text: str, name: str, column: int) -> Var:
    if name in FUNCTIONS:
        raise ExpressionError(text, f"function {name!r} used without arguments", column, f"'{name}('")
    return Var(name, column)


def _number(text: str, raw: str, column: int) -> Num:
    """A literal; one past MAX_MAGNITUDE is refused before Python converts it (no digit-limit ValueError)."""
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
