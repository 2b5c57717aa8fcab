"""Cost of an annotation, and whether the trace and the runtime's memory grow with the iteration count.

Prints, measured side by side in this one process (rounds interleaved, best of each kept, because this
machine is noisy):
  1. enabled ``with ma.loop(...)`` enter+exit  /  ``with`` on a trivial context manager   (goal <= 3)
  2. the same annotation as MA_DISABLE=1 binds it  /  the trivial context manager       (goal <= 1.3)
and, from two runs of one annotated program (15 and 75 outer iterations, each its own process since a
trace is per process):
  3. trace bytes (75) / trace bytes (15)                                                (goal <= 1.01)
  4. peak traced memory of the runtime (75) / (15)                                      (goal <= 1.01)

Usage: python bench/annotation_overhead.py [--calls N] [--rounds R]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import ma
import ma._noop
import ma_runtime


class Trivial:
    """What a with-statement costs at the least: create an object, enter, exit."""

    __slots__ = ("expr", "id")

    def __init__(self, id: str, expr: str) -> None:
        self.id = id
        self.expr = expr

    def __enter__(self) -> Trivial:
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        return False


def disabled_ma() -> types.ModuleType:
    """A module bound exactly as ``import ma`` binds itself under MA_DISABLE=1."""
    module = types.ModuleType("ma_disabled")
    module.__dict__.update(ma._noop.bindings(ma.MPI_ANNOTATIONS))
    return module


def timer(body: Callable[[int], None], calls: int) -> Callable[[], float]:
    def run() -> float:
        start = time.perf_counter_ns()
        body(calls)
        return (time.perf_counter_ns() - start) / calls

    return run


def loops(calls: int) -> dict[str, Callable[[], float]]:
    off = disabled_ma()

    def empty(n: int) -> None:
        for _ in range(n):
            pass

    def bare(n: int) -> None:
        for _ in range(n):
            with Trivial("site", "n"):
                pass

    def enabled(n: int) -> None:
        for _ in range(n):
            with ma.loop("site", "n"):
                pass

    def enabled_end(n: int) -> None:
        for _ in range(n):
            with ma.loop("site_end", "n") as lp:
                lp.end(10)

    def disabled(n: int) -> None:
        for _ in range(n):
            with off.loop("site", "n"):
                pass

    return {name: timer(fn, calls) for name, fn in
            (("empty", empty), ("bare", bare), ("enabled", enabled), ("enabled+end", enabled_end),
             ("disabled", disabled))}


PROGRAM = textwrap.dedent("""
    import sys, tracemalloc
    import ma
    tracemalloc.start()
    ma.variable("niter", int(sys.argv[1]))
    ma.variable("n", 1000)
    ma.assign("half", "n/2")
    with ma.loop("outer", "niter") as outer:
        for it in outer.range(int(sys.argv[1])):
            with ma.subroutine("step"):
                with ma.loop("inner", "25") as inner:
                    for k in inner.range(25):
                        with ma.flop("axpy", "2*n"):
                            pass
                        with ma.loop("reduce", "half/250") as red:
                            red.end(2)
    ma.flush()
    print(tracemalloc.get_traced_memory()[1])
""")


def footprint(iterations: int, work: Path) -> tuple[int, int]:
    """(trace bytes, peak traced bytes) of one run of PROGRAM."""
    trace_dir = work / f"t{iterations}"
    env = {**os.environ, "MA_TRACE_DIR": str(trace_dir), "MA_FLUSH_SECONDS": "0"}
    env.pop("MA_DISABLE", None)
    script = work / "program.py"
    script.write_text(PROGRAM)
    done = subprocess.run([sys.executable, str(script), str(iterations)], env=env, capture_output=True,
                          text=True, check=True)
    peak = int(done.stdout.strip())
    trace = trace_dir / "rank-0.ma.json"
    calls = json.loads(trace.read_text())["threads"][0]["root"]["children"][3]["calls"]
    assert calls == 1, "the outer loop must be one folded node"
    return trace.stat().st_size, peak


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()

    ma.variable("n", 10)
    runs = loops(args.calls)
    best = {name: float("inf") for name in runs}
    for _ in range(args.rounds):
        for name, run in runs.items():
            best[name] = min(best[name], run())
    net = {name: best[name] - best["empty"] for name in runs if name != "empty"}
    compiled = "compiled (Cython)" if ma_runtime.COMPILED else f"pure Python ({ma_runtime.NOT_COMPILED_REASON})"
    print(f"runtime: {compiled}; {args.calls} calls x {args.rounds} rounds, best round, loop cost subtracted")
    for name, ns in net.items():
        print(f"  {name:<12} {ns:8.1f} ns per with-statement")
    ratio_enabled = net["enabled"] / net["bare"]
    ratio_end = net["enabled+end"] / net["bare"]
    ratio_disabled = net["disabled"] / net["bare"]
    print(f"ratio enabled ma.loop / bare with        = {ratio_enabled:.2f}   (goal <= 3)")
    print(f"ratio enabled ma.loop + lp.end / bare    = {ratio_end:.2f}   (for information)")
    print(f"ratio MA_DISABLE=1 ma.loop / bare with   = {ratio_disabled:.2f}   (goal <= 1.3)")

    with tempfile.TemporaryDirectory() as work:
        small_bytes, small_peak = footprint(15, Path(work))
        large_bytes, large_peak = footprint(75, Path(work))
    print(f"trace bytes        15 iterations: {small_bytes:8d}  75 iterations: {large_bytes:8d}  "
          f"ratio = {large_bytes / small_bytes:.4f}   (goal <= 1.01)")
    print(f"peak traced memory 15 iterations: {small_peak:8d}  75 iterations: {large_peak:8d}  "
          f"ratio = {large_peak / small_peak:.4f}   (goal <= 1.01)")
    ok = (ratio_enabled <= 3 and ratio_disabled <= 1.3 and large_bytes / small_bytes <= 1.01
          and large_peak / small_peak <= 1.01)
    print("all goals met" if ok else "GOAL MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
