"""Expression text -> SymPy agrees with the runtime's evaluator (ma_core.expr) value for value."""

from __future__ import annotations

import math
import random

import pytest
import sympy

from ma_core.errors import ExpressionError
from ma_core.expr import parse_expression
from ma_post.sympy_expr import as_expr, to_sympy, to_text

VALUES = {"na": 1400, "nonzer": 7, "nprocs": 16, "x": 3.5, "y": 0.25, "k": -5}

CURATED = [
    "2^ceil(log(nprocs)/(2*log(2)))", "log(2^ceil(log(nprocs)/(2*log(2))))/log(2)", "8*na/2", "na/3",
    "dp*na/num", "2^3^2", "-2^2", "2^-1", "(-2)^3", "2**10", "nonzer*(nonzer+1)^2", "ceil(na/nprocs)",
    "floor(na/nprocs)", "ceil(x)", "floor(-x)", "abs(k)", "sqrt(nprocs)", "sqrt(x)", "exp(y)", "log(na)",
    "log2(nprocs)", "log10(na)", "log2(na)", "mod(na, nprocs)", "mod(k, 3)", "mod(7, -3)", "mod(x, 2)",
    "mod(na, 0)", "min(na, nprocs, x)", "max(k, y)", "min(x, y)", "1e3*y", "0.1*na", ".5*x", "1.5e-2*na",
    "-k", "+x", "x - y - k", "na/nprocs/2", "max(nonzer-2, 1)*na", "ceil(log2(na))", "floor(log10(na))",
]


@pytest.mark.parametrize("text", CURATED)
def test_curated_expressions_match_the_runtime(text: str) -> None:
    env = {**VALUES, "dp": 8, "num": 4}
    expected = parse_expression(text).evaluate(env)
    expr = to_sympy(text)
    value = expr.xreplace({sympy.Symbol(k): sympy.nsimplify(v) for k, v in env.items()})
    assert math.isclose(float(value), float(expected), rel_tol=1e-13, abs_tol=1e-300), (text, value, expected)


def test_exactness() -> None:
    assert to_sympy("8*na/2") == 4 * sympy.Symbol("na")
    assert to_sympy("0.1") == sympy.Rational(1, 10)  # float literals stay exact
    assert to_sympy("na/3").xreplace({sympy.Symbol("na"): 7}) == sympy.Rational(7, 3)
    assert to_sympy("log2(1024)") == 10 and to_sympy("log10(1000)") == 3
    assert to_sympy("ceil(log(64)/(2*log(2)))") == 3
    assert to_sympy("mod(-7, 3)") == 2 and to_sympy("mod(7, -3)") == -2
    assert to_sympy("mod(na, 0)") == sympy.Symbol("na")  # Octave's (and the runtime's) mod(a, 0) = a
    assert to_sympy("mod(na, b)").xreplace({sympy.Symbol("b"): 0}) == sympy.Symbol("na")
    assert to_sympy("mod(na, b)").xreplace({sympy.Symbol("na"): 7, sympy.Symbol("b"): 3}) == 1
    assert to_text(to_sympy("mod(na, b)")) == "mod(na, b)"
    assert to_text(to_sympy("2^ceil(log(nprocs)/(2*log(2)))")) == "2^ceiling(log(nprocs)/(2*log(2)))"


def _random_expression(rng: random.Random, depth: int) -> str:
    """Random expressions over positive variables whose evaluation is well defined and has no cancellation."""
    if depth == 0 or rng.random() < 0.25:
        choice = rng.random()
        if choice < 0.5:
            return rng.choice(["a", "b", "c", "n"])
        if choice < 0.8:
            return str(rng.randint(1, 9))
        return rng.choice(["0.5", "2.25", "1e1", "0.125"])
    a, b = _random_expression(rng, depth - 1), _random_expression(rng, depth - 1)
    kind = rng.randrange(12)
    if kind < 2:
        return f"({a} + {b})"
    if kind < 4:
        return f"{a} * {b}"
    if kind == 4:
        return f"{a} / (1 + {b})"
    if kind == 5:
        return f"(1 + {a})^{rng.choice(['2', '0.5', '3', '-1'])}"
    if kind == 6:
        return f"{rng.choice(['ceil', 'floor', 'sqrt', 'abs'])}({a})"
    if kind == 7:
        return f"{rng.choice(['log', 'log2', 'log10'])}(1 + {a})"
    if kind == 8:
        return f"exp(min({a}, 3))"
    if kind == 9:
        return f"{rng.choice(['min', 'max'])}({a}, {b}, {_random_expression(rng, 0)})"
    if kind == 10:
        return f"mod(ceil({a}), ceil({b}))"
    return f"-(-{a})"


def test_random_expressions_match_the_runtime() -> None:
    rng = random.Random(20240521)
    checked = 0
    for _ in range(200):
        text = _random_expression(rng, 4)
        expr = to_sympy(text)
        runtime = parse_expression(text)
        for _ in range(3):
            env = {"a": rng.randint(1, 50), "b": rng.uniform(0.5, 20), "c": rng.randint(1, 8),
                   "n": rng.randint(1, 1024)}
            expected = float(runtime.evaluate(env))
            exact = expr.xreplace({sympy.Symbol(k): sympy.Rational(repr(v)) for k, v in env.items()})
            got = float(exact.evalf(20))
            assert math.isclose(got, expected, rel_tol=1e-10, abs_tol=1e-12), (text, env, got, expected)
            checked += 1
    assert checked == 600


@pytest.mark.parametrize("text, column", [("2 +", 4), ("foo(1)", 1), ("__import__('os')", 1), ("log", 1),
                                          ("min(1)", 1), ("a b", 3)])
def test_bad_text_is_an_expression_error(text: str, column: int) -> None:
    with pytest.raises(ExpressionError) as info:
        to_sympy(text)
    assert info.value.column == column


def test_as_expr_takes_numbers_and_expressions_and_refuses_text() -> None:
    x = sympy.Symbol("x")
    assert as_expr(x + 1) == x + 1
    assert as_expr(3) == sympy.Integer(3) and as_expr(0.5) == sympy.Float(0.5)
    for bad in ("x+1", "__import__('os')", True, None):
        with pytest.raises(TypeError):
            as_expr(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        as_expr(math.inf)


@pytest.mark.parametrize("text", CURATED)
def test_free_symbols_of_a_shared_tree_are_sympys(text: str) -> None:
    from ma_post.sympy_tree import free_symbols

    expr = to_sympy(text)
    k = sympy.Symbol("i")
    shared = sympy.Add(expr, expr * sympy.Symbol("z"), sympy.Sum(k * expr, (k, 1, sympy.Symbol("m"))),
                       sympy.Piecewise((expr, sympy.Symbol("w") < 1), (0, True)), evaluate=False)
    assert free_symbols(expr) == expr.free_symbols
    assert free_symbols(shared) == shared.free_symbols  # i is bound by the Sum: not free
    assert sympy.Symbol("i") not in free_symbols(shared)
