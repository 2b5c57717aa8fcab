"""How long the expression language takes on hostile and on ordinary text (docs/reliability.md).

Prints, from one run:
1. the time to the ExpressionError for each hostile input of docs/reliability.md, in Python (parse + evaluate) and in
   the C runtime's evaluator (ma_evaluate), each the best of a few tries: the goal is milliseconds;
2. the parse time of the longest text allowed (a 10,000-character chain) per character, in both;
3. the evaluation time of typical assertion expressions (compiled once, as the runtime does), next to a
   plain Python function computing the same value, as a ratio: the price of the checks on a cache miss
   (a prediction is evaluated again only after a variable changed).

Usage: python bench/expr_bounds.py [--repeat N]
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import time
import timeit
from collections.abc import Callable

import ma
from ma_core.expr import _CACHE
from ma_core.expr.limits import MAX_LENGTH
from ma_tools import cparts

ENV = {"k": 10000, "y": 3, "nprocs": 4, "na": 1400, "a": 3, "b": 5, "c": 7, "d": 2, "n": 1000}
BINDINGS = ",".join(f"{name}={value}" for name, value in ENV.items())

HOSTILE = {
    "'-' x 9,999 then 1": "-" * 9_999 + "1",
    "'abs(' x 2,000": "abs(" * 2_000,
    "'1^' x 4,999 then 1": "1^" * 4_999 + "1",
    "1 MB of 1+1+...+1": "1+" * 500_000 + "1",
    "5,000-digit literal": "9" * 5_000,
    "9^9^9": "9^9^9",
    "2^2^2^2^2^2^2^2": "2^2^2^2^2^2^2^2",
    "y^3^2^nprocs": "y^3^2^nprocs",
    "3^k": "3^k",
    "1e999999": "1e999999",
    "mod(1e999,2)": "mod(1e999,2)",
}

TYPICAL: dict[str, Callable[[dict[str, int]], float]] = {
    "a*b/c + d": lambda e: e["a"] * e["b"] / e["c"] + e["d"],
    "na*na*8": lambda e: e["na"] * e["na"] * 8,
    "n*(n-1)/2 + 3*n": lambda e: e["n"] * (e["n"] - 1) // 2 + 3 * e["n"],
    "max(a, b) * min(c, d)": lambda e: max(e["a"], e["b"]) * min(e["c"], e["d"]),
}


def best(action: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def python_fails(text: str) -> None:
    _CACHE.clear()
    try:
        ma.parse_expression(text).evaluate(ENV)
    except ma.ExpressionError:
        return
    raise AssertionError(f"{text[:40]!r} did not fail")


def parse_afresh(text: str) -> None:
    _CACHE.clear()
    ma.parse_expression(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    lib = ctypes.CDLL(str(cparts.build_c_runtime()))
    lib.ma_evaluate.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    out = ctypes.create_string_buffer(8192)

    print("1. time to the error (best of", args.repeat, "tries)")
    for name, text in HOSTILE.items():
        python = best(functools.partial(python_fails, text), args.repeat)
        c = best(functools.partial(lib.ma_evaluate, text.encode(), BINDINGS.encode(), out, len(out)), args.repeat)
        print(f"   {name:24} python {python * 1e3:8.3f} ms   C {c * 1e3:8.3f} ms")

    chain = "+".join(["1"] * (MAX_LENGTH // 2))
    python = best(functools.partial(parse_afresh, chain), args.repeat)
    c = best(functools.partial(lib.ma_evaluate, chain.encode(), b"", out, len(out)), args.repeat)
    print(f"2. a {len(chain)}-character chain: python {python * 1e3:.1f} ms ({python / len(chain) * 1e9:.0f} ns per "
          f"character, parse + compile), C {c * 1e3:.2f} ms (parse + evaluate)")

    print("3. evaluation of a compiled expression / the same arithmetic as a plain Python function")
    for text, plain in TYPICAL.items():
        expression = ma.parse_expression(text)
        assert expression.evaluate(ENV) == plain(ENV)
        number = 100_000
        checked = min(timeit.repeat(functools.partial(expression.evaluate, ENV), number=number, repeat=args.repeat))
        direct = min(timeit.repeat(functools.partial(plain, ENV), number=number, repeat=args.repeat))
        print(f"   {text:24} {checked / number * 1e9:7.0f} ns / {direct / number * 1e9:5.0f} ns = "
              f"{checked / direct:.1f}")


if __name__ == "__main__":
    main()
