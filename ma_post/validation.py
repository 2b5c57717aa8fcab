"""Validation of modeling assertions: predicted against measured, per site, aggregated over ranks.

Numbers per site (MA paper Figure 8, ``id:type:predicted:measured:error_rate:PASS=n:FAIL=m``):

- *predicted* and *measured* are per-call means over every call on every rank and thread (the table and
  JSON add min and max), *error rate* is ``(predicted - measured) / measured`` of those means;
- PASS/FAIL are the runtime's per-call verdicts (under the tolerance in the trace header) summed over
  ranks; calls that could not be measured are counted as UNMEASURED, never as PASS. A call that was measured
  but whose prediction could not be evaluated (the C runtime goes on after an ``evaluation`` anomaly) is
  *unevaluated*: its site is never PASS (UNMEASURED when no call was judged), and such a site is a problem of
  the report, like an anomaly (``ma validate`` exits 1 unless ``--anomalies warn``);
- the *worst rank* is the rank with the largest per-call error bound: when the prediction is the same on
  every call of a rank (the usual case) the bound is exact — the larger error of the smallest and the
  largest measured value; otherwise it is the error of the rank's means.

``--tolerance T`` (or ``flop=0.001,loadstore=0.05``, the syntax of ``MA_TOLERANCE``) re-judges every call from
the trace (ma_post.rejudge): the lines' PASS/FAIL counts, the statuses, the table, the JSON and the exit status
all follow it. Calls the trace cannot judge one by one take their rank's verdict, and the notes say how many.

A run that did not end cleanly (a rank failed, was stopped or left no trace) is *incomplete*: the report says
why (ma_post.completeness), and a site no call of which ended before the run did is INTERRUPTED, not
UNMEASURED. The trace's anomalies are part of the report, each with the file and line of its site.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ma_core.text import one_line
from ma_core.tolerance import Tolerance, parse_tolerance

from .completeness import incomplete_run
from .rejudge import rejudge
from .traceset import Anomaly, Site, Stats, TraceSet, is_mpi, rank_ranges

PASS, FAIL, UNMEASURED, INTERRUPTED = "PASS", "FAIL", "UNMEASURED", "INTERRUPTED"


@dataclass
class SiteResult:
    site: Site
    calls: int
    predicted: tuple[float, float, float]  # mean, min, max per call
    measured: tuple[float, float, float]  # NaN when nothing was measured
    error_rate: float
    passes: int
    fails: int
    unmeasured: int
    mismatch: int
    worst_rank: int | None
    worst_error: float  # per-call error bound of the worst rank (NaN when unmeasured)
    failing_ranks: list[int]
    status: str
    unmeasured_reason: str | None = None
    count_predicted: tuple[float, float, float] | None = None  # MPI: messages per call
    count_measured: tuple[float, float, float] | None = None
    first_fail: tuple[int, dict[str, Any]] | None = None
    by_rank_verdict: int = 0  # re-judged calls that took their rank's verdict (the trace cannot judge each)
    unevaluated: int = 0  # calls measured without a prediction (it failed to evaluate): never a pass

    @property
    def id(self) -> str:
        return self.site.id

    @property
    def type(self) -> str:
        return self.site.type


@dataclass
class Contribution:
    site: Site
    predicted: float
    measured: float

    @property
    def error(self) -> float:
        return self.predicted - self.measured


@dataclass
class Attribution:
    """How the error of one quantity inside a subroutine or loop splits over the assertions below it."""

    container: Site
    type: str
    predicted: float
    measured: float
    contributions: list[Contribution]

    @property
    def error_rate(self) -> float:
        return _rate(self.predicted, self.measured)

    def shares(self) -> list[tuple[Contribution, float]]:
        """Each contribution with its share of the total absolute error (0..1), largest first."""
        total = sum(abs(c.error) for c in self.contributions)
        ranked = sorted(self.contributions, key=lambda c: -abs(c.error))
        return [(c, abs(c.error) / total if total else 0.0) for c in ranked]


@dataclass
class Report:
    traceset: TraceSet
    results: list[SiteResult]
    tolerance: Tolerance | None  # the --tolerance used for judging, None: the runtime's verdicts
    attribution: list[Attribution] = field(default_factory=list)
    incomplete: list[str] = field(default_factory=list)  # why the run is incomplete; empty when it is not

    @property
    def failed(self) -> list[SiteResult]:
        return [r for r in self.results if r.status == FAIL]

    @property
    def interrupted(self) -> list[SiteResult]:
        return [r for r in self.results if r.status == INTERRUPTED]

    @property
    def anomalies(self) -> list[Anomaly]:
        return self.traceset.anomalies

    def problems(self, *, anomalies: bool = True) -> list[str]:
        """What makes the report fail (``ma validate`` exits 1): failed assertions, an incomplete run and,
        unless ``anomalies`` is False, the trace's anomalies."""
        out = [f"{len(self.failed)} FAIL"] if self.failed else []
        if self.incomplete:
            out.append("the run is incomplete")
        if anomalies and self.anomalies:
            out.append(f"{len(self.anomalies)} kind{'s' if len(self.anomalies) > 1 else ''} of anomaly")
        if anomalies and self.unevaluated:
            count = len(self.unevaluated)
            out.append(f"{count} assertion{'s' if count > 1 else ''} with unevaluated calls")
        return out

    @property
    def unmeasured(self) -> list[SiteResult]:
        return [r for r in self.results if r.status == UNMEASURED]

    @property
    def unevaluated(self) -> list[SiteResult]:
        """Sites with calls that were measured but could not be judged: their prediction failed to evaluate."""
        return [r for r in self.results if r.unevaluated]

    @property
    def ok(self) -> bool:
        return not self.failed


def validate(ts: TraceSet, *, tolerance: float | str | Tolerance | None = None, attribution: bool = True,
             kinds: Collection[str] | None = None) -> Report:
    """Validation report of every assertion site of ``ts`` (with ``kinds``, of the sites of those annotation
    types only, e.g. ``{"flop", "loop"}``). ``tolerance``: judge every call again with this relative tolerance
    (a number for every type, or ``"flop=0.001,loadstore=0.05"``); None keeps the runtime's verdicts."""
    from ma_core.errors import MAError

    tolerance = as_tolerance(tolerance)
    present = {site.type for site in ts.walk() if site.is_assertion}
    unknown = sorted(set(kinds or ()) - present)
    if unknown:
        raise MAError(f"no assertion of type {', '.join(unknown)} in this run "
                      f"(its types: {', '.join(sorted(present))})")
    incomplete = incomplete_run(ts)
    results = [_site_result(ts, site, tolerance, bool(incomplete)) for site in ts.walk()
               if site.is_assertion and (kinds is None or site.type in kinds)]
    report = Report(ts, results, tolerance, incomplete=incomplete)
    if attribution:
        report.attribution = attribute_errors(ts)
    return report


def as_tolerance(tolerance: float | str | Tolerance | None) -> Tolerance | None:
    """A number, a ``MA_TOLERANCE`` spec or a Tolerance as a Tolerance (MAError for a bad one)."""
    from ma_core.errors import MAError

    if tolerance is None or isinstance(tolerance, Tolerance):
        return tolerance
    if isinstance(tolerance, str):
        return parse_tolerance(tolerance, source="tolerance")
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not math.isfinite(tolerance) \
            or tolerance < 0:
        raise MAError(f"tolerance must be a finite number >= 0, not {tolerance!r}")
    return Tolerance(float(tolerance))


def _triple(stats: Stats) -> tuple[float, float, float]:
    n, lo, hi, total = stats.total()
    return (total / n if n else math.nan, lo, hi)


def _rate(predicted: float, measured: float) -> float:
    if math.isnan(predicted) or math.isnan(measured):
        return math.nan
    if measured == 0:
        return 0.0 if predicted == 0 else math.copysign(math.inf, predicted)
    return (predicted - measured) / measured


def _bound(pred: Stats, meas: Stats) -> np.ndarray:
    """Per-rank per-call relative error bound (see the module docstring); NaN where nothing was measured."""
    p, m = pred.per_rank(), meas.per_rank()
    with np.errstate(invalid="ignore", divide="ignore"):
        p_mean = p.sum / np.where(p.n > 0, p.n, 1)
        m_mean = m.sum / np.where(m.n > 0, m.n, 1)

        def rel(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            out = np.abs(a - b) / np.abs(b)
            return np.where(a == b, 0.0, out)  # 0/0 is agreement, x/0 is infinite

        constant = (p.min == p.max) & np.isfinite(m.min)
        exact = np.maximum(rel(p.min, m.min), rel(p.min, m.max))
        crosses_zero = (m.min <= 0) & (m.max >= 0) & (p.min != 0) & (m.min != m.max)
        exact = np.where(crosses_zero, np.inf, exact)
        bound = np.where(constant, exact, rel(p_mean, m_mean))
    return np.where(m.n > 0, bound, np.nan)


def _site_result(ts: TraceSet, site: Site, tolerance: Tolerance | None, cut_off: bool) -> SiteResult:
    pred, meas = site.predicted, site.measured
    bound = _bound(pred, meas)
    count_pred = count_meas = None
    if is_mpi(site.type):
        cpred, cmeas = site.count_predicted, site.count_measured
        count_pred, count_meas = _triple(cpred), _triple(cmeas)
        bound = np.fmax(bound, _bound(cpred, cmeas))
        nothing = (cpred.per_rank().max == 0) & (cmeas.per_rank().max == 0)
        bound = np.where(nothing, 0.0, bound)  # no message asserted, none made: whatever the size
    if tolerance is None:
        passes_per_rank, fails_per_rank = site.passes.sum(axis=1), site.fails.sum(axis=1)
        by_rank_verdict = 0
    else:
        verdicts = rejudge(site, tolerance.for_type(site.type), ts.tolerance(site.type))
        passes_per_rank, fails_per_rank = verdicts.passes, verdicts.fails
        by_rank_verdict = int(verdicts.by_cell.sum())
    passes, fails = int(passes_per_rank.sum()), int(fails_per_rank.sum())
    unmeasured = int(site.unmeasured.sum())
    # Measured calls the runtime judged neither way: their prediction did not evaluate (whatever --tolerance).
    unevaluated = max(int(meas.n.sum()) - int(site.passes.sum()) - int(site.fails.sum()), 0)
    p_triple, m_triple = _triple(pred), _triple(meas)
    worst_rank, worst_error = None, math.nan
    if pred.n.sum() and (np.isfinite(bound).any() or np.isinf(bound).any()):  # (no error without a prediction)
        idx = int(np.nanargmax(np.where(np.isnan(bound), -1.0, bound)))
        worst_rank, worst_error = int(ts.ranks[idx]), float(bound[idx])
    failing = ts.ranks[fails_per_rank > 0]
    if meas.n.sum() == 0 and not (count_meas and count_meas[0] == count_meas[0]):
        # A site is in the tree from its first entry and counts a call when the call ends: in a run that
        # ended early, a site without calls was entered and cut off.
        status = INTERRUPTED if cut_off and not site.calls.sum() else UNMEASURED
    else:
        status = FAIL if failing.size else UNMEASURED if unevaluated else PASS
    first_fail = None
    if site.first_fail:
        rank = min(site.first_fail)
        first_fail = (rank, site.first_fail[rank])
    return SiteResult(
        site=site, calls=int(site.calls.sum()), predicted=p_triple, measured=m_triple,
        error_rate=_rate(p_triple[0], m_triple[0]), passes=passes, fails=fails, unmeasured=unmeasured,
        mismatch=int(site.mismatches.sum()), worst_rank=worst_rank, worst_error=worst_error,
        failing_ranks=failing.tolist(), status=status,
        unmeasured_reason=(_INTERRUPTED_REASON if status == INTERRUPTED else
                           _unevaluated_reason(unevaluated, int(meas.n.sum())) if unevaluated else
                           _unmeasured_reason(ts, site) if status == UNMEASURED or unmeasured else None),
        count_predicted=count_pred, count_measured=count_meas, first_fail=first_fail,
        by_rank_verdict=by_rank_verdict, unevaluated=unevaluated)


_INTERRUPTED_REASON = "no call had ended when the run did (cut off by the end of an incomplete run)"


def _unevaluated_reason(unevaluated: int, measured: int) -> str:
    return (f"the prediction of {unevaluated} of {measured} measured call{'s' if measured > 1 else ''} could not be "
            "evaluated (see the site's evaluation anomaly); such a call is never a pass")


def _unmeasured_reason(ts: TraceSet, site: Site) -> str:
    if site.type == "loop":
        return "the trip count was not reported (count with lp.range or lp.iter, or call lp.end(n))"
    return ts.unmeasured_reason(site.type) or "no measurement"


# --- error attribution ------------------------------------------------------------------------------


def attribute_errors(ts: TraceSet) -> list[Attribution]:
    """For every subroutine and loop (and the whole program), the error of each assertion type below it,
    split over the assertions that make it. Sums are over measured calls on every rank."""
    own: dict[tuple, Contribution] = {}
    for site in ts.walk():
        if not site.is_assertion or site.type == "loop":
            continue
        meas = site.measured.per_rank()
        if meas.n.sum() == 0:
            continue
        with np.errstate(invalid="ignore", divide="ignore"):
            p_mean = site.predicted.mean_per_rank()
        counted = meas.n > 0
        if is_mpi(site.type):  # a rank that asserted no message and made none has no error, whatever the size
            counted &= ~((site.count_predicted.per_rank().max == 0) & (site.count_measured.per_rank().max == 0))
        predicted = float(np.nansum(np.where(counted, p_mean * meas.n, 0.0)))
        own[site.key] = Contribution(site, predicted, float(np.where(counted, meas.sum, 0.0).sum()))
    out = []
    containers = [ts.root] + [s for s in ts.walk() if s.type in ("subroutine", "loop")]
    for container in containers:
        depth = len(container.key)
        by_type: dict[str, list[Contribution]] = {}
        for key, contribution in own.items():
            if key[:depth] == container.key and len(key) > depth:
                by_type.setdefault(contribution.site.type, []).append(contribution)
        for site_type, contributions in by_type.items():
            if not any(c.error for c in contributions):
                continue
            out.append(Attribution(container, site_type, sum(c.predicted for c in contributions),
                                   sum(c.measured for c in contributions), contributions))
    return out


# --- formatting -------------------------------------------------------------------------------------


def format_number(x: float) -> str:
    """Integers as integers, other values with up to 10 significant digits; '-' when missing."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if float(x).is_integer() and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.10g}"


def format_rate(x: float) -> str:
    """Error rate as in the paper: 0.0, -0.194, 1.426E-4."""
    if math.isnan(x):
        return "-"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return "0.0"
    if 1e-3 <= abs(x) < 1e4:
        text = f"{x:.3g}"
        return text if ("." in text or "e" in text) else text + ".0"
    mantissa, exponent = f"{x:.3E}".split("E")
    return f"{mantissa}E{int(exponent)}"


def format_line(result: SiteResult) -> str:
    """One line in the format of the MA paper's Figure 8."""
    line = (f"{result.id}:ma_{result.type}:{format_number(result.predicted[0])}:"
            f"{format_number(result.measured[0])}:{format_rate(result.error_rate)}:"
            f"PASS={result.passes}:FAIL={result.fails}")
    if result.unmeasured:
        line += f":UNMEASURED={result.unmeasured}"
    return line


def format_lines(report: Report) -> str:
    """One line per site, whatever its id holds (ma_core.text.one_line: a newline in an id is printed ``\\n``)."""
    return "".join(one_line(format_line(r)) + "\n" for r in report.results)


def _span(triple: tuple[float, float, float] | None) -> str:
    if triple is None or math.isnan(triple[0]):
        return "-"
    mean, lo, hi = triple
    if lo == hi:
        return format_number(mean)
    return f"{format_number(mean)} [{format_number(lo)}..{format_number(hi)}]"


def format_table(report: Report) -> str:
    ts = report.traceset
    rows = [("site", "type", "calls", "predicted", "measured", "error", "pass", "fail", "unmeas", "status",
             "worst rank")]
    for r in report.results:
        worst = "-" if r.worst_rank is None or r.worst_error == 0 else f"{r.worst_rank} ({format_rate(r.worst_error)})"
        pred, meas = _span(r.predicted), _span(r.measured)
        if r.count_predicted is not None:
            pred += f" x{_span(r.count_predicted)}"
            meas += f" x{_span(r.count_measured)}" if r.count_measured and not math.isnan(r.count_measured[0]) else ""
        rows.append((one_line(r.site.path), r.type, str(r.calls), pred, meas, format_rate(r.error_rate), str(r.passes),
                     str(r.fails), str(r.unmeasured), r.status, worst))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    out = [f"trace: {one_line(str(ts.directory or '-'))}  ranks: {ts.n_ranks} of {ts.size}  language: {ts.language}"
           f"  run: {ts.run_id or '-'}", "", *lines]
    out += ["", summary_line(report)]
    out += _notes(report)
    if report.attribution:
        out += ["", "error attribution (predicted - measured, summed over ranks; share of the absolute error):"]
        out += format_attribution(report.attribution)
    return "\n".join(out) + "\n"


def summary_line(report: Report) -> str:
    n_pass = sum(1 for r in report.results if r.status == PASS)
    judged = (f"tolerance {report.tolerance.text()} (re-judged from the trace)" if report.tolerance is not None
              else "the runtime's tolerance")
    line = (f"{len(report.results)} assertions: {n_pass} PASS, {len(report.failed)} FAIL, "
            f"{len(report.unmeasured)} UNMEASURED")
    if report.interrupted:
        line += f", {len(report.interrupted)} INTERRUPTED"
    line += f" ({judged})"
    if report.unevaluated:
        calls = sum(r.unevaluated for r in report.unevaluated)
        line += f"; {calls} call{'s' if calls > 1 else ''} unevaluated"
    if report.anomalies:
        line += f"; {sum(a.count for a in report.anomalies)} anomalies"
    if report.incomplete:
        line += "; INCOMPLETE RUN"
    return line


def _where(file: str | None, line: int | None) -> str:
    return f"{file}:{line}: " if file else ""


def format_notes(report: Report) -> str:
    """The problems of the run, one per line (the notes below the table, less the unmeasured sites, which
    the summary counts: a host without a counter would otherwise repeat its reason for every site)."""
    return "".join(line + "\n" for line in _notes(report, unmeasured=False)[1:])


def _notes(report: Report, *, unmeasured: bool = True) -> list[str]:
    ts = report.traceset
    out = [f"incomplete run: {sentence}" for sentence in report.incomplete]
    for r in report.results:
        if r.unevaluated:
            out.append(f"{_where(r.site.file, r.site.line)}unevaluated: {r.site.path} ({r.type}): "
                       f"{r.unmeasured_reason}")
        elif r.status == INTERRUPTED or (unmeasured and r.status == UNMEASURED):
            out.append(f"{_where(r.site.file, r.site.line)}{r.status.lower()}: {r.site.path} ({r.type}): "
                       f"{r.unmeasured_reason or 'no measurement'}")
        if r.mismatch:
            first = r.site.first_mismatch.get(min(r.site.first_mismatch)) if r.site.first_mismatch else None
            detail = f" (first: given {first.get('given')}, evaluated {first.get('evaluated')})" if first else ""
            out.append(f"mismatch: {r.site.path}: the program's value differed from the expression in "
                       f"{r.mismatch} calls{detail}")
        if r.status == FAIL and r.failing_ranks:
            out.append(f"fail: {r.site.path}: ranks {rank_ranges(r.failing_ranks)}")
        if r.by_rank_verdict:
            out.append(f"re-judged: {r.site.path}: {r.by_rank_verdict} of {r.passes + r.fails} calls took their "
                       "rank's verdict (the trace keeps each rank's smallest and largest measurement, not every call)")
    for site in ts.walk():
        if site.type == "assign" and site.mismatches.sum():
            out.append(f"mismatch: derived variable {site.id} = {site.expr}: the program's value differed in "
                       f"{int(site.mismatches.sum())} declarations")
    for anomaly in ts.anomalies:
        out.append(f"{_where(anomaly.file, anomaly.line)}anomaly: {anomaly.kind} at {anomaly.path or '(top)'}: "
                   f"{anomaly.message} (x{anomaly.count}, ranks {rank_ranges(anomaly.ranks)})")
    return ["", *map(one_line, out)] if out else []


def format_attribution(attribution: Iterable[Attribution]) -> list[str]:
    lines = []
    for a in attribution:
        name = a.container.path or "(program)"
        lines.append(f"  {one_line(name)} [{a.container.type}] {a.type}: predicted {format_number(a.predicted)}, "
                     f"measured {format_number(a.measured)}, error {format_rate(a.error_rate)}")
        for contribution, share in a.shares():
            if contribution.error == 0:
                continue
            lines.append(f"    {one_line(contribution.site.path)}: {format_number(contribution.error)} "
                         f"({100 * share:.1f}%)")
    return lines


def _json_number(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, float) and x.is_integer() and abs(x) < 2**53:
        return int(x)
    return x


def _triple_json(t: tuple[float, float, float] | None) -> Any:
    if t is None:
        return None
    return {"mean": _json_number(t[0]), "min": _json_number(t[1]), "max": _json_number(t[2])}


def to_json(report: Report) -> dict[str, Any]:
    ts = report.traceset
    sites = []
    for r in report.results:
        sites.append({
            "id": r.id, "type": r.type, "path": r.site.path, "expr": r.site.expr, "count_expr": r.site.count_expr,
            "file": r.site.file, "line": r.site.line, "calls": r.calls,
            "predicted": _triple_json(r.predicted), "measured": _triple_json(r.measured),
            "count_predicted": _triple_json(r.count_predicted), "count_measured": _triple_json(r.count_measured),
            "error_rate": _json_number(r.error_rate), "pass": r.passes, "fail": r.fails,
            "unmeasured": r.unmeasured, "mismatch": r.mismatch, "status": r.status,
            "unmeasured_reason": r.unmeasured_reason, "worst_rank": r.worst_rank,
            "worst_error": _json_number(r.worst_error), "failing_ranks": r.failing_ranks,
            "first_fail": None if r.first_fail is None else {"rank": r.first_fail[0], **r.first_fail[1]},
            "by_rank_verdict": r.by_rank_verdict, "unevaluated": r.unevaluated,
            "line_text": format_line(r),
        })
    return {
        "trace": {"directory": str(ts.directory) if ts.directory else None, "ranks": ts.ranks.tolist(),
                  "size": ts.size, "run_id": ts.run_id, "language": ts.language,
                  "missing_ranks": ts.missing_ranks, "incomplete_ranks": ts.incomplete_ranks(),
                  "incomplete": report.incomplete,
                  "first_failure": None if ts.run_record is None or ts.run_record.first_failure is None
                  else dict(ts.run_record.first_failure.entry)},
        "tolerance": None if report.tolerance is None else report.tolerance.to_json(),
        "summary": {"assertions": len(report.results), "pass": sum(r.status == PASS for r in report.results),
                    "fail": len(report.failed), "unmeasured": len(report.unmeasured),
                    "unevaluated": len(report.unevaluated),
                    "interrupted": len(report.interrupted), "anomalies": len(report.anomalies),
                    "complete": not report.incomplete, "ok": report.ok, "problems": report.problems()},
        "sites": sites,
        "attribution": [{"container": a.container.path, "container_type": a.container.type, "type": a.type,
                         "predicted": _json_number(a.predicted), "measured": _json_number(a.measured),
                         "error_rate": _json_number(a.error_rate),
                         "contributions": [{"path": c.site.path, "error": _json_number(c.error), "share": share}
                                           for c, share in a.shares()]}
                        for a in report.attribution],
        "anomalies": [{"kind": a.kind, "path": a.path, "message": a.message, "count": a.count, "ranks": a.ranks,
                       "file": a.file, "line": a.line} for a in ts.anomalies],
    }
