"""Entry point of the ``ma`` command: finds the subcommand modules, parses, runs, prints errors.

Library code raises MAError; this is the one place that turns it into a message and an exit status.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import signal
import sys
from collections.abc import Sequence

from ma_core.errors import MAError

from . import commands
from .support import CommandParser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ma", description="Modeling assertions: run, validate, model.")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    subparsers.required = True
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status = args.handler(args)
    except MAError as exc:
        print(f"ma {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (`ma ... | head`): stop quietly, as a tool killed by SIGPIPE
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing more to flush at exit
        return 128 + signal.SIGPIPE
    return int(status or 0)


if __name__ == "__main__":
    sys.exit(main())
