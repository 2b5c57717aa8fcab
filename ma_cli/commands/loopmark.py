"""``ma loopmark SOURCE.c``: every loop's MV score from GCC's or Clang's vectorisation report (vector paper 4.1)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path
from typing import Any

DESCRIPTION = """Compile SOURCE with the compiler's vectorisation report (GCC -fopt-info-vec-all, Clang
-Rpass*=loop-vectorize) and print every loop as FILE:LINE: MV score (vectorised and its lanes, OpenMP where a pragma
makes it multithreaded, or why it was not vectorised). With --trace, also map the annotated loop sites and the
ma_vec_loop assertions of a run onto those loops (an asserted MV score the compiler did not deliver is shown)."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "loopmark", help="loopmarks: MV score (vectorised, multithreaded) of every loop of a C source",
        description=DESCRIPTION)
    parser.add_argument("source", metavar="SOURCE.c")
    parser.add_argument("--compiler", choices=("gcc", "clang"), default="gcc")
    parser.add_argument("--flags", default=None, metavar="FLAGS",
                        help="compiler flags, one string (default: '-O3 -march=x86-64-v3 -fopenmp')")
    parser.add_argument("--trace", default=None, metavar="DIR", help="a run's trace directory")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ma_post.loopmark import DEFAULT_FLAGS, VecLoopCheck, check_vec_loops, loopmarks, map_to_sites

    flags = tuple(shlex.split(args.flags)) if args.flags is not None else DEFAULT_FLAGS
    marks = loopmarks(Path(args.source), args.compiler, flags)
    mapped = {}
    checks: list[VecLoopCheck] = []
    if args.trace:
        from ma_post import load
        from ma_post.vector import vec_loop_results

        ts = load(args.trace)
        sites = [(s.path, s.file, s.line) for s in ts.sites.values()
                 if s.type == "loop" and s.file is not None and s.line is not None]
        mapped = map_to_sites(marks, sites)
        checks = check_vec_loops(marks, vec_loop_results(ts))
    if args.json:
        json.dump({"loops": [m.to_json() for m in marks],
                   "sites": {path: m.to_json() for path, m in mapped.items()},
                   "vec_loops": [c.to_json() for c in checks]}, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0
    for mark in marks:
        print(mark.describe())
    for path, mark in mapped.items():
        print(f"site {path}: MV {mark.mv} ({mark.file}:{mark.line})")
    for check in checks:
        print(check.describe())
    return 0
