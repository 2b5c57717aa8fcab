"""Cumulative cache hit rates of MultiMAPS points, simulated on a profile's hierarchy with pycachesim.

Every load of the probe's loop is simulated (no sampling): one pass to warm the caches, then the pass that is
counted, which is what every later repetition of the loop sees (with RR replacement, a pseudo-random sample of
it). The hierarchy is modelled as inclusive caches with the sizes, ways, line sizes and replacement policies of
the profile, LRU unless overridden: MetaSim's role in Tikir et al., hit rates of the address stream on the
target's caches. ``h_i`` counts the loads served by level i or above, so ``h_1 <= ... <= h_n = 1`` with main
memory last.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .profile import CacheLevel

WORD_BYTES = 8
INDEX_BYTES = 4
_INDEX_BASE = 1 << 40  # the random curve's index array lies far from its data array


def _simulator(caches: Sequence[CacheLevel]) -> Any:
    from cachesim import Cache, CacheSimulator, MainMemory

    memory = MainMemory()
    below = None
    levels = []
    for cache in reversed(caches):  # pycachesim builds from the last level up
        level = Cache(f"L{cache.level}", cache.sets, cache.ways, cache.line_bytes, cache.replacement,
                      store_to=below, load_from=below)
        if below is None:
            memory.load_to(level)
            memory.store_from(level)
        below = level
        levels.append(level)
    return CacheSimulator(levels[-1], memory)


def _cumulative(simulator: Any, levels: int) -> list[float]:
    stats = list(simulator.stats())
    loads = stats[0]["LOAD_count"]
    hits = np.cumsum([level["HIT_count"] for level in stats[:levels]])
    return [float(h) / loads for h in hits] + [1.0]


def simulate(caches: Sequence[CacheLevel], addresses: Iterable[int]) -> list[float]:
    """Cumulative h_1..h_n of a repeated address stream (byte addresses of its loads, in order): one warm-up
    pass, then the pass that counts. Any loop's stream can be given; MultiMAPS's are below."""
    simulator = _simulator(caches)
    stream = addresses if isinstance(addresses, range) else list(addresses)
    simulator.load(stream)  # warm-up pass
    simulator.reset_stats()
    simulator.load(stream)
    return _cumulative(simulator, len(caches))


def stride_hit_rates(caches: Sequence[CacheLevel], size_bytes: int, stride: int) -> list[float]:
    """h_1..h_n of the strided loop over ``size_bytes`` with ``stride`` 8-byte words."""
    return simulate(caches, range(0, size_bytes - WORD_BYTES + 1, stride * WORD_BYTES))


def random_hit_rates(caches: Sequence[CacheLevel], size_bytes: int, index: npt.NDArray[np.uint32]) -> list[float]:
    """h_1..h_n of the random loop: index[k] (a stride-1 read of 4-byte words) then data[index[k]]."""
    stream = np.empty(2 * index.size, dtype=np.int64)
    stream[0::2] = _INDEX_BASE + INDEX_BYTES * np.arange(index.size, dtype=np.int64)
    stream[1::2] = WORD_BYTES * index.astype(np.int64)
    return simulate(caches, stream.tolist())
