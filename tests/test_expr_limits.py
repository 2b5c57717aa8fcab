"""The limits of the expression language (ma_core/expr/limits.py), case by case, in both runtimes.

Each hostile input of docs/reliability.md ends, in microseconds to milliseconds, in the same ExpressionError with the
same column in Python and in the C runtime's evaluator; valid text near each limit still evaluates.
"""

from __future__ import annotations

import ctypes
from typing import Any

import pytest
from test_expr_fuzz import C_BINDINGS, ENV, agree, c_outcome, libma, python_outcome

import ma
from ma_core.errors import ExpressionError
from ma_core.expr.limits import MAX_DEPTH, MAX_LENGTH

__all__ = ["libma"]  # the fixture, shared with the fuzz tests

TOO_LARGE = "result is too large (magnitude over 1.7976931348623157e+308)"
TOO_DEEP = "nested too deeply (more than 100 levels of parentheses, function calls, signs and exponents)"


@pytest.mark.parametrize("text, column, message", [
    # deep nesting and long chains
    ("-" * 9_999 + "1", MAX_DEPTH + 1, TOO_DEEP),
    ("-" * 10_000 + "1", MAX_LENGTH + 1, "expression too long (10001 characters, at most 10000)"),
    ("abs(" * 2_000, MAX_DEPTH * 4 + 1, TOO_DEEP),
    ("(" * 4_999 + "1" + ")" * 4_999, MAX_DEPTH + 1, TOO_DEEP),
    ("1^" * 4_999 + "1", MAX_DEPTH * 2 + 2, TOO_DEEP),
    ("1+" * 500_000 + "1", MAX_LENGTH + 1, "expression too long (1000001 characters, at most 10000)"),
    # huge numbers
    ("9" * 5000, 1, "number too large (the largest allowed is 1.7976931348623157e+308)"),
    ("2*1e999999", 3, "number too large (the largest allowed is 1.7976931348623157e+308)"),
    ("mod(1e999,2)", 5, "number too large (the largest allowed is 1.7976931348623157e+308)"),
    ("9^9^9", 5, TOO_LARGE),
    ("2^2^2^2^2^2^2^2", 15, TOO_LARGE),
    ("y^3^2^nprocs", 7, TOO_LARGE),
    ("3^k", 3, TOO_LARGE),
    ("1e308*10", 7, TOO_LARGE),
    ("1e308+1e308", 7, TOO_LARGE),
    ("x + 1", 1, "variable 'x' is too large (magnitude over 1.7976931348623157e+308)"),
    ("abs(z)", 5, "variable 'z' is not a number (NaN)"),
    # columns from the start of the whole text, on any line
    ("1 +\n2 *\n(3 $ 4)", 12, "unexpected character '$'"),
])
def test_each_hostile_input_is_the_same_error_at_the_same_column(libma: Any, text: str, column: int,
                                                                   message: str) -> None:
    env = {**ENV, "y": 3, "nprocs": 4, "x": float("inf"), "z": float("nan")}
    with pytest.raises(ExpressionError) as caught:
        ma.parse_expression(text).evaluate(env)
    error = caught.value
    assert error.column == column
    assert message in str(error)
    assert len(str(error)) < 600  # a bounded excerpt, not the megabyte of text
    bindings = f"{C_BINDINGS},y=3,nprocs=4,x=inf,z=nan"
    out = ctypes.create_string_buffer(8192)
    ok = libma.ma_evaluate(text.encode(), bindings.encode(), out, len(out)) == 0
    assert not ok and out.value.decode().split(" (expected")[0] == str(error).split(" (expected")[0]


def test_the_excerpt_shows_the_neighbourhood_of_the_column() -> None:
    text = "a + " * 100 + "$" + " + b" * 100
    with pytest.raises(ExpressionError) as caught:
        ma.parse_expression(text)
    first, excerpt, caret = str(caught.value).split("\n")
    assert first.startswith("expression 'a + a + ") and "...' at column 401:" in first
    assert excerpt == "    ..." + text[360:440] + "..."
    assert caret.index("^") == excerpt.index("$")


@pytest.mark.parametrize("text, value", [
    ("(" * MAX_DEPTH + "1" + ")" * MAX_DEPTH, 1),
    ("-" * MAX_DEPTH + "1", 1),
    ("+".join(["1"] * (MAX_LENGTH // 2)), MAX_LENGTH // 2),
    ("k" + "*k/k" * 2000, 10000),
    ("2^1023", 2**1023),
    ("-(2^1023) * 1.5", -(2**1023) * 1.5),
    ("9" * 308, int("9" * 308)),
    ("max(" + ",".join(str(i) for i in range(64)) + ")", 63),
])
def test_valid_text_at_the_limits_still_evaluates(libma: Any, text: str, value: int | float) -> None:
    py = python_outcome(text)
    assert py == (True, value)
    if abs(value) < 2**63:
        assert agree(py, c_outcome(libma, text, ctypes.create_string_buffer(8192)))


def test_a_call_takes_at_most_64_arguments(libma: Any) -> None:
    text = "max(" + ",".join(["1"] * 65) + ")"
    py = python_outcome(text)
    assert py[0] is False and "at column 1: too many arguments" in str(py[1])
    assert agree(py, c_outcome(libma, text, ctypes.create_string_buffer(8192)))


MEMCHECK_DRIVER = r"""
#include <stdio.h>
#include <string.h>
int ma_evaluate(const char *expr, const char *bindings, char *out, size_t cap);

int main(int argc, char **argv)
{
    static char text[16384], out[8192];
    FILE *inputs = argc > 1 ? fopen(argv[1], "r") : NULL;
    int failed = 0;
    while (inputs && fgets(text, sizeof text, inputs)) {
        text[strcspn(text, "\n")] = '\0';
        failed += ma_evaluate(text, "a=3,k=10000,x=inf", out, sizeof out) != 0;
    }
    printf("%d failed\n", failed);
    return inputs ? 0 : 1;
}
"""


@pytest.mark.valgrind
def test_the_c_parser_and_evaluator_are_clean_under_memcheck(tmp_path: Any) -> None:
    """Every error path of the C parser (a chain, a call, a group cut short; a limit reached) frees what it
    built: Valgrind's memcheck finds no invalid access and no leak."""
    import subprocess

    from test_c_runtime import compile_c

    cases = ["1+2*3", "1+2+3+$", "1*2/0", "max(1,2,3,4,5,6,7,8", "((1+2)", "1+2+3+4+5+(6*7*8", "-(-(-1))",
             "a^3^2^k", "min(1)", "foo(1,2)", "1e999", "9^9^9", "x+1", "mod(7,-3)", "max(" + "1," * 64 + "1)",
             "1+" * 3000 + "$", "abs(" * 200, "2*" * 2500 + "1", "k" + "+1-1" * 2000, "(" * 99 + "1" + ")" * 99]
    (tmp_path / "inputs.txt").write_text("\n".join(cases) + "\n")
    source = tmp_path / "driver.c"
    source.write_text(MEMCHECK_DRIVER)
    driver = compile_c(source, tmp_path / "driver")
    done = subprocess.run(["valgrind", "--error-exitcode=9", "--leak-check=full", "--errors-for-leak-kinds=definite",
                           str(driver), str(tmp_path / "inputs.txt")], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "15 failed"
    assert "ERROR SUMMARY: 0 errors" in done.stderr
