"""Fuzzing the expression language, in Python, in the C runtime's evaluator and in the SymPy converter.

A seeded generator (reproducible: a failure names its seed and input) makes random strings, grammar-valid
expressions, deep nesting, long chains, huge literals and powers, and mutations of valid text. Every input
must end within a fixed time in a finite value within MAX_MAGNITUDE or in the project's ExpressionError
with a column; nothing else may escape (no RecursionError, digit-limit ValueError, OverflowError, crash).
The quick lane runs a few thousand inputs; the slow test runs more than 10^5.
"""

from __future__ import annotations

import ctypes
import functools
import json
import math
import random
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ma
from ma_core.errors import ExpressionError
from ma_core.expr.limits import MAX_DEPTH, MAX_LENGTH, MAX_MAGNITUDE

# Generous: a hang or an exponential blow-up takes far longer; a 10,000-character parse takes ~0.1 s.
SECONDS_PER_INPUT = 5.0
ENV: dict[str, int | float] = {"a": 3, "b": 7, "n": 1024, "k": 10000, "h": 0.25, "big": 10**300, "tiny": 1e-300}
C_BINDINGS = ",".join(f"{k}={v!r}" for k, v in ENV.items())

ALPHABET = "0123456789.eE+-*/^(),  abhnk_xz\t\n"
JUNK = "$'\"[]{}=!<>;:@#%&|~`?\\\x00é∞"
FUNCTIONS = ["ceil", "floor", "log", "log2", "log10", "exp", "sqrt", "abs", "min", "max", "mod"]
NAMES = ["a", "b", "n", "k", "h", "big", "tiny", "undefined_name"]


# ---- the generator -----------------------------------------------------------------------------------
def random_string(rng: random.Random) -> str:
    length = rng.randint(0, 40)
    pool = ALPHABET + (JUNK if rng.random() < 0.3 else "")
    return "".join(rng.choice(pool) for _ in range(length))


def literal(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.6:
        return str(rng.randint(0, 20))
    if roll < 0.75:
        return f"{rng.uniform(0, 10):.3g}"
    if roll < 0.85:
        return "9" * rng.randint(15, 320)  # around 2^63 and around the 309-digit limit
    return f"{rng.randint(1, 9)}e{rng.randint(-400, 400)}"


def grammar_valid(rng: random.Random, depth: int) -> str:
    if depth <= 0 or rng.random() < 0.3:
        return literal(rng) if rng.random() < 0.5 else rng.choice(NAMES[:-1])
    kind = rng.randrange(7)
    a, b = grammar_valid(rng, depth - 1), grammar_valid(rng, depth - 1)
    if kind == 0:
        return f"{a} {rng.choice(['+', '-', '*', '/'])} {b}"
    if kind == 1:
        return f"({a}){rng.choice(['^', '**'])}{rng.choice([b, str(rng.randint(-3, 2000))])}"
    if kind == 2:
        return f"{rng.choice('-+')}({a})"
    if kind == 3:
        return f"{rng.choice(FUNCTIONS[:8])}({a})"
    if kind == 4:
        return f"{rng.choice(['min', 'max', 'mod'])}({a}, {b})"
    if kind == 5:
        return f"{rng.choice(NAMES)}"
    return f"({a}) {rng.choice('+-*/^')} ({b})"


def deep_nesting(rng: random.Random) -> str:
    depth = rng.choice([MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, rng.randint(1, 3 * MAX_DEPTH), 4000])
    opener, closer = rng.choice([("(", ")"), ("abs(", ")"), ("-", ""), ("+", ""), ("2^", ""), ("max(1,", ")"),
                                 ("-(", ")"), ("sqrt(", ")"), ("2**", ""), ("log(exp(", "))")])
    core = rng.choice(["1", "a", "h", "0.5"])
    text = opener * depth + core + closer * depth
    return text[:MAX_LENGTH + 50] if rng.random() < 0.5 else text


def long_chain(rng: random.Random) -> str:
    terms = rng.choice([10, 1000, MAX_LENGTH // 2, MAX_LENGTH // 2 + 1, rng.randint(2, MAX_LENGTH)])
    ops = rng.choice(["+", "-", "*", "/", "+-", "*/", "+-*/"])
    operand = rng.choice(["1", "a", "h", "2", "n"])
    return operand + "".join(rng.choice(ops) + operand for _ in range(terms - 1))


def huge(rng: random.Random) -> str:
    return rng.choice([
        "9" * rng.randint(300, 6000), "1" + "0" * rng.randint(300, 400), f"1e{rng.randint(300, 10**6)}",
        f"-1e{rng.randint(308, 400)}", "9^9^9", "2^" * rng.randint(2, 40) + "2", "a^3^2^n", "k^k", "n^n",
        f"3^{rng.randint(600, 100000)}", f"(-2)^{rng.randint(1000, 1100)}", f"0.5^-{rng.randint(900, 2000)}",
        f"mod(1e{rng.randint(300, 999)}, 2)", "big*big", "big*1e8", "tiny/big", "big/tiny", "exp(1000)",
        f"{rng.randint(2, 9)}^{rng.randint(2, 9)}^{rng.randint(2, 9)}^{rng.randint(2, 9)}", "2^1023*2",
        "2^1023*1.999", "ceil(1e308)", "floor(-big)", "(2^62)*4", "min(9" + "9" * 400 + ", 1)",
    ])


def mutate(rng: random.Random, text: str) -> str:
    chars = list(text)
    for _ in range(rng.randint(1, 3)):
        position = rng.randint(0, len(chars))
        roll = rng.random()
        if roll < 0.4 and chars:
            del chars[min(position, len(chars) - 1)]
        elif roll < 0.8:
            chars.insert(position, rng.choice(ALPHABET + JUNK))
        else:
            chars.insert(position, rng.choice(["\n", "((", ")", "^", "e", "**", ",", "-" * 50]))
    return "".join(chars)


def inputs(seed: int, count: int) -> Iterator[str]:
    rng = random.Random(seed)
    for _ in range(count):
        roll = rng.random()
        if roll < 0.25:
            yield random_string(rng)
        elif roll < 0.6:
            yield grammar_valid(rng, rng.randint(1, 6))
        elif roll < 0.8:
            yield mutate(rng, grammar_valid(rng, rng.randint(1, 4)))
        elif roll < 0.95:
            yield huge(rng)
        elif roll < 0.99:
            yield deep_nesting(rng)
        else:
            yield long_chain(rng)


# ---- the checks --------------------------------------------------------------------------------------
def python_outcome(text: str) -> tuple[bool, Any]:
    """(True, value) or (False, the ExpressionError); anything else escapes and fails the test."""
    try:
        value = ma.parse_expression(text).evaluate(ENV)
    except ExpressionError as error:
        assert 1 <= error.column <= len(text) + 1, (text[:200], str(error)[:400])
        assert len(str(error)) < 1000, "an error message must quote a bounded excerpt"
        return False, error
    assert isinstance(value, (int, float)) and not isinstance(value, bool), (text[:200], value)
    assert -MAX_MAGNITUDE <= value <= MAX_MAGNITUDE, text[:200]
    return True, value


@pytest.fixture(scope="module")
def libma() -> Any:
    from ma_tools import cparts

    lib = ctypes.CDLL(str(cparts.build_c_runtime()))
    lib.ma_evaluate.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.ma_evaluate.restype = ctypes.c_int
    return lib


def c_outcome(lib: Any, text: str, out: Any) -> tuple[bool, Any]:
    """The C evaluator through ma_evaluate: (True, value) or (False, message); a crash ends the test run."""
    if lib.ma_evaluate(text.encode("utf-8", "replace"), C_BINDINGS.encode(), out, len(out)) == 0:
        value = json.loads(out.value.decode())
        assert isinstance(value, (int, float)) and math.isfinite(value), (text[:200], value)
        return True, value
    message = out.value.decode("utf-8", "replace")
    assert " at column " in message, (text[:200], message[:400])
    return False, message


# Past 2^63 C integers become doubles (documented): mod, floor or a comparison of such a value may then
# differ from Python's exact integer. Values are compared only for inputs unlikely to build one: no integer
# literal or power of ten past 1e9, no `big`, no two-digit integer exponent, no power of the large `k`, `n`.
_BEYOND_INT64 = re.compile(r"\d{10}|big|[eE]\+?\d{2}|(\^|\*\*)\s*\(?[-+]?\d{2}")
_LARGE_VARIABLE = re.compile(r"\b[kn]\b")


def comparable(text: str) -> bool:
    if not text.isascii() or "\x00" in text or _BEYOND_INT64.search(text):
        return False
    return not (("^" in text or "**" in text) and _LARGE_VARIABLE.search(text))


def agree(py: tuple[bool, Any], c: tuple[bool, Any]) -> bool:
    """Both runtimes reach the same verdict: the same message for an error, the same value (and type below
    2^63) otherwise."""
    (py_ok, py_value), (c_ok, c_value) = py, c
    if py_ok != c_ok:
        return False
    if not py_ok:  # the hint after "expected" names each language's own API (ma.variable, ma_def_variable_int)
        return _EXPECTED_HINT.sub("", str(py_value)) == _EXPECTED_HINT.sub("", c_value)
    if isinstance(py_value, int) and isinstance(c_value, float):
        return True  # C went through a double past 2^63 (e.g. a product of many factors), Python stayed exact
    if isinstance(py_value, int) and abs(py_value) < 2**63:
        return c_value == py_value and type(c_value) is int
    return math.isclose(float(py_value), float(c_value), rel_tol=1e-9, abs_tol=1e-300)


_EXPECTED_HINT = re.compile(r" \(expected [^\n]*\)(?=\n|$)")
_SYNTAX_ERROR = re.compile(r" at column \d+: (unexpected |empty expression)")


def grammar_agrees(text: str) -> bool:
    """The reference grammar (grammar.lark, through lark) accepts what the parser accepts and rejects what
    it calls a syntax error; the parser's other errors (limits, unknown functions, arity) are its own."""
    from lark.exceptions import UnexpectedInput

    from ma_core.expr.parser import parse_tree

    try:
        parse_tree(text)
        parsed = True
    except ExpressionError as error:
        if not _SYNTAX_ERROR.search(str(error).split("\n")[0]):
            return True
        parsed = False
    try:
        _reference_grammar().parse(text)
    except UnexpectedInput:
        return not parsed
    return parsed


@functools.lru_cache(maxsize=1)
def _reference_grammar() -> Any:
    from lark import Lark

    from ma_core.expr import parser

    return Lark(Path(parser.__file__).with_name("grammar.lark").read_text(), parser="lalr")


def run_fuzz(seed: int, count: int, lib: Any, grammar_every: int = 1) -> int:
    out = ctypes.create_string_buffer(8192)
    compared = 0
    for index, text in enumerate(inputs(seed, count)):
        start = time.perf_counter()
        py = python_outcome(text)
        middle = time.perf_counter()
        c = c_outcome(lib, text, out)
        elapsed = max(middle - start, time.perf_counter() - middle)
        assert elapsed < SECONDS_PER_INPUT, f"seed {seed} input {index} took {elapsed:.2f} s: {text[:200]!r}"
        if comparable(text):
            assert agree(py, c), f"seed {seed} input {index}: {text[:200]!r}: python {py}, C {c}"
            compared += 1
        if index % grammar_every == 0 and len(text) <= 2000 and "\v" not in text:
            assert grammar_agrees(text), f"seed {seed} input {index}: {text[:200]!r}: parser says {py}"
    return compared


def test_fuzz_quick(libma: Any) -> None:
    assert run_fuzz(seed=14, count=3000, lib=libma) > 1000


@pytest.mark.slow
def test_fuzz_fifty_thousand_inputs(libma: Any) -> None:
    compared = sum(run_fuzz(seed=seed, count=25_000, lib=libma, grammar_every=5) for seed in (1, 2))
    assert compared > 20_000


@pytest.mark.parametrize("text", ["9^9^9", "2^2^2^2^2^2^2^2", "1e999", "mod(1e999,2)", "0^-1", "1/(a-a)",
                                  "9" * 5000, "abs(" * 200 + "1" + ")" * 200, "1+" * 6000 + "1"])
def test_sympy_conversion_refuses_what_the_runtime_refuses(text: str) -> None:
    from ma_post.sympy_expr import to_sympy

    with pytest.raises(ExpressionError) as caught:
        to_sympy(text)
    assert caught.value.column >= 1


def test_sympy_conversion_of_fuzzed_expressions() -> None:
    """Grammar-valid fuzz through the model converter: a SymPy expression or an ExpressionError, quickly."""
    from ma_post.sympy_expr import to_sympy

    rng = random.Random(1414)
    for _ in range(80):
        text = rng.choice([grammar_valid(rng, 3), huge(rng), long_chain(rng)[:400]])
        start = time.perf_counter()
        try:
            to_sympy(text)
        except ExpressionError as error:
            assert error.column >= 1, text[:200]
        assert time.perf_counter() - start < SECONDS_PER_INPUT, text[:200]


# ---- the model path: to_sympy and ma eval's evaluation agree with the runtime -------------------------
@dataclass
class OneExpressionModel:
    """What ma_post.evaluation reads of a model (its NumericModel protocol), for one converted expression."""

    expr: Any
    quantity: str = "fuzzed"
    trace_values: dict[str, Any] = field(default_factory=dict)
    ranks: Any = field(default_factory=lambda: np.arange(1))
    cache: dict[str, Any] = field(default_factory=dict)
    size: int = 1

    @property
    def inputs(self) -> list[str]:
        return sorted(s.name for s in self.expr.free_symbols)

    def inlined(self) -> Any:
        return self.expr


def model_outcome(text: str) -> tuple[bool, Any]:
    """(True, value) or (False, the MAError) of the text through to_sympy and evaluate, ma eval's path."""
    from ma_core.errors import MAError
    from ma_post.evaluation import evaluate
    from ma_post.sympy_expr import to_sympy

    try:
        model = OneExpressionModel(to_sympy(text))
        value = evaluate(model, {name: float(ENV[name]) for name in model.inputs if name in ENV}).value
    except MAError as error:
        return False, error
    assert math.isfinite(value) and abs(value) <= MAX_MAGNITUDE, (text[:200], value)
    return True, value


# The model is exact algebra (SymPy), the runtime computes left to right: where rounding decides a step
# (ceil, floor, mod) values may differ, and where the algebra drops the part that failed (0*log(a-3) is 0) the
# model has a value the runtime refused; every part without variables is checked by the runtime's evaluator.
_ROUNDING = re.compile(r"ceil|floor|mod")


def model_agrees(text: str, names: frozenset[str], runtime: tuple[bool, Any], model: tuple[bool, Any]) -> bool:
    """Both refuse (without variables, with the runtime's very message), or both give the same value."""
    from ma_post.sympy_expr import to_sympy

    (runtime_ok, runtime_value), (model_ok, model_value) = runtime, model
    if not runtime_ok:
        if model_ok:  # only where the algebra dropped the part that failed: 0*log(a-3) is 0
            return len(to_sympy(text).free_symbols) < len(names)
        return bool(names) or str(model_value).endswith(str(runtime_value))
    if not model_ok:
        return False  # never a refusal of what the runtime evaluates (text with no huge number, as comparable())
    if _ROUNDING.search(text):
        return True
    return math.isclose(float(runtime_value), model_value, rel_tol=1e-9, abs_tol=1e-300)


def test_fuzz_model_path_agrees_with_the_runtime() -> None:
    """Parsed fuzz through to_sympy and ma eval's evaluation, each input within the parser's time bound: the
    runtime's value within float tolerance, or both refuse (with the runtime's own message where the text holds
    no variable)."""
    from ma_core.expr.nodes import free_symbols
    from ma_core.expr.parser import parse_tree

    checked = constant = 0
    for index, text in enumerate(inputs(seed=30, count=2500)):
        if len(text) > 2000:
            continue
        try:
            names = free_symbols(parse_tree(text))
        except ExpressionError:
            continue  # refused by the parser, which both paths share
        runtime = python_outcome(text)
        start = time.perf_counter()
        model = model_outcome(text)
        elapsed = time.perf_counter() - start
        assert elapsed < SECONDS_PER_INPUT, f"input {index} took {elapsed:.2f} s: {text[:200]!r}"
        if comparable(text) or not names:
            agrees = model_agrees(text, names, runtime, model)
            assert agrees, f"input {index}: {text[:200]!r}: runtime {runtime}, model {model}"
            checked += 1
            constant += not names
    assert checked > 500 and constant > 100, (checked, constant)
