"""``ma.loadstore(id, expr, value=None, hits=[h1, ..., hn])``: cumulative cache hit rates the programmer states
for a loadstore site, one per cache level (innermost first) and main memory last (1).

The maps backend prices a site's loads and stores at the fitted bandwidth of its hit rates; where no signature
run measured them (``ma run --counters valgrind --cache PROFILE``) and no signature file gives them, the rates
stated here are used, and the prediction names those sites as using assumed (stated, not measured) rates. The
runtime keeps one record per site path (the first call's statement) and writes them into the trace's optional
``given_hit_rates`` array (ma_core/trace_format.py). A pure-Python wrapper: calls without ``hits`` never reach it.
"""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Any, Literal

from ma_core.errors import AnnotationError
from ma_core.hitrates import cumulative_problem
from ma_core.trace_format import GIVEN_HITS_KEYS

from .sites import caller

_records: dict[str, dict[str, Any]] = {}  # site path -> its record (the first call's statement)
_lock = threading.Lock()


def records_json() -> list[dict[str, Any]]:
    """The trace's ``given_hit_rates`` array."""
    with _lock:
        return list(_records.values())


def checked_hits(id: str, hits: Any, where: str) -> list[float]:
    """``hits`` as floats: a sequence of at least two numbers in [0, 1], non-decreasing (cumulative), the last
    1 (main memory serves everything); AnnotationError naming the site and the call otherwise."""
    def refuse(why: str) -> AnnotationError:
        return AnnotationError(f"{where}ma.loadstore({id!r}, ..., hits={hits!r}): {why}; expected cumulative hit "
                               "rates, one per cache level and main memory last (1), e.g. hits=[0.9, 0.97, 1]")

    if isinstance(hits, (str, bytes)) or not hasattr(hits, "__len__"):
        raise refuse("not a list of numbers")
    if len(hits) < 2:
        raise refuse("fewer than two levels")
    problem = cumulative_problem(hits)
    if problem is not None:
        raise refuse(problem)
    return [float(h) for h in hits]


class GivenHits:
    """Context manager around a loadstore annotation object that records its stated hit rates."""

    __slots__ = ("file", "hits", "line", "region")

    def __init__(self, region: Any, hits: list[float], file: str | None, line: int | None) -> None:
        self.region = region
        self.hits = hits
        self.file = file
        self.line = line

    def __enter__(self) -> Any:
        entered = self.region.__enter__()
        node = self.region.node
        if node is not None and node.path not in _records:
            with _lock:
                _records.setdefault(node.path, dict(zip(GIVEN_HITS_KEYS, (node.path, self.hits, self.file, self.line),
                                                        strict=True)))
        return entered

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> Literal[False]:
        return self.region.__exit__(exc_type, exc, tb)  # type: ignore[no-any-return]


def with_hits(region: Any, hits: Any) -> GivenHits:
    """``region`` (a loadstore annotation object) wrapped to record ``hits``, checked here, at the call."""
    file, line = caller()
    where = f"{file}:{line}: " if file else ""
    return GivenHits(region, checked_hits(region.id, hits, where), file, line)
