"""What a trace measured for the convolution, read through ``Site.hit_rates`` where the runtime writes them
(``ma run --counters valgrind --cache PROFILE``), so the backend works with traces that lack them.

- ``Site.hit_rates``: cumulative h_1..h_n per level, L1 first, measured at the site.
- ``Site.cache_accesses``, ``Site.cache_hits`` of a flop site over its counted flops: the lines each level
  served per flop (:func:`site_lines_per_flop`), the traffic of a kernel without a loadstore expression.

The calls into compiled code and the subscripts a Python program's sites made (``--counters ccalls``) are the
runtime part's: :mod:`backends.cpython.tracedata`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ma_post import TraceSet
    from ma_post.traceset import Site

def site_hit_rates(site: Site) -> tuple[float, ...] | None:
    """The hit rates the trace measured at ``site``, or None."""
    rates = getattr(site, "hit_rates", None)
    return None if rates is None else tuple(float(h) for h in rates)


def given_hit_rates(ts: TraceSet) -> dict[str, tuple[float, ...]]:
    """Site path -> the hit rates ``ma.loadstore(..., hits=[...])`` stated there (the trace's optional
    ``given_hit_rates`` array, ma_runtime/givenhits.py), the first rank's where several wrote one; TraceError
    naming the file and the entry for a malformed one."""
    from ma_core.errors import TraceError
    from ma_core.trace_format import GIVEN_HITS_KEY

    given: dict[str, tuple[float, ...]] = {}
    for section in ts.optional(GIVEN_HITS_KEY):
        for index, entry in enumerate(section.entries):
            try:
                path, rates = str(entry["path"]), tuple(float(h) for h in entry["hit_rates"])
            except (KeyError, TypeError, ValueError):
                raise TraceError(section.source, f"rank {section.rank}: '{GIVEN_HITS_KEY}'[{index}] is {entry!r}, "
                                 "expected {\"path\": site path, \"hit_rates\": [numbers], ...}") from None
            given.setdefault(path, rates)
    return given


def site_lines_per_flop(site: Site) -> tuple[float, ...] | None:
    """Cache lines each level served (L1 first, main memory last: accesses no cache served) per flop the
    counters measured at ``site``, over every call of the run; None without a cache simulation or flops."""
    if site.type != "flop" or getattr(site, "hit_rates", None) is None:
        return None
    flops = float(np.nansum(site.measured.sum))
    if not flops > 0:
        return None
    hits = np.asarray(site.cache_hits, dtype=float).sum(axis=(1, 2))
    accesses = float(np.asarray(site.cache_accesses, dtype=float).sum())
    return tuple(float(v) / flops for v in (*hits, accesses - float(hits.sum())))
