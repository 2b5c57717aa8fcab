"""``ma report DIR -o report.html``: one self-contained HTML file with every result of a run."""

from __future__ import annotations

import argparse

DESCRIPTION = """Write one HTML file that needs no network to view: the run's header, the validation table and error
attribution, the collapsible control-flow tree, every model as MathML with its Octave function, the message-size
distribution, scaling, sensitivity and predicted against measured, figures embedded as SVG."""


def register(subparsers: argparse._SubParsersAction) -> None:
    from ma_cli.outputs import output_file
    from ma_cli.studies_support import add_values_argument
    from ma_cli.support import add_conditional_argument, trace_command

    parser = trace_command(subparsers, "report",
                           "write one self-contained HTML report (validation, tree, models, studies)",
                           DESCRIPTION)
    parser.add_argument("--output", "-o", default="ma-report.html", metavar="FILE", type=output_file(),
                        help="the HTML file to write (default ma-report.html)")
    parser.add_argument("--title", default=None)
    parser.add_argument("--nprocs", default="2^(0:12)", metavar="VALUES",
                        help="process counts of the scaling section (default 2^(0:12))")
    add_conditional_argument(parser)
    add_values_argument(parser, "--at", help_text="the point of the sensitivity section, one value per parameter "
                                                  "(traced values for the rest)")
    from ma_cli.backend_support import add_backend_option

    add_backend_option(parser, "per subroutine, with predicted against measured")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ma_cli.support import load_traces
    from ma_post.report import write_report
    from ma_post.studies.ranges import parse_point, parse_values

    at = parse_point(args.ats)
    ts = load_traces(args)
    summary = None
    if args.backend is not None or args.machine is not None:
        from ma_cli.backend_support import predict
        from ma_cli.backend_support import summary as prediction_summary
        from ma_post import ModelBuilder

        builder = ModelBuilder(ts, conditional=args.conditional)
        prediction = predict(args, builder)
        summary = None if prediction is None else prediction_summary(builder, prediction, {})
    path = write_report(ts, args.output, source=args.trace_dir, title=args.title,
                        nprocs=[float(v) for v in parse_values(args.nprocs)],
                        at=at, prediction=summary, conditional=args.conditional)
    print(f"report written to {path.resolve()}")
    return 0
