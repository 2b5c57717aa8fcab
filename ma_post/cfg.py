"""Control-flow model (MA paper Figure 11): the annotated program as an indented tree with expressions.

One line per site, indented two spaces per level, in order of first execution::

    variable na = 1400
    num_proc_cols = 2^ceil(log(nprocs)/(2*log(2)))
    loop conj_loop: niter
      subroutine conj_grad
        loop cgit: cgitmax
          flop flopq: 2*nonzer*(nonzer+1)*na/nprocs
          mpi_send l2snd: dp*na/num_proc_rows (count npeers)

``values=True`` appends what the run saw: calls per rank and the mean predicted and measured value.
"""

from __future__ import annotations

import numpy as np

from .traceset import Site, TraceSet
from .validation import format_number


def _variable_value(ts: TraceSet, site: Site) -> str:
    var = ts.variables.get((site.id, site.path.rsplit("/", 1)[0] if "/" in site.path else ""))
    values = var.values[var.present] if var is not None else site.predicted.mean_per_rank()
    values = values[np.isfinite(values)]
    if not values.size:
        return "?"
    lo, hi = float(values.min()), float(values.max())
    return format_number(lo) if lo == hi else f"{format_number(lo)}..{format_number(hi)} (per rank)"


def site_text(ts: TraceSet, site: Site) -> str:
    if site.type == "variable":
        return f"variable {site.id} = {_variable_value(ts, site)}"
    if site.type == "assign":
        return f"{site.id} = {site.expr}"
    if site.type == "subroutine":
        return f"subroutine {site.id}"
    text = f"{site.type} {site.id}: {site.expr if site.expr is not None else '?'}"
    return text + (f" (count {site.count_text})" if site.count_text else "")


def _values(ts: TraceSet, site: Site) -> str:
    calls = site.calls.sum(axis=1)
    present = calls > 0
    per_rank = format_number(float(calls[present].mean())) if present.any() else "0"
    parts = [f"calls/rank {per_rank}"]
    if site.type not in ("subroutine", "variable", "assign"):
        parts.append(f"predicted {format_number(site.predicted.mean())}")
        parts.append(f"measured {format_number(site.measured.mean())}")
    return "  [" + "; ".join(parts) + "]"


def cfg_lines(ts: TraceSet, *, values: bool = False, indent: str = "  ") -> list[str]:
    lines = []
    for site in ts.walk():
        text = indent * (site.depth - 1) + site_text(ts, site)
        if values:
            text += _values(ts, site)
        lines.append(text)
    return lines


def format_cfg(ts: TraceSet, *, values: bool = False) -> str:
    return "".join(line + "\n" for line in cfg_lines(ts, values=values))
