"""Expression text to SymPy, by walking the syntax tree of ma_core.expr (never sympify).

The mapping follows the runtime's semantics (ma_core/expr/compiler.py) value for value:

- ``a/b`` is exact rational division (the runtime keeps integers exact and otherwise divides in floats:
  the same number);
- ``ceil floor abs sqrt exp log`` are SymPy's ``ceiling floor Abs sqrt exp log``;
- ``log2``/``log10`` are sympy.codegen's ``log2``/``log10`` (exact on powers, printed as the C/NumPy/Octave
  functions of that name, so ``ceil(log2(n))`` stays exact in float code too);
- ``mod(a, b)`` is the function ``mod`` below: SymPy's ``Mod`` (sign of ``b``, as Python and Octave) once
  both arguments are numbers, and ``a`` when ``b`` is zero (Octave's and the runtime's ``mod(a, 0) = a``,
  which SymPy's own ``Mod`` rejects);
- ``min``/``max`` with any number of arguments are ``Min``/``Max``.

Float literals become exact rationals of their decimal text (``0.1`` is 1/10), so models stay exact.
The parser has already refused what SymPy could not take (a literal past MAX_MAGNITUDE such as ``1e999``,
nesting past MAX_DEPTH: ma_core/expr/limits.py); a run of ``+ -`` or ``* /`` becomes one ``Add``/``Mul`` of all
its terms, so the conversion recurses only as deep as the expression nests, and in linear time.
"""

from __future__ import annotations

import math
from functools import lru_cache

import sympy
from sympy.codegen.cfunctions import log2, log10

from ma_core.errors import ExpressionDomainError, ExpressionError
from ma_core.expr.limits import MAX_BITS, MAX_MAGNITUDE
from ma_core.expr.nodes import BinOp, Call, Neg, Node, Num, Var, chain
from ma_core.expr.parser import parse_tree


class mod(sympy.Function):
    """Octave's mod: ``Mod(a, b)`` for numbers, ``a`` when ``b`` is zero, unevaluated otherwise."""

    nargs = 2

    @classmethod
    def eval(cls, a: sympy.Expr, b: sympy.Expr) -> sympy.Expr | None:  # safe: SymPy's Function.eval hook
        if b.is_zero:
            return a
        if a.is_number and b.is_number and b.is_zero is False:
            return sympy.Mod(a, b)
        return None


_UNARY = {
    "ceil": sympy.ceiling, "floor": sympy.floor, "abs": sympy.Abs, "sqrt": sympy.sqrt, "exp": sympy.exp,
    "log": sympy.log, "log2": log2, "log10": log10,
}


@lru_cache(maxsize=4096)
def symbol(name: str) -> sympy.Symbol:
    """The SymPy symbol of a model variable (one object per name, so substitutions match)."""
    return sympy.Symbol(name)


def node_to_sympy(node: Node, text: str = "") -> sympy.Expr:
    """SymPy expression of a syntax tree from ma_core.expr.parser.parse_tree (``text``: its source, for errors)."""
    if isinstance(node, Num):
        return _number(node, text)
    if isinstance(node, Var):
        return symbol(node.name)
    if isinstance(node, Neg):
        return -node_to_sympy(node.operand, text)
    if isinstance(node, BinOp):
        if node.op == "^":
            return _power(node_to_sympy(node.left, text), node_to_sympy(node.right, text), node.column, text)
        first, steps = chain(node)
        terms = [node_to_sympy(first, text)]
        for step in steps:
            operand = node_to_sympy(step.right, text)
            if step.op == "/" and operand.is_zero:
                raise ExpressionDomainError(text, "division by zero", step.column)
            terms.append({"+": operand, "-": -operand, "*": operand, "/": 1 / operand}[step.op])
        return sympy.Add(*terms) if node.op in "+-" else sympy.Mul(*terms)
    if isinstance(node, Call):
        args = [node_to_sympy(a, text) for a in node.args]
        if node.func in _UNARY:
            return _UNARY[node.func](args[0])
        if node.func == "mod":
            return mod(args[0], args[1])
        if node.func == "min":
            return sympy.Min(*args)
        return sympy.Max(*args)
    raise TypeError(f"not an expression node: {node!r}")


def _power(base: sympy.Expr, exponent: sympy.Expr, column: int, text: str) -> sympy.Expr:
    """``base^exponent``; SymPy computes a power of numbers exactly, so one past MAX_MAGNITUDE (``9^9^9``, a
    370-million-digit integer) is refused first, as the runtime refuses it, and so is ``0^-1`` (SymPy's zoo)."""
    if base.is_zero and exponent.is_negative:
        raise ExpressionDomainError(text, "zero raised to a negative power", column)
    if base.is_Rational and exponent.is_Rational and not base.is_zero:
        bits = float(exponent) * math.log2(abs(float(base)))
        if bits > MAX_BITS:
            raise ExpressionDomainError(text, f"result is too large (magnitude over {MAX_MAGNITUDE!r})", column)
    return sympy.Pow(base, exponent)


def _number(node: Num, text: str) -> sympy.Expr:
    value = node.value
    if not -MAX_MAGNITUDE <= value <= MAX_MAGNITUDE:  # only a tree built by hand: the parser refuses these
        raise ExpressionError(text or "?", "number not finite or too large for a model", node.column)
    if isinstance(value, int):
        return sympy.Integer(value)
    return sympy.Rational(repr(value))


@lru_cache(maxsize=4096)
def to_sympy(text: str) -> sympy.Expr:
    """Parse annotation text (the grammar of ma_core/expr/grammar.lark) and convert it; ExpressionError on bad text."""
    return node_to_sympy(parse_tree(text), text)


def as_expr(value: sympy.Basic | int | float) -> sympy.Expr:
    """A number or SymPy expression as a SymPy expression. Unlike ``sympy.sympify``, text is refused: text
    becomes an expression only through ``to_sympy``, which parses it with the project's own grammar."""
    if isinstance(value, sympy.Basic):
        return value  # type: ignore[return-value]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"expected a number or a SymPy expression, got {type(value).__name__} {value!r:.40}")
    if isinstance(value, int):
        return sympy.Integer(value)
    if not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {value}")
    return sympy.Float(value)


def to_text(expr: sympy.Expr) -> str:
    """Compact, human-readable text of a model expression (Octave-like operators)."""
    return sympy.sstr(expr).replace("**", "^")
