"""``ma config --cflags | --libs``: compiler and linker flags for annotated C programs (pkg-config style).

    mpicc $(ma config --cflags) prog.c -o prog $(ma config --libs)
"""

from __future__ import annotations

import argparse
import sys

DESCRIPTION = """Print the flags that compile and link a C program against the C runtime (libma) and the PMPI wrapper
library (libmapmpi), for the environment's mpicc. --libs builds the libraries first when they are missing or out of
date."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "config", help="compiler/linker flags for C programs using ma.h (pkg-config style)",
        description=DESCRIPTION)
    parser.add_argument("--cflags", action="store_true", help="include flags (where ma.h is)")
    parser.add_argument("--libs", action="store_true", help="linker flags: -L, rpath, -lma -lmapmpi")
    parser.add_argument("--pmpi-library", action="store_true",
                        help="path of libmapmpi.so, e.g. for LD_PRELOAD into an unannotated MPI program")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ma_tools import cparts

    if not (args.cflags or args.libs or args.pmpi_library):
        print("ma config: error: give --cflags, --libs and/or --pmpi-library", file=sys.stderr)
        return 2
    words: list[str] = []
    if args.cflags:
        words += cparts.c_flags()
    if args.libs:
        words += cparts.c_libs()
    if args.pmpi_library:
        words.append(str(cparts.build_pmpi()))
    print(" ".join(words))
    return 0
