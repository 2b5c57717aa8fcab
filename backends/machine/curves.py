"""Measured curves of the profile read at a symbolic point: linear in log-log between neighbouring measured points
(what ``numpy.interp`` of the logs gives, y_i (x/x_i)^b_i), as SymPy ``Piecewise`` expressions, so a prediction
stays symbolic in the model's inputs and exports to Octave.

:func:`loglog` is that rule with the ends a caller chooses; :func:`wall_per_message` reads a work curve (wall
seconds per message by seconds of work between messages: the oversubscribed exchange's, the Python exchange's),
:func:`constant_ends` a curve that keeps its end values beyond its points (the CSR curve).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import sympy
from sympy.codegen.cfunctions import log2

from ma_post.sympy_expr import as_expr

Pieces = list[tuple[sympy.Expr, sympy.Basic]]


def loglog(points: Sequence[tuple[float, float]], x: sympy.Expr, below: Pieces, beyond: sympy.Expr) -> sympy.Expr:
    """``below`` (the pieces up to the first point, with their conditions), then y_0 (x/x_0)^b between each two
    neighbouring ``points`` (sorted, x > 0), then ``beyond`` past the last."""
    pieces = list(below)
    (x0, y0), rest = points[0], points[1:]
    for x1, y1 in rest:
        slope = math.log(y1 / y0) / math.log(x1 / x0)
        pieces.append((sympy.Float(y0) * (x / sympy.Float(x0)) ** sympy.Float(slope), x <= sympy.Float(x1)))
        x0, y0 = x1, y1
    pieces.append((beyond, sympy.true))
    return sympy.Piecewise(*pieces)


def constant_ends(points: Sequence[tuple[float, float]], at: sympy.Expr | float) -> sympy.Expr:
    """The curve at ``at``: log-log between its points, its first value below the first and its last above the
    last (``points`` sorted by x)."""
    x = as_expr(at)
    (x0, y0), (_, last) = points[0], points[-1]
    return loglog(points, x, [(sympy.Float(y0), x <= sympy.Float(x0))], sympy.Float(last))


def wall_per_message(curve: Sequence[tuple[float, float]], work: sympy.Expr) -> sympy.Expr:
    """Wall seconds per message at ``work`` seconds of work per message, on a measured curve (sorted by work).

    Between two measured points with work > 0: log-log; from the zero-work point to the first: linear; beyond the
    last: the last point's stretch w/x_k y_k (the wall time grows with the work, as it must); below the first
    point without a zero-work point: the first point's wall time.

    Written without conditions on ``work`` (:func:`_hinged`): the work of a whole program may hold Piecewise terms
    (the node term's, an iteration sum's), and SymPy folds every Piecewise inside a condition into the
    condition's branches, which took minutes and gigabytes for one prediction with a seven-point curve. Its Max
    and Min are left unevaluated: SymPy's search for an order between a whole program's work and a number (its
    ``factor_terms`` of their difference) was most of a prediction's time, and it can decide nothing that the
    numbers do not decide when the model is evaluated."""
    w = as_expr(work)
    (x0, y0), rest = curve[0], list(curve[1:])
    if x0 <= 0 and not rest:  # the zero-work point alone: its wall time whatever the work
        return sympy.Float(y0)
    if x0 <= 0:
        x1, y1 = rest[0]
        # linear up to the first point with work, then the log-log curve from there: each is constant beyond
        # its span, so their sum less the shared value y1 is the one curve
        linear = sympy.Float(y0) + sympy.Float((y1 - y0) / x1) * sympy.Min(w, sympy.Float(x1), evaluate=False)
        return linear + _hinged(rest, w) - sympy.Float(y1)
    return _hinged(list(curve), w)


def _hinged(points: Sequence[tuple[float, float]], w: sympy.Expr) -> sympy.Expr:
    """The log-log curve through ``points`` (x > 0, sorted) at ``w``: its first value below the first point and
    slope 1 in log-log (y proportional to w) past the last, as one exponential of hinges, ``max(0, log w - log
    x_i)`` times the change of slope at each point: the same values as the Piecewise of :func:`loglog`, with no
    condition on ``w``."""
    logs = [(math.log(x), math.log(y)) for x, y in points]
    slopes = [(b[1] - a[1]) / (b[0] - a[0]) for a, b in itertools.pairwise(logs)] + [1.0]
    t = sympy.log(sympy.Max(w, sympy.Float(points[0][0]), evaluate=False))
    exponent = sympy.Float(logs[0][1]) + sympy.Float(slopes[0]) * (t - sympy.Float(logs[0][0]))
    for (t_i, _), before, after in zip(logs[1:], slopes, slopes[1:], strict=False):
        exponent += sympy.Float(after - before) * sympy.Max(0, t - sympy.Float(t_i), evaluate=False)
    return sympy.exp(exponent)


def between_counts(points: Sequence[tuple[float, sympy.Expr]], k: sympy.Expr) -> sympy.Expr:
    """A value measured at a few counts (of ranks sharing something: 2 and a node's cores, or 1 and the shares of
    a cache) at ``k``: linear in log2 of the count between two measured counts, the first value below the first
    and the last above the last (``points`` sorted by count, counts > 0). Written as the first value plus each
    step's change times the share of the way through it, so that it holds no condition on ``k``."""
    value = as_expr(points[0][1])
    for (low, at_low), (high, at_high) in itertools.pairwise(points):
        share = sympy.Min(1, sympy.Max(0, log2(as_expr(k) / sympy.Float(low)) / sympy.Float(math.log2(high / low))))
        value = value + share * (as_expr(at_high) - as_expr(at_low))
    return value
