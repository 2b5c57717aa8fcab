"""Slowdown of the software counter: one NumPy kernel, native vs under Valgrind, side by side in one run.

Runs the same script three ways — natively, under Valgrind's ``none`` tool (the cost of Valgrind's JIT
alone) and under ``maflops`` (the counting tool) — and prints the kernel time, the whole-process wall
time (interpreter start and NumPy import included) and the ratios. Every run gets the same environment
(``valgrind_launch_prefix`` pins OpenBLAS to one thread; the native run gets that too).

    python bench/softcounter_slowdown.py [--n 1000000] [--reps 10]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import ma  # noqa: F401  (the application layer first, as a user program imports it)
from ma_runtime.counters.valgrind import TOOL_NAME
from ma_tools.valgrind import valgrind_launch_prefix

KERNEL = r"""
import json, sys, time
import numpy as np

n, reps = int(sys.argv[1]), int(sys.argv[2])
x = np.arange(n, dtype=np.float64)
y = np.ones(n)
flop = None
try:
    import ma
    from ma_runtime.counters.valgrind import ValgrindProvider
    flop = ValgrindProvider().reader("flop")
except ImportError:
    pass
f0 = flop() if flop else 0
start = time.perf_counter()
for _ in range(reps):
    y += 2.5 * x          # 2n flops
    s = float(x @ y)      # 2n flops
elapsed = time.perf_counter() - start
f1 = flop() if flop else 0
print(json.dumps({"kernel_s": elapsed, "flops": f1 - f0 if flop else None}))
"""


def run(argv: list[str], env: dict[str, str]) -> tuple[dict, float]:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1]), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="vector length")
    parser.add_argument("--reps", type=int, default=10, help="kernel repetitions")
    args = parser.parse_args()

    prefix, env_add = valgrind_launch_prefix()
    env = {**os.environ, **env_add}
    none_prefix = [a if not a.startswith("--tool=") else "--tool=none" for a in prefix]
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "kernel.py"
        script.write_text(KERNEL)
        kernel = [sys.executable, str(script), str(args.n), str(args.reps)]
        results = {
            "native": run(kernel, env),
            "valgrind none": run([*none_prefix, *kernel], env),
            TOOL_NAME: run([*prefix, *kernel], env),
        }

    native_kernel, native_wall = results["native"][0]["kernel_s"], results["native"][1]
    expected = 4 * args.n * args.reps
    print(f"NumPy kernel: {args.reps} x (y += a*x; x @ y), n = {args.n:,} (expected ~{expected:,} flops)")
    print(f"{'run':<15}{'kernel s':>10}{'x native':>10}{'process s':>11}{'x native':>10}  flops measured")
    for name, (data, wall) in results.items():
        flops = f"{data['flops']:,}" if data["flops"] else "-"
        print(f"{name:<15}{data['kernel_s']:>10.3f}{data['kernel_s'] / native_kernel:>10.1f}"
              f"{wall:>11.2f}{wall / native_wall:>10.1f}  {flops}")
    tool_kernel = results[TOOL_NAME][0]["kernel_s"]
    none_kernel = results["valgrind none"][0]["kernel_s"]
    print(f"counting overhead over Valgrind's own JIT (maflops / none, kernel): {tool_kernel / none_kernel:.2f}")


if __name__ == "__main__":
    main()
