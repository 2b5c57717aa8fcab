"""The expression language: grammar, evaluation semantics, errors with columns, safety."""

from __future__ import annotations

import math
import os
from fractions import Fraction
from pathlib import Path

import pytest

import ma
from ma_core.errors import ExpressionDomainError, ExpressionError, MAError, UndefinedVariableError


@pytest.mark.parametrize("text, value", [
    ("1+2*3", 7), ("(1+2)*3", 9), ("10-2-3", 5), ("100/10/5", 2), ("2^3^2", 512), ("(2^3)^2", 64),
    ("-2^2", -4), ("(-2)^2", 4), ("2^-1", 0.5), ("2*-3", -6), ("--3", 3), ("+4", 4), ("-3+5", 2),
    ("2**3", 8), ("1.5e3", 1500.0), (".5*4", 2.0), ("7/2", 3.5), ("8*6/2", 24),
    ("2*3^2", 18), ("-2*-2", 4), ("1 + 2 * ( 3 - 1 )", 5),
])
def test_precedence_and_associativity(text: str, value: float) -> None:
    result = ma.parse_expression(text).evaluate({})
    assert result == value
    assert type(result) is type(value)  # ints stay exact, a non-dividing / gives a float


@pytest.mark.parametrize("text, value", [
    ("ceil(2.1)", 3), ("floor(2.9)", 2), ("log(exp(2))", 2.0), ("log2(1024)", 10.0), ("log10(1000)", 3.0),
    ("sqrt(16)", 4), ("sqrt(2)", math.sqrt(2)), ("abs(-3)", 3), ("min(4, 2, 9)", 2), ("max(4, 2, 9)", 9),
    ("mod(7, 3)", 1), ("mod(-7, 3)", 2), ("mod(7, -3)", -2), ("mod(5, 0)", 5),
    ("2^ceil(log(8)/(2*log(2)))", 4), ("2^floor(log2(8)/2)", 2),
])
def test_functions(text: str, value: float) -> None:
    assert ma.parse_expression(text).evaluate({}) == pytest.approx(value, rel=1e-15)


def test_ceil_floor_return_ints() -> None:
    assert type(ma.parse_expression("ceil(2.5)").evaluate({})) is int
    assert type(ma.parse_expression("floor(x/2)").evaluate({"x": 7})) is int


def test_variables_and_symbols() -> None:
    expression = ma.parse_expression("dp*na/num_proc_cols + max(l2npcols, 1)")
    assert expression.symbols == frozenset({"dp", "na", "num_proc_cols", "l2npcols"})
    assert expression.evaluate({"dp": 8, "na": 1400, "num_proc_cols": 2, "l2npcols": 1}) == 5601
    assert expression.text == "dp*na/num_proc_cols + max(l2npcols, 1)"


def test_parse_is_cached() -> None:
    assert ma.parse_expression("a*b+1") is ma.parse_expression("a*b+1")


@pytest.mark.parametrize("text, column, fragment", [
    ("1+", 3, "end of expression"),
    ("(1+2", 5, "end of expression"),
    ("2*(3+4))", 8, "unexpected ')'"),
    ("a $ b", 3, "unexpected character '$'"),
    ("foo(2)", 1, "unknown function 'foo'"),
    ("max(1)", 1, "two or more arguments"),
    ("sqrt(1, 2)", 1, "takes 1 argument"),
    ("3 4", 3, "unexpected '4'"),
    ("log", 1, "without arguments"),
    ("", 1, "empty expression"),
    ("x = 3", 3, "unexpected character '='"),
])
def test_errors_name_column_and_expectation(text: str, column: int, fragment: str) -> None:
    with pytest.raises(ExpressionError) as caught:
        ma.parse_expression(text)
    error = caught.value
    assert isinstance(error, MAError)
    assert error.column == column
    assert error.text == text
    assert fragment in str(error)
    assert repr(text) in str(error)


def test_expected_tokens_are_named() -> None:
    with pytest.raises(ExpressionError) as caught:
        ma.parse_expression("2*")
    assert "a number" in caught.value.expected and "a name" in caught.value.expected


def test_missing_variable_is_named() -> None:
    with pytest.raises(UndefinedVariableError) as caught:
        ma.parse_expression("n*nonzer+1").evaluate({"n": 3})
    assert caught.value.name == "nonzer"
    assert caught.value.column == 3
    assert "'nonzer' is not defined" in str(caught.value)


@pytest.mark.parametrize("text, fragment", [
    ("1/(n-2)", "division by zero"), ("log(n-2)", "log of a non-positive"), ("sqrt(1-n)", "sqrt of a negative"),
    ("0^-1", "zero raised to a negative power"), ("(-8)^0.5", "fractional power"),
])
def test_domain_errors_name_the_expression(text: str, fragment: str) -> None:
    with pytest.raises(ExpressionDomainError) as caught:
        ma.parse_expression(text).evaluate({"n": 2})
    assert fragment in str(caught.value)
    assert repr(text) in str(caught.value)


HOSTILE = [
    "__import__('os').system('touch pwned')",
    "open('pwned', 'w')",
    "().__class__.__bases__[0].__subclasses__()",
    "exec('import os')",
    "lambda: 1",
    "a.b",
    "x[0]",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_is_a_clean_error_and_runs_nothing(text: str, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ExpressionError):
        ma.parse_expression(text).evaluate({"a": 1, "x": 1, "exec": 1})
    assert not (tmp_path / "pwned").exists()
    assert os.listdir(tmp_path) == []


def _exact(text: str, env: dict[str, int]) -> Fraction:
    """Reference value computed with Fractions, independent of the compiler under test."""
    from ma_core.expr.nodes import BinOp, Call, Neg, Num, Var

    def walk(node: object) -> Fraction:
        if isinstance(node, Num):
            return Fraction(node.value)
        if isinstance(node, Var):
            return Fraction(env[node.name])
        if isinstance(node, Neg):
            return -walk(node.operand)
        if isinstance(node, BinOp):
            a, b = walk(node.left), walk(node.right)
            return {"+": a + b, "-": a - b, "*": a * b, "/": a / b}[node.op] if node.op != "^" else a ** int(b)
        assert isinstance(node, Call) and node.func in ("min", "max")
        return (min if node.func == "min" else max)(walk(a) for a in node.args)

    return walk(ma.parse_expression(text).tree)


@pytest.mark.parametrize("text", [
    "a*b/c + d", "(a+b)*(c-d)/2", "a^2 + b^3 - c", "max(a, b)*min(c, d)/a", "-a*b + c/d - 3",
    "a/b/c", "a - b - c - d", "(a + 1)^2 / (b + 1)",
])
@pytest.mark.parametrize("env", [dict(a=3, b=5, c=7, d=2), dict(a=12, b=4, c=2, d=9), dict(a=150000, b=15, c=4, d=8)])
def test_evaluation_matches_exact_arithmetic(text: str, env: dict[str, int]) -> None:
    value = ma.parse_expression(text).evaluate(env)
    exact = _exact(text, env)
    if exact.denominator == 1:
        assert value == int(exact) and isinstance(value, int)
    else:
        assert value == pytest.approx(float(exact), rel=1e-14)


def test_grammar_lives_in_its_own_file() -> None:
    from ma_core.expr import parser

    grammar = Path(parser.__file__).with_name("grammar.lark")
    assert grammar.is_file() and "?sum" in grammar.read_text()
