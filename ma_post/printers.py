"""SymPy code printers for the three export targets, agreeing with the runtime's semantics.

- ``mod(a, b)`` takes the sign of ``b`` and ``mod(a, 0) = a`` (Octave's builtin already does this; NumPy and
  C get a small helper, since ``numpy.mod(a, 0)`` is NaN and C's ``fmod`` takes the sign of ``a``);
- ``log2``/``log10`` print as the native functions (exact on powers of 2 / 10);
- every operator is elementwise, so the same function evaluates a whole grid in one call;
- a sum or product of many terms (a model of thousands of sites) prints as balanced groups of at most
  ``MAX_CHAIN`` terms: Python's compiler (and ``lambdify``, which compiles the printed text) fails with a
  RecursionError on a flat chain of a few thousand operators.
"""

from __future__ import annotations

import math
from typing import Any

import sympy
from sympy.printing.c import C99CodePrinter
from sympy.printing.numpy import NumPyPrinter
from sympy.printing.octave import OctaveCodePrinter

NUMPY_MOD_HELPER = "_ma_mod"
C_MOD_HELPER = "ma_mod"
MAX_CHAIN = 64  # terms of a sum or factors of a product printed as one flat chain


class BalancedChains:
    """Printer mixin: sums and products longer than MAX_CHAIN print as two parenthesised halves, recursively,
    so the printed text nests about log2(terms) deep instead of one operator per term."""

    MULTIPLY = "*"

    def _print_Add(self, expr: sympy.Expr, order: Any = None) -> str:
        if len(expr.args) <= MAX_CHAIN:
            return super()._print_Add(expr, order=order)  # type: ignore[misc, no-any-return]
        # SymPy's canonical order of the arguments: sorting thousands of terms for print is slow, and
        # the order of a sum this long is no help to a reader anyway.
        left, right = _halves(sympy.Add, list(expr.args))
        return f"({self._print(left)}) + ({self._print(right)})"  # type: ignore[attr-defined]

    def _print_Mul(self, expr: sympy.Expr) -> str:
        if len(expr.args) <= MAX_CHAIN:
            return super()._print_Mul(expr)  # type: ignore[misc, no-any-return]
        left, right = _halves(sympy.Mul, list(expr.args))
        return f"({self._print(left)}){self.MULTIPLY}({self._print(right)})"  # type: ignore[attr-defined]


def _halves(kind: Any, items: list[sympy.Expr]) -> tuple[sympy.Expr, sympy.Expr]:
    half = len(items) // 2
    return kind(*items[:half], evaluate=False), kind(*items[half:], evaluate=False)


class OctavePrinter(BalancedChains, OctaveCodePrinter):
    """Octave/MATLAB code with elementwise operators (``.* ./ .^``)."""

    MULTIPLY = ".*"

    def __init__(self, settings: dict[str, Any] | None = None) -> None:
        super().__init__({"inline": True, **(settings or {})})

    def _print_log2(self, expr: sympy.Expr) -> str:
        return f"log2({self._print(expr.args[0])})"

    def _print_log10(self, expr: sympy.Expr) -> str:
        return f"log10({self._print(expr.args[0])})"

    def _print_mod(self, expr: sympy.Expr) -> str:  # Octave's own mod has the runtime's semantics
        a, b = (self._print(arg) for arg in expr.args)
        return f"mod({a}, {b})"


class NumpyPrinter(BalancedChains, NumPyPrinter):
    """NumPy code; ``numpy`` must be imported as ``numpy`` and ``_ma_mod`` defined beside it."""

    def _print_Mod(self, expr: sympy.Expr) -> str:
        a, b = (self._print(arg) for arg in expr.args)
        return f"{NUMPY_MOD_HELPER}({a}, {b})"

    _print_mod = _print_Mod

    # An exact number of the model past 64 bits is printed as the double it is: as a Python int it would make
    # NumPy's ufuncs fail on an object array (numpy.log(10**300)) or raise OverflowError against a float.
    def _print_Integer(self, expr: sympy.Expr) -> str:
        return super()._print_Integer(expr) if abs(int(expr)) < _INT64 else _double(expr)

    def _print_Rational(self, expr: sympy.Expr) -> str:
        if abs(expr.p) < _INT64 and expr.q < _INT64:  # type: ignore[attr-defined]
            return super()._print_Rational(expr)
        return _double(expr)

    def _nested(self, func: str, args: tuple[sympy.Expr, ...]) -> str:
        if len(args) == 1:
            return self._print(args[0])
        return f"numpy.{func}({self._print(args[0])}, {self._nested(func, args[1:])})"

    def _print_Min(self, expr: sympy.Expr) -> str:
        return self._nested("minimum", expr.args)

    def _print_Max(self, expr: sympy.Expr) -> str:
        return self._nested("maximum", expr.args)


_INT64 = 2**63


def _double(number: sympy.Expr) -> str:
    """The nearest double of an exact number as NumPy code (``numpy.inf`` past the double range)."""
    try:
        value = float(number)
    except OverflowError:
        value = float("inf") if number > 0 else float("-inf")
    if math.isinf(value):
        return "numpy.inf" if value > 0 else "(-numpy.inf)"
    return f"({value!r})" if value < 0 else repr(value)


class CPrinter(BalancedChains, C99CodePrinter):
    """C99 double arithmetic; no M_* macros (not in strict C99), ``ma_mod`` for Octave's mod."""

    def __init__(self, settings: dict[str, Any] | None = None) -> None:
        super().__init__({"math_macros": {}, **(settings or {})})

    def _print_Mod(self, expr: sympy.Expr) -> str:
        a, b = (self._print(arg) for arg in expr.args)
        return f"{C_MOD_HELPER}({a}, {b})"

    _print_mod = _print_Mod


def numpy_mod(a: Any, b: Any) -> Any:
    """Octave's mod, elementwise: sign of ``b``; ``mod(a, 0) = a``."""
    import numpy

    a, b = numpy.asarray(a, dtype=float), numpy.asarray(b, dtype=float)
    safe = numpy.where(b == 0, 1.0, b)
    return numpy.where(b == 0, a, numpy.mod(a, safe))


NUMPY_MOD_SOURCE = '''def _ma_mod(a, b):
    """Octave's mod, elementwise: the result has the sign of b, and mod(a, 0) = a."""
    a, b = numpy.asarray(a, dtype=float), numpy.asarray(b, dtype=float)
    return numpy.where(b == 0, a, numpy.mod(a, numpy.where(b == 0, 1.0, b)))
'''

C_MOD_SOURCE = """/* Octave's mod: the result has the sign of b, and mod(a, 0) = a. */
static inline double ma_mod(double a, double b)
{
    if (b == 0.0)
        return a;
    double r = fmod(a, b);
    if (r != 0.0 && ((r < 0.0) != (b < 0.0)))
        r += b;
    return r;
}
"""
