"""Matplotlib for the studies' figures: files only, no display."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend (imported here: the ports themselves never need it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig: Any, path: Path) -> None:
    """Lay out, write at 120 dpi and free the figure."""
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    pyplot().close(fig)


def loglog(axis: Any, x: Any, series: dict[str, Any], ylabel: str) -> None:
    """One line per series against the process count, both axes logarithmic (x in powers of two)."""
    for label, y in series.items():
        axis.loglog(x, y, "o-", markersize=3, label=label)
    axis.set_xscale("log", base=2)
    axis.set_xlabel("MPI processes")
    axis.set_ylabel(ylabel)
    axis.grid(True, which="both", alpha=0.3)
    axis.legend(fontsize=8)


def plot_messages(scale: dict[str, Any], path: Path, benchmark: str) -> None:
    """Message volume and count, over all ranks and per rank, against the process count (the studies' scaling
    table, :func:`examples.npb_common.study.print_scaling`'s columns)."""
    plt = pyplot()
    fig, (volume, count) = plt.subplots(1, 2, figsize=(11, 4.2))
    several = scale["nprocs"] > 1  # one process sends nothing: no point on a log scale
    for axis, key, label in ((volume, "bytes", "message volume (bytes)"), (count, "count", "messages")):
        loglog(axis, scale["nprocs"][several], {"all ranks": scale[f"{key}_total"][several],
                                                "per rank": scale[f"{key}_per_rank"][several]}, label)
    fig.suptitle(f"NPB {benchmark} class C: message volume and count (model)")
    save(fig, path)
