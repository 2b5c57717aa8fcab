"""The HTML report of one run: a single self-contained file (jinja2 template, inline CSS, SVG figures,
MathML formulas from SymPy's printer), readable offline in any current browser.

Sections: the run's header; the validation table (pass, fail, unmeasured coloured, worst rank) and the
error attribution; the control-flow tree (collapsible); every model as mathematics with its Octave
function; the message-size distribution; scaling over process counts; sensitivity (elasticities and the
x1, x2, x10 factors); predicted against measured per assertion; a backend's predicted time where one is
given (computed by the caller: this layer never imports ``backends``).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import jinja2
import numpy as np
import sympy
from markupsafe import Markup

from ma_core.errors import MAError

from ..models import Model, ModelBuilder, available_quantities
from ..traceset import Site, TraceSet
from ..validation import FAIL, INTERRUPTED, PASS, UNMEASURED, Report, format_number, format_rate, validate

TEMPLATES = Path(__file__).resolve().parent
SCALING_QUANTITIES = ("flops", "mpi_bytes", "mpi_count", "memory")
SENSITIVITY_QUANTITIES = ("flops", "memory", "mpi_bytes")
DEFAULT_NPROCS = tuple(float(2**k) for k in range(13))


@dataclass
class Section:
    """A part of the report that may be unavailable for this run (then ``missing`` says why)."""

    title: str
    anchor: str
    missing: str | None = None
    content: dict[str, Any] = field(default_factory=dict)


@dataclass
class PredictionSummary:
    """A backend's prediction as the report shows it, in plain values: ``rows`` per subroutine (or per site, ``by``)
    hold ``name``, ``seconds`` and the seconds of ``compute``, ``memory``, ``communication`` and ``runtime`` (the
    language runtime's own: a Python program's interpreter); ``measured`` holds
    (subroutine, predicted s, measured s) where the trace timed the subroutine; ``total`` is the symbolic time."""

    backend: str
    machine: str
    total: sympy.Expr
    total_s: float
    by: str
    rows: list[dict[str, Any]]
    measured: list[tuple[str, float, float]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# A formula of more nodes than this is pages of MathML that nobody reads (a whole program's predicted time is
# about 100,000 operations: 5 MB of MathML and most of the report's build time); the report names its size and
# the command that exports it as code instead.
READABLE_NODES = 4000


def _nodes_beyond(expr: sympy.Expr, limit: int) -> bool:
    """Whether ``expr`` has more than ``limit`` nodes; stops counting there."""
    return any(count > limit for count, _ in enumerate(sympy.preorder_traversal(expr), start=1))


def mathml(expr: sympy.Expr, name: str | None = None, *, export: str = "ma export DIR --octave/--python/--c") -> Markup:
    """``name = expr`` as a block of presentation MathML (names keep their underscores); a formula too long to
    read is a line that says so and names ``export``, the command that writes it as code."""
    if _nodes_beyond(expr, READABLE_NODES):
        what = html.escape(name) if name is not None else "the formula"
        return Markup(f'<p class="too-long"><code>{what}</code> is a formula of more than {READABLE_NODES:,} '
                      f"terms, too long to read here: <code>{html.escape(export)}</code> writes it as code.</p>")
    # A visible dot between factors: most names have several letters (cgitmax*na*niter).
    body = _presentation_printer()({"disable_split_super_sub": True, "mul_symbol": "dot"}).doprint(expr)
    if name is not None:
        body = f"<mrow><mi>{html.escape(name)}</mi><mo>=</mo>{body}</mrow>"
    return Markup(f'<div class="formula"><math display="block">{body}</math></div>')


def _presentation_printer() -> type:
    """SymPy's presentation MathML printer, with cases for a Piecewise (a sum over a loop's iterations)."""
    from sympy.printing.mathml import MathMLPresentationPrinter

    class Printer(MathMLPresentationPrinter):  # type: ignore[misc]  # (SymPy is untyped)
        def _print_Piecewise(self, expr: sympy.Piecewise) -> Any:
            cases = self.dom.createElement("mrow")
            brace = self.dom.createElement("mo")
            brace.appendChild(self.dom.createTextNode("{"))
            cases.appendChild(brace)
            table = self.dom.createElement("mtable")
            table.setAttribute("columnalign", "left left")
            for value, condition in expr.args:
                row = self.dom.createElement("mtr")
                for part in (value, condition):
                    cell = self.dom.createElement("mtd")
                    if part is condition:
                        word = self.dom.createElement("mtext")
                        text = "otherwise" if condition is sympy.true else "if\u00a0"
                        word.appendChild(self.dom.createTextNode(text))
                        cell.appendChild(word)
                    if part is value or condition is not sympy.true:
                        cell.appendChild(self._print(part))
                    row.appendChild(cell)
                table.appendChild(row)
            cases.appendChild(table)
            return cases

    return Printer


def _num(x: Any) -> str:
    try:
        value = float(x)
    except (TypeError, ValueError):
        return "-"
    return "-" if not np.isfinite(value) else format_number(float(f"{value:.10g}"))


def _status_class(status: str) -> str:
    return {PASS: "pass", FAIL: "fail", UNMEASURED: "unmeasured", INTERRUPTED: "unmeasured"}.get(status, "")


def _validation(report: Report) -> Section:
    rows = []
    for r in report.results:
        rows.append({"path": r.site.path, "type": r.type, "calls": r.calls, "expr": r.site.expr or "",
                     "predicted": _num(r.predicted[0]), "measured": _num(r.measured[0]),
                     "error": "-" if not np.isfinite(r.error_rate) else format_rate(r.error_rate),
                     "passes": r.passes, "fails": r.fails, "unmeasured": r.unmeasured,
                     "worst": "-" if r.worst_rank is None else f"{r.worst_rank} ({format_rate(r.worst_error)})",
                     "status": r.status, "css": _status_class(r.status),
                     "reason": r.unmeasured_reason or ""})
    attribution = []
    for a in report.attribution:
        shares = [{"path": c.site.path, "error": _num(c.error), "share": f"{100 * s:.1f}%"} for c, s in a.shares()[:5]]
        attribution.append({"container": a.container.path or "(program)", "type": a.type,
                            "predicted": _num(a.predicted), "measured": _num(a.measured),
                            "error": "-" if not np.isfinite(a.error_rate) else format_rate(a.error_rate),
                            "shares": shares})
    counts = {s: sum(1 for r in report.results if r.status == s) for s in (PASS, FAIL, UNMEASURED)}
    return Section("Validation", "validation", content={"rows": rows, "attribution": attribution, "counts": counts,
                                                        "ok": report.ok})


def _tree(ts: TraceSet, report: Report) -> Section:
    status = {r.site.key: r for r in report.results}

    def node(site: Site) -> dict[str, Any]:
        result = status.get(site.key)
        pred, meas = site.predicted.mean(), site.measured.mean()
        return {"type": site.type, "id": site.id, "expr": site.expr or "", "calls": int(site.calls.sum()),
                "predicted": _num(pred), "measured": _num(meas),
                "css": _status_class(result.status) if result else "structure",
                "children": [node(child) for child in ts.children(site)]}

    roots = [node(site) for site in ts.children(ts.root)]
    return Section("Control-flow tree", "tree", content={"roots": roots, "sites": len(ts.sites) - 1})


def _models(models: Sequence[Model]) -> Section:
    from ..export import octave_function

    entries = []
    for m in models:
        _, octave = octave_function(m)
        entries.append({"quantity": m.quantity, "inputs": ", ".join(m.inputs), "math": mathml(m.expr, m.quantity),
                        "definitions": [mathml(expr, name) for name, expr in m.definitions.items()],
                        "octave": octave, "notes": [str(n) for n in m.notes]})
    return Section("Models", "models", content={"models": entries},
                   missing=None if entries else "the trace has no assertion a model can be built from")


def _messages(ts: TraceSet, builder: ModelBuilder, figure: Callable[[Any], str]) -> Section:
    from ..msgdist import measured_distribution, message_distribution

    classes = message_distribution(ts, builder=builder)
    if not classes:
        return Section("Message sizes", "messages", missing="no MPI site with a payload")
    measured = measured_distribution(ts)
    rows = [{"size": _num(c.size), "per_rank": _num(c.per_rank), "share": f"{100 * c.share:.1f}%",
             "volume": f"{100 * c.volume_share:.1f}%", "sites": ", ".join(c.sites)} for c in classes]
    hist = [{"bytes": f"{b.lo}" if b.lo == b.hi else f"{b.lo}-{b.hi}", "per_rank": _num(b.per_rank),
             "share": f"{100 * b.share:.1f}%"} for b in measured]
    fig = _message_figure(classes)
    return Section("Message sizes", "messages", content={"rows": rows, "measured": hist, "figure": figure(fig)})


def _message_figure(classes: Sequence[Any]) -> Any:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.0, 3.2), layout="constrained")
    axis = fig.subplots()
    labels = [format_number(c.size) for c in classes]
    axis.bar(range(len(classes)), [c.per_rank for c in classes], label="messages per rank")
    axis.set_xticks(range(len(classes)), labels, rotation=45, fontsize="small")
    axis.set_xlabel("message size (bytes)")
    axis.set_ylabel("messages per rank")
    axis.set_title("predicted at the traced inputs")
    return fig


def _scaling(models: Sequence[Model], nprocs: Sequence[float], figure: Callable[[Any], str]) -> Section:
    from ..evaluation import RANK
    from ..studies.plots import scaling_figure
    from ..studies.scaling import scaling

    chosen = [m for m in models if m.quantity in SCALING_QUANTITIES and ("nprocs" in m.inputs or RANK in m.inputs)]
    if not chosen:
        return Section("Scaling", "scaling", missing="no model depends on nprocs")
    result = scaling(chosen, nprocs)
    columns = result.columns()
    header = [k for k in columns if ":share:" not in k]
    rows = [[_num(columns[k][i]) for k in header] for i in range(len(result.nprocs))]
    return Section("Scaling", "scaling", content={
        "header": header, "rows": rows, "figure": figure(scaling_figure(result)),
        "per_rank": ", ".join(result.inputs_with_role("per rank")),
        "global": ", ".join(result.inputs_with_role("global")),
        "by_rank": any(RANK in m.inputs for m in chosen)})


def _sensitivity(models: Sequence[Model], at: Mapping[str, float], figure: Callable[[Any], str]) -> Section:
    from ..studies.plots import factors_figure
    from ..studies.sensitivity import SCALES, elasticities, scale_factors

    chosen = [m for m in models if m.quantity in SENSITIVITY_QUANTITIES and m.inputs]
    if not chosen:
        return Section("Sensitivity", "sensitivity", missing="no model with inputs")
    tables, factors = [], {}
    for m in chosen:
        ranked = elasticities(m, at)
        tables.append({"quantity": m.quantity, "rows": [{"parameter": e.parameter, "value": _num(round(e.value, 6)),
                                                         "how": "symbolic" if e.symbolic else "numeric"}
                                                        for e in ranked]})
        factors[m.quantity] = scale_factors(m, at, parameters=[e.parameter for e in ranked[:4]])
    return Section("Sensitivity", "sensitivity",
                   content={"tables": tables, "figure": figure(factors_figure(factors, SCALES))})


def _predicted_measured(report: Report, figure: Callable[[Any], str]) -> Section:
    from matplotlib.figure import Figure

    points = [(r.site.path, r.predicted[0], r.measured[0], r.status) for r in report.results
              if np.isfinite(r.measured[0]) and r.measured[0] > 0 and r.predicted[0] > 0]
    if not points:
        return Section("Predicted vs measured", "predicted", missing="no measured assertion with positive values")
    fig = Figure(figsize=(5.0, 4.2), layout="constrained")
    axis = fig.subplots()
    for status, colour in ((PASS, "#2e7d32"), (FAIL, "#c62828")):
        chosen = [p for p in points if p[3] == status]
        if chosen:
            axis.loglog([p[1] for p in chosen], [p[2] for p in chosen], "o", color=colour, label=status, alpha=0.8)
    values = [v for p in points for v in p[1:3]]
    span = [min(values) * 0.8, max(values) * 1.25]
    axis.loglog(span, span, ":", color="gray", label="measured = predicted")
    axis.set_xlabel("predicted per call")
    axis.set_ylabel("measured per call")
    axis.legend(fontsize="small")
    return Section("Predicted vs measured", "predicted", content={"figure": figure(fig), "points": len(points)})


def _backend(summary: PredictionSummary) -> Section:
    parts = ("compute", "memory", "communication", "runtime")
    rows = []
    for r in summary.rows:
        total = r["seconds"] or 1.0
        rows.append({"name": r["name"] or "(outside subroutines)", "seconds": _num(r["seconds"]),
                     **{p: f"{100 * r.get(p, 0.0) / total:.1f}%" for p in parts}})
    measured = [{"name": name, "predicted": _num(pred), "measured": _num(meas),
                 "error": format_rate((pred - meas) / meas) if meas else "-"} for name, pred, meas in summary.measured]
    export = f"ma export DIR --backend {summary.backend} --machine {summary.machine} --python OUT"
    return Section(f"Predicted time ({summary.backend} on {summary.machine})", "backend",
                   content={"total": mathml(summary.total, "time", export=export), "total_s": _num(summary.total_s),
                            "by": summary.by, "rows": rows, "measured": measured, "notes": summary.notes})


def _header(ts: TraceSet, source: str) -> list[tuple[str, str]]:
    h = ts.headers[0] if ts.headers else {}
    items = [("trace directory", source), ("run id", str(ts.run_id or "-")), ("ranks", str(ts.size)),
             ("language", str(h.get("language", "-"))), ("producer", str(h.get("producer", "-"))),
             ("host", str(h.get("host", "-"))), ("command", " ".join(map(str, h.get("command") or [])) or "-"),
             ("started", _time(h.get("start_time"))), ("ended", _time(h.get("end_time"))),
             ("status", str(h.get("status", "-"))), ("tolerance", _mapping(h.get("tolerance"))),
             ("counters", _mapping((h.get("counters") or {}).get("measures")))]
    incomplete = ts.incomplete_ranks()
    if len(incomplete):
        items.append(("incomplete ranks", ", ".join(map(str, incomplete))))
    return items


def _time(stamp: Any) -> str:
    try:
        return datetime.fromtimestamp(float(stamp), timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (TypeError, ValueError, OverflowError):
        return "-"


def _mapping(value: Any) -> str:
    """``{"flop": None, "loop": "runtime"}`` -> ``flop: none, loop: runtime`` (nested one level)."""
    if not isinstance(value, Mapping):
        return "-" if value is None else str(value)
    return ", ".join(f"{k}: {_mapping(v) if isinstance(v, Mapping) else ('none' if v is None else v)}"
                     for k, v in value.items()) or "-"


def build_report(ts: TraceSet, *, source: str = "", title: str | None = None,
                 nprocs: Sequence[float] = DEFAULT_NPROCS, at: Mapping[str, float] | None = None,
                 prediction: PredictionSummary | None = None, conditional: str = "literal") -> str:
    """The HTML text of the report of ``ts``; ``prediction`` adds a backend's predicted time; ``conditional``
    is the models' rule for sites that ran fewer times than their loops predict (models.ModelBuilder)."""
    import matplotlib

    from ..studies.plots import svg

    def figure(fig: Any) -> Markup:
        with matplotlib.rc_context({"svg.fonttype": "none"}):  # text stays text: small, selectable
            return Markup(svg(fig))

    report = validate(ts)
    builder = ModelBuilder(ts, conditional=conditional)
    models = [builder.model(q) for q in available_quantities(ts)]
    sections = [_validation(report), _tree(ts, report), _models(models)]
    for make in (lambda: _messages(ts, builder, figure), lambda: _scaling(models, nprocs, figure),
                 lambda: _sensitivity(models, at or {}, figure), lambda: _predicted_measured(report, figure)):
        try:
            sections.append(make())
        except MAError as exc:  # one study that cannot be made for this run leaves the others
            sections.append(Section(*_study_names(len(sections)), missing=str(exc)))
    if prediction is not None:
        sections.append(_backend(prediction))
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    return env.get_template("report.html.j2").render(
        title=title or f"Modeling assertions report: {source or ts.run_id or 'run'}", header=_header(ts, source),
        sections=sections, by_anchor={s.anchor: s for s in sections},
        generated=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"))


def _study_names(index: int) -> tuple[str, str]:
    return [("Message sizes", "messages"), ("Scaling", "scaling"), ("Sensitivity", "sensitivity"),
            ("Predicted vs measured", "predicted")][index - 3]


def write_report(ts: TraceSet, path: str | Path, **options: Any) -> Path:
    path = Path(path)
    path.write_text(build_report(ts, **options), encoding="utf-8")
    return path
