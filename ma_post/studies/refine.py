"""Refinement suggestions: where several runs of one program show an assertion wrong, what it should say.

Given the traces of runs at different inputs, every assertion site that FAILs in some run, or whose mean
error exceeds ``drift`` in some run, gets a PMNF fit (ma_post.studies.pmnf) of its measured per-call value
(a loop's trips per execution, a counter's value, an MPI site's bytes per message and, where it is wrong,
its messages per call) against the declared input parameters that vary between the data points. Each data
point is one run and one set of input values (ranks with equal inputs are averaged, so a rank-dependent
input such as a local size gives a point per value).

MPI traffic outside every assertion -- what PMPI counted for a call type beyond the messages of the
annotated sites of that type -- gets the same treatment: messages per rank and bytes per message, as a
suggestion for an assertion not yet written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ma_core.errors import MAError

from ..models import known_quantities
from ..progress import progress
from ..traceset import Site, SiteKey, TraceSet
from .pmnf import Fit, fit

DRIFT = 1e-3


@dataclass
class Observation:
    """The measured value of one run at one set of input values (mean over the ranks that had them)."""

    run: str
    inputs: dict[str, float]
    measured: float
    predicted: float | None  # the annotation's own prediction; None: no assertion
    ranks: int


@dataclass
class Suggestion:
    path: str
    type: str
    what: str  # "trips per call", "value per call", "bytes per message", "messages per call", ...
    annotated: str | None  # the annotation's expression; None: no assertion yet
    reason: str
    observations: list[Observation]
    fit: Fit | None = None
    problem: str | None = None  # why there is no fit
    parameters: list[str] = field(default_factory=list)

    def fitted(self) -> list[float]:
        """The fit's value at every observation (NaN without a fit)."""
        if self.fit is None:
            return [float("nan")] * len(self.observations)
        from ..sympy_expr import symbol

        out = []
        for obs in self.observations:
            value = self.fit.expr.xreplace({symbol(k): v for k, v in obs.inputs.items()})
            out.append(float(value))
        return out


def _mpi_types() -> set[str]:
    return {q[: -len("_count")] for q in known_quantities() if q.startswith("mpi_") and q.endswith("_count")
            and q != "mpi_count"}


def input_values(ts: TraceSet) -> dict[str, np.ndarray]:
    """Per-rank values of the declared inputs that keep one value during the run (outermost declaration)."""
    chosen: dict[str, tuple[int, np.ndarray]] = {}
    for (name, scope), var in ts.variables.items():
        if var.kind != "input" or var.varies_within_rank:
            continue
        depth = len(scope)
        if name not in chosen or depth < chosen[name][0]:
            chosen[name] = (depth, np.asarray(var.values, dtype=float))
    return {name: values for name, (_, values) in chosen.items()}


def refine(runs: Sequence[tuple[str, TraceSet]], *, drift: float = DRIFT, all_sites: bool = False,
           unannotated: bool = True) -> list[Suggestion]:
    """Suggestions for the assertions that are wrong in ``runs`` ((name, TraceSet) pairs) and for MPI traffic
    outside any assertion."""
    if len(runs) < 2:
        raise MAError("refinement needs the traces of at least two runs at different inputs")
    sites_not_in_every_run(runs)
    inputs = [input_values(ts) for _, ts in runs]
    common = sorted(set.intersection(*(set(i) for i in inputs)))
    suggestions: list[Suggestion] = []
    keys = [key for key, site in runs[0][1].sites.items() if site.is_assertion
            and all(key in ts.sites for _, ts in runs[1:])]
    for key in progress(keys, desc="refine", unit="site"):
        suggestions += _site_suggestions(runs, inputs, common, key, drift, all_sites)
    if unannotated:
        suggestions += _unannotated(runs, inputs, common)
    for s in progress(suggestions, desc="fit", unit="fit"):
        _fit(s)
    return suggestions


def sites_not_in_every_run(runs: Sequence[tuple[str, TraceSet]]) -> dict[str, list[str]]:
    """Assertion sites (by path) that some runs lack, each with the runs that have it: refine compares the others.

    MAError where the runs cannot be of one program: they share no assertion site, or a site they share is annotated
    differently (its expression, or its file name and line)."""
    keys = [{key for key, site in ts.sites.items() if site.is_assertion} for _, ts in runs]
    common = set.intersection(*keys)
    if not common:
        counts = ", ".join(f"{name} has {len(k)}" for (name, _), k in zip(runs, keys, strict=True))
        raise MAError(f"the runs share no assertion site ({counts}): refine compares runs of one program at "
                      "different inputs, not runs of different programs")
    first_name, first = runs[0]
    for key in sorted(common):
        site = first.sites[key]
        for name, ts in runs[1:]:
            other = ts.sites[key]
            if _annotation(other) != _annotation(site):
                raise MAError(f"assertion {site.path} [{site.type}] is {_shown(site)} in {first_name} but "
                              f"{_shown(other)} in {name}: refine compares runs of one program at different inputs, "
                              "not runs of different programs or versions")
    out: dict[str, list[str]] = {}
    for key in sorted(set.union(*keys) - common):
        having = [name for (name, ts), k in zip(runs, keys, strict=True) if key in k]
        site = next(ts.sites[key] for (_, ts), k in zip(runs, keys, strict=True) if key in k)
        out[site.path] = having
    return out


def _annotation(site: Site) -> tuple[str | None, str | None, str | None, int | None]:
    return site.expr, site.count_expr, Path(site.file).name if site.file else None, site.line


def _shown(site: Site) -> str:
    where = f" at {Path(site.file).name}:{site.line}" if site.file else ""
    count = f" (count {site.count_expr!r})" if site.count_expr else ""
    return f"{site.expr!r}{count}{where}"


def _site_suggestions(runs: Sequence[tuple[str, TraceSet]], inputs: list[dict[str, np.ndarray]], common: list[str],
                      key: SiteKey, drift: float, all_sites: bool) -> list[Suggestion]:
    sites = [ts.sites[key] for _, ts in runs]
    first = sites[0]
    fields = [("value", first.expr, _what(first))]
    if first.type in _mpi_types():
        fields.append(("count", first.count_expr or "1", "messages per call"))
    out = []
    for prefix, annotated, what in fields:
        observations: list[Observation] = []
        errors: list[float] = []
        for (name, _), site, values in zip(runs, sites, inputs, strict=True):
            measured_stats, predicted_stats = ((site.measured, site.predicted) if prefix == "value"
                                               else (site.count_measured, site.count_predicted))
            measured = measured_stats.mean_per_rank()
            predicted = predicted_stats.mean_per_rank()
            if not np.isfinite(measured).any():
                break
            observations += _group(name, values, common, measured, predicted)
            meas, pred = np.nanmean(measured), np.nanmean(predicted)
            errors.append(abs(pred - meas) / abs(meas) if meas else (0.0 if pred == meas else np.inf))
        else:
            failed = [name for (name, _), site in zip(runs, sites, strict=True) if site.fails.sum() > 0]
            drifting = max(errors) > drift
            if not (failed or drifting or all_sites):
                continue
            reason = (f"FAIL in {', '.join(failed)}" if failed else
                      f"error up to {max(errors):.3g}" if drifting else "every assertion (--all)")
            out.append(Suggestion(first.path, first.type, what, annotated, reason, observations))
    return out


def _what(site: Site) -> str:
    if site.type == "loop":
        return "trips per call"
    if site.type in _mpi_types():
        return "bytes per message"
    return "value per call"


def _group(run: str, values: dict[str, np.ndarray], common: list[str], measured: np.ndarray,
           predicted: np.ndarray | None) -> list[Observation]:
    """One observation per distinct tuple of input values among the ranks with a measurement."""
    groups: dict[tuple[float, ...], list[int]] = {}
    for r in np.flatnonzero(np.isfinite(measured)):
        point = tuple(float(values[name][r]) for name in common)
        if all(np.isfinite(point)):  # a rank that did not declare some input gives no point
            groups.setdefault(point, []).append(int(r))
    out = []
    for point, ranks in groups.items():
        pred = None if predicted is None else float(np.nanmean(predicted[ranks]))
        out.append(Observation(run, dict(zip(common, point, strict=True)), float(np.mean(measured[ranks])), pred,
                               len(ranks)))
    return out


def _unannotated(runs: Sequence[tuple[str, TraceSet]], inputs: list[dict[str, np.ndarray]],
                 common: list[str]) -> list[Suggestion]:
    """PMPI's messages of each call type beyond those of the annotated sites of that type, per rank."""
    types = _mpi_types() - {"mpi_barrier"}
    per_type: dict[str, list[tuple[str, dict[str, np.ndarray], np.ndarray, np.ndarray]]] = {}
    for (name, ts), values in zip(runs, inputs, strict=True):
        messages: dict[str, np.ndarray] = {}
        volume: dict[str, np.ndarray] = {}
        for i, profile in enumerate(ts.mpi_profiles):
            for routine, entry in ((profile or {}).get("calls") or {}).items():
                t = routine.lower()
                if t in types:
                    messages.setdefault(t, np.zeros(ts.n_ranks))[i] += float(entry.get("calls", 0))
                    volume.setdefault(t, np.zeros(ts.n_ranks))[i] += float(entry.get("bytes", 0))
        for t in messages:
            for site in ts.sites.values():
                if site.type != t:
                    continue
                count = site.count_measured.per_rank()
                meas = site.measured.per_rank()
                with np.errstate(invalid="ignore", divide="ignore"):
                    per_call = np.where(count.n > 0, count.sum / np.where(count.n > 0, count.n, 1), 0.0)
                messages[t] -= count.sum
                volume[t] -= np.nan_to_num(meas.sum * per_call)
            per_type.setdefault(t, []).append((name, values, messages[t], volume[t]))
    out = []
    for t, entries in sorted(per_type.items()):
        if len(entries) != len(runs) or not all(np.any(m > 0.5) for _, _, m, _ in entries):
            continue
        routine = "MPI_" + t[4:].capitalize()
        msg_obs: list[Observation] = []
        size_obs: list[Observation] = []
        for name, values, msgs, nbytes in entries:
            has = msgs > 0.5
            msg_obs += _group(name, values, common, np.where(has, msgs, np.nan), None)
            with np.errstate(invalid="ignore", divide="ignore"):
                size_obs += _group(name, values, common, np.where(has, nbytes / msgs, np.nan), None)
        reason = f"{routine} calls outside every assertion (PMPI)"
        out.append(Suggestion(f"({routine}, no assertion)", t, "messages per rank", None, reason, msg_obs))
        out.append(Suggestion(f"({routine}, no assertion)", t, "bytes per message", None, reason, size_obs))
    return out


def _fit(s: Suggestion) -> None:
    points: dict[tuple[float, ...], list[float]] = {}
    names = sorted(s.observations[0].inputs) if s.observations else []
    for obs in s.observations:
        points.setdefault(tuple(obs.inputs[n] for n in names), []).append(obs.measured)
    s.parameters = [n for i, n in enumerate(names) if len({p[i] for p in points}) > 1]
    if len(points) < 2:
        s.problem = "the runs have the same inputs: nothing to fit"
        return
    params = {n: np.array([p[i] for p in points]) for i, n in enumerate(names)}
    y = np.array([np.mean(v) for v in points.values()])
    try:
        s.fit = fit(params, y)
    except MAError as exc:
        s.problem = str(exc)
