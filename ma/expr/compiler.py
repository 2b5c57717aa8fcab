"""Syntax tree to a Python closure over a variable mapping: built once per expression, cheap to call.

Arithmetic stays exact on integers where the result is an integer (``8*na/2`` is an int when it divides),
so trip counts and byte counts compare exactly with what the program measured.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from .nodes import BinOp, Call, Neg, Node, Num, Var

Number = int | float
Evaluator = Callable[[Mapping[str, Number]], Number]


class DomainProblem(Exception):
    """Raised inside a closure; Expression.evaluate turns it into an ExpressionDomainError."""

    def __init__(self, message: str, column: int) -> None:
        super().__init__(message)
        self.column = column


def _divide(a: Number, b: Number, column: int) -> Number:
    if b == 0:
        raise DomainProblem("division by zero", column)
    if isinstance(a, int) and isinstance(b, int) and a % b == 0:
        return a // b
    return a / b


def _power(a: Number, b: Number, column: int) -> Number:
    if isinstance(a, int) and isinstance(b, int) and b >= 0:
        return a**b
    if a == 0 and b < 0:
        raise DomainProblem("zero raised to a negative power", column)
    if a < 0 and not float(b).is_integer():
        raise DomainProblem("negative number raised to a fractional power", column)
    try:
        return float(a) ** float(b)
    except OverflowError:
        raise DomainProblem("result too large", column) from None


def _integral(x: float) -> Number:
    return int(x) if math.isfinite(x) else x


def _log_of(fn: Callable[[float], float], name: str) -> Callable[[Number, int], Number]:
    def log(x: Number, column: int) -> Number:
        if x <= 0:
            raise DomainProblem(f"{name} of a non-positive number ({x})", column)
        return fn(x)

    return log


def _sqrt(x: Number, column: int) -> Number:
    if x < 0:
        raise DomainProblem(f"sqrt of a negative number ({x})", column)
    root = math.isqrt(x) if isinstance(x, int) else -1
    return root if root >= 0 and root * root == x else math.sqrt(x)


def _exp(x: Number, column: int) -> Number:
    try:
        return math.exp(x)
    except OverflowError:
        raise DomainProblem("exp overflows", column) from None


def _mod(a: Number, b: Number, column: int) -> Number:
    # Octave's mod: mod(x, 0) = x, the result takes the sign of b (as Python's % does).
    return a if b == 0 else a % b


_UNARY: dict[str, Callable[[Number, int], Number]] = {
    "ceil": lambda x, c: math.ceil(x) if isinstance(x, float) else x,
    "floor": lambda x, c: math.floor(x) if isinstance(x, float) else x,
    "abs": lambda x, c: abs(x),
    "log": _log_of(math.log, "log"),
    "log2": _log_of(math.log2, "log2"),
    "log10": _log_of(math.log10, "log10"),
    "exp": _exp,
    "sqrt": _sqrt,
}


def compile_node(node: Node) -> Evaluator:
    """Closure evaluating ``node`` against a mapping of variable values."""
    if isinstance(node, Num):
        value = node.value
        return lambda env: value
    if isinstance(node, Var):
        name = node.name
        return lambda env: env[name]
    if isinstance(node, Neg):
        inner = compile_node(node.operand)
        return lambda env: -inner(env)
    if isinstance(node, BinOp):
        return _compile_binop(node)
    return _compile_call(node)


def _compile_binop(node: BinOp) -> Evaluator:
    left, right, column = compile_node(node.left), compile_node(node.right), node.column
    if node.op == "+":
        return lambda env: left(env) + right(env)
    if node.op == "-":
        return lambda env: left(env) - right(env)
    if node.op == "*":
        return lambda env: left(env) * right(env)
    if node.op == "/":
        return lambda env: _divide(left(env), right(env), column)
    return lambda env: _power(left(env), right(env), column)


def _compile_call(node: Call) -> Evaluator:
    args = [compile_node(a) for a in node.args]
    column = node.column
    if node.func in _UNARY:
        fn, (arg,) = _UNARY[node.func], args
        if node.func in ("ceil", "floor"):
            return lambda env: _integral(fn(arg(env), column))
        return lambda env: fn(arg(env), column)
    if node.func == "mod":
        a, b = args
        return lambda env: _mod(a(env), b(env), column)
    pick = min if node.func == "min" else max
    return lambda env: pick(f(env) for f in args)
