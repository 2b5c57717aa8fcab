"""Speed of the hit-rate simulation: the probe's own simulator (csrc/hitsim.c) against pycachesim, side by side.

Simulates the hit rates of every MultiMAPS point of a profile (default: the shipped example) on its hierarchy
with every level LRU and no prefetcher -- the model both simulators share -- checks that both give the same
hit rates, and prints the loads simulated per second of each; then the time of the profile's own hierarchy
(prefetchers included) with the probe's simulator. pycachesim is fed the same two passes per point that the
probe used before it had prefetchers (a ``range`` of addresses for the strided walks, a list for the random).

Run: .venv/bin/python bench/hitrate_speed.py [--profile P] [--max-size BYTES] (about a minute)
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from typing import Any

import numpy as np

from backends.machine import hitrates, probe, profile
from backends.machine.profile import CacheLevel, MultiMapsPoint


def pycachesim_rates(caches: list[CacheLevel], point: MultiMapsPoint, index: Any) -> tuple[list[float], int]:
    """The point's hit rates by pycachesim, and the loads it simulated (two passes)."""
    stream: Any = (hitrates.stride_stream(point.size_bytes, point.stride or 1) if point.pattern == "stride"
                   else hitrates.random_stream(index).tolist())
    return hitrates.pycachesim_hit_rates(caches, stream), 2 * len(stream)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profile", help="a profile (default: the shipped example)")
    parser.add_argument("--max-size", type=int, default=20 << 20,
                        help="only points up to this working set (bytes; default 20 MiB: pycachesim's list of the "
                             "32 M addresses of a 128 MiB random walk takes gigabytes)")
    args = parser.parse_args()
    machine = profile.load(args.profile or next(iter(profile.shipped_profiles().values())))
    points = [p for p in machine.multimaps if args.max_size is None or p.size_bytes <= args.max_size]
    lru = [replace(c, replacement="LRU", prefetch="none", indexing="virtual") for c in machine.caches]
    rng = np.random.default_rng(0)
    empty = np.zeros(0, dtype=np.uint32)
    indices = [rng.integers(0, p.size_bytes // 8, p.size_bytes // 8, dtype=np.uint32) if p.pattern == "random"
               else empty for p in points]
    hitrates.Simulator(lru)  # build and load the library outside the timing

    started = time.perf_counter()
    ours = [hitrates.stride_hit_rates(lru, p.size_bytes, p.stride or 1) if p.pattern == "stride"
            else hitrates.random_hit_rates(lru, p.size_bytes, i) for p, i in zip(points, indices, strict=True)]
    ours_seconds = time.perf_counter() - started
    started = time.perf_counter()
    theirs, loads = [], 0
    for point, index in zip(points, indices, strict=True):
        rates, count = pycachesim_rates(lru, point, index)
        theirs.append(rates)
        loads += count
    theirs_seconds = time.perf_counter() - started
    same = sum(a == b for a, b in zip(ours, theirs, strict=True))
    print(f"{len(points)} MultiMAPS points of {machine.name}, {loads / 1e6:.0f} M loads simulated (two passes each), "
          f"every level LRU, no prefetcher:")
    print(f"  csrc/hitsim.c  {ours_seconds:7.2f} s  {loads / ours_seconds / 1e6:7.1f} M loads/s")
    print(f"  pycachesim     {theirs_seconds:7.2f} s  {loads / theirs_seconds / 1e6:7.1f} M loads/s  "
          f"(ratio {theirs_seconds / ours_seconds:.1f}x); identical hit rates at {same} of {len(points)} points")
    started = time.perf_counter()
    probe.simulate_hit_rates(points, machine.caches, np.random.default_rng(0))
    print("  the profile's own hierarchy ("
          + ", ".join(f"L{c.level} {c.replacement} prefetch {c.prefetch}" for c in machine.caches)
          + f"): {time.perf_counter() - started:.2f} s with csrc/hitsim.c")
    return 0 if same == len(points) else 1


if __name__ == "__main__":
    sys.exit(main())
