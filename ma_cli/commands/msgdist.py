"""``ma msgdist DIR --set nprocs=1024``: message sizes and counts per rank predicted at any parameters."""

from __future__ import annotations

import argparse
import json
import sys

DESCRIPTION = """Predict the distribution of MPI message sizes of one rank at any input parameters: per size in
bytes, the number of messages per rank and their share of all messages and bytes."""


def register(subparsers: argparse._SubParsersAction) -> None:
    from ma_cli.support import add_model_arguments, add_set_arguments, trace_command

    parser = trace_command(subparsers, "msgdist",
                           "message-size distribution (size, messages per rank, share) at any parameters",
                           DESCRIPTION, add_set_arguments, add_model_arguments)
    parser.add_argument("--measured", action="store_true",
                        help="also print the PMPI message-size histogram of the traced run")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ma_cli.support import check_parameters, load_traces, parse_rank, parse_sets
    from ma_core.errors import MAError
    from ma_post.models import ModelBuilder
    from ma_post.msgdist import format_distribution, format_measured, measured_distribution, message_distribution

    sets = parse_sets(args.sets)
    several = [k for k, v in sets.items() if len(v) > 1]
    if several:
        raise MAError(f"msgdist takes one value per parameter (--set {several[0]}=... has several)")
    values = {k: v[0] for k, v in sets.items()}
    ts = load_traces(args)
    check_parameters(ts, values)
    builder = ModelBuilder(ts, conditional=args.conditional)
    classes = message_distribution(ts, values, rank=parse_rank(args.rank), builder=builder)
    measured = measured_distribution(ts) if args.measured else []
    if args.format == "json":
        json.dump({"parameters": values,
                   "predicted": [vars(c) for c in classes],
                   "measured": [vars(b) for b in measured] if args.measured else None}, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    if not classes:
        print("no MPI sites with a payload in this trace")
    else:
        sys.stdout.write(format_distribution(classes))
    if args.measured:
        print("\nmeasured by PMPI in the traced run (per rank):")
        sys.stdout.write(format_measured(measured) if measured else "no MPI profile in the trace\n")
    return 0
