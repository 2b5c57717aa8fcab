"""``ma synth DIR --set nprocs=N --format smpi OUT/ [--replay]``: synthetic MPI traces from the control-flow model,
replayed in SimGrid (docs/interop.md)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sympy

    from backends.base import Prediction
    from ma_post import ModelBuilder, TraceSet
    from ma_post.interop.simgrid import Machine
    from ma_post.traceset import Site, SiteKey

DESCRIPTION = """Run the annotated site tree symbolically for every rank (inputs from the trace or --set, partners
from peer= assertions, flops between MPI calls as compute) and write one SimGrid/SMPI time-independent trace per
rank. With --replay, play them with smpirun on a cluster with the machine's ping-pong latency and bandwidth and flop
rate, and print the predicted time. With --machine PROFILE, each site's compute is what a backend (--backend, as in
ma predict) predicts for it instead of its flops at the peak rate: the replay is the model's compute plus SimGrid's
communication."""


def register(subparsers: argparse._SubParsersAction) -> None:
    from ma_cli.commands.predict import add_backend_arguments_when_parsed
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
    parser.add_argument("--machine", metavar="PROFILE", help="price each site's compute with the backend's prediction "
                        "on this machine profile (a file or a shipped profile's name; also the replay's machine "
                        "where --profile is not given)")
    parser.add_argument("--backend", help="with --machine: an installed backend (`ma backends`; default maps)")
    parser.set_defaults(handler=run)
    add_backend_arguments_when_parsed(parser)


def _machine_fields(args: argparse.Namespace, ts: TraceSet) -> dict[str, float]:
    """The replay machine's figures (simgrid.Machine's fields): the profile's (--profile, else --machine; its
    network block of the MPI the run used, as ma predict takes it), the options overriding them."""
    fields: dict[str, float] = {}
    if args.profile or args.machine:
        from backends.machine import runnetwork
        from ma_cli.support import load_profile

        profile = load_profile(args.profile or args.machine)  # ProfileError names the file and the field
        profile, notes = runnetwork.for_run(profile, ts)
        for note in notes:
            print(f"note: {note}")
        if profile.network is not None:
            fields["latency_s"] = profile.network.latency_s
            fields["bandwidth_Bps"] = profile.network.bandwidth_bytes_per_s
        fields["flops_per_s"] = profile.peak_flops
    given = {"latency_s": args.latency, "bandwidth_Bps": args.bandwidth, "flops_per_s": args.speed}
    fields.update({k: v for k, v in given.items() if v is not None})
    return fields


def _machine(fields: Mapping[str, float]) -> Machine:
    from ma_core.errors import MAError
    from ma_post.interop.simgrid import Machine

    missing = [option for option, name in (("--latency", "latency_s"), ("--bandwidth", "bandwidth_Bps"),
                                            ("--speed", "flops_per_s")) if name not in fields]
    if missing:
        raise MAError(f"--replay needs the machine: give {', '.join(missing)} (or --profile FILE)")
    return Machine(**fields)


class PredictedWork:
    """The :data:`ma_post.interop.synth.Work` of a backend's prediction: one execution of a site costs the
    prediction's compute, memory and runtime seconds there (a kernel's with the sites nested in it, which the
    synthesis does not enter) over the site's executions per rank, at the rank's values, as flops at ``speed``,
    the host speed of the replay's platform. Its communication is left to the replay."""

    def __init__(self, model: ModelBuilder, prediction: Prediction, speed: float) -> None:
        import sympy

        from ma_post.interop.synth import KERNELS

        work = {site.path: site.compute + site.memory + site.runtime for site in prediction.sites}
        self.speed = speed
        self.per_execution: dict[SiteKey, tuple[sympy.Expr, sympy.Expr]] = {}  # (seconds, executions) per rank
        claimed: set[str] = set()  # each predicted path priced once, at the first site the synthesis visits
        for site in model.ts.walk():
            if site.type in ("variable", "assign"):
                continue
            nested = site.type in KERNELS
            paths = [p for p in work if p not in claimed
                     and (p == site.path or (nested and p.startswith(site.path + "/")))]
            if paths:
                claimed.update(paths)
                self.per_execution[site.key] = (sympy.Add(*(work[p] for p in paths)), model.executions(site))
        self._cache: dict[tuple[SiteKey, tuple[float, ...]], float | None] = {}

    def __call__(self, site: Site, env: Mapping[str, float]) -> float | None:
        entry = self.per_execution.get(site.key)
        if entry is None:
            return None
        seconds, executions = entry
        symbols = sorted(seconds.free_symbols | executions.free_symbols, key=str)
        missing = [str(s) for s in symbols if str(s) not in env]
        if missing:
            from ma_core.errors import SynthError

            raise SynthError(f"{site.type} {site.path!r}: its predicted time needs input(s) {', '.join(missing)}, "
                             "which the synthesis has no value of: give them with --set NAME=V")
        values = tuple(float(env[str(s)]) for s in symbols)
        key = (site.key, values)
        if key not in self._cache:
            self._cache[key] = self._amount(seconds, executions, dict(zip(symbols, values, strict=True)))
        return self._cache[key]

    def _amount(self, seconds: sympy.Expr, executions: sympy.Expr, values: Mapping[sympy.Basic, float]
                ) -> float | None:
        import sympy

        # whole numbers bind exactly, as in Prediction.evaluate (floor(log2(nprocs)) of a float rounds down)
        bound = {s: sympy.Integer(int(v)) if v.is_integer() else sympy.Float(v) for s, v in values.items()}
        count = float(executions.xreplace(bound))
        if count <= 0:
            return None
        return float(seconds.xreplace(bound)) / count * self.speed


def predicted_work(args: argparse.Namespace, ts: TraceSet, speed: float) -> PredictedWork:
    """The prediction of ``--backend`` on ``--machine`` for the run's traces, as the synthesis' work."""
    from backends import registry
    from ma_cli.support import load_profile
    from ma_post import ModelBuilder

    machine = load_profile(args.machine)
    model = ModelBuilder(ts)
    backend = registry.load(args.backend or "maps").from_options(args, model.ts, machine)
    return PredictedWork(model, backend.predict(model, machine, {}), speed)


def run(args: argparse.Namespace) -> int:
    import time

    from ma_cli.support import load_traces, parse_sets
    from ma_core.errors import MAError
    from ma_post.interop.simgrid import replay
    from ma_post.interop.synth import Work, flop_work, synthesize

    settings = {}
    for name, values in parse_sets(args.sets).items():
        if len(values) != 1:
            raise MAError(f"--set {name}: one value per run of ma synth")
        settings[name] = values[0]
    if "nprocs" in settings and not float(settings["nprocs"]).is_integer():
        raise MAError(f"--set nprocs={settings['nprocs']:g}: expected a whole number of processes")
    if args.backend and not args.machine:
        raise MAError("--backend prices the compute on a machine: give --machine PROFILE")
    ts = load_traces(args)
    fields = _machine_fields(args, ts)
    machine = _machine(fields) if args.replay else None
    work: Work = flop_work
    if args.machine:  # the platform's host speed: --speed, else the profile's peak rate
        work = predicted_work(args, ts, fields["flops_per_s"])
        print(f"compute: backend {args.backend or 'maps'} on {args.machine} (compute, memory and runtime per site "
              f"execution, at {fields['flops_per_s']:.6g} flop/s)")
    start = time.perf_counter()
    result = synthesize(ts, args.out, settings, region=args.region, work=work, max_ranks=args.max_ranks)
    print(f"{result.nprocs} rank traces ({result.actions} actions) in {result.directory} "
          f"({time.perf_counter() - start:.2f} s); replay list {result.index}")
    if machine is not None:
        replayed = replay(result, machine, per_rank=args.per_rank)
        print(f"predicted time: {replayed.simulated_s:.6g} s = compute {replayed.compute_s:.6g} s (slowest rank) + "
              f"communication and waiting {replayed.communication_s:.6g} s (SimGrid took {replayed.wall_s:.1f} s)")
        for rank, seconds in enumerate(replayed.rank_s):
            print(f"rank {rank}: {seconds:.6g} s")
    return 0
