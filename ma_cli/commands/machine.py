"""``ma machine probe|show|fit|plot|schema``: measure, inspect, refit and plot machine profiles."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from ..support import load_profile

if TYPE_CHECKING:
    from backends.machine.profile import MachineProfile

_CACHE_SPEC = "SIZE[:WAYS[:LINE[:POLICY[:PREFETCH][:INDEXING]]]]"


def register(subparsers: Any) -> None:
    from ma_cli.outputs import output_file
    parser = subparsers.add_parser("machine", help="machine profiles: probe this host, show, fit, plot")
    actions = parser.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True

    probe = actions.add_parser("probe", help="measure this host (MultiMAPS, flops, triad, MPI) into a profile")
    probe.add_argument("-o", "--output", default="machine-profile.json", type=output_file(), help="profile to write")
    probe.add_argument("--quick", action="store_true", help="under 30 s: few sizes, short timings, small GA")
    probe.add_argument("--plan", action="store_true",
                       help="print the plan (working sets, points, estimated seconds per part) and measure nothing")
    probe.add_argument("--budget", type=float, metavar="SECONDS",
                       help="the probe's time budget (default 180, with --quick 30): the plan trims itself to it")
    probe.add_argument("--name", help="profile name (default: the host name)")
    probe.add_argument("--note", default="", help="free text kept in the profile (e.g. 'busy host')")
    _cache_option(probe, "override a cache level from sysfs")
    probe.add_argument("--statistic", choices=("median", "best"), help="of each point's samples (default median)")
    probe.add_argument("--no-mpi", action="store_true", help="skip the MPI ping-pong")
    probe.add_argument("--no-multicore", action="store_true",
                       help="skip the multicore MultiMAPS block (the read and triad on 1, 2, 4, ... cores at once)")
    probe.add_argument("--no-fit", action="store_true", help="skip the GA bandwidth fit")
    _ga_options(probe)
    probe.set_defaults(handler=handle_probe)

    show = actions.add_parser("show", help="print a profile (a file, or the name of a shipped example)")
    show.add_argument("profile")
    show.set_defaults(handler=handle_show)

    _fill_command(actions, "streams", "the vector stream curve (memory.vector_streams)", "samples", handle_streams)
    exchange = _fill_command(actions, "exchange", "the two-rank Python exchange curve (cpython.exchange)",
                             "batches", handle_exchange)
    exchange.add_argument("--quick", action="store_true", help="three amounts of work, short batches (a second)")
    network = _fill_command(actions, "network", "one MPI's ping-pong, oversubscribed and synchronised exchanges (the "
                                                "network block of that MPI: network, or networks.NAME)", "batches",
                            handle_network)
    network.add_argument("--mpicc", metavar="PATH",
                         help="the MPI to measure, by its C compiler wrapper (e.g. /usr/bin/mpicc.mpich); default "
                              "MA_MPICC, else the environment's")
    network.add_argument("--quick", action="store_true", help="three message sizes, short batches (seconds)")
    network.add_argument("--default", action="store_true",
                         help="write the block as the profile's default network block, replacing it (e.g. one "
                              "that names no MPI); otherwise it goes to networks.NAME unless the default is that "
                              "MPI's")
    cores = _fill_command(actions, "multicore", "the read and triad on k = 1, 2, 4, ... cores at once "
                                                "(memory.multicore)", "samples", handle_multicore)
    cores.add_argument("--cores", metavar="K,K,..", help="the core counts (default 1, 2, 4, ... and every "
                                                          "physical core this process may use)")
    cores.add_argument("--quick", action="store_true", help="3 samples a point, not 5")
    indexed = actions.add_parser("subscripts", help="measure the price of a Python program's subscript "
                                                    "(cpython.subscripts) on this host into a profile")
    indexed.add_argument("profile")
    indexed.add_argument("-o", "--output", type=output_file(),
                         help="write here (default: update the profile in place)")
    indexed.add_argument("--quick", action="store_true", help="short timings (a fraction of a second)")
    indexed.set_defaults(handler=handle_subscripts)

    fit = actions.add_parser("fit", help="(re)fit Equation 1 to a profile's MultiMAPS surface")
    fit.add_argument("profile")
    fit.add_argument("-o", "--output", type=output_file(),
                         help="write here (default: update the profile in place)")
    _cache_option(fit, "change a level of the profile's hierarchy and simulate the hit rates again")
    _ga_options(fit)
    fit.set_defaults(handler=handle_fit)

    schema = actions.add_parser("schema", help="print the profile's JSON Schema (version 2)")
    schema.set_defaults(handler=handle_schema)

    plot = actions.add_parser("plot", help="MultiMAPS curves with the fit (Fig. 3/7), one stride's errors (Fig. 8) "
                                           "and the bandwidth per core against the cores at once (multicore)")
    plot.add_argument("profile")
    plot.add_argument("-o", "--output", default="multimaps", help="file name prefix (default: multimaps)")
    plot.add_argument("--stride", type=int, default=4, help="stride of the error plot (default 4)")
    plot.set_defaults(handler=handle_plot)


def _cache_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--cache", action="append", default=[], metavar=f"LN={_CACHE_SPEC}",
                        help=f"{what}, e.g. L3=16M:16:64:RR or L2=1M:8:64:LRU:adjacent:physical (repeatable; "
                             "prefetchers: none, next_line, adjacent, stride, each /DEGREE/DISTANCE; indexing: "
                             "virtual, physical)")


def _cache_overrides(specs: list[str], base: Any) -> Any:
    from backends.machine import hierarchy
    from ma_core.errors import ProfileError

    overrides = {}
    for spec in specs:
        level, _, value = spec.partition("=")
        if not (level.upper().startswith("L") and level[1:].isdigit() and value):
            raise ProfileError("--cache", f"{spec!r}: expected LN={_CACHE_SPEC}, e.g. L2=1M:8:64")
        overrides[int(level[1:])] = value
    return hierarchy.apply_overrides(list(base), overrides)


def _ga_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--population", type=int, help="GA population (default 10000, the paper's)")
    parser.add_argument("--generations", type=int, help="GA generations (default 200, the paper's)")
    parser.add_argument("--seed", type=int, default=0, help="GA random seed (default 0)")
    parser.add_argument("--penalties", type=int, help="non-linear penalty terms p_i (default: one per cache level, "
                                                      "as the paper's p_1, p_2 on two-cache machines)")


def _ga_settings(args: argparse.Namespace, base: Any) -> Any:
    from dataclasses import replace

    changes = {"seed": args.seed}
    if args.population:
        changes["population"] = args.population
    if args.generations:
        changes["generations"] = args.generations
    return replace(base, **changes)


def handle_probe(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from backends.machine import hierarchy, probe

    settings = probe.ProbeSettings.quick() if args.quick else probe.ProbeSettings()
    settings = replace(settings, mpi=not args.no_mpi, multicore=not args.no_multicore, fit=not args.no_fit,
                       penalties=args.penalties,
                       ga=_ga_settings(args, settings.ga), statistic=args.statistic or settings.statistic,
                       budget_s=args.budget)
    caches = _cache_overrides(args.cache, hierarchy.from_sysfs()) if args.cache else None
    if args.plan:
        _print_plan(probe.plan_for(caches or hierarchy.from_sysfs(), settings))
        return 0
    result = probe.probe(settings, caches=caches, name=args.name, notes=args.note,
                         log=lambda text: print(f"ma machine probe: {text}", file=sys.stderr))
    path = result.save(args.output)
    print(f"{path}: measured in {result.host.probe_seconds} s (estimated {result.host.estimate_s} s)")
    _print_fit(result)
    _print_flags(result)
    return 0


def _print_plan(plan: Any) -> None:
    from backends.machine.plan import size_text

    print(plan.summary())
    for warning in plan.warnings:
        print(f"warning: {warning}")
    curves: dict[str, list[Any]] = {}
    for point in sorted(plan.points, key=lambda p: (p.stride is None, p.stride or 0, p.size_bytes)):
        curves.setdefault("random" if point.stride is None else f"stride {point.stride}", []).append(point)
    for label, points in curves.items():
        print(f"  {label:<10} {len(points):>3} sizes, {size_text(points[0].size_bytes)} .. "
              f"{size_text(points[-1].size_bytes)}, {sum(p.seconds for p in points):6.1f} s")


def handle_fit(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from backends.machine import gafit, probe

    machine = load_profile(args.profile)
    if args.cache:
        import numpy as np

        caches = tuple(_cache_overrides(args.cache, machine.caches))
        machine = replace(machine, caches=caches, multimaps=probe.simulate_hit_rates(
            machine.multimaps, caches, np.random.default_rng(args.seed)))
    machine = probe.fit_profile(machine, _ga_settings(args, gafit.GASettings()), args.penalties)
    path = machine.save(args.output or args.profile)
    assert machine.bandwidth_fit is not None
    print(f"{path}: fitted in {machine.bandwidth_fit.ga['seconds']:.1f} s")
    _print_fit(machine)
    _print_flags(machine)
    return 0


def handle_schema(args: argparse.Namespace) -> int:
    import json

    from backends.machine.schema import PROFILE_SCHEMA

    print(json.dumps(PROFILE_SCHEMA, indent=1))
    return 0


def handle_plot(args: argparse.Namespace) -> int:
    from backends.machine import figures
    from ma_cli.outputs import check_output_file

    for kind in ("curves", f"errors-stride{args.stride}", "multicore"):  # the files -o PREFIX names
        check_output_file(f"{args.output}-{kind}.png")
    machine = load_profile(args.profile)
    print(figures.plot_multimaps(machine, f"{args.output}-curves.png"))
    if machine.bandwidth_fit is not None:
        print(figures.plot_errors(machine, f"{args.output}-errors-stride{args.stride}.png", f"stride {args.stride}"))
    if machine.memory.multicore is not None:
        print(figures.plot_multicore(machine, f"{args.output}-multicore.png"))
    return 0


def _print_fit(machine: Any) -> None:
    fit = machine.bandwidth_fit
    if fit is None:
        return
    from backends.machine import gafit

    table = fit.error_table()
    print(f"bandwidth fit (Equation 1), GA {fit.ga.get('population')} x {fit.ga.get('generations')}, "
          f"{fit.ga.get('seconds', 0):.1f} s ({fit.ga.get('cpu_seconds', 0):.1f} s CPU); random curve not fitted, "
          "a check:")
    print(gafit.format_error_table(table))


def _fill_command(actions: Any, name: str, what: str, samples: str, handler: Any) -> argparse.ArgumentParser:
    """A subcommand that measures one optional block on this host into an existing profile."""
    from ma_cli.outputs import output_file

    command = actions.add_parser(name, help=f"measure {what} on this host into an existing profile")
    command.add_argument("profile")
    command.add_argument("-o", "--output", type=output_file(),
                         help="write here (default: update the profile in place)")
    command.add_argument("--statistic", choices=("median", "best"), help=f"of each point's {samples} (default median)")
    command.set_defaults(handler=handler)
    return command


def _print_python_terms(machine: MachineProfile) -> None:
    terms = machine.cpython
    if terms is None or terms.call_overhead_s is None or terms.python_flops is None:
        return
    annotation = "not measured" if terms.annotation_s is None else ", ".join(
        f"{kind} {seconds * 1e9:.0f} ns" for kind, seconds in terms.annotation_s.items())
    print(f"  Python programs: {terms.call_overhead_s * 1e9:.0f} ns per call into compiled code, NumPy "
          f"{terms.python_flops / 1e9:.2f} GFLOP/s in cache; an annotation site: {annotation}")
    print("  a subscript: " + ("not measured (ma machine subscripts PROFILE)" if terms.subscripts is None
                               else f"{terms.subscripts.seconds * 1e9:.0f} ns"))


def handle_show(args: argparse.Namespace) -> int:
    machine = load_profile(args.profile)
    host = machine.host
    print(f"profile {machine.name}: {host.cpu_model} ({host.cpus} cpus), host {host.hostname}, "
          f"measured {host.measured_at}{' with --quick' if host.quick else ''}")
    if host.notes:
        print(f"  notes: {host.notes}")
    for cache in machine.caches:
        model = [cache.replacement, f"{cache.indexing}ly indexed"]
        if cache.prefetch in ("next_line", "stride"):
            model.append(f"{cache.prefetch} prefetch (degree {cache.prefetch_degree}, "
                         f"distance {cache.prefetch_distance})")
        elif cache.prefetch != "none":
            model.append(f"{cache.prefetch} prefetch")
        print(f"  L{cache.level}: {cache.size_bytes // 1024} KiB, {cache.ways}-way, {cache.line_bytes} B lines "
              f"({cache.source}; simulated {', '.join(model)})")
    print(f"  peak flops (one core, {machine.cpu.isa or '?'}): {machine.peak_flops / 1e9:.1f} GFLOP/s")
    _print_python_terms(machine)
    print(f"  triad: {machine.triad_bytes_per_s / 1e9:.1f} GB/s")
    _print_vector_streams(machine)
    _print_multicore(machine)
    if machine.network:
        _print_network(machine.network, " (the default block)" if machine.networks else "")
    for block in machine.networks.values():
        _print_network(block, "")
    if machine.cpython and machine.cpython.exchange:
        curve = ", ".join(f"{row.work_s * 1e6:.0f} -> {row.seconds * 1e6:.1f}" for row in machine.cpython.exchange.work)
        print(f"  Python exchange on 2 ranks (mpi4py), us of work -> us per message: {curve}")
    curves: dict[str, list[float]] = {}
    for point in machine.multimaps:
        curves.setdefault(point.curve, []).append(point.bandwidth_bytes_per_s / 1e9)
    print(f"  MultiMAPS ({machine.multimaps_settings.statistic or 'median'} of "
          f"{machine.multimaps_settings.samples or '?'} samples):")
    for label, values in curves.items():
        print(f"    {label:<10} {len(values):>3} sizes, {min(values):8.2f} .. {max(values):8.2f} GB/s")
    fit = machine.bandwidth_fit
    if fit:
        print(f"  Equation 1: {fit.params.text(1e9, 'GB/s')}")
        _print_fit(machine)
    _print_flags(machine)
    return 0


def _print_network(net: Any, label: str) -> None:
    mpi = f"{net.mpi}, " if net.mpi else ""
    print(f"  MPI ping-pong ({mpi}{net.ranks} ranks, {net.launcher}){label}: latency {net.latency_s * 1e6:.2f} us, "
          f"bandwidth {net.bandwidth_bytes_per_s / 1e9:.2f} GB/s")
    if net.oversubscribed:
        over = net.oversubscribed
        print(f"    exchange on {over.ranks} ranks over {over.cores} cores (oversubscribed): latency "
              f"{over.latency_s * 1e6:.2f} us, bandwidth {over.bandwidth_bytes_per_s / 1e9:.2f} GB/s")
        if over.work:
            curve = ", ".join(f"{row.work_s * 1e6:.0f} -> {row.seconds * 1e6:.0f}" for row in over.work)
            print(f"    with work between messages, us of work -> us per message: {curve}")
    if net.synchronised:
        for sync in net.synchronised.curves:
            curve = ", ".join(f"{row.work_s * 1e6:.0f} -> {row.seconds * 1e6:.0f}" for row in sync.work)
            print(f"    synchronised exchange on {sync.ranks} ranks, one per core, work streamed from memory, us of "
                  f"work (all ranks at once) -> us per message: {curve}")


def _print_flags(machine: Any) -> None:
    """What no measurement backs: levels the probe did not reach, fit parameters no point constrains."""
    from backends.machine import fitcheck

    for warning in fitcheck.warnings(machine):
        print(f"  FLAGGED: {warning}")


def handle_streams(args: argparse.Namespace) -> int:
    """``ma machine streams``: only the vector stream curve of ``ma machine probe``, pinned like it, written into
    the profile (which keeps every other field)."""
    from pathlib import Path

    from backends.machine.kernels import Kernels
    from backends.machine.probe import ProbeSettings, measure_vector_streams, pinned
    from backends.machine.profile import VECTOR_STREAMS_FIELD, with_block
    from ma_core.errors import ProfileError

    if not args.output and not Path(args.profile).exists():
        raise ProfileError(args.profile, "a shipped profile given by name is not updated in place: give -o FILE")
    machine = load_profile(args.profile)
    settings = ProbeSettings(statistic=args.statistic or "median")
    with pinned():
        machine = with_block(machine, VECTOR_STREAMS_FIELD, measure_vector_streams(Kernels(), machine.caches,
                                                                                    settings))
    target = Path(args.output or args.profile)
    machine.save(target)
    _print_vector_streams(machine)
    print(f"written: {target}")
    return 0


def handle_multicore(args: argparse.Namespace) -> int:
    """``ma machine multicore``: only the multicore block of ``ma machine probe``, written into the profile's
    memory block (which keeps every other field)."""
    from pathlib import Path

    from backends.machine import multicore, multicore_probe
    from backends.machine.profile import with_block
    from ma_core.errors import ProfileError

    if not args.output and not Path(args.profile).exists():
        raise ProfileError(args.profile, "a shipped profile given by name is not updated in place: give -o FILE")
    machine = load_profile(args.profile)
    try:
        counts = [int(k) for k in args.cores.split(",")] if args.cores else None
    except ValueError:
        raise ProfileError("--cores", f"{args.cores!r}: expected core counts, e.g. 1,2,4") from None
    if counts is not None and (1 not in counts or min(counts) < 1):
        raise ProfileError("--cores", f"{args.cores!r}: expected positive core counts including 1 (the reference)")
    block = multicore_probe.measure(machine.caches, counts, samples=3 if args.quick else 5,
                                    statistic=args.statistic or "median")
    machine = with_block(machine, multicore.FIELD, block)
    _print_multicore(machine)
    print(f"written: {machine.save(args.output or args.profile)}")
    return 0


def _print_multicore(machine: Any) -> None:
    block = machine.memory.multicore
    if block is None:
        print("  multicore: not measured (ma machine multicore PROFILE)")
        return
    print("  multicore MultiMAPS, GB/s per core (stride-1 read / triad) with k cores at once:")
    for run in block.runs:
        points = ", ".join(f"{p.level} {p.size_bytes >> 10} KiB {p.read_bytes_per_s / 1e9:.1f} / "
                           f"{p.triad_bytes_per_s / 1e9:.1f}" for p in run.points)
        print(f"    k = {run.cores:<3} {points}")
    ratios = ", ".join(f"k={k} {r:.2f}" for k, r in block.memory_ratio())
    print(f"    memory read per core over one core alone: {ratios}")


def handle_exchange(args: argparse.Namespace) -> int:
    """``ma machine exchange``: only the two-rank Python exchange curve of ``ma machine probe``, written into the
    profile's network block (which keeps every other field)."""
    from pathlib import Path

    from backends.cpython import exchange
    from backends.machine.profile import with_block
    from ma_core.errors import ProfileError

    if not args.output and not Path(args.profile).exists():
        raise ProfileError(args.profile, "a shipped profile given by name is not updated in place: give -o FILE")
    machine = load_profile(args.profile)
    if machine.network is None:
        raise ProfileError(args.profile, "the profile has no network block (ma machine probe without --no-mpi "
                                         "measures it)", "network")
    quick = exchange.QUICK if args.quick else {}
    block = exchange.measure(machine.caches[-1].size_bytes, statistic=args.statistic or "median",
                             latency_s=machine.network.latency_s,
                             call_overhead_s=machine.cpython.call_overhead_s if machine.cpython else None, **quick)
    machine = with_block(machine, exchange.FIELD, block)
    target = Path(args.output or args.profile)
    machine.save(target)
    for row in block["work"]:
        print(f"work {row['work_s'] * 1e6:9.2f} us: {row['seconds'] * 1e6:9.2f} us per message")
    print(f"written: {target}")
    return 0


def handle_network(args: argparse.Namespace) -> int:
    """``ma machine network``: only the MPI part of ``ma machine probe``, with the MPI ``--mpicc`` names and its own
    mpiexec, written into the profile as that MPI's network block (which keeps every other field)."""
    from dataclasses import replace
    from pathlib import Path

    from backends.machine.probe import ProbeSettings, measure_network
    from backends.machine.profile import with_network
    from ma_core.errors import ProfileError
    from ma_tools import mpis

    if not args.output and not Path(args.profile).exists():
        raise ProfileError(args.profile, "a shipped profile given by name is not updated in place: give -o FILE")
    machine = load_profile(args.profile)
    install = mpis.install(args.mpicc) if args.mpicc else mpis.selected()
    settings = ProbeSettings.quick() if args.quick else ProbeSettings()
    if args.statistic:
        settings = replace(settings, statistic=args.statistic)
    print(f"MPI ping-pong and exchanges of {install.name} ({install.mpicc}, started by {install.launcher})")
    block = measure_network(settings, install, last_cache_bytes=machine.caches[-1].size_bytes)
    machine = with_network(machine, block, install.name, default=args.default)
    target = Path(args.output or args.profile)
    machine.save(target)
    _print_network(machine.network if machine.network and machine.network.mpi == install.name
                   else machine.networks[install.name], "")
    print(f"written: {target}")
    return 0


def handle_subscripts(args: argparse.Namespace) -> int:
    """``ma machine subscripts``: only the subscript block of ``ma machine probe``'s CPU terms, written into the
    profile's ``cpython`` section (which keeps every other field)."""
    from pathlib import Path

    from backends.cpython import subscripts
    from backends.machine.profile import with_block
    from ma_core.errors import ProfileError

    if not args.output and not Path(args.profile).exists():
        raise ProfileError(args.profile, "a shipped profile given by name is not updated in place: give -o FILE")
    machine = load_profile(args.profile)
    if machine.cpython is None or machine.cpython.call_overhead_s is None:
        raise ProfileError(args.profile, "the profile has no CPython terms (ma machine probe measures them)",
                           "cpython")
    block = subscripts.measure(args.quick)
    machine = with_block(machine, subscripts.FIELD, block)
    target = Path(args.output or args.profile)
    machine.save(target)
    kinds = ", ".join(f"{kind} {seconds * 1e9:.0f}" for kind, seconds in block["kinds_s"].items())
    print(f"{block['seconds'] * 1e9:.0f} ns per subscript (ns by kind: {kinds}); in-place ufunc on a strided view "
          f"{block['view_ufunc_s'] * 1e9:.0f} ns, on a contiguous array {block['contiguous_ufunc_s'] * 1e9:.0f} ns")
    print(f"written: {target}")
    return 0


def _print_vector_streams(machine: Any) -> None:
    from backends.machine import vectorstreams

    streams = machine.memory.vector_streams
    if streams is None:
        print("  vector stream curve: not measured (ma machine streams PROFILE)")
        return
    points = streams.points
    levels = vectorstreams.level_bandwidths(points, machine.caches)
    names = [f"L{c.level}" for c in machine.caches] + ["memory"]
    by_level = ", ".join(f"{n} {'-' if v is None else f'{v / 1e9:.1f}'}" for n, v in zip(names, levels, strict=True))
    gbs = [p.bandwidth_bytes_per_s / 1e9 for p in points]
    print(f"  vector stream curve ({streams.isa or '?'} a = b + c, {len(points)} sizes): {min(gbs):.1f} .. "
          f"{max(gbs):.1f} GB/s; by level (GB/s): {by_level}")
