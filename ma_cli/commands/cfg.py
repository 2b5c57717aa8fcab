"""``ma cfg DIR``: the control-flow model, the indented site tree with expressions (MA paper Figure 11)."""

from __future__ import annotations

import argparse
import sys

DESCRIPTION = """Print the control-flow model of a run: the annotated sites as an indented tree with their
expressions."""


def register(subparsers: argparse._SubParsersAction) -> None:
    from ma_cli.support import trace_command

    parser = trace_command(subparsers, "cfg", "control-flow model: the indented site tree with expressions",
                           DESCRIPTION)
    parser.add_argument("--values", action="store_true",
                        help="append calls per rank and mean predicted/measured values")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ma_cli.support import load_traces
    from ma_post.cfg import format_cfg

    sys.stdout.write(format_cfg(load_traces(args), values=args.values))
    return 0
