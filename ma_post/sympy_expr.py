"""Expression text to SymPy, by walking the syntax tree of ma.expr (never sympify).

The mapping follows the runtime's semantics (ma/expr/compiler.py) value for value:

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
"""

from __future__ import annotations

from functools import lru_cache

import sympy
from sympy.codegen.cfunctions import log2, log10

from ma.expr.nodes import BinOp, Call, Neg, Node, Num, Var
from ma.expr.parser import parse_tree


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


def node_to_sympy(node: Node) -> sympy.Expr:
    """SymPy expression of a syntax tree from ma.expr.parser.parse_tree."""
    if isinstance(node, Num):
        if isinstance(node.value, int):
            return sympy.Integer(node.value)
        return sympy.Rational(repr(node.value))
    if isinstance(node, Var):
        return symbol(node.name)
    if isinstance(node, Neg):
        return -node_to_sympy(node.operand)
    if isinstance(node, BinOp):
        left, right = node_to_sympy(node.left), node_to_sympy(node.right)
        if node.op == "+":
            return left + right
        if node.op == "-":
            return left - right
        if node.op == "*":
            return left * right
        if node.op == "/":
            return left / right
        return sympy.Pow(left, right)
    if isinstance(node, Call):
        args = [node_to_sympy(a) for a in node.args]
        if node.func in _UNARY:
            return _UNARY[node.func](args[0])
        if node.func == "mod":
            return mod(args[0], args[1])
        if node.func == "min":
            return sympy.Min(*args)
        return sympy.Max(*args)
    raise TypeError(f"not an expression node: {node!r}")


@lru_cache(maxsize=4096)
def to_sympy(text: str) -> sympy.Expr:
    """Parse annotation text with the lark grammar and convert it; ExpressionError on bad text."""
    return node_to_sympy(parse_tree(text))


def to_text(expr: sympy.Expr) -> str:
    """Compact, human-readable text of a model expression (Octave-like operators)."""
    return sympy.sstr(expr).replace("**", "^")
