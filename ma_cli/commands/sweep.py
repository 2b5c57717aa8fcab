"""``ma sweep DIR -q Q --set na=1e5:1e6:log10 --set nprocs=2^(0:12)``: models over a parameter grid."""

from __future__ import annotations

import argparse

DESCRIPTION = """Evaluate models on every combination of the --set values, vectorised (the NumPy export's code, one
call per model over the whole grid). --plot draws a line per quantity over one swept parameter or a heat map over
two, on log axes where a parameter's values are geometric."""


def register(subparsers: argparse._SubParsersAction) -> None:
    from ma_cli.outputs import FIGURE_SUFFIXES, output_file
    from ma_cli.studies_support import add_quantity_argument, add_rank_argument, add_values_argument
    from ma_cli.support import add_model_arguments, trace_command

    parser = trace_command(subparsers, "sweep", "evaluate models over a grid of parameters (table, CSV, JSON, plot)",
                           DESCRIPTION, add_quantity_argument,
                           add_values_argument, add_rank_argument, add_model_arguments)
    parser.add_argument("--format", choices=("table", "csv", "json"), default="table")
    parser.add_argument("--plot", metavar="FILE", type=output_file(FIGURE_SUFFIXES),
                        help="also draw the sweep into FILE (.png, .svg, .pdf)")
    parser.add_argument("--quiet", action="store_true", help="print no table (with --plot)")
    parser.add_argument("--max-points", type=float, default=1e8,
                        help="refuse grids with more points (default 1e8)")
    from ma_cli.backend_support import add_backend_option

    add_backend_option(parser, "per rank as a column (time)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from ma_cli.studies_support import build_models, note, report_trace_values, write_columns
    from ma_cli.support import check_parameters, parse_rank
    from ma_core.errors import MAError
    from ma_post.studies.ranges import parse_assignments
    from ma_post.studies.sweep import sweep

    sets = parse_assignments(args.sets)
    points = int(np.prod([len(v) for v in sets.values()], dtype=np.int64)) if sets else 1
    if points > args.max_points:
        raise MAError(f"the grid has {points:,} points, more than --max-points {args.max_points:,.0f}")
    builder, models = build_models(args, args.quantity)
    check_parameters(builder.ts, sets)
    from ma_cli.backend_support import predict, time_function

    prediction = predict(args, builder)  # symbolic in every input: the grid binds them
    extra = None if prediction is None else {"time": time_function(builder, prediction, parse_rank(args.rank))}
    result = sweep(models, sets, rank=parse_rank(args.rank), extra=extra)
    report_trace_values(args.command, result.from_trace)
    for quantity, unused in result.unused.items():
        if unused:
            note(args.command, f"{quantity} does not depend on {', '.join(unused)}")
    if args.plot:
        from ma_post.studies.plots import save, sweep_figure

        path = save(sweep_figure(result), args.plot)
        note(args.command, f"plot written to {path}")
    if not args.quiet:
        write_columns(result.columns(), args.format,
                      extra_json={"fixed": result.fixed, "shape": list(result.shape)})
    return 0
