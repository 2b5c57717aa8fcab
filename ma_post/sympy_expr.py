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

The bounds are the runtime's, checked by the runtime's own code: every largest part of the expression that
reads no variable (``log(0)``, ``2^1024``, ``1e300*1e300``, the ``1e300*1e300`` that starts ``1e300*1e300*n``)
is evaluated first by the runtime's evaluator (ma_core/expr/compiler.py), so an expression the runtime refuses
whatever its variables hold is refused here with the runtime's error, message and column alike. A power of
numbers whose exact value would pass MAX_EXACT_BITS takes the runtime's double (``10^-100000000`` is 0, as at
run time, not a fraction of a hundred million digits).
"""

from __future__ import annotations

import math
from functools import lru_cache

import sympy
from sympy.codegen.cfunctions import log2, log10

from ma_core.errors import ExpressionDomainError, ExpressionError
from ma_core.expr import Expression
from ma_core.expr.compiler import DomainProblem, power
from ma_core.expr.limits import MAX_EXACT_BITS, MAX_MAGNITUDE
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
    """SymPy expression of a syntax tree from ma_core.expr.parser.parse_tree (``text``: its source, for errors).

    ExpressionDomainError, as the runtime's, where a part without variables fails under the runtime's bounds."""
    for constant in _constant_parts(node):
        Expression(text or "?", constant).evaluate({})  # the runtime's evaluation: its error, message and column
    expr = _converted(node, text)
    if expr.has(*_NOT_FINITE_REAL):  # what cancelled variables leave: log(n - n), (n - n)^-1, sqrt(-1 - n^2)
        raise ExpressionDomainError(text or "?", "not a finite real number for any value of its variables "
                                    f"(it simplifies to {to_text(expr)[:80]})", node.column)
    return expr


_NOT_FINITE_REAL = (sympy.zoo, sympy.oo, -sympy.oo, sympy.nan, sympy.I)


def _constant_parts(node: Node) -> list[Node]:
    """The largest subtrees that read no variable, left to right (an explicit stack: chains are deep)."""
    variable: dict[int, bool] = {}  # by id() of the node: whether it reads a variable
    stack: list[tuple[Node, bool]] = [(node, False)]
    while stack:
        current, ready = stack.pop()
        children = _children(current)
        if ready:
            variable[id(current)] = isinstance(current, Var) or any(variable[id(c)] for c in children)
        else:
            stack.append((current, True))
            stack.extend((child, False) for child in children)
    parts: list[Node] = []
    pending = [node]
    while pending:
        current = pending.pop()
        if not variable[id(current)]:
            if not isinstance(current, Num):  # a literal is checked by the parser already
                parts.append(current)
        else:
            pending.extend(reversed(_children(current)))
    return parts


def _children(node: Node) -> list[Node]:
    if isinstance(node, Neg):
        return [node.operand]
    if isinstance(node, BinOp):
        return [node.left, node.right]
    if isinstance(node, Call):
        return list(node.args)
    return []


def _converted(node: Node, text: str) -> sympy.Expr:
    """The conversion itself (the parts without variables were checked once, by node_to_sympy)."""
    if isinstance(node, Num):
        return _number(node, text)
    if isinstance(node, Var):
        return symbol(node.name)
    if isinstance(node, Neg):
        return -_converted(node.operand, text)
    if isinstance(node, BinOp):
        if node.op == "^":
            return _power(_converted(node.left, text), _converted(node.right, text), node.column, text)
        first, steps = chain(node)
        terms = [_converted(first, text)]
        for step in steps:
            operand = _converted(step.right, text)
            if step.op == "/" and operand.is_zero:
                raise ExpressionDomainError(text, "division by zero", step.column)
            terms.append({"+": operand, "-": -operand, "*": operand, "/": 1 / operand}[step.op])
        return _bounded(sympy.Add(*terms) if node.op in "+-" else sympy.Mul(*terms), node.column, text)
    if isinstance(node, Call):
        args = [_converted(a, text) for a in node.args]
        if node.func in _UNARY:
            return _UNARY[node.func](args[0])
        if node.func == "mod":
            return mod(args[0], args[1])
        if node.func == "min":
            return sympy.Min(*args)
        return sympy.Max(*args)
    raise TypeError(f"not an expression node: {node!r}")


def _power(base: sympy.Expr, exponent: sympy.Expr, column: int, text: str) -> sympy.Expr:
    """``base^exponent``. Of two numbers SymPy computes the power exactly: past MAX_EXACT_BITS (``9^9^9``, a
    370-million-digit integer; ``10^-100000000``) the runtime's own value is taken, a double or its error."""
    if base.is_zero and exponent.is_negative:
        raise ExpressionDomainError(text, "zero raised to a negative power", column)
    if base.is_Rational and exponent.is_Rational and not base.is_zero:
        if abs(float(exponent)) * _bits(base) > MAX_EXACT_BITS:
            return _runtime_power(base, exponent, column, text)
        value = sympy.Pow(base, exponent)
        if value.is_Rational and abs(value) > _LARGEST:
            raise ExpressionDomainError(text, f"result is too large (magnitude over {MAX_MAGNITUDE!r})", column)
        return value
    if exponent.is_Rational and _bits(base.as_coeff_Mul()[0]) * abs(float(exponent)) > MAX_EXACT_BITS:
        # SymPy would raise the numeric factor of the base to the power exactly: (9e277*a)^1854^1854 never ends.
        return sympy.Pow(base, exponent, evaluate=False)
    return sympy.Pow(base, exponent)


def _bits(number: sympy.Expr) -> int:
    """Bits of the larger of an exact number's numerator and denominator (0 for what is not a rational)."""
    if not number.is_Rational:
        return 0
    return max(abs(number.p).bit_length(), number.q.bit_length())  # type: ignore[attr-defined]


def _bounded(expr: sympy.Expr, column: int, text: str) -> sympy.Expr:
    """A sum or product whose exact numeric part grew past MAX_EXACT_BITS (factors multiplied together)
    with that part rounded to its double, as the runtime holds every value; past the double range, the
    runtime's error."""
    number, rest = expr.as_coeff_Add() if expr.is_Add else expr.as_coeff_Mul()
    if _bits(number) <= MAX_EXACT_BITS:
        return expr
    try:
        value = float(number)
    except OverflowError:
        value = math.inf
    if not -MAX_MAGNITUDE <= value <= MAX_MAGNITUDE:
        raise ExpressionDomainError(text, f"result is too large (magnitude over {MAX_MAGNITUDE!r})", column)
    rounded = sympy.Rational(repr(value))
    return rounded + rest if expr.is_Add else rounded * rest


_LARGEST = sympy.Integer(int(MAX_MAGNITUDE))


def _runtime_power(base: sympy.Expr, exponent: sympy.Expr, column: int, text: str) -> sympy.Expr:
    """The runtime's value of a power of two numbers (integers as ints, other rationals as doubles)."""
    def number(x: sympy.Expr) -> int | float:
        return int(x) if x.is_Integer else float(x)

    try:
        value = power(number(base), number(exponent), column)
    except DomainProblem as problem:
        raise ExpressionDomainError(text, str(problem), problem.column) from None
    return sympy.Integer(value) if isinstance(value, int) else sympy.Rational(repr(value))


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
