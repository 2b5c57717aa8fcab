"""Validating ``ma.vec_loop`` records against the maflops tool's vector metrics (the vector paper, section 5).

The trace's ``vector_loops`` array (ma_runtime.vector) holds, per rank and site, the asserted vector
load/stores, vector flops, AVL and MV score, and, under ``--counters valgrind``, the measured vector and
scalar flops and load/stores and the vector lanes. This module compares them per call and prints them two
ways: Figure-8-style lines (``id:vec_loop.<metric>:predicted:measured:error``) and the paper's own trace
lines (``MA:<depth>:ma_vec_loop_start:<id>:<expr>:<value>:...`` and ``...ma_vec_loop_stop...``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ma_core.errors import TraceError
from ma_core.trace_format import VEC_LOOP_GATHER_KEYS, VECTOR_LOOPS_KEY

if TYPE_CHECKING:
    from ma_post.traceset import TraceSet


@dataclass(frozen=True)
class VecLoopResult:
    """One vec_loop site of one rank: what was asserted (first call) and measured (mean per call)."""

    rank: int
    id: str
    path: str
    depth: int
    exprs: dict[str, str]
    predicted: dict[str, float]    # vloadstore, vflops, avl of the first call
    mv: int
    calls: int
    measured: dict[str, float] | None  # vloadstore, vflops, avl, scalar_flops, scalar_loadstore (per call), mv
    file: str | None = None            # where the annotation is written
    line: int | None = None
    gather_exprs: dict[str, str] | None = None    # gathers, gathered_bytes (ma_core.trace_format.VEC_LOOP_GATHER_KEYS)
    gathers: dict[str, float] | None = None       # their values at the first call

    @property
    def where(self) -> str:
        """``FILE:LINE`` of the annotation (``?`` when the runtime did not know it)."""
        return f"{self.file}:{self.line}" if self.file else "?"

    def error(self, metric: str) -> float | None:
        """(predicted - measured) / measured, the paper's error rate; None when unmeasured or measured 0."""
        if self.measured is None or not self.measured[metric]:
            return None
        return (self.predicted[metric] - self.measured[metric]) / self.measured[metric]


def _measured(record: dict[str, Any]) -> dict[str, float] | None:
    totals, calls = record.get("measured"), record.get("measured_calls", 0)
    if not totals or not calls:
        return None
    per_call = {key: value / calls for key, value in totals.items()}
    total_flops = per_call["vec_flops"] + per_call["scalar_flops"]
    vectorised = total_flops > 0 and per_call["vec_flops"] >= 0.5 * total_flops
    return {"vloadstore": per_call["vec_loads"] + per_call["vec_stores"], "vflops": per_call["vec_flops"],
            "avl": totals["vec_lanes"] / totals["vec_fp_insns"] if totals["vec_fp_insns"] else 0.0,
            "scalar_flops": per_call["scalar_flops"],
            "scalar_loadstore": per_call["scalar_loads"] + per_call["scalar_stores"],
            "mv": 2 if vectorised else 0}  # one process per rank under Valgrind: the multithreaded bit is unseen


def vec_loop_results(ts: TraceSet) -> list[VecLoopResult]:
    """Every vec_loop record of every rank of ``ts`` (rank files or merged trace alike), in rank order; TraceError
    naming the file of a malformed record."""
    results = []
    for section in ts.optional(VECTOR_LOOPS_KEY):
        for index, record in enumerate(section.entries):
            where = _record_where(record)
            try:
                results.append(VecLoopResult(
                    section.rank, str(record["id"]), str(record["path"]), int(record["depth"]),
                    dict(record["expr"]), dict(record["predicted_first"] or {}), int(record["mv"]),
                    int(record["calls"]), _measured(record), where[0], where[1], *_gathers(record)))
            except (ValueError, KeyError, TypeError, AttributeError, ZeroDivisionError) as exc:
                at = f" (ma.vec_loop at {where[0]}:{where[1]})" if where[0] else ""
                raise TraceError(section.source, f"rank {section.rank}: vector_loops[{index}]{at}: bad record "
                                                 f"({exc!s}); expected the layout of docs/vector-backend.md") from None
    return results


def _gathers(record: dict[str, Any]) -> tuple[dict[str, str] | None, dict[str, float] | None]:
    """The record's stated indexed loads (expressions, first-call values), or None, None (none stated, or a trace
    written before they existed)."""
    stated = record.get("gathers")
    if stated is None:
        return None, None
    exprs, first = stated["expr"], stated["predicted_first"]
    return ({key: str(exprs[key]) for key in VEC_LOOP_GATHER_KEYS},
            {key: float(first[key]) for key in VEC_LOOP_GATHER_KEYS} if first else None)


def _record_where(record: Any) -> tuple[str | None, int | None]:
    """The record's annotation file and line, when it has them (older traces and unknown callers have none)."""
    if not isinstance(record, dict) or not isinstance(record.get("file"), str):
        return None, None
    line = record.get("line")
    return record["file"], line if isinstance(line, int) and not isinstance(line, bool) else None


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.6g}"


def figure8_lines(results: list[VecLoopResult]) -> str:
    """``id:vec_loop.<metric>:predicted:measured:error_rate`` per rank, site and metric (MA paper Figure 8),
    after a ``# FILE:LINE: id (site path), rank R`` line naming where each annotation is written."""
    lines = []
    for r in results:
        lines.append(f"# {r.where}: {r.id} ({r.path or 'top level'}), rank {r.rank}")
        for metric in ("vloadstore", "vflops", "avl", "mv"):
            predicted = r.mv if metric == "mv" else r.predicted[metric]
            if r.measured is None:
                lines.append(f"{r.id}:vec_loop.{metric}:{_number(predicted)}:unmeasured:-")
                continue
            error = None if metric == "mv" else r.error(metric)
            shown = "-" if error is None else f"{100 * error:+.2f}%"
            lines.append(f"{r.id}:vec_loop.{metric}:{_number(predicted)}:{_number(r.measured[metric])}:{shown}")
    return "".join(line + "\n" for line in lines)


def paper_lines(results: list[VecLoopResult]) -> str:
    """The paper's ``ma_vec_loop_start`` line per site, a ``ma_vec_loop_gathers`` line where gathers are stated, and a
    ``ma_vec_loop_stop`` line where measured.

    The stop line's fields are the counts this host has: vector flops, vector load/stores, AVL, scalar flops
    and scalar load/stores per call (the X1E's cycles, stalls, strides and cache misses have no equivalent).
    """
    lines = []
    for r in results:
        e, p = r.exprs, r.predicted
        lines.append(f"MA:{r.depth}:ma_vec_loop_start:{r.id}:{e['vloadstore']}:{_number(p['vloadstore'])}:"
                     f"{e['vflops']}:{_number(p['vflops'])}:{e['avl']}:{p['avl']:.6f}:{r.mv}")
        if r.gather_exprs is not None and r.gathers is not None:  # stated gathers (no counterpart in the paper)
            g, v = r.gather_exprs, r.gathers
            lines.append(f"MA:{r.depth}:ma_vec_loop_gathers:{r.id}:{g['gathers']}:{_number(v['gathers'])}:"
                         f"{g['gathered_bytes']}:{_number(v['gathered_bytes'])}")
        if r.measured is not None:
            m = r.measured
            lines.append(f"MA:{r.depth}:ma_vec_loop_stop:{r.id}:{r.calls}:{math.floor(m['vflops'])}:"
                         f"{math.floor(m['vloadstore'])}:{m['avl']:.6f}:{math.floor(m['scalar_flops'])}:"
                         f"{math.floor(m['scalar_loadstore'])}")
    return "".join(line + "\n" for line in lines)
