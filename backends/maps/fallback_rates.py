"""The hit rates a loadstore site is convolved with where no signature measured them (the backend's notes name
those sites): the rates its annotation states (``ma.loadstore(..., hits=[...])``, :func:`given_hit_rates`), else a
stride-1 stream from main memory (:func:`assumed_hit_rates`). The measured ones are a signature's
(:mod:`backends.signature`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ma_post import TraceSet

    from ..machine.profile import MachineProfile


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


def assumed_hit_rates(machine: MachineProfile) -> tuple[float, ...]:
    """A stride-1 stream from main memory: the profile's simulated hit rates of its largest stride-1 MultiMAPS
    point, or, without those, one miss per L1 line at every level (h_i = 1 - 8/line_1 below memory)."""
    stride1 = [p for p in machine.multimaps if p.pattern == "stride" and p.stride == 1 and p.hit_rates]
    if stride1:
        largest = max(stride1, key=lambda p: p.size_bytes)
        return tuple(float(h) for h in largest.hit_rates or ())
    first = 1.0 - 8.0 / machine.caches[0].line_bytes if machine.caches else 0.0
    return tuple([first] * len(machine.caches) + [1.0])
