"""``ma ir DIR``: the intermediate representation, depth:type:expression lines (MA paper Figure 6)."""

from __future__ import annotations

import argparse
import sys

DESCRIPTION = """Print the intermediate representation of a run: one depth:type:expression line per site and
depth:name:expression per derived variable, in tree order (main program = depth 1)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    from ma_cli.support import trace_command

    parser = trace_command(subparsers, "ir", "intermediate representation: depth:type:expression lines", DESCRIPTION)
    parser.add_argument("--inputs", action="store_true", help="list the input variables first (0:input:name)")
    parser.add_argument("--no-subroutines", action="store_true",
                        help="leave out the subroutine lines (their sites keep their depth), as in the paper")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ma_cli.support import load_traces
    from ma_post.ir import format_ir

    sys.stdout.write(format_ir(load_traces(args), inputs=args.inputs, subroutines=not args.no_subroutines))
    return 0
