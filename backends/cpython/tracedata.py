"""What a Python program's trace measured for its runtime part: the calls into compiled code and the subscripts of
each site, read through ``Site.c_calls`` and ``Site.subscripts`` where the runtime writes them
(``ma run --counters ccalls``), so the part works with traces that lack them.

- ``Site.c_calls``: calls from Python into compiled code made inside the site, summed over its executions and
  over the traced ranks and threads. Like every per-site figure of a trace it is inclusive (a region's counts
  take in the regions inside it); :func:`c_calls_per_execution` takes the children's out and divides by the
  site's executions (iterations, for a loop), so the term scales with the model's trip counts.
- ``Site.subscripts``: the subscript instructions of the program's code inside the site, counted and aggregated
  as ``c_calls`` (:func:`measured_subscripts`); None on traces written before the counter counted them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from ma_post import TraceSet
    from ma_post.traceset import Site

DECLARATIONS = ("variable", "assign")  # sites that are statements of no work (ma.variable, ma.assign)


def site_c_calls(site: Site) -> float | None:
    """The site's calls into compiled code over all its executions (inclusive), or None where not measured."""
    calls = getattr(site, "c_calls", None)
    return None if calls is None else float(calls)


def body_executions(site: Site) -> float:
    """How often the site's body ran, over all ranks and threads: its calls, or a loop's iterations."""
    if site.type == "loop":
        measured, predicted = site.measured, site.predicted
        trips = np.where(measured.n > 0, measured.sum, predicted.sum)
        return float(np.nansum(trips))
    return float(np.nansum(site.calls))


def site_subscripts(site: Site) -> float | None:
    """The site's subscripts over all its executions (inclusive), or None where not measured."""
    counted = getattr(site, "subscripts", None)
    return None if counted is None else float(counted)


def c_calls_per_execution(ts: TraceSet, site: Site, count: Callable[[Site], float | None] = site_c_calls
                          ) -> float | None:
    """Calls into compiled code (or what ``count`` reads) per execution of ``site`` outside the sites inside
    it; None if not measured (or the site's body never ran, so nothing per execution is known)."""
    total = count(site)
    executions = body_executions(site)
    if total is None or executions <= 0:
        return None
    inner = sum(count(child) or 0.0 for child in ts.children(site))
    return max(total - inner, 0.0) / executions


def measured_c_calls(ts: TraceSet, count: Callable[[Site], float | None] = site_c_calls) -> dict[str, float]:
    """Per-execution calls into compiled code (or what ``count`` reads) of every site that has them
    (declarations left out)."""
    out = {}
    for site in ts.walk():
        if site.type in DECLARATIONS:
            continue
        per_execution = c_calls_per_execution(ts, site, count)
        if per_execution is not None:
            out[site.path] = per_execution
    return out


def measured_subscripts(ts: TraceSet) -> dict[str, float]:
    """Per-execution subscripts of every site that has them, the children's taken out as for the calls."""
    return measured_c_calls(ts, site_subscripts)
