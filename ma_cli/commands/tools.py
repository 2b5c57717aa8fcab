"""``ma tools build [--force] [--only PART] [--mpicc PATH]``: build the project's C and Fortran parts for this
environment (ma_tools.parts), for its own MPI or the one whose C compiler wrapper ``--mpicc`` names."""

from __future__ import annotations

import argparse
import os
from typing import Any

from ma_tools.parts import PARTS


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("tools", help="build the C and Fortran parts (PMPI library, C runtime, "
                                                 "Fortran module, Valgrind tool)")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    build = actions.add_parser("build", help="build (or rebuild with --force) into the environment")
    build.add_argument("--force", action="store_true", help="rebuild even when up to date")
    build.add_argument("--only", choices=tuple(PARTS), action="append", help="build only this part (repeatable)")
    build.add_argument("--mpicc", default=None, metavar="PATH",
                       help="build the MPI parts for this MPI (its C compiler wrapper, e.g. /usr/bin/mpicc.openmpi; "
                            "default: MA_MPICC, else the environment's mpicc), in a build directory of its own")
    build.set_defaults(handler=handle_build)


def handle_build(args: argparse.Namespace) -> int:
    from ma_core.errors import ToolBuildError
    from ma_tools.parts import builder

    if args.mpicc:
        os.environ["MA_MPICC"] = args.mpicc  # what every builder builds for (ma_tools.mpis.selected)
    for name, part in PARTS.items():
        if args.only and name not in args.only:
            continue
        try:
            path = builder(name)(args.force)
        except ToolBuildError as exc:
            if not part.optional or args.only:
                raise
            print(f"{part.what}: not built: {exc}")  # e.g. no Fortran compiler: C and Python programs still work
            continue
        print(f"{part.what}: {path}")
    return 0
