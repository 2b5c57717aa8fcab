"""The per-call overhead term: what one annotated region around one small NumPy call costs the interpreter.

The PMaC convolution predicts the time of memory and floating-point work; a Python program also pays the
interpreter for every call (the annotation's enter/exit, NumPy's dispatch, argument checks), whatever the
data size. That cost is measured once per machine by this micro-benchmark, never fitted to the runs a
prediction is checked against, and stored in the profile as ``cpu.call_overhead_s``; the maps backend charges
it once per call of every flop and loadstore site. Run it the way the program runs (under ``ma run``, so the
annotation runtime is live)::

    ma run -- python -m backends.maps.overhead [--repeats N]
"""

from __future__ import annotations

import argparse
import time


def measure(repeats: int = 20_000, rounds: int = 5) -> float:
    """Seconds per call of ``with ma.flop(...): x @ y`` on 16-element vectors, the best of ``rounds``."""
    import numpy as np

    import ma

    x, y = np.ones(16), np.ones(16)
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(repeats):
            with ma.flop("call_overhead_probe", "32"):
                x @ y
        best = min(best, (time.perf_counter() - started) / repeats)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=20_000)
    args = parser.parse_args()
    print(f"call_overhead_s {measure(args.repeats):.6e}")


if __name__ == "__main__":
    main()
