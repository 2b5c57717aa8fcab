"""Figures of the studies (matplotlib, no display needed): written to a file or returned as SVG text."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ma_core.errors import MAError

from .ranges import is_geometric

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .scaling import ScalingResult
    from .sweep import SweepResult


def _figure(width: float, height: float, ncols: int = 1) -> tuple[Figure, list[Any]]:
    from matplotlib.figure import Figure  # the object API: no pyplot state, no display backend

    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(1, ncols, squeeze=False)[0]
    return fig, list(axes)


def save(fig: Figure, path: str | Path) -> Path:
    """Write ``fig``; the format follows the file's extension (png, svg, pdf)."""
    path = Path(path)
    try:
        fig.savefig(path, dpi=120)
    except ValueError as exc:  # matplotlib: unknown format
        raise MAError(f"{path}: cannot write this figure format ({exc})") from None
    return path


def svg(fig: Figure) -> str:
    """The figure as an inline SVG element (no XML prologue), text kept as glyph paths: no fonts needed."""
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg")
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def _spans_decades(values: np.ndarray) -> bool:
    """Whether the positive values span over two decades (a log axis leaves out zeros: one process sends
    nothing)."""
    positive = values[np.isfinite(values) & (values > 0)]
    return bool(positive.size > 1 and positive.max() / positive.min() > 100)


def sweep_figure(result: SweepResult) -> Figure:
    """One panel per quantity: a line over one swept parameter, a heat map over two."""
    if len(result.axes) not in (1, 2):
        raise MAError(f"a sweep plot draws one or two swept parameters, not {len(result.axes)} "
                      f"({', '.join(result.axes) or 'none'}); give the others one value")
    names = list(result.axes)
    logs = result.log_axes()
    quantities = list(result.values)
    fig, axes = _figure(5.2 * len(quantities), 4.0, len(quantities))
    for axis, quantity in zip(axes, quantities, strict=True):
        values = result.values[quantity]
        if len(names) == 1:
            x = result.axes[names[0]]
            axis.plot(x, values, "o-" if len(x) <= 40 else "-")
            axis.set_xlabel(names[0])
            axis.set_ylabel(quantity)
            if logs[names[0]]:
                axis.set_xscale("log")
            if _spans_decades(values):
                axis.set_yscale("log")
            axis.grid(True, which="both", alpha=0.3)
        else:
            from matplotlib.colors import LogNorm

            x, y = result.axes[names[1]], result.axes[names[0]]
            norm = LogNorm() if _spans_decades(values) else None
            mesh = axis.pcolormesh(x, y, values, shading="nearest", norm=norm)
            fig.colorbar(mesh, ax=axis, label=quantity)
            axis.set_xlabel(names[1])
            axis.set_ylabel(names[0])
            if logs[names[1]]:
                axis.set_xscale("log")
            if logs[names[0]]:
                axis.set_yscale("log")
        axis.set_title(quantity)
    return fig


def factors_figure(factors: Mapping[str, Mapping[str, Sequence[float]]], scales: Sequence[float],
                   title: str = "") -> Figure:
    """The MA paper's Figure 15: per quantity, bars of Q(s*p)/Q(p) for every parameter p and scale s."""
    fig, axes = _figure(4.2 * len(factors), 3.8, len(factors))
    positions = np.arange(len(scales))
    for axis, (quantity, by_param) in zip(axes, factors.items(), strict=True):
        width = 0.8 / max(len(by_param), 1)
        for k, (param, values) in enumerate(by_param.items()):
            axis.bar(positions + (k - (len(by_param) - 1) / 2) * width, values, width, label=param)
        axis.set_xticks(positions, [f"x{_fmt(s)}" for s in scales])
        relative = [v for vals in by_param.values() for v in vals if np.isfinite(v)]
        if relative and min(relative) > 0 and max(relative) / min(relative) > 20:
            axis.set_yscale("log")
        axis.set_title(quantity)
        axis.set_ylabel("relative to x1")
        axis.grid(True, axis="y", alpha=0.3)
        axis.legend(fontsize="small")
    if title:
        fig.suptitle(title)
    return fig


def scaling_figure(result: ScalingResult) -> Figure:
    """Per quantity: per rank and all ranks against the process count (log-log), plus the subroutine shares."""
    quantities = list(result.per_rank)
    has_shares = any(len(s) > 1 for s in result.shares.values())
    rows = 2 if has_shares else 1
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.0 * len(quantities), 3.8 * rows), layout="constrained")
    grid = fig.subplots(rows, len(quantities), squeeze=False)
    p = result.nprocs
    for k, quantity in enumerate(quantities):
        axis = grid[0][k]
        axis.plot(p, result.per_rank[quantity], "o-", label="per rank")
        axis.plot(p, result.aggregate[quantity], "s--", label="all ranks")
        axis.set_xlabel(result.procs_name)
        axis.set_title(f"{quantity} ({result.mode} scaling)")
        if is_geometric(p):
            axis.set_xscale("log", base=2)
        values = np.concatenate([result.per_rank[quantity], result.aggregate[quantity]])
        if _spans_decades(values):
            axis.set_yscale("log")
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize="small")
        if has_shares:
            axis = grid[1][k]
            shares = result.shares.get(quantity, {})
            bottom = np.zeros(len(p))
            for name, share in shares.items():
                axis.bar(np.arange(len(p)), share, bottom=bottom, label=name or "(main)")
                bottom += np.nan_to_num(share)
            axis.set_xticks(np.arange(len(p)), [_fmt(v) for v in p], rotation=60, fontsize="small")
            axis.set_xlabel(result.procs_name)
            axis.set_ylabel(f"share of {quantity}")
            axis.legend(fontsize="x-small")
    return fig


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"
