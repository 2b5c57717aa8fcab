"""Scaling and sensitivity studies of NPB SP from its validated modeling-assertion models (MA paper §4).

    python examples/npb_sp/study.py TRACE_DIR [--measured VALGRIND_TRACE_DIR] [--out DIR]

TRACE_DIR holds the traces of an annotated run (e.g. ``ma run -n 4 -- python examples/npb_sp/sp.py``);
the models built from it are evaluated at classes, process counts and inputs never run. Writes:

- ``fig12_messages.png``   message volume and count vs nprocs (1 to 1024, perfect squares), class C
- ``fig14_flops.png``      floating-point operations per rank vs nprocs, class C
- ``fig16_sensitivity.png`` flops, memory per rank and message volume vs problem_size (x1, x2, x10 of C)
- ``fig17_subroutines.png`` flops per rank of each subroutine of the time step vs nprocs, class C
- ``fig10_flops_measured.png`` measured vs predicted flops per site, from a run whose flop assertions
  were measured (``ma run --counters valgrind``), when one is given
and prints the numbers behind them, the flop model against NPB's official operation count for every
class and the message-size distribution of class C on 1024 processes (§4.1).

    python examples/npb_sp/study.py --accuracy out/predict-accuracy/accuracy.json [--out DIR]

draws the maps backend's predicted against measured time from ``bench/predict_accuracy.py``'s results:
``maps_accuracy.png``, per subroutine of the timed loop (each class on one process) and the timed loop vs
nprocs (each class).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path[0] = str(Path(__file__).resolve().parents[2])
    __package__ = "examples.npb_sp"

import numpy as np

from examples.npb_common.accuracy import accuracy_main, wants_accuracy
from examples.npb_common.figures import loglog, plot_messages, pyplot, save
from examples.npb_common.study import (
    PortModels,
    measured_figure,
    print_message_sizes,
    print_official_comparison,
    print_scaling,
    timed_flops,
    value,
)
from examples.npb_common.study import main as study_main
from ma_core.errors import MAError

from .classes import CLASSES, official_op_count
from .opcount import CONVENTION, NORMALISED_EXTRA, SPECIAL_OPS

NPROCS = np.arange(1, 33) ** 2                        # 1 .. 1024, the perfect squares SP runs on
SCALES = (1, 2, 10)                                   # x1, x2, x10 of problem_size (Figure 16)
TIMED_LOOP = "step"                                   # the site of NPB's timed steps
STEP_SUBROUTINES = ("compute_rhs", "txinvr", "x_solve", "y_solve", "z_solve", "add")


@dataclass
class SPModels(PortModels):
    """The models of one traced run of SP, with the timed flops of each subroutine of the step."""

    by_subroutine: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def build(cls, trace_dir: Path) -> SPModels:
        models = cls.from_run(trace_dir, TIMED_LOOP)
        for name in STEP_SUBROUTINES:
            mine = timed_flops(models.flops, TIMED_LOOP, within=name)
            if mine:
                models.by_subroutine[name] = models.builder.submodel(f"flops_{name}", sum(mine[1:], mine[0]))
        return models


def class_inputs(name: str, nprocs: Any = 1, size_scale: float = 1) -> dict[str, Any]:
    problem = CLASSES[name]
    return {"problem_size": problem.problem_size * size_scale, "niter": problem.niter, "nprocs": nprocs}


# --- the numbers ------------------------------------------------------------------------------------
def official_comparison(models: SPModels, model: Any = None) -> list[tuple[str, float, float, float]]:
    """(class, ``model`` of the timed steps on one process, official count, relative difference);
    ``model`` defaults to the flop model of the timed steps."""
    model = models.flops_timed if model is None else model
    rows = []
    for name in "SWABC":
        problem = CLASSES[name]
        predicted = float(value(model, class_inputs(name, nprocs=1)))
        official = official_op_count(problem.problem_size, problem.niter)
        rows.append((name, predicted, official, (predicted - official) / official))
    return rows


def normalised_flops_timed(models: SPModels) -> Any:
    """The timed steps' flop model with divisions and square roots weighted 4 and comparisons 1 (opcount.py):
    the model's own expressions plus, at every site with special operations, their extra weight times the
    site's multiplier (its enclosing loops)."""
    from ma_post import to_sympy

    extra = []
    timed = [term for term in models.flops.terms if term.site.path.split("/")[0] == TIMED_LOOP]
    missing = set(SPECIAL_OPS) - {term.site.path.split("/")[-1] for term in timed}
    if missing:
        raise MAError(f"no flop site {', '.join(sorted(missing))} below {TIMED_LOOP!r}: opcount.SPECIAL_OPS "
                      "names a site the trace does not have")
    for term in timed:
        special = SPECIAL_OPS.get(term.site.path.split("/")[-1], {})
        extra += [NORMALISED_EXTRA[kind] * to_sympy(expr) * term.multiplier for kind, expr in special.items()]
    return models.builder.submodel("flops_timed_normalised", models.flops_timed.expr + sum(extra))


def scaling(models: SPModels, class_name: str = "C") -> dict[str, np.ndarray]:
    inputs = class_inputs(class_name, nprocs=NPROCS.astype(float))

    def at_nprocs(model: Any) -> np.ndarray:      # a model without nprocs in it is one number
        return np.broadcast_to(np.asarray(value(model, inputs), dtype=float), NPROCS.shape)

    per_rank_bytes, per_rank_count = at_nprocs(models.mpi_bytes), at_nprocs(models.mpi_count)
    out = {"nprocs": NPROCS, "bytes_per_rank": per_rank_bytes, "count_per_rank": per_rank_count,
           "bytes_total": per_rank_bytes * NPROCS, "count_total": per_rank_count * NPROCS,
           "flops_per_rank": at_nprocs(models.flops), "memory_per_rank": at_nprocs(models.memory)}
    for name, model in models.by_subroutine.items():
        out[f"flops_{name}"] = at_nprocs(model)
    return out


def sensitivity(models: SPModels, nprocs: int, class_name: str = "C") -> dict[str, list[float]]:
    """quantity -> values at x1, x2, x10 of problem_size; quantities the trace has no assertion of are left out."""
    out = {quantity: [float(value(model, class_inputs(class_name, nprocs, size_scale=s))) for s in SCALES]
           for quantity, model in (("flops", models.flops), ("memory per rank", models.memory),
                                   ("message volume", models.mpi_bytes))}
    return {quantity: values for quantity, values in out.items() if values[0] != 0}


def message_sizes(models: SPModels, nprocs: int, class_name: str = "C") -> list[Any]:
    import ma_post

    return ma_post.message_distribution(models.traceset, class_inputs(class_name, nprocs), builder=models.builder)


# --- the figures ------------------------------------------------------------------------------------
def plot_measured(rows: list[tuple[str, float, float]], path: Path) -> None:
    """Error rate (predicted - measured) / measured of each flop assertion of the timed step, one bar per
    kernel (calls in every context pooled): the paper's Figure 10."""
    plt = pyplot()
    kernels: dict[str, list[float]] = {}
    for site, predicted, measured in rows:
        if site.split("/")[0] == TIMED_LOOP:
            pooled = kernels.setdefault(site.split("/")[-1], [0.0, 0.0])
            pooled[0] += predicted
            pooled[1] += measured
    names = list(kernels)
    rates = [100 * (p - m) / m for p, m in kernels.values()]
    fig, axis = plt.subplots(figsize=(10, 4.4))
    axis.bar(np.arange(len(names)), rates)
    axis.axhline(0, color="black", linewidth=0.8)
    axis.set_xticks(np.arange(len(names)), names, rotation=60, fontsize=8, ha="right")
    axis.set_ylabel("(predicted - measured) / measured, %")
    axis.set_title("NPB SP: flops per kernel of the time step, predicted vs measured (Valgrind counter)",
                   fontsize=10)
    axis.grid(True, axis="y", alpha=0.3)
    save(fig, path)


def plot_flops(scale: dict[str, np.ndarray], path: Path, subroutines: bool = False) -> None:
    plt = pyplot()
    fig, axis = plt.subplots(figsize=(7, 4.4))
    if subroutines:
        series = {name: scale[f"flops_{name}"] for name in STEP_SUBROUTINES if f"flops_{name}" in scale}
        title = "NPB SP class C: flops per rank of each subroutine, all steps (model)"
    else:
        series = {"model, per rank": scale["flops_per_rank"],
                  "perfect division": scale["flops_per_rank"][0] / scale["nprocs"]}
        title = "NPB SP class C: flops per rank (model)"
    loglog(axis, scale["nprocs"], series, "floating-point operations per rank")
    axis.set_title(title, fontsize=10)
    save(fig, path)


def plot_sensitivity(sens: dict[str, list[float]], nprocs: int, path: Path) -> None:
    plt = pyplot()
    fig, axis = plt.subplots(figsize=(7, 4.2))
    width = 0.25
    positions = np.arange(len(SCALES))
    for offset, (quantity, values) in zip((-width, 0, width), sens.items(), strict=False):
        axis.bar(positions + offset, np.asarray(values) / values[0], width, label=quantity)
    axis.set_xticks(positions, [f"problem_size x{s}" for s in SCALES])
    axis.set_yscale("log")
    axis.set_ylabel("relative to class C")
    axis.grid(True, axis="y", alpha=0.3)
    axis.legend()
    axis.set_title(f"NPB SP sensitivity to problem_size (class C, {nprocs} processes, model)", fontsize=10)
    save(fig, path)


# --- command line ------------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    if wants_accuracy(sys.argv[1:] if argv is None else argv):
        return accuracy_main(sys.argv[1:] if argv is None else argv, "sp", "NPB SP")
    return study_main(argv, __doc__, _study)


def _study(args: argparse.Namespace) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    models = SPModels.build(args.trace_dir)

    print_official_comparison(official_comparison(models), "timed steps", decimals=2)
    print_official_comparison(official_comparison(models, normalised_flops_timed(models)),
                              f"timed steps in {CONVENTION}", decimals=2)

    scale = scaling(models)
    print_scaling(scale)
    plot_messages(scale, args.out / "fig12_messages.png", "SP")
    plot_flops(scale, args.out / "fig14_flops.png")
    plot_flops(scale, args.out / "fig17_subroutines.png", subroutines=True)

    sens = sensitivity(models, args.sensitivity_nprocs)
    print(f"\nSensitivity to problem_size at {args.sensitivity_nprocs} processes (relative to class C at x1, x2, x10):")
    for quantity, values in sens.items():
        print(f"  {quantity:<16} " + "  ".join(f"{v / values[0]:10.3f}" for v in values))
    plot_sensitivity(sens, args.sensitivity_nprocs, args.out / "fig16_sensitivity.png")

    print_message_sizes(message_sizes(models, 1024))

    written = ["fig12_messages.png", "fig14_flops.png", "fig17_subroutines.png", "fig16_sensitivity.png"]
    if measured_figure(args.measured, plot_measured, args.out / "fig10_flops_measured.png"):
        written.append("fig10_flops_measured.png")
    print(f"\nfigures in {args.out}: {', '.join(written)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
