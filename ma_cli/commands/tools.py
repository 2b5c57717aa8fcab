"""``ma tools build [--force] [--only pmpi|c|valgrind]``: build the project's C parts for this environment."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _builders() -> dict[str, tuple[str, Callable[[bool], Path]]]:
    from ma_runtime import pmpi
    from ma_runtime.counters import valgrind

    return {
        "pmpi": ("PMPI wrapper library", pmpi.build_pmpi),
        "c": ("C annotation runtime", pmpi.build_c_runtime),
        "valgrind": ("Valgrind counting tool", valgrind.build_valgrind_tool),
    }


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("tools", help="build the C parts (PMPI library, C runtime, Valgrind tool)")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    build = actions.add_parser("build", help="build (or rebuild with --force) into the environment")
    build.add_argument("--force", action="store_true", help="rebuild even when up to date")
    build.add_argument("--only", choices=("pmpi", "c", "valgrind"), action="append",
                       help="build only this part (repeatable)")
    build.set_defaults(handler=handle_build)


def handle_build(args: argparse.Namespace) -> int:
    for key, (what, builder) in _builders().items():
        if args.only and key not in args.only:
            continue
        path = builder(args.force)
        print(f"{what}: {path}")
    return 0
