"""``ma scaling DIR -q flops --nprocs 1:4096 [--weak na=na0*nprocs]``: strong and weak scaling studies."""

from __future__ import annotations

import argparse
import re
import sys

DESCRIPTION = """Evaluate quantities against the process count: per rank, over all ranks, the efficiency relative to
the first count (strong: x(p0)*p0/(x(p)*p); weak: x(p0)/x(p)) and each subroutine's share of the per-rank value.
--weak rules grow inputs with the process count."""


def register(subparsers: argparse._SubParsersAction) -> None:
    from ma_cli.outputs import FIGURE_SUFFIXES, output_file
    from ma_cli.studies_support import add_quantity_argument, add_rank_argument, add_values_argument
    from ma_cli.support import add_model_arguments, trace_command

    parser = trace_command(subparsers, "scaling",
                           "strong and weak scaling: per rank, all ranks, efficiency, subroutine shares",
                           DESCRIPTION)
    add_quantity_argument(parser, required=False)
    parser.add_argument("--nprocs", required=True, metavar="VALUES",
                        help="process counts: A:B means the powers of two from A to B (1:4096); any other "
                             "--set form (2^(0:12), 1,4,16, 4:64:4, A:B:logN) as written")
    parser.add_argument("--procs-name", default="nprocs", metavar="NAME",
                        help="the model's process-count parameter (default nprocs)")
    parser.add_argument("--weak", action="append", default=[], metavar="NAME=EXPR",
                        help="weak scaling: NAME grows with the process count, e.g. na=na0*nprocs (name0: the "
                             "base value of an input, given with --set or traced); repeatable")
    add_values_argument(parser, help_text="base values of other inputs, one per parameter (traced values for the "
                                          "rest)")
    add_rank_argument(parser)
    add_model_arguments(parser)
    from ma_cli.backend_support import add_backend_option

    add_backend_option(parser, "per rank (column time) and its parallel efficiency")
    parser.add_argument("--no-shares", action="store_true", help="leave out the per-subroutine shares")
    parser.add_argument("--format", choices=("table", "csv", "json"), default="table")
    parser.add_argument("--plot", metavar="FILE", type=output_file(FIGURE_SUFFIXES),
                        help="draw per rank and all ranks, and the shares")
    parser.set_defaults(handler=run)


def nprocs_values(spec: str) -> list[float]:
    """``A:B`` -> powers of two in [A, B]; anything else as ``--set`` reads it."""
    from ma_core.errors import MAError
    from ma_post.studies.ranges import number, parse_values

    parts = spec.split(":")
    if len(parts) == 2 and not re.search(r"[,()]", spec):
        lo, hi = number(parts[0]), number(parts[1])
        if lo <= 0 or hi < lo:
            raise MAError(f"--nprocs {spec!r}: expected 0 < A <= B")
        values, power = [], 1.0
        while power <= hi:
            if power >= lo:
                values.append(power)
            power *= 2
        return values or [lo]
    return [float(v) for v in parse_values(spec)]


def run(args: argparse.Namespace) -> int:
    from ma_cli.studies_support import build_models, note, write_columns
    from ma_cli.support import check_parameters, number, parse_rank, table
    from ma_core.errors import MAError
    from ma_post.studies.ranges import parse_assignments
    from ma_post.studies.scaling import parse_rule, scaling

    sets = parse_assignments(args.sets)
    several = [k for k, v in sets.items() if len(v) != 1]
    if several:
        raise MAError(f"--set {several[0]}=...: one base value per parameter (the process count is --nprocs)")
    rules = dict(parse_rule(text) for text in args.weak)
    nprocs = nprocs_values(args.nprocs)
    builder, models = build_models(args, args.quantity, default=("flops", "mpi_bytes", "mpi_count", "memory"))
    check_parameters(builder.ts, sets)
    from ma_cli.backend_support import predict, time_function

    prediction = predict(args, builder)  # symbolic in every input: the study binds them
    time = None if prediction is None else time_function(builder, prediction, parse_rank(args.rank))
    result = scaling(models, nprocs, given={k: float(v[0]) for k, v in sets.items()}, procs_name=args.procs_name,
                     rules=rules, rank=parse_rank(args.rank), shares=not args.no_shares, time=time)
    unused = [name for name in rules if not any(name in m.inputs for m in models)]
    if unused:
        note(args.command, f"no model depends on {', '.join(unused)}: the rule changes nothing")
    if args.plot:
        from ma_post.studies.plots import save, scaling_figure

        note(args.command, f"plot written to {save(scaling_figure(result), args.plot)}")
    if args.format != "table":
        write_columns(result.columns(), args.format, extra_json={"mode": result.mode, "rules": result.rules})
        return 0
    print(f"{result.mode} scaling" + (": " + ", ".join(f"{k} = {v}" for k, v in rules.items()) if rules else ""))
    main_columns = {k: v for k, v in result.columns().items() if ":share:" not in k}
    rows = [list(main_columns)] + [[number(float(f"{c[i]:.6g}")) for c in main_columns.values()]
                                   for i in range(len(result.nprocs))]
    sys.stdout.write(table(rows))
    for role, meaning in (("global", "divided among the processes"),
                          ("per rank", "each process's own amount: the job grows with the process count")):
        if result.inputs_with_role(role):
            print(f"held fixed, {role} ({meaning}): {', '.join(result.inputs_with_role(role))}")
    for quantity, shares in result.shares.items():
        if len(shares) < 2:
            continue
        print(f"\nshare of {quantity} per rank by subroutine:")
        names = list(shares)
        rows = [[args.procs_name, *(n or "(main)" for n in names)]]
        rows += [[number(p), *(_percent(shares[n][i]) for n in names)] for i, p in enumerate(result.nprocs)]
        sys.stdout.write(table(rows))
    return 0


def _percent(x: float) -> str:
    return f"{100 * x:.1f}%" if x == x else "-"

