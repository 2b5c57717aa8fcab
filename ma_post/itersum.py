"""Exact sums over a loop's iterations of expressions in ``iter`` (the iteration, from 0).

Inside a loop every annotation expression may use ``iter``; the model of a site then adds its value up over the
loop's trip count ``T``: ``sum(f(iter), iter = 0..T-1)``. SymPy sums polynomials in closed form but not the
piecewise functions that ``min``, ``max`` and ``abs`` make of ``iter`` (``1 + min(iter, 1)``: 1 in the first
iteration, 2 after). Here such a function is cut where its conditions change: each condition must be linear in
``iter`` with numeric coefficients, so it changes at one integer ``b`` and the iterations split into ranges
``[0, b1), [b1, b2), ..., [bk, T)`` on each of which the function is a polynomial. The sum is then exact for
every trip count, as a ``Piecewise`` in ``T``::

    sum(1 + min(iter, 1), iter = 0..n-1) = Piecewise((2*n - 1, n >= 1), (0, True))

What this cannot sum (a breakpoint that depends on another variable, ``floor``/``ceil``/``mod`` of ``iter``)
raises IterationSumError, which the model builder turns into a note.
"""

from __future__ import annotations

import sympy

from ma_core.errors import IterationSumError

from .sympy_expr import symbol

ITER = "iter"


def iteration_symbol() -> sympy.Symbol:
    return symbol(ITER)


def sum_over_iterations(expr: sympy.Expr, trips: sympy.Expr) -> sympy.Expr:
    """``sum(expr, iter = 0..trips-1)``, exact; ``expr * trips`` when ``expr`` does not use ``iter``.

    ``trips`` may itself use ``iter`` (that of an enclosing loop): the sum runs over a bound variable of its own.
    """
    it = iteration_symbol()
    if it not in expr.free_symbols:
        return expr * trips
    k = sympy.Dummy("k", integer=True, nonnegative=True)
    body = sympy.piecewise_fold(expr.xreplace({it: k}).rewrite(sympy.Piecewise))
    breaks = sorted(_breakpoints(body, k, expr))
    starts = [0, *breaks]
    pieces = [_polynomial_at(body, k, start, expr) for start in starts]
    x = sympy.Dummy("x")
    partial = [sympy.expand(sympy.summation(piece, (k, 0, x - 1))) for piece in pieces]  # G_j(x) = sum_{k<x}

    def through(j: int, upper: sympy.Expr) -> sympy.Expr:
        """Sum of the ranges before range j, plus range j from its start to ``upper`` - 1."""
        done = sum((partial[i].subs(x, starts[i + 1]) - partial[i].subs(x, starts[i]) for i in range(j)),
                   sympy.Integer(0))
        return sympy.expand(done + partial[j].subs(x, upper) - partial[j].subs(x, starts[j]))

    # From the last range down: (first trip count of the branch, the sum as a function of the trip count x).
    branches: list[tuple[int, sympy.Expr]] = []
    for j in reversed(range(len(starts))):
        single = j + 1 < len(starts) and starts[j + 1] == starts[j] + 1
        value = through(j, sympy.Integer(starts[j])) if single else through(j, x)
        if branches and sympy.expand(branches[-1][1].subs(x, starts[j]) - value) == 0 \
                and (single or sympy.expand(branches[-1][1] - value) == 0):
            branches[-1] = (starts[j], branches[-1][1])  # the branch above holds here too
        else:
            branches.append((starts[j], value))
    if len(branches) == 1:
        return branches[0][1].subs(x, trips)
    return sympy.Piecewise(*((value.subs(x, trips), trips >= start if start else sympy.true)
                             for start, value in branches))


def _breakpoints(body: sympy.Expr, k: sympy.Symbol, original: sympy.Expr) -> set[int]:
    """The positive iterations where a condition of ``body`` on ``k`` can change."""
    out: set[int] = set()
    for relation in body.atoms(sympy.core.relational.Relational):
        if k not in relation.free_symbols:
            continue
        linear = sympy.expand(relation.lhs - relation.rhs)
        slope, rest = linear.coeff(k, 1), linear.coeff(k, 0)
        if not (slope.is_Rational and rest.is_Rational) or slope == 0 or sympy.expand(slope * k + rest - linear) != 0:
            raise IterationSumError(f"cannot sum {_text(original)} over the iterations: the condition {relation} "
                                    "is not linear in iter with numeric coefficients")
        where = -rest / slope
        for candidate in (int(sympy.ceiling(where)), int(sympy.floor(where)) + 1):
            if candidate > 0 and relation.subs(k, candidate - 1) != relation.subs(k, candidate):
                out.add(candidate)
    return out


def _polynomial_at(body: sympy.Expr, k: sympy.Symbol, start: int, original: sympy.Expr) -> sympy.Expr:
    """``body`` on the range of iterations that begins at ``start`` (its conditions decided there)."""
    decided = {relation: relation.subs(k, start) for relation in body.atoms(sympy.core.relational.Relational)
               if k in relation.free_symbols}
    piece = sympy.piecewise_fold(body.xreplace(decided))
    if piece.has(sympy.Piecewise) and any(k in p.free_symbols for p in piece.atoms(sympy.Piecewise)):
        raise IterationSumError(f"cannot sum {_text(original)} over the iterations")
    if not piece.is_polynomial(k):
        raise IterationSumError(f"cannot sum {_text(original)} over the iterations: it is not a polynomial in iter "
                                "between the iterations where its min/max/abs change (floor, ceil and mod of iter "
                                "are not summed)")
    return piece


def _text(expr: sympy.Expr) -> str:
    return sympy.sstr(expr).replace("**", "^")


__all__ = ["ITER", "IterationSumError", "iteration_symbol", "sum_over_iterations"]
