"""Scaling and sensitivity studies of NPB CG from its validated modeling-assertion models (MA paper §4).

    python examples/npb_cg/study.py TRACE_DIR [--measured VALGRIND_TRACE_DIR] [--out DIR]

TRACE_DIR holds the traces of an annotated run (e.g. ``ma run -n 4 -- python examples/npb_cg/cg.py``);
the models built from it are evaluated at classes, process counts and inputs never run. Writes:

- ``fig12_messages.png``  message volume and count vs nprocs, class C (paper Figure 12)
- ``fig14_flops.png``     floating-point operations per rank vs nprocs, class C (Figure 14)
- ``fig15_sensitivity.png`` flops, memory per rank and message volume at x1, x2, x10 of na and of
  nonzer from class C (Figure 15)
- ``fig9_flops_measured.png`` measured vs predicted flops per site (Figure 9), from a run whose flop
  assertions were measured (``ma run --counters valgrind``), when one is given
and prints the numbers behind them, the flop model against NPB's official operation count for every
class, and the message-size distribution of class C on 1024 processes (§4.1).

    python examples/npb_cg/study.py --accuracy out/predict-accuracy/accuracy.json [--out DIR]

draws the maps backend's predicted against measured time from ``bench/predict_accuracy.py``'s results:
``maps_accuracy.png``, per subroutine of the timed loop (each class on one process) and the timed loop vs
nprocs (each class).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path[0] = str(Path(__file__).resolve().parents[2])
    __package__ = "examples.npb_cg"

import numpy as np

from examples.npb_common.accuracy import accuracy_main, wants_accuracy
from examples.npb_common.figures import plot_messages, pyplot, save
from examples.npb_common.study import (
    PortModels,
    measured_figure,
    print_message_sizes,
    print_official_comparison,
    print_scaling,
    value,
)
from examples.npb_common.study import main as study_main

from .classes import CGITMAX, CLASSES, official_op_count

NPROCS = 2 ** np.arange(0, 11)        # 1 .. 1024, powers of two as CG requires
SCALES = (1, 2, 10)                    # the x1, x2, x10 of Figure 15
TIMED_LOOP = "conj_loop"               # the site of NPB's timed iterations


class CGModels(PortModels):
    """The models of one traced run of CG."""

    @classmethod
    def build(cls, trace_dir: Path) -> CGModels:
        return cls.from_run(trace_dir, TIMED_LOOP)


def class_inputs(name: str, nprocs: Any = 1, na_scale: float = 1, nonzer_scale: float = 1) -> dict[str, Any]:
    problem = CLASSES[name]
    return {"na": problem.na * na_scale, "nonzer": problem.nonzer * nonzer_scale, "niter": problem.niter,
            "nprocs": nprocs, "cgitmax": CGITMAX, "dp": 8}


# --- the numbers ------------------------------------------------------------------------------------
def official_comparison(models: CGModels) -> list[tuple[str, float, float, float]]:
    """(class, model flops of the timed loop on one process, official count, relative difference)."""
    rows = []
    for name in "SWABC":
        problem = CLASSES[name]
        predicted = float(value(models.flops_timed, class_inputs(name, nprocs=1)))
        official = official_op_count(problem.na, problem.nonzer, problem.niter)
        rows.append((name, predicted, official, (predicted - official) / official))
    return rows


def scaling(models: CGModels, class_name: str = "C") -> dict[str, np.ndarray]:
    inputs = class_inputs(class_name, nprocs=NPROCS.astype(float))
    per_rank_bytes = value(models.mpi_bytes, inputs)
    per_rank_count = value(models.mpi_count, inputs)
    return {"nprocs": NPROCS, "bytes_per_rank": per_rank_bytes, "count_per_rank": per_rank_count,
            "bytes_total": per_rank_bytes * NPROCS, "count_total": per_rank_count * NPROCS,
            "flops_per_rank": value(models.flops, inputs), "memory_per_rank": value(models.memory, inputs)}


def sensitivity(models: CGModels, nprocs: int, class_name: str = "C") -> dict[str, dict[str, list[float]]]:
    """quantity -> parameter -> values at x1, x2, x10 of that parameter (the other at x1)."""
    result: dict[str, dict[str, list[float]]] = {}
    for quantity, model in (("flops", models.flops), ("memory per rank", models.memory),
                            ("message volume", models.mpi_bytes)):
        result[quantity] = {
            "na": [float(value(model, class_inputs(class_name, nprocs, na_scale=s))) for s in SCALES],
            "nonzer": [float(value(model, class_inputs(class_name, nprocs, nonzer_scale=s))) for s in SCALES],
        }
    return result


def message_sizes(models: CGModels, nprocs: int, class_name: str = "C") -> list[Any]:
    import ma_post

    return ma_post.message_distribution(models.traceset, class_inputs(class_name, nprocs),
                                        builder=models.builder)


# --- the figures ------------------------------------------------------------------------------------
def plot_flops(scale: dict[str, np.ndarray], path: Path) -> None:
    plt = pyplot()
    fig, axis = plt.subplots(figsize=(6.5, 4.2))
    axis.loglog(scale["nprocs"], scale["flops_per_rank"], "o-", label="model, per rank")
    ideal = scale["flops_per_rank"][0] / scale["nprocs"]
    axis.loglog(scale["nprocs"], ideal, ":", color="gray", label="perfect division")
    axis.set_xscale("log", base=2)
    axis.set_xlabel("MPI processes")
    axis.set_ylabel("floating-point operations per rank")
    axis.set_title("NPB CG class C: flops per rank (model)")
    axis.grid(True, which="both", alpha=0.3)
    axis.legend()
    save(fig, path)


def plot_sensitivity(sens: dict[str, dict[str, list[float]]], nprocs: int, path: Path) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, len(sens), figsize=(12, 4.2))
    width = 0.38
    positions = np.arange(len(SCALES))
    for axis, (quantity, by_param) in zip(axes, sens.items(), strict=False):
        for offset, (param, values) in zip((-width / 2, width / 2), by_param.items(), strict=False):
            relative = np.asarray(values) / values[0]
            axis.bar(positions + offset, relative, width, label=param)
        axis.set_xticks(positions, [f"x{s}" for s in SCALES])
        axis.set_yscale("log")
        axis.set_title(quantity)
        axis.set_ylabel("relative to class C")
        axis.grid(True, axis="y", alpha=0.3)
        axis.legend()
    fig.suptitle(f"NPB CG sensitivity to na and nonzer (class C, {nprocs} processes, model)")
    save(fig, path)


def plot_measured(rows: list[tuple[str, float, float]], path: Path) -> None:
    """Left: measured against predicted per site (on the diagonal when the model is exact); right: the
    error rate of each site of the timed loop, as the paper's Figure 9."""
    plt = pyplot()
    fig, (scatter, errors) = plt.subplots(1, 2, figsize=(12, 4.6), gridspec_kw={"width_ratios": [1, 1.6]})
    predicted = np.array([r[1] for r in rows])
    measured = np.array([r[2] for r in rows])
    scatter.loglog(predicted, measured, "o", alpha=0.7)
    span = [min(predicted.min(), measured.min()) * 0.8, max(predicted.max(), measured.max()) * 1.2]
    scatter.loglog(span, span, ":", color="gray", label="measured = predicted")
    scatter.set_xlabel("predicted flops per call")
    scatter.set_ylabel("measured flops per call")
    scatter.legend()
    timed = [r for r in rows if r[0].split("/")[0] == TIMED_LOOP] or rows
    labels = [r[0].split("/")[-1] + ("\n(residual)" if "residual_norm" in r[0] else "") for r in timed]
    rates = [100 * (r[1] - r[2]) / r[2] for r in timed]
    errors.bar(np.arange(len(timed)), rates)
    errors.axhline(0, color="black", linewidth=0.8)
    errors.set_xticks(np.arange(len(timed)), labels, rotation=60, fontsize=7, ha="right")
    errors.set_ylabel("error rate (predicted - measured) / measured, %")
    fig.suptitle("NPB CG: measured vs predicted floating-point operations per site")
    save(fig, path)


# --- command line ------------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if wants_accuracy(args):
        return accuracy_main(args, "cg", "NPB CG")
    return study_main(argv, __doc__, _study)


def _study(args: argparse.Namespace) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    models = CGModels.build(args.trace_dir)

    print_official_comparison(official_comparison(models), "timed iterations", decimals=3)

    scale = scaling(models)
    print_scaling(scale)
    plot_messages(scale, args.out / "fig12_messages.png", "CG")
    plot_flops(scale, args.out / "fig14_flops.png")

    sens = sensitivity(models, args.sensitivity_nprocs)
    print(f"\nSensitivity at {args.sensitivity_nprocs} processes (relative to class C at x1, x2, x10):")
    for quantity, by_param in sens.items():
        for param, values in by_param.items():
            print(f"  {quantity:<16} {param:<7} " + "  ".join(f"{v / values[0]:8.3f}" for v in values))
    plot_sensitivity(sens, args.sensitivity_nprocs, args.out / "fig15_sensitivity.png")

    print_message_sizes(message_sizes(models, 1024))

    written = ["fig12_messages.png", "fig14_flops.png", "fig15_sensitivity.png"]
    if measured_figure(args.measured, plot_measured, args.out / "fig9_flops_measured.png"):
        written.append("fig9_flops_measured.png")
    print(f"\nfigures in {args.out}: {', '.join(written)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
