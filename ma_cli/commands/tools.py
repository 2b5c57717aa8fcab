"""``ma tools build [--force] [--only PART]``: build the project's C parts for this environment (ma_tools.parts)."""

from __future__ import annotations

import argparse
from typing import Any

from ma_tools.parts import PARTS


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("tools", help="build the C parts (PMPI library, C runtime, Valgrind tool)")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    build = actions.add_parser("build", help="build (or rebuild with --force) into the environment")
    build.add_argument("--force", action="store_true", help="rebuild even when up to date")
    build.add_argument("--only", choices=tuple(PARTS), action="append", help="build only this part (repeatable)")
    build.set_defaults(handler=handle_build)


def handle_build(args: argparse.Namespace) -> int:
    from ma_tools.parts import builder

    for name, part in PARTS.items():
        if args.only and name not in args.only:
            continue
        print(f"{part.what}: {builder(name)(args.force)}")
    return 0
