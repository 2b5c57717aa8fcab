"""``ma predict DIR --backend NAME --machine PROFILE`` (any installed backend; maps by default): predicted time
per subroutine and per site, what-if studies on the machine profile, and predicted against measured time where
the traces timed the sites. Each backend adds its own options and builds itself from them (backends/base.py)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from backends.base import PARTS
from ma_core.errors import MAError

from ..support import (
    CommandParser,
    add_trace_arguments,
    check_parameters,
    load_profile,
    load_traces,
    number,
    parse_sets,
    table,
)

if TYPE_CHECKING:

    from backends.base import Backend, PredictedSeconds, Prediction
    from ma_post import TraceSet

def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("predict", help="predict run time from the model and a machine profile")
    add_trace_arguments(parser)
    parser.add_argument("--backend", default="maps", help="an installed backend (`ma backends`; default maps)")
    parser.add_argument("--machine", required=True, metavar="PROFILE",
                        help="machine profile: a file or the name of a shipped profile")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="NAME=V",
                        help="input parameter value (inputs not set keep their traced values, per rank)")
    parser.add_argument("--what-if", dest="what_ifs", action="append", default=[], metavar="FIELD=*F",
                        help="scale (*F, /F) or set (=V) a profile field, e.g. network.bandwidth=*2; repeatable")
    parser.add_argument("--mpi", metavar="NAME",
                        help="the MPI whose network block of the profile prices the messages, e.g. mpich-4.0.2 "
                             "(default: the one the run's trace names)")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.set_defaults(handler=handle)
    add_backend_arguments_when_parsed(parser)


def add_backend_arguments_when_parsed(parser: CommandParser) -> None:
    """The backends' options join when the command itself is parsed (support.CommandParser.defer)."""
    parser.defer(add_backend_arguments)


def add_backend_arguments(parser: argparse.ArgumentParser) -> None:
    """Every installed backend's own options (Backend.add_arguments), in a group per backend."""
    from backends import registry

    for info in registry.installed():
        try:
            backend_class = info.load()
        except MAError:  # a broken third-party backend must not break the command; selecting it reports why
            continue
        backend_class.add_arguments(parser.add_argument_group(f"{info.name} backend"))


def make_backend(args: argparse.Namespace, traces: TraceSet, machine: Any) -> Backend:
    """The backend ``--backend`` names, built by its own ``from_options`` (backends/base.py)."""
    from backends import registry

    return registry.load(args.backend).from_options(args, traces, machine)


def part_rows(seconds: PredictedSeconds, groups: list[tuple[str, list[int]]]) -> list[dict[str, Any]]:
    """A row per group of sites (a site, a subroutine): its parts' seconds, each the mean over the traced ranks."""
    rows = []
    for name, sites in groups:
        parts = {part: float(value) for part, value in zip(PARTS, seconds.parts(sites).mean(axis=1), strict=True)}
        rows.append({"name": name, "seconds": sum(parts.values()), **parts})
    return rows


def site_rows(seconds: PredictedSeconds) -> list[dict[str, Any]]:
    return part_rows(seconds, [(path, [i]) for i, path in enumerate(seconds.paths)])


def subroutine_rows(seconds: PredictedSeconds) -> list[dict[str, Any]]:
    return part_rows(seconds, list(seconds.by_subroutine().items()))


def handle(args: argparse.Namespace) -> int:
    import numpy as np

    from backends.machine import fitcheck, runnetwork
    from backends.machine import whatif as whatifs
    from backends.measured import compare
    from ma_post import ModelBuilder

    sets = {name: values[0] for name, values in parse_sets(args.sets).items()}
    for name, values in parse_sets(args.sets).items():
        if len(values) != 1:
            raise MAError(f"--set {name}: ma predict takes one value per input")
    changes = [whatifs.parse(text) for text in args.what_ifs]
    machine = load_profile(args.machine)
    builder = ModelBuilder(load_traces(args))
    check_parameters(builder.ts, sets)
    machine, network_notes = runnetwork.for_run(machine, builder.ts, args.mpi)
    backend = make_backend(args, builder.ts, machine)
    prediction: Prediction = backend.predict(builder, machine, sets)
    variants = backend.variants(builder, machine, sets)
    report: dict[str, Any] = {"backend": prediction.backend, "machine": prediction.machine, "inputs": sets,
                              "notes": [*network_notes, *prediction.notes]}
    seconds = prediction.seconds(builder, sets)  # every number below is a sum of these
    report["sites"] = site_rows(seconds)
    per_rank_s = seconds.total()
    report["total_s"] = float(per_rank_s.mean())
    report["per_rank_s"], report["slowest_rank"] = [float(s) for s in per_rank_s], int(np.argmax(per_rank_s))
    report["variants"] = [{"name": name, "total_s": float(other.seconds(builder, sets).total().mean()),
                           "notes": list(other.notes)} for name, other in variants.items()]
    if prediction.subroutines:  # the backend names each site's subroutine: totals and the measured times by them
        report["subroutines"] = subroutine_rows(seconds)
        report["measured"] = [{"subroutine": c.subroutine, "predicted_s": c.predicted_s, "measured_s": c.measured_s,
                               "error": c.error} for c in compare(builder, prediction, sets, seconds)]
    report.update(prediction.report_fields())
    report["what_if"] = []
    before = {path: float(seconds.total([i]).mean()) for i, path in enumerate(seconds.paths)}
    for change in changes:
        other = backend.predict(builder, whatifs.apply(machine, change), sets).seconds(builder, sets)
        after = {path: float(other.total([i]).mean()) for i, path in enumerate(other.paths)}
        rows = []
        for path, before_s in before.items():
            after_s = after[path]
            rows.append({"site": path, "before_s": before_s, "after_s": after_s,
                         "speedup": before_s / after_s if after_s else float("inf")})
        total_after = float(other.total().mean())
        report["what_if"].append({"change": change.text, "field": change.field, "total_after_s": total_after,
                                  "speedup": report["total_s"] / total_after if total_after else float("inf"),
                                  "sites": rows})
    for note in prediction.notes:
        if "assumed" in note:
            print(f"ma predict: warning: {note}", file=sys.stderr)
    for warning in fitcheck.warnings(machine):  # what no measurement of the profile backs
        report["notes"].append(warning)
        print(f"ma predict: warning: {warning}", file=sys.stderr)
    if args.format == "json":
        json.dump(report, sys.stdout, indent=1)
        print()
        return 0
    print_report(report)
    return 0


def _shares(rows: list[dict[str, Any]], label: str) -> str:
    out = [[label, "seconds", "compute", "memory", "comm", "runtime"]]
    for row in rows:
        total = row["seconds"] or 1.0
        out.append([row["name"] or "(outside subroutines)", number(row["seconds"]),
                    *(f"{100 * row[p] / total:.1f}%" for p in PARTS)])
    return table(out)


def print_report(report: dict[str, Any]) -> None:
    inputs = ", ".join(f"{k}={number(v)}" for k, v in report["inputs"].items()) or "traced values"
    print(f"backend {report['backend']}, machine {report['machine']}, inputs: {inputs}")
    print(f"predicted time per rank: {number(report['total_s'])} s (mean); run time (slowest, rank "
          f"{report['slowest_rank']}): {number(report['per_rank_s'][report['slowest_rank']])} s\n")
    for variant in report.get("variants") or ():
        print(f"{variant['name']}: predicted time per rank {number(variant['total_s'])} s")
    if report.get("variants"):
        print()
    if "subroutines" in report:
        print(_shares(report["subroutines"], "subroutine (own sites)"))
    print(_shares(report["sites"], "site"))
    if report.get("measured"):
        rows = [["subroutine", "predicted s", "measured s", "error"]]
        rows += [[m["subroutine"], number(m["predicted_s"]), number(m["measured_s"]), f"{100 * m['error']:+.1f}%"]
                 for m in report["measured"]]
        print("predicted vs measured (mean per rank):")
        print(table(rows))
    for study in report["what_if"]:
        print(f"what-if {study['change']} ({study['field']}): total {number(study['total_after_s'])} s, "
              f"speed-up {study['speedup']:.3g}")
        rows = [["site", "before s", "after s", "speed-up"]]
        rows += [[r["site"], number(r["before_s"]), number(r["after_s"]), f"{r['speedup']:.3g}"]
                 for r in study["sites"]]
        print(table(rows))
    for note in report["notes"]:
        print(f"note: {note}")
