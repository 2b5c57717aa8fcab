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
    import sympy

    from backends.base import Backend, Prediction
    from ma_post import ModelBuilder, TraceSet

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


def mean_value(builder: ModelBuilder, expr: sympy.Expr, values: dict[str, float]) -> float:
    from backends.base import per_rank

    return float(per_rank(builder, expr, values).mean())


def rank_totals(builder: ModelBuilder, prediction: Prediction, values: dict[str, float]) -> tuple[list[float], int]:
    """The prediction at each traced rank's own inputs, and the slowest rank (whose time is the run's)."""
    import numpy as np

    seconds = prediction.per_rank(builder, values)
    return [float(s) for s in seconds], int(np.argmax(seconds))


def site_rows(builder: ModelBuilder, items: list[tuple[str, Any]], values: dict[str, float]) -> list[dict[str, Any]]:
    rows = []
    for name, site in items:
        parts = {part: mean_value(builder, getattr(site, part), values) for part in PARTS}
        rows.append({"name": name, "seconds": sum(parts.values()), **parts})
    return rows


def handle(args: argparse.Namespace) -> int:
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
    report["sites"] = site_rows(builder, [(s.path, s) for s in prediction.sites], sets)
    report["total_s"] = mean_value(builder, prediction.total, sets)
    report["per_rank_s"], report["slowest_rank"] = rank_totals(builder, prediction, sets)
    report["variants"] = [{"name": name, "total_s": mean_value(builder, other.total, sets), "notes": list(other.notes)}
                          for name, other in variants.items()]
    if prediction.subroutines:  # the backend names each site's subroutine: totals and the measured times by them
        report["subroutines"] = site_rows(builder, list(prediction.by_subroutine().items()), sets)
        report["measured"] = [{"subroutine": c.subroutine, "predicted_s": c.predicted_s, "measured_s": c.measured_s,
                               "error": c.error} for c in compare(builder, prediction, sets)]
    report.update(prediction.report_fields())
    report["what_if"] = []
    for change in changes:
        other = backend.predict(builder, whatifs.apply(machine, change), sets)
        after = {s.path: s.total for s in other.sites}
        rows = []
        for site in prediction.sites:
            before_s = mean_value(builder, site.total, sets)
            after_s = mean_value(builder, after[site.path], sets)
            rows.append({"site": site.path, "before_s": before_s, "after_s": after_s,
                         "speedup": before_s / after_s if after_s else float("inf")})
        total_after = mean_value(builder, other.total, sets)
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
