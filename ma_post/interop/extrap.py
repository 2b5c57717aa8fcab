"""Measured values of several runs in Extra-P's JSON input (``ma export DIR1 DIR2 ... --extrap OUT.json``).

Extra-P fits its own performance-model normal form (PMNF) to measurements taken at several parameter
values. Each trace directory is one measurement point: its coordinates are the values of the chosen input
parameters (by default every input variable whose value differs between the directories; a parameter must
have one value on all ranks of a run). Directories at the same point are repetitions.

Written in Extra-P's newer JSON format (``{"parameters": [...], "measurements": {callpath: {metric:
[{"point": [...], "values": [...]}]}}}``):

- one call path per site, its ids from the root joined by ``->`` below ``<program>``, with the metrics
  ``calls``, ``predicted``, ``measured`` (totals per rank over its calls) and ``time`` (inclusive wall
  seconds);
- the call path ``<program>`` with each model quantity's measured per-rank total (``flops``, ``mpi_bytes``,
  ...: the trace's own totals, as ``ma model`` compares them).

The values of a point are the per-rank values of every run at that point, so Extra-P models their mean
per rank and sees their spread. A site that did not run at a point (a loop of zero trips there) counts zeros;
a metric without a value at some point (flops where no counter measured them) is left out, since Extra-P
wants every call path and metric at every point.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ma_core.errors import MAError

if TYPE_CHECKING:
    from ma_post.traceset import Site, TraceSet

ROOT = "<program>"
SITE_METRICS = ("calls", "predicted", "measured", "time")


def _label(ts: TraceSet) -> str:
    return str(ts.directory) if ts.directory is not None else "<traces>"


def _input_values(ts: TraceSet) -> dict[str, float]:
    """Each input variable's value in this run, when it is one value on every rank (others are left out)."""
    values: dict[str, float] = {}
    for (name, _scope), var in ts.variables.items():
        if var.kind != "input" or var.varies_within_rank:
            continue
        present = var.values[var.present] if var.present.any() else var.values
        finite = present[np.isfinite(present)]
        if finite.size and np.all(finite == finite[0]):
            values.setdefault(name, float(finite[0]))
    return values


def choose_parameters(runs: Sequence[TraceSet], names: Sequence[str] = ()) -> tuple[list[str], list[list[float]]]:
    """(parameter names, one coordinate list per run): ``names``, or every input that differs between runs."""
    per_run = [_input_values(ts) for ts in runs]
    if names:
        for ts, values in zip(runs, per_run, strict=True):
            missing = [n for n in names if n not in values]
            if missing:
                raise MAError(f"{_label(ts)}: parameter(s) {', '.join(missing)} have no single value in this run "
                              f"(inputs with one value on every rank: {', '.join(sorted(values)) or 'none'})")
        chosen = list(names)
    else:
        common = set.intersection(*(set(v) for v in per_run)) if per_run else set()
        chosen = sorted(n for n in common if len({v[n] for v in per_run}) > 1)
        if not chosen:
            raise MAError("Extra-P needs runs at different parameter values: no input variable differs between "
                          f"the {len(runs)} trace directories (give --param NAME to choose one)")
    return chosen, [[values[n] for n in chosen] for values in per_run]


def _callpath(ts: TraceSet, site: Site) -> str:
    return "->".join([ROOT, *(a.id for a in ts.ancestors(site)), site.id])


def _site_values(site: Site) -> dict[str, np.ndarray]:
    def per_rank(values: np.ndarray) -> np.ndarray:
        return np.asarray(values, dtype=float).sum(axis=1)

    return {"calls": per_rank(site.calls), "predicted": per_rank(site.predicted.sum),
            "measured": per_rank(site.measured.sum), "time": per_rank(site.wall_ns) * 1e-9}


def _quantity_values(ts: TraceSet, quantities: Sequence[str] | None) -> dict[str, np.ndarray]:
    from ma_post.models import ModelBuilder, available_quantities

    builder = ModelBuilder(ts)
    values: dict[str, np.ndarray] = {}
    for quantity in quantities if quantities is not None else available_quantities(ts):
        check = builder.model(quantity).check
        if check is not None:
            values[quantity] = np.asarray(check.trace_measured, dtype=float)
    return values


def extrap_document(runs: Sequence[TraceSet], parameters: Sequence[str] = (),
                    quantities: Sequence[str] | None = None) -> dict[str, Any]:
    """The Extra-P JSON document of several runs (see the module's docstring)."""
    if not runs:
        raise MAError("Extra-P export: no trace directories given")
    names, points = choose_parameters(runs, parameters)
    # callpath -> metric -> point -> values
    table: dict[str, dict[str, dict[tuple[float, ...], list[float]]]] = {}

    def add(callpath: str, metric: str, point: tuple[float, ...], values: np.ndarray) -> None:
        finite = values[np.isfinite(values)]
        if finite.size:
            table.setdefault(callpath, {}).setdefault(metric, {}).setdefault(point, []).extend(finite.tolist())

    seen: dict[tuple[float, ...], set[str]] = {}  # point -> call paths of the sites its runs have
    ranks: dict[tuple[float, ...], int] = {}
    for ts, coordinates in zip(runs, points, strict=True):
        point = tuple(coordinates)
        ranks[point] = ranks.get(point, 0) + ts.n_ranks
        for quantity, values in _quantity_values(ts, quantities).items():
            add(ROOT, quantity, point, values)
        for site in ts.walk():
            if site.type == "variable":
                continue
            callpath = _callpath(ts, site)
            seen.setdefault(point, set()).add(callpath)
            for metric, values in _site_values(site).items():
                add(callpath, metric, point, values)
    # A site that did not run at some point (a loop of 0 trips there) ran 0 times: zeros, one per rank.
    for point, count in ranks.items():
        for callpath in set(table) - seen.get(point, set()) - {ROOT}:
            for metric in SITE_METRICS:
                add(callpath, metric, point, np.zeros(count))
    # Extra-P wants every call path and metric at every point: a metric not measured at some point (e.g. flops
    # without a counter) is left out.
    measurements: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for callpath, metrics in table.items():
        complete = {metric: [{"point": list(point), "values": by_point[point]} for point in sorted(by_point)]
                    for metric, by_point in metrics.items() if set(by_point) == set(ranks)}
        if complete:
            measurements[callpath] = complete
    if not measurements:
        raise MAError("Extra-P export: no metric was measured at every point")
    return {"parameters": names, "measurements": measurements}


def export_extrap(runs: Sequence[TraceSet], out: str | Path, parameters: Sequence[str] = (),
                  quantities: Sequence[str] | None = None) -> Path:
    """Write :func:`extrap_document` of ``runs`` as JSON to ``out``; returns the path."""
    path = Path(out)
    if path.parent != Path():
        path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(extrap_document(runs, parameters, quantities)))
    return path
