"""``ma sensitivity DIR -q Q --at na=150000``: elasticities d log Q / d log p of every input, ranked."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

DESCRIPTION = """For every input p of each quantity Q: the elasticity d log Q / d log p (symbolic, SymPy; floor and
ceiling taken as their argument) at a point, largest first, and Q at x1, x2, x10 of p relative to x1 (the MA paper's
Figure 15). An elasticity of 1 means Q grows in proportion to p, 2 with its square, 0 not at all."""


def register(subparsers: argparse._SubParsersAction) -> None:
    from ma_cli.outputs import FIGURE_SUFFIXES, output_file
    from ma_cli.studies_support import add_quantity_argument, add_rank_argument, add_values_argument
    from ma_cli.support import add_model_arguments, trace_command

    parser = trace_command(subparsers, "sensitivity",
                           "elasticities d log Q / d log p of a model to every input, ranked",
                           DESCRIPTION, add_quantity_argument)
    add_values_argument(parser, "--at", help_text="the point, one value per parameter (traced values for the rest)")
    parser.add_argument("--param", "-p", action="append", default=None, metavar="P",
                        help="only these parameters (repeatable; default: every input of the model)")
    parser.add_argument("--scales", default="1,2,10", metavar="S,S,...", help="scale factors (default 1,2,10)")
    parser.add_argument("--plot", metavar="FILE", type=output_file(FIGURE_SUFFIXES),
                        help="draw the scale factors as bars (.png, .svg, .pdf)")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    add_rank_argument(parser)
    add_model_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ma_cli.studies_support import build_models, note
    from ma_cli.support import check_parameters, number, parse_rank, table
    from ma_post.studies.ranges import parse_point, parse_values
    from ma_post.studies.sensitivity import elasticities, point_value, scale_factors
    from ma_post.sympy_expr import to_text

    at = parse_point(args.ats)
    scales = [float(s) for s in parse_values(args.scales)]
    rank = parse_rank(args.rank)
    builder, models = build_models(args, args.quantity)
    check_parameters(builder.ts, at, "--at")
    results: list[dict[str, Any]] = []
    for model in models:
        params = [p for p in args.param if p in model.inputs] if args.param else None
        if args.param and not params:
            note(args.command, f"{model.quantity} depends on none of {', '.join(args.param)}")
            continue
        ranked = elasticities(model, at, parameters=params, rank=rank)
        factors = scale_factors(model, at, parameters=params or model.inputs, scales=scales, rank=rank)
        results.append({"quantity": model.quantity, "elasticities": ranked, "factors": factors,
                        "point": {n: point_value(model, n, at) for n in model.inputs}})
    ignored = sorted(set(at) - {n for m in models for n in m.inputs})
    if ignored:
        note(args.command, f"no model depends on {', '.join(ignored)}: --at {ignored[0]}=... changes nothing")
    traced = sorted({n for r in results for n in r["point"] if n not in at})
    if traced:
        point = {n: v for r in results for n, v in r["point"].items()}
        note(args.command, "traced values: " + ", ".join(f"{n}={number(point[n])}" for n in traced))
    if args.plot:
        from ma_post.studies.plots import factors_figure, save

        where = ", ".join(f"{k}={number(v)}" for k, v in at.items()) or "the traced inputs"
        path = save(factors_figure({r["quantity"]: r["factors"] for r in results}, scales, title=f"at {where}"),
                    args.plot)
        note(args.command, f"plot written to {path}")
    if args.format == "json":
        json.dump([{"quantity": r["quantity"], "point": r["point"], "scales": scales,
                    "elasticities": [{"parameter": e.parameter, "value": _finite(e.value), "symbolic": e.symbolic,
                                      "expr": to_text(e.expr),
                                      "factors": [_finite(f) for f in r["factors"][e.parameter]]}
                                     for e in r["elasticities"]]} for r in results], sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    for r in results:
        print(f"{r['quantity']}:")
        rows = [["parameter", "elasticity", *(f"x{number(s)}" for s in scales)]]
        for e in r["elasticities"]:
            mark = "" if e.symbolic else " (numeric)"
            rows.append([e.parameter, number(round(e.value, 6)) + mark,
                         *(number(round(f, 6)) for f in r["factors"][e.parameter])])
        sys.stdout.write("".join("  " + line for line in table(rows).splitlines(keepends=True)))
    return 0


def _finite(x: float) -> float | None:
    return x if x == x and abs(x) != float("inf") else None
