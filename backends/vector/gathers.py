"""The gathered reads' hit rates of a sparse row loop, from its traced signature run.

Under ``ma run --counters valgrind --cache PROFILE`` the tool simulates the profile's caches (LRU, no prefetcher)
and a load/store site records its line accesses and the accesses each level served (``Site.cache_accesses``,
``Site.cache_hits``). A sparse row loop's site mixes two kinds of reads: its streams (values, indices, the row
sums; every word once) and its gathers. The loop's annotation says how many of each it makes (``gathers`` of
its ``vloadstore`` words), and a stream's behaviour follows from its count and footprint: each of its lines is
missed by the first cache once (the first of that line's accesses) and every other access to the line hits it.
So the streams' share of the counts is known, and the gathers' is the rest (:func:`separate`):

- a gather is one 8-byte read: one line access; the gathers' accesses are the stated count;
- the streams' first-cache hits are their accesses (the site's others) less their lines (streamed words x 8 /
  line bytes); the gathers' first-cache hits the rest of the site's (clamped to [0, gathers]);
- the streams' lines beyond the first cache are served as far out as the counts allow: main memory's accesses
  first, then the last cache's, inwards. A line read once in the region is in a cache only if it was there when
  the region began; the split is exact when no gathered read is served further out than a stream line (the
  gathered array the small one, the streams the large ones: what the annotation is for). Otherwise the gathers'
  rates are an upper bound.

The result is the gathered reads' cumulative h_1..h_n, 1.0, priced by
:func:`.bandwidth.gather_seconds_by_level`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ma_core.errors import BackendError

if TYPE_CHECKING:
    from ma_post import TraceSet


@dataclass(frozen=True)
class TracedCache:
    """A loop's simulated cache counts over its traced calls: line ``accesses`` and the accesses each cache served
    (``hits``, L1 first, not cumulative) of its outermost load/store sites, with the ``gathers`` and the words
    (``loadstores``, gathers included) its annotation predicted over the same calls; ``sites`` names them."""

    accesses: float
    hits: tuple[float, ...]
    gathers: float
    loadstores: float
    sites: tuple[str, ...] = ()


def separate(cache: TracedCache, line_bytes: int) -> tuple[float, ...]:
    """The gathered reads' cumulative hit rates h_1..h_n and 1.0 (the module's docstring)."""
    if not cache.gathers > 0 or cache.gathers > cache.accesses:
        raise BackendError(f"{cache.gathers:.0f} gathers do not fit the {cache.accesses:.0f} line accesses the cache "
                           f"simulation counted at {', '.join(cache.sites) or 'the loop'}")
    if not line_bytes > 0:
        raise BackendError(f"cache line of {line_bytes!r} bytes: expected a positive number")
    served = np.array([*cache.hits, cache.accesses - sum(cache.hits)], dtype=float)  # per level, memory last
    if np.any(served < 0):
        raise BackendError(f"the cache counts at {', '.join(cache.sites) or 'the loop'} serve more accesses than "
                           f"they count ({list(cache.hits)} of {cache.accesses:.0f})")
    stream_lines = max(cache.loadstores - cache.gathers, 0.0) * 8.0 / line_bytes
    stream_accesses = cache.accesses - cache.gathers
    gathered = np.zeros_like(served)
    gathered[0] = min(max(served[0] - (stream_accesses - stream_lines), 0.0), cache.gathers)
    # the streams' lines beyond the first cache: the site's misses there less the gathers', outermost first
    left = served[1:].sum() - (cache.gathers - gathered[0])
    for level in range(len(served) - 1, 0, -1):
        taken = min(left, served[level])
        gathered[level], left = served[level] - taken, left - taken
    rates = np.cumsum(gathered[:-1]) / cache.gathers
    return (*(float(min(h, 1.0)) for h in rates), 1.0)


def traced_cache(ts: TraceSet, path: str, gathers: float, loadstores: float) -> TracedCache | None:
    """The cache counts of the outermost load/store sites at or under ``path`` (every rank), or None where the run
    simulated no cache there; ``gathers`` and ``loadstores`` are the loop's predicted sums over the same calls."""
    sites = [site for site in ts.walk() if site.type == "loadstore" and _under(site.path, path)]
    outermost = [site for site in sites if not any(_under(site.path, other.path) and other is not site
                                                   for other in sites)]
    measured = [site for site in outermost if site.hit_rates is not None]
    if not measured:
        return None
    hits = [np.asarray(site.cache_hits, dtype=float).sum(axis=(1, 2)) for site in measured]
    if len({len(h) for h in hits}) != 1:
        raise BackendError(f"the load/store sites under {path!r} simulated different numbers of cache levels")
    return TracedCache(float(sum(np.asarray(site.cache_accesses, dtype=float).sum() for site in measured)),
                       tuple(float(v) for v in np.sum(hits, axis=0)), gathers, loadstores,
                       tuple(site.path for site in measured))


def _under(path: str, prefix: str) -> bool:
    return not prefix or path == prefix or path.startswith(prefix + "/")


def check_levels(cache: TracedCache, levels: int, machine: str) -> None:
    """The traced counts must be the profile's caches' (``ma run --cache`` with the same profile)."""
    if len(cache.hits) != levels:
        raise BackendError(f"the trace's cache simulation at {', '.join(cache.sites)} has {len(cache.hits)} levels, "
                           f"machine profile {machine!r} {levels}: run it under ma run --cache with that profile")


def cumulative(rates: Sequence[float]) -> str:
    """Hit rates as printed in notes: 0.00/0.22/1.00/1.00."""
    return "/".join(f"{h:.2f}" for h in rates)
