"""Cumulative cache hit rates of MultiMAPS points, simulated on a profile's hierarchy, prefetchers included.

Every load of the probe's loop is simulated (no sampling): one pass to warm the caches, then the pass that is
counted, which is what every later repetition of the loop sees (with RR replacement, a pseudo-random sample of
it). MetaSim's role in Tikir et al.: hit rates of the address stream on the target's caches. ``h_i`` counts the
demand loads served by level i or above, so ``h_1 <= ... <= h_n = 1`` with main memory last.

The simulation is ``csrc/hitsim.c`` (built like the probe's kernels, called through ctypes): pycachesim's model
of a hierarchy -- set-associative levels, LRU/RR/FIFO/MRU, a miss filling every level it passes -- plus a
hardware prefetcher per level (``CacheLevel.prefetch``, :data:`PREFETCHERS`) and physically indexed levels
(``CacheLevel.indexing``: pages in random frames). pycachesim itself cannot model a prefetcher: a prefetch fed
into its address stream counts as a load and a hit or miss at every level. Without prefetchers and with virtual
indexing the two agree exactly for LRU (``tests/test_machine_hitsim.py``; ``bench/hitrate_speed.py`` compares
their speed); the C walk generators also spare building the stream in Python (16 M loads for a 128 MiB
stride-1 walk).
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterable, Sequence
from functools import cache

import numpy as np
import numpy.typing as npt

from ma_core.errors import ProfileError

from .profile import CacheLevel

WORD_BYTES = 8
INDEX_BYTES = 4
_INDEX_BASE = 1 << 40  # the random curve's index array lies far from its data array
POLICIES = {"FIFO": 0, "LRU": 1, "MRU": 2, "RR": 3}  # hitsim.c's numbering (pycachesim's)
PREFETCHERS = {"none": 0, "next_line": 1, "adjacent": 2, "stride": 3}
INDEXING = {"virtual": 0, "physical": 1}


class _LevelConfig(ctypes.Structure):
    _fields_ = [("sets", ctypes.c_uint64), ("ways", ctypes.c_uint64), ("line_bytes", ctypes.c_uint64),
                ("policy", ctypes.c_int32), ("prefetch", ctypes.c_int32), ("degree", ctypes.c_int32),
                ("distance", ctypes.c_int32), ("physical", ctypes.c_int32), ("reserved", ctypes.c_int32)]


@cache
def _library() -> ctypes.CDLL:
    from .kernels import build_hitsim

    lib = ctypes.CDLL(str(build_hitsim()))
    u64, ptr = ctypes.c_uint64, ctypes.c_void_p
    lib.ma_hs_new.argtypes = [ctypes.POINTER(_LevelConfig), ctypes.c_int, u64]
    lib.ma_hs_new.restype = ptr
    lib.ma_hs_free.argtypes = [ptr]
    lib.ma_hs_reset_stats.argtypes = [ptr]
    lib.ma_hs_loads.argtypes = [ptr]
    lib.ma_hs_loads.restype = u64
    lib.ma_hs_counts.argtypes = [ptr, ptr, ptr]
    lib.ma_hs_stream.argtypes = [ptr, ptr, ctypes.c_size_t]
    lib.ma_hs_stride.argtypes = [ptr, u64, u64, u64]
    lib.ma_hs_gather.argtypes = [ptr, ptr, ctypes.c_size_t, u64, u64]
    return lib


def _config(cache_level: CacheLevel) -> _LevelConfig:
    where = f"caches[{cache_level.level - 1}]"
    for name, value, allowed in (("replacement", cache_level.replacement, POLICIES),
                                 ("prefetch", cache_level.prefetch, PREFETCHERS),
                                 ("indexing", cache_level.indexing, INDEXING)):
        if value not in allowed:
            raise ProfileError("cache hierarchy", f"{name} {value!r}: expected one of {', '.join(allowed)}",
                               f"{where}.{name}")
    return _LevelConfig(cache_level.sets, cache_level.ways, cache_level.line_bytes, POLICIES[cache_level.replacement],
                        PREFETCHERS[cache_level.prefetch], cache_level.prefetch_degree,
                        cache_level.prefetch_distance, INDEXING[cache_level.indexing])


class Simulator:
    """One simulated hierarchy (its state persists between walks); ``walk`` runs a loop's loads."""

    def __init__(self, caches: Sequence[CacheLevel], seed: int = 1) -> None:
        self._lib = _library()
        configs = (_LevelConfig * len(caches))(*(_config(c) for c in caches))
        handle = self._lib.ma_hs_new(configs, len(caches), seed)
        if not handle:
            raise ProfileError("caches", "the hit-rate simulation cannot hold this hierarchy (a level with no sets, "
                                         "or out of memory)")
        self._handle = handle
        self.levels = len(caches)

    def __del__(self) -> None:
        handle = getattr(self, "_handle", None)
        if handle:
            self._lib.ma_hs_free(handle)
            self._handle = None

    def reset_stats(self) -> None:
        self._lib.ma_hs_reset_stats(self._handle)

    def stream(self, addresses: npt.ArrayLike) -> None:
        array = np.ascontiguousarray(addresses, dtype=np.uint64)
        self._lib.ma_hs_stream(self._handle, array.ctypes.data, array.size)

    def stride(self, size_bytes: int, step_bytes: int, base: int = 0) -> None:
        self._lib.ma_hs_stride(self._handle, base, size_bytes, step_bytes)

    def gather(self, index: npt.NDArray[np.uint32], data_base: int = 0, index_base: int = _INDEX_BASE) -> None:
        array = np.ascontiguousarray(index, dtype=np.uint32)
        self._lib.ma_hs_gather(self._handle, array.ctypes.data, array.size, index_base, data_base)

    def counts(self) -> tuple[int, list[int], list[int]]:
        """Demand loads, demand hits per level, prefetches issued per level (since the last reset)."""
        hits = (ctypes.c_uint64 * self.levels)()
        prefetches = (ctypes.c_uint64 * self.levels)()
        self._lib.ma_hs_counts(self._handle, hits, prefetches)
        return int(self._lib.ma_hs_loads(self._handle)), list(hits), list(prefetches)

    def hit_rates(self) -> list[float]:
        """Cumulative h_1..h_n (main memory last, 1) of the loads since the last reset."""
        loads, hits, _ = self.counts()
        return [float(h) / loads for h in np.cumsum(hits)] + [1.0] if loads else [1.0] * (self.levels + 1)


def simulate(caches: Sequence[CacheLevel], addresses: Iterable[int]) -> list[float]:
    """Cumulative h_1..h_n of a repeated address stream (byte addresses of its loads, in order): one warm-up
    pass, then the pass that counts. Any loop's stream can be given; MultiMAPS's are below."""
    stream = np.fromiter(addresses, dtype=np.uint64)
    simulator = Simulator(caches)
    simulator.stream(stream)  # warm-up pass
    simulator.reset_stats()
    simulator.stream(stream)
    return simulator.hit_rates()


def pycachesim_hit_rates(caches: Sequence[CacheLevel], addresses: Iterable[int]) -> list[float]:
    """:func:`simulate` done by pycachesim: the reference for hierarchies without prefetchers or physical indexing
    (it has neither; they are refused rather than ignored). For tests and benches: pycachesim is in the ``dev``
    extra."""
    from cachesim import Cache, CacheSimulator, MainMemory

    if any(c.prefetch != "none" or c.indexing != "virtual" for c in caches):
        raise ProfileError("cache hierarchy", "pycachesim has no prefetchers and indexes by the addresses given: "
                                              "set every level's prefetch to none and indexing to virtual")
    memory, below, levels = MainMemory(), None, []
    for c in reversed(caches):  # pycachesim builds from the last level up
        level = Cache(f"L{c.level}", c.sets, c.ways, c.line_bytes, c.replacement, store_to=below, load_from=below)
        if below is None:
            memory.load_to(level)
            memory.store_from(level)
        below = level
        levels.append(level)
    simulator = CacheSimulator(levels[-1], memory)
    stream = addresses if isinstance(addresses, range) else list(addresses)
    simulator.load(stream)  # warm-up pass
    simulator.reset_stats()
    simulator.load(stream)
    stats = list(simulator.stats())
    hits = np.cumsum([level["HIT_count"] for level in stats[:len(caches)]])
    return [float(h) / stats[0]["LOAD_count"] for h in hits] + [1.0]


def stride_stream(size_bytes: int, stride: int) -> range:
    """Byte addresses of the strided loop's loads over ``size_bytes`` with ``stride`` 8-byte words."""
    return range(0, size_bytes - WORD_BYTES + 1, stride * WORD_BYTES)


def random_stream(index: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint64]:
    """Byte addresses of the random loop's loads: index[k] (a stride-1 read of 4-byte words), data[index[k]]."""
    stream = np.empty(2 * index.size, dtype=np.uint64)
    stream[0::2] = _INDEX_BASE + INDEX_BYTES * np.arange(index.size, dtype=np.uint64)
    stream[1::2] = WORD_BYTES * index.astype(np.uint64)
    return stream


def stride_hit_rates(caches: Sequence[CacheLevel], size_bytes: int, stride: int) -> list[float]:
    """h_1..h_n of the strided loop over ``size_bytes`` with ``stride`` 8-byte words."""
    simulator = Simulator(caches)
    for _ in range(2):  # warm-up pass, then the one that counts
        simulator.reset_stats()
        simulator.stride(size_bytes, stride * WORD_BYTES)
    return simulator.hit_rates()


def random_hit_rates(caches: Sequence[CacheLevel], size_bytes: int, index: npt.NDArray[np.uint32]) -> list[float]:
    """h_1..h_n of the random loop: index[k] (a stride-1 read of 4-byte words) then data[index[k]]."""
    simulator = Simulator(caches)
    for _ in range(2):
        simulator.reset_stats()
        simulator.gather(index)
    return simulator.hit_rates()
