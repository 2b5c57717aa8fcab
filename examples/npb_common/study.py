"""What the ports' studies share: model evaluation, measured flop sites, the printed tables, the command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

import numpy as np

from ma_core.errors import MAError

MeasuredRows = list[tuple[str, float, float]]


@dataclass
class PortModels:
    """The models of one traced run of a port, ready to evaluate at any class and process count."""

    flops: Any           # ma_post Model, per rank, whole run
    flops_timed: Any     # the flops of the timed loop only (what NPB's Mop/s counts)
    memory: Any
    mpi_bytes: Any
    mpi_count: Any
    traceset: Any
    builder: Any

    @classmethod
    def from_run(cls, trace_dir: Path, timed_loop: str) -> Self:
        import ma_post

        ts = ma_post.load(trace_dir)
        builder = ma_post.ModelBuilder(ts)
        flops = builder.model("flops", inline=True)
        timed = timed_flops(flops, timed_loop)
        if not timed:
            raise MAError(f"{trace_dir}: no flop assertion below the timed loop {timed_loop!r}")
        return cls(flops, builder.submodel("flops_timed", sum(timed[1:], timed[0])),
                   builder.model("memory", inline=True), builder.model("mpi_bytes", inline=True),
                   builder.model("mpi_count", inline=True), ts, builder)


def timed_flops(flops: Any, timed_loop: str, within: str | None = None) -> list[Any]:
    """The flop expressions of the sites below the timed loop (and below a subroutine named ``within``)."""
    return [expr for site, expr in flops.by_site() if site.path.split("/")[0] == timed_loop
            and (within is None or within in site.path.split("/"))]


def value(model: Any, inputs: dict[str, Any]) -> Any:
    """The model at ``inputs``; inputs the model does not use are left out."""
    return model.evaluate({k: v for k, v in inputs.items() if k in model.inputs})


def measured_flop_sites(trace_dir: Path) -> MeasuredRows:
    """(site path, predicted, measured) per-call means of every measured flop site."""
    import ma_post

    report = ma_post.validate(ma_post.load(trace_dir))
    rows = []
    for result in report.results:
        if result.site.type == "flop" and np.isfinite(result.measured[0]):
            rows.append((result.site.path, result.predicted[0], result.measured[0]))
    return rows


def main(argv: Sequence[str] | None, doc: str | None, study: Callable[[argparse.Namespace], int]) -> int:
    """``TRACE_DIR [--measured DIR] [--out DIR] [--sensitivity-nprocs P]``, then ``study``; MAError -> exit 2."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace_dir", type=Path)
    parser.add_argument("--measured", type=Path, help="traces of a run whose flops were measured")
    parser.add_argument("--out", type=Path, default=Path("figures"))
    parser.add_argument("--sensitivity-nprocs", type=int, default=1024)
    args = parser.parse_args(argv)
    try:
        return study(args)
    except MAError as exc:
        print(f"study.py: error: {exc}", file=sys.stderr)
        return 2


def print_official_comparison(rows: Sequence[tuple[str, float, float, float]], timed: str, decimals: int) -> None:
    """The flop model of the ``timed`` part against NPB's official count, per class (difference in %)."""
    print(f"Flop model of the {timed} (1 process) vs NPB's official operation count:")
    for name, predicted, official, rel in rows:
        print(f"  class {name}: model {predicted:.6e}  official {official:.6e}  "
              f"difference {100 * rel:+.{decimals}f} %")


def print_scaling(scale: dict[str, np.ndarray]) -> None:
    print("\nClass C per rank vs nprocs (model):")
    print(f"  {'nprocs':>6} {'flops':>12} {'memory B':>12} {'MPI bytes':>12} {'messages':>9}")
    for i, p in enumerate(scale["nprocs"]):
        print(f"  {p:6d} {scale['flops_per_rank'][i]:12.4e} {scale['memory_per_rank'][i]:12.4e} "
              f"{scale['bytes_per_rank'][i]:12.4e} {scale['count_per_rank'][i]:9.0f}")


def print_message_sizes(entries: Sequence[Any]) -> None:
    print("\nMessage sizes of class C on 1024 processes (per rank):")
    for entry in entries:
        print(f"  {entry.size:10.0f} bytes  {entry.per_rank:8.0f} messages  {100 * entry.share:5.1f} % of messages  "
              f"{100 * entry.volume_share:5.1f} % of bytes")


def measured_figure(trace_dir: Path | None, plot: Callable[[MeasuredRows, Path], None], path: Path) -> bool:
    """Plot the measured flop sites of ``trace_dir`` (if given) to ``path`` and print the worst; True if written."""
    if trace_dir is None:
        return False
    rows = measured_flop_sites(trace_dir)
    if not rows:
        print(f"\n{trace_dir}: no measured flop site (run with --counters valgrind or PAPI counters)")
        return False
    plot(rows, path)
    worst = max(rows, key=lambda r: abs(r[1] - r[2]) / r[2])
    print(f"\nMeasured flops: {len(rows)} sites, largest error {worst[0]} "
          f"{(worst[1] - worst[2]) / worst[2]:+.4f}")
    return True
