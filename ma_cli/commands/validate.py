"""``ma validate DIR``: every assertion's predicted vs measured value (MA paper Figure 8); exit 1 on FAIL."""

from __future__ import annotations

import argparse
import json
import sys

DESCRIPTION = """Validate every modeling assertion of a run against its measurement. Prints one line per site
(id:ma_type:predicted:measured:error_rate:PASS=n:FAIL=m; predicted and measured are per-call means over all ranks), a
table or JSON. Exit status: 0 when nothing fails, 1 when an assertion fails, the run is incomplete (a rank failed or
left no trace), the trace has anomalies or a measured call could not be judged (unless --anomalies warn), 2 on
errors."""


def register(subparsers: argparse._SubParsersAction) -> None:
    from ma_cli.support import trace_command

    parser = trace_command(subparsers, "validate",
                           "validate assertions: id:type:predicted:measured:error_rate:PASS=n:FAIL=m",
                           DESCRIPTION)
    parser.add_argument("--format", choices=("lines", "table", "json"), default="lines")
    parser.add_argument("--tolerance", default=None, metavar="T",
                        help="judge every call again with relative tolerance T, for every type (0.05) or per type "
                             "(flop=0.001,loadstore=0.05; the syntax of MA_TOLERANCE, types not named get the "
                             "default, 0 unless given): the lines, table, JSON and exit status all follow it "
                             "(default: the runtime's PASS/FAIL under the tolerance in the trace)")
    parser.add_argument("--anomalies", choices=("error", "warn"), default="error",
                        help="whether the trace's anomalies (unbalanced or mismatched annotations, exceptions, "
                             "evaluation errors, unrepresentable values, redeclared variables) make the exit "
                             "status 1 (error, the default) or are only shown (warn); likewise calls measured "
                             "whose prediction could not be evaluated (never a pass)")
    parser.add_argument("--kinds", default=None, metavar="TYPE[,TYPE]",
                        help="validate only the assertions of these types (flop, loadstore, loop, mpi_send, ...)")
    parser.add_argument("--no-attribution", action="store_true",
                        help="leave out the error attribution (table and JSON)")
    parser.add_argument("--vec-loops", choices=("figure8", "paper", "both"), default=None,
                        help="also print the ma.vec_loop sites: Figure-8-style lines, the vector paper's "
                             "ma_vec_loop_start/stop trace lines, or both")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ma_cli.support import load_traces
    from ma_core.tolerance import parse_tolerance
    from ma_post.peers import peer_results
    from ma_post.validation import format_lines, format_notes, format_table, summary_line, to_json, validate

    tolerance = None if args.tolerance is None else parse_tolerance(args.tolerance, source="--tolerance")
    ts = load_traces(args)
    kinds = None if args.kinds is None else {kind.strip().removeprefix("ma_") for kind in args.kinds.split(",")}
    report = validate(ts, tolerance=tolerance, attribution=not args.no_attribution, kinds=kinds)
    peers = [result for result in peer_results(ts) if kinds is None or result.type in kinds]
    if args.format == "json":
        json.dump({**to_json(report), "peers": [result.to_json() for result in peers]}, sys.stdout, indent=1)
        sys.stdout.write("\n")
    elif args.format == "table":
        sys.stdout.write(format_table(report))
    else:
        sys.stdout.write(format_lines(report))
        print(summary_line(report), file=sys.stderr)
        sys.stderr.write(format_notes(report))
    if args.format != "json":  # partner assertions (peer=), after the sites' lines
        sys.stdout.write("".join(result.line() + "\n" for result in peers))
    if args.vec_loops:
        from ma_post.vector import figure8_lines, paper_lines, vec_loop_results

        results = vec_loop_results(ts)
        if args.vec_loops in ("figure8", "both"):
            sys.stdout.write(figure8_lines(results))
        if args.vec_loops in ("paper", "both"):
            sys.stdout.write(paper_lines(results))
    failed = report.problems(anomalies=args.anomalies == "error") or not all(result.ok for result in peers)
    return 1 if failed else 0
