"""``ma run [-n N] [--trace-dir D] [--counters SPEC] [--launcher L] -- COMMAND...``"""

from __future__ import annotations

import argparse
import sys
from typing import Any

DESCRIPTION = """Run COMMAND on N processes (the mpiexec beside this Python, or --launcher), with traces written to
--trace-dir."""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "run", help="run an annotated program under mpiexec with the runtime configured",
        description=DESCRIPTION)
    parser.add_argument("-n", "--nprocs", type=int, default=None,
                        help="number of MPI processes (default 1; inside a Slurm allocation its SLURM_NTASKS)")
    parser.add_argument("--trace-dir", default="ma-traces", help="where rank-<r>.ma.json go (default ma-traces)")
    parser.add_argument("--counters", default=None,
                        help="counter providers: auto (default), papi, valgrind, tracemalloc, ccalls (calls into "
                             "compiled code per site), none; comma-separated")
    parser.add_argument("--launcher", default=None,
                        help="launcher command instead of the environment's mpiexec, e.g. 'srun' (or MA_LAUNCHER; "
                             "inside a Slurm allocation the default is srun)")
    parser.add_argument("--cache", default=None, metavar="PROFILE",
                        help="with --counters valgrind: simulate this machine profile's caches (LRU) in the tool")
    parser.add_argument("--cache-share", type=int, default=None, metavar="K",
                        help="with --cache: the last level as one of K ranks sharing it sees it (its sets / K), "
                             "for the hit rates of ranks that share a node's last cache (ma signature --shared)")
    # Not dest "command": that is the top-level parser's name of the subcommand, which error messages show.
    parser.add_argument("program", nargs=argparse.REMAINDER, metavar="command",
                        help="-- then the program and its arguments")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    import os

    from ma_core.disable import VARIABLE, annotations_disabled
    from ma_core.trace_format import RUNNING
    from ma_tools import launch

    command = args.program[1:] if args.program[:1] == ["--"] else args.program
    if args.cache_share is not None and not args.cache:
        from ma_core.errors import LaunchError

        raise LaunchError("--cache-share K shares the last level of the simulated cache: give it with --cache PROFILE")
    plan = launch.plan(command, args.nprocs, args.trace_dir, args.counters, args.launcher,
                       cache=cache_option(args.cache, args.cache_share) if args.cache else None)
    for note in plan.notes:
        print(f"ma run: {note}", file=sys.stderr)
    before = len(plan.notes)
    status = launch.run(plan)
    for note in plan.notes[before:]:
        print(f"ma run: {note}", file=sys.stderr)
    if annotations_disabled(os.environ):  # the program ran without its annotations: no trace is expected
        print(f"ma run: exit status {status}; the annotations were off ({VARIABLE}={os.environ[VARIABLE]}), so no "
              "trace was written", file=sys.stderr)
        return status
    if plan.kept_previous:
        print(f"ma run: exit status {status}; the job wrote no trace, so the previous run's traces in "
              f"{plan.trace_dir} are kept as they were", file=sys.stderr)
        print(f"ma run: error: no trace from any of the {plan.nprocs} ranks", file=sys.stderr)
        return status or 1
    written = launch.written_traces(plan.trace_dir, plan.nprocs)
    print(f"ma run: exit status {status}; {len(written)} of {plan.nprocs} rank traces in {plan.trace_dir}",
          file=sys.stderr)
    if status != 0:
        named = launch.first_failure(plan.trace_dir)
        for line in named:
            print(f"ma run: {line}", file=sys.stderr)
        for rank, how in sorted(launch.unclean_exits(plan.trace_dir, plan.nprocs).items()):
            if not (named and how == RUNNING):  # a last flush, which the lines above explain
                print(f"ma run: rank {rank} ended with {how}", file=sys.stderr)
    missing = launch.missing_traces(plan.trace_dir, plan.nprocs)
    if missing:
        print(f"ma run: error: {missing}", file=sys.stderr)
        return status or 1
    return status


def cache_option(name: str, share: int | None = None) -> str:
    """The tool's --ma-cache value for a machine profile (a file or a shipped profile's name); with ``share`` K, its
    last level as one of K ranks sharing it sees it: the same ways and lines, a K-th of the sets."""
    from backends.machine.hierarchy import shared_last_level
    from ma_cli.support import load_profile

    machine = load_profile(name)
    for level in machine.caches:
        if level.replacement != "LRU":
            print(f"ma run: note: the tool simulates L{level.level} as LRU (profile {machine.name!r}: "
                  f"{level.replacement})", file=sys.stderr)
    caches = list(machine.caches)
    if share is not None:
        caches[-1] = shared_last_level(caches[-1], share)
    return ",".join(f"{c.size_bytes}:{c.ways}:{c.line_bytes}" for c in caches)
