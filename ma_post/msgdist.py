"""Message-size distribution predicted by the model at any parameters (MA paper section 4.1).

For every MPI site with a payload, the model gives the message size (its expression, in bytes) and the
messages per rank (its ``count_expr`` times its enclosing trip counts). Sites of equal size are merged:
the result is, per size, the messages per rank and their share of all messages and of the volume.
``measured_distribution`` gives the PMPI histogram of the traced run for comparison.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .evaluation import RankChoice, evaluate
from .models import Model, ModelBuilder, substitute_definitions
from .traceset import TraceSet

NO_PAYLOAD = ("mpi_barrier",)


@dataclass
class MessageClass:
    size: float  # bytes per message
    per_rank: float  # messages per rank (mean over the ranks evaluated)
    share: float  # of all messages, 0..1
    volume_share: float  # of all bytes, 0..1
    sites: list[str] = field(default_factory=list)  # ids of the sites sending or receiving them


@dataclass
class MeasuredBucket:
    lo: int
    hi: int
    per_rank: float
    share: float


def message_distribution(ts: TraceSet, values: Mapping[str, Any] | None = None, *, rank: RankChoice = None,
                         builder: ModelBuilder | None = None) -> list[MessageClass]:
    """Sizes and counts of the messages one rank sends and receives, at ``values`` (traced values otherwise)."""
    builder = builder or ModelBuilder(ts)
    counts = builder.model("mpi_count")
    values = dict(values or {})
    totals: dict[float, list[Any]] = {}
    n_ranks = len(ts.ranks)
    for term in counts.terms:
        site = term.site
        if site.type in NO_PAYLOAD or site.expr is None:
            continue
        size_model = builder.submodel(f"{site.path}:size", substitute_definitions(
            builder.site_value(site, "value"), counts.definitions))
        count_model = builder.submodel(f"{site.path}:count", substitute_definitions(term.expr, counts.definitions))
        size_vals = _per_rank(size_model, values, rank, n_ranks)
        count_vals = _per_rank(count_model, values, rank, n_ranks)
        for size, count in zip(size_vals, count_vals, strict=False):
            if not np.isfinite(size) or not np.isfinite(count) or count == 0:
                continue
            entry = totals.setdefault(float(size), [0.0, []])
            entry[0] += float(count) / len(size_vals)
            if site.id not in entry[1]:
                entry[1].append(site.id)
    all_messages = sum(v[0] for v in totals.values())
    all_bytes = sum(size * v[0] for size, v in totals.items())
    return [MessageClass(size, n, n / all_messages if all_messages else 0.0,
                         size * n / all_bytes if all_bytes else 0.0, sites)
            for size, (n, sites) in sorted(totals.items())]


def _per_rank(model: Model, values: Mapping[str, Any], rank: RankChoice, n_ranks: int) -> np.ndarray:
    """The model's value per traced rank (one value when nothing rank-dependent is left free)."""
    result = evaluate(model, {k: v for k, v in values.items() if k in model.inputs}, rank=rank)
    if result.per_rank is not None and rank is None:
        return np.asarray(result.per_rank, dtype=float).reshape(-1)
    return np.atleast_1d(np.asarray(result.value, dtype=float)).reshape(-1)


def measured_distribution(ts: TraceSet) -> list[MeasuredBucket]:
    """The PMPI message-size histogram of the run, per rank (mean over ranks with a profile)."""
    buckets: dict[tuple[int, int], float] = {}
    profiled = 0
    for profile in ts.mpi_profiles:
        if not profile:
            continue
        profiled += 1
        for name, entry in (profile.get("calls") or {}).items():
            if name.lower().replace("mpi_", "") in ("barrier",):
                continue
            for lo, hi, count in entry.get("hist") or ():
                buckets[(int(lo), int(hi))] = buckets.get((int(lo), int(hi)), 0.0) + float(count)
    if not profiled:
        return []
    total = sum(buckets.values())
    return [MeasuredBucket(lo, hi, n / profiled, n / total if total else 0.0)
            for (lo, hi), n in sorted(buckets.items())]


def format_distribution(classes: list[MessageClass]) -> str:
    from .validation import format_number

    rows = [("size_bytes", "messages_per_rank", "share", "volume_share", "sites")]
    for c in classes:
        rows.append((format_number(c.size), format_number(round(c.per_rank, 6)), f"{100 * c.share:.1f}%",
                     f"{100 * c.volume_share:.1f}%", ",".join(c.sites)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() + "\n"
                   for row in rows)


def format_measured(buckets: list[MeasuredBucket]) -> str:
    from .validation import format_number

    rows = [("bytes", "messages_per_rank", "share")]
    for b in buckets:
        rows.append((f"{b.lo}" if b.lo == b.hi else f"{b.lo}-{b.hi}", format_number(round(b.per_rank, 6)),
                     f"{100 * b.share:.1f}%"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() + "\n"
                   for row in rows)
