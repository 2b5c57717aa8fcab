"""``ma eval DIR --quantity Q --set na=150000 --set nprocs=64,1024``: evaluate models at any parameters."""

from __future__ import annotations

import argparse
import json
import math
import sys

DESCRIPTION = """Evaluate symbolic models at any input parameters (float64, the semantics of the exported code).
Several values per --set make a grid (every combination). Inputs not set keep their traced values; an input that
differs between ranks gives a value per traced rank, reported as mean and min..max unless --rank picks one. A model
in the variable rank is evaluated on every rank of the job (--set nprocs=1024: ranks 0..1023), reduced the same
way."""


def register(subparsers: argparse._SubParsersAction) -> None:
    from ma_cli.support import add_model_arguments, add_set_arguments, trace_command

    parser = trace_command(subparsers, "eval", "evaluate models at parameters the run never used", DESCRIPTION)
    parser.add_argument("--quantity", "-q", action="append", required=True, metavar="Q", help="repeatable")
    add_set_arguments(parser)
    add_model_arguments(parser)
    parser.add_argument("--format", choices=("table", "json", "csv"), default="table")
    parser.add_argument("--max-points", type=float, default=1e6,
                        help="refuse grids with more points (default 1e6; ma sweep evaluates large grids)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from ma_cli.support import check_parameters, grid, load_traces, number, parse_rank, parse_sets, table
    from ma_core.errors import MAError
    from ma_post.evaluation import evaluate
    from ma_post.models import ModelBuilder

    sets = parse_sets(args.sets)
    points_asked = math.prod(len(values) for values in sets.values())  # Python ints: no overflow
    if points_asked > args.max_points:
        raise MAError(f"the grid has {points_asked:,} points, more than --max-points {args.max_points:,.0f}")
    rank = parse_rank(args.rank)
    ts = load_traces(args)
    check_parameters(ts, sets)
    builder = ModelBuilder(ts, conditional=args.conditional)
    models = [builder.model(q, inline=args.inline) for q in args.quantity]
    names, points = grid(sets)
    columns = {n: np.array([p[i] for p in points]) for i, n in enumerate(names)} if points else {}
    results = [evaluate(m, columns, rank=rank) for m in models]
    for m, r in zip(models, results, strict=False):
        if r.unused:
            print(f"ma eval: note: {m.quantity} does not depend on {', '.join(r.unused)}", file=sys.stderr)
        for name, how in r.from_trace.items():
            print(f"ma eval: note: {m.quantity}: {name} = {how}", file=sys.stderr)
    n_points = max(len(points), 1)
    rows = []
    for k in range(n_points):
        row = {n: float(columns[n][k]) for n in names}
        for m, r in zip(models, results, strict=False):
            value = np.asarray(r.value, dtype=float).reshape(-1)
            row[m.quantity] = float(value[k] if value.size > 1 else value[0])
            spread = r.spread()
            if spread is not None:
                low, high, high_at = (a[k if a.size > 1 else 0] for a in spread)
                row[f"{m.quantity}:min"] = float(low)
                row[f"{m.quantity}:max"] = float(high)
                row[f"{m.quantity}:max_rank"] = int(high_at)
        rows.append(row)
    if args.format == "json":
        json.dump(rows, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    header = list(rows[0])
    if args.format == "csv":
        sys.stdout.write(",".join(header) + "\n")
        sys.stdout.writelines(",".join(repr(row[h]) for h in header) + "\n" for row in rows)
        return 0
    cells = [header] + [[number(row[h]) for h in header] for row in rows]
    sys.stdout.write(table(cells))
    return 0
