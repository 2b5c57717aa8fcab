"""``ma synth DIR --set nprocs=N --format smpi OUT/ [--replay]``: synthetic MPI traces from the control-flow model,
replayed in SimGrid (docs/interop.md)."""

from __future__ import annotations

import argparse

DESCRIPTION = """Run the annotated site tree symbolically for every rank (inputs from the trace or --set, partners
from peer= assertions, flops between MPI calls as compute) and write one SimGrid/SMPI time-independent trace per
rank. With --replay, play them with smpirun on a cluster with the machine's ping-pong latency and bandwidth and flop
rate, and print the predicted time."""


def register(subparsers: argparse._SubParsersAction) -> None:
    from ma_cli.outputs import output_directory
    from ma_cli.support import trace_command

    parser = trace_command(subparsers, "synth",
                           "synthetic SimGrid/SMPI traces per rank at any process count; --replay predicts the time",
                           DESCRIPTION)
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="NAME=V",
                        help="input value (repeatable), e.g. --set nprocs=1024 --set na=150000")
    parser.add_argument("--format", choices=("smpi",), default="smpi", help="trace format (SMPI time-independent)")
    parser.add_argument("--region", metavar="PATH", help="generate only this site's execution (e.g. conj_loop)")
    parser.add_argument("out", metavar="OUT", type=output_directory, help="directory for rank-<r>.smpi and traces.txt")
    parser.add_argument("--max-ranks", type=int, default=65536, metavar="N",
                        help="refuse to write more rank files (default 65536)")
    parser.add_argument("--replay", action="store_true", help="replay the traces with SimGrid's smpirun")
    parser.add_argument("--profile", metavar="FILE", help="machine profile (ma machine probe): its ping-pong "
                        "latency and bandwidth and its peak flop rate")
    parser.add_argument("--latency", type=float, metavar="S", help="MPI ping-pong latency in seconds")
    parser.add_argument("--bandwidth", type=float, metavar="B", help="MPI bandwidth in bytes per second")
    parser.add_argument("--speed", type=float, metavar="F", help="flop rate of one rank (flop/s)")
    parser.add_argument("--per-rank", action="store_true",
                        help="also print when each rank finished (traces the replay: slower)")
    parser.set_defaults(handler=run)


def _machine(args: argparse.Namespace) -> object:
    from ma_core.errors import MAError
    from ma_post.interop.simgrid import Machine

    fields: dict[str, float] = {}
    if args.profile:
        from backends.machine.profile import load

        profile = load(args.profile)  # ProfileError names the file and the field
        if profile.network is not None:
            fields["latency_s"] = profile.network.latency_s
            fields["bandwidth_Bps"] = profile.network.bandwidth_bytes_per_s
        fields["flops_per_s"] = profile.peak_flops
    given = {"latency_s": args.latency, "bandwidth_Bps": args.bandwidth, "flops_per_s": args.speed}
    fields.update({k: v for k, v in given.items() if v is not None})
    missing = [option for option, name in (("--latency", "latency_s"), ("--bandwidth", "bandwidth_Bps"),
                                            ("--speed", "flops_per_s")) if name not in fields]
    if missing:
        raise MAError(f"--replay needs the machine: give {', '.join(missing)} (or --profile FILE)")
    return Machine(**fields)


def run(args: argparse.Namespace) -> int:
    import time

    from ma_cli.support import load_traces, parse_sets
    from ma_core.errors import MAError
    from ma_post.interop.simgrid import Machine, replay
    from ma_post.interop.synth import synthesize

    settings = {}
    for name, values in parse_sets(args.sets).items():
        if len(values) != 1:
            raise MAError(f"--set {name}: one value per run of ma synth")
        settings[name] = values[0]
    if "nprocs" in settings and not float(settings["nprocs"]).is_integer():
        raise MAError(f"--set nprocs={settings['nprocs']:g}: expected a whole number of processes")
    machine = _machine(args) if args.replay else None
    ts = load_traces(args)
    start = time.perf_counter()
    result = synthesize(ts, args.out, settings, region=args.region, max_ranks=args.max_ranks)
    print(f"{result.nprocs} rank traces ({result.actions} actions) in {result.directory} "
          f"({time.perf_counter() - start:.2f} s); replay list {result.index}")
    if isinstance(machine, Machine):
        replayed = replay(result, machine, per_rank=args.per_rank)
        print(f"predicted time: {replayed.simulated_s:.6g} s = compute {replayed.compute_s:.6g} s (slowest rank) + "
              f"communication and waiting {replayed.communication_s:.6g} s (SimGrid took {replayed.wall_s:.1f} s)")
        for rank, seconds in enumerate(replayed.rank_s):
            print(f"rank {rank}: {seconds:.6g} s")
    return 0
