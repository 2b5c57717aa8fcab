"""The GA bandwidth fit (Tikir et al. SC07, Equation 1) on this machine's measured MultiMAPS surface.

1. Takes a profile measured by ``ma machine probe`` (``--profile``; default: the shipped example of this host
   kind), or probes this host now (``--probe``, a few minutes).
2. Fits Equation 1 with the paper's GA settings (population 10,000 x 200 generations) and with a small GA
   (2,000 x 40), side by side, each on the profile's hit rates; prints the Table-4 figures (average absolute
   relative error and its standard deviation, overall and per stride; the random curve is not fitted, it is
   the interpolation check) and the time of each fit.
3. With ``--variants``, also re-simulates the hit rates on other descriptions of the same hierarchy (replacement
   policies, prefetchers, the shared L3's share) and refits each with the small GA, to show how much of the
   error is the hit-rate model's rather than the fit's. Each row also gives the error *floor* of those hit
   rates: the least average |error| any function of the hit rates could reach, because points with the same
   hit rates but different bandwidths must share one predicted value.
4. With ``--repeat P2`` (a second probe of the same host), prints how far the two probes differ point by point
   (``backends.machine.repeatability``): the measurement's noise floor, which no fit can get under on average.
5. Writes the figures: measured curves with the fitted ones over them and the cache sizes marked (Figures 3
   and 7), and the error per point of the stride-4 curve (Figure 8).

Run: .venv/bin/python bench/ga_fit.py [--profile P | --probe] [--repeat P2] [--figures DIR] [--variants] [--seed N]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from backends.machine import figures, gafit, probe, profile, repeatability
from backends.machine.profile import MachineProfile

ROOT = Path(__file__).resolve().parents[1]
PAPER = gafit.GASettings()  # 10,000 x 200
SMALL = gafit.GASettings(population=2000, generations=40, lamarck_every=10)
NONE: dict[str, Any] = {"prefetch": "none", "indexing": "virtual"}
ADJACENT: dict[str, Any] = {"prefetch": "adjacent", "indexing": "virtual"}
STRIDE: dict[str, Any] = {**NONE, "prefetch": "stride", "prefetch_degree": 1, "prefetch_distance": 1}
NEXT_LINE: dict[str, Any] = {**NONE, "prefetch": "next_line", "prefetch_degree": 1, "prefetch_distance": 1}
# hierarchy descriptions tried with --variants: changes per cache level (1, 2, 3) to the profile's caches
VARIANTS: dict[str, dict[int, dict[str, Any]]] = {
    "no prefetchers, every level LRU": {1: NONE, 2: NONE, 3: {**NONE, "replacement": "LRU"}},
    "no prefetchers, L3 random replacement": {1: NONE, 2: NONE, 3: {**NONE, "replacement": "RR"}},
    "L2 adjacent-line": {1: NONE, 2: ADJACENT, 3: {**NONE, "replacement": "RR"}},
    "L1 stride, L2 adjacent-line": {1: STRIDE, 2: ADJACENT, 3: {**NONE, "replacement": "RR"}},
    "L1 next-line, L2 adjacent-line": {1: NEXT_LINE, 2: ADJACENT, 3: {**NONE, "replacement": "RR"}},
    "L2 stride": {1: NONE, 2: STRIDE, 3: {**NONE, "replacement": "RR"}},
    "L2 adjacent-line, L3 16 MiB": {1: NONE, 2: ADJACENT, 3: {**NONE, "replacement": "RR", "size_bytes": 16 << 20}},
    "L2 adjacent-line, L2/L3 physically indexed": {1: NONE, 2: {**ADJACENT, "indexing": "physical"},
                                                   3: {**NONE, "replacement": "RR", "indexing": "physical"}},
    "L2/L3 physically indexed, L3 LRU": {1: NONE, 2: {**NONE, "indexing": "physical"},
                                         3: {**NONE, "replacement": "LRU", "indexing": "physical"}},
}  # the probe's default (every level LRU and physical, L2 adjacent-line) is the shipped profile's: the main rows


def report(label: str, machine: MachineProfile, ga: gafit.GASettings) -> tuple[MachineProfile, float, float]:
    """The profile fitted with ``ga``, the fit's seconds and CPU seconds (and its table printed)."""
    machine = probe.fit_profile(machine, ga)
    fit = machine.bandwidth_fit
    assert fit is not None
    table = fit.error_table()
    print(f"\n== {label}: GA {ga.population} x {ga.generations}, seed {ga.seed}: fit in {fit.ga['seconds']:.1f} s "
          f"({fit.ga['cpu_seconds']:.1f} s CPU), fitness (sum of |relative errors|) {fit.ga['fitness']:.2f}, "
          f"floor {100 * error_floor(machine):.2f} %")
    print(gafit.format_error_table(table))
    print(f"   {fit.params.text(1e9, 'GB/s')}")
    return machine, float(fit.ga["seconds"]), float(fit.ga["cpu_seconds"])


def error_floor(machine: MachineProfile) -> float:
    """Least average |relative error| of any function of the hit rates over the stride points: within a group of
    points with equal hit rates the best shared value is the 1/y-weighted median of their bandwidths."""
    groups: dict[tuple[float, ...], list[float]] = {}
    for point in machine.multimaps:
        if point.pattern == "stride" and point.hit_rates is not None:
            groups.setdefault(tuple(round(h, 9) for h in point.hit_rates), []).append(point.bandwidth_bytes_per_s)
    total, count = 0.0, 0
    for values in groups.values():
        y = np.sort(np.array(values))
        weights = 1.0 / y
        best = y[np.searchsorted(np.cumsum(weights), 0.5 * weights.sum())]
        total += float(np.abs(best - y) @ weights)
        count += y.size
    return total / count


def repeat_report(machine: MachineProfile, path: str) -> None:
    """The two probes' point-by-point difference, and the first probe's fit checked on the second's points."""
    other = profile.load(path)
    print(f"\n== repeat probe {path} (measured {other.host.measured_at}): |relative difference| of the "
          f"bandwidths both measured, (this - repeat) / repeat")
    print(gafit.format_error_table(repeatability.probe_difference(machine, other)))
    fit = machine.bandwidth_fit
    repeated = {(p.curve, p.size_bytes): p.bandwidth_bytes_per_s for p in other.multimaps}
    both = [p for p in machine.multimaps if p.pattern == "stride" and p.hit_rates is not None
            and (p.curve, p.size_bytes) in repeated]
    if fit is not None and both:  # the same points, so this profile's hit rates are theirs
        errors = gafit.relative_errors([repeated[p.curve, p.size_bytes] for p in both],
                                       fit.bandwidth([p.hit_rates or [] for p in both]))
        print(f"this profile's last fit on the repeat probe's bandwidths ({len(both)} stride points both measured): "
              f"average |error| {100 * gafit.summarise(errors).avg_abs_rel_error:.2f} %")


def variant(machine: MachineProfile, changes: Mapping[int, Mapping[str, Any]]) -> tuple[MachineProfile, float]:
    """The profile with its hierarchy changed and every point's hit rates simulated again; and the seconds that
    simulation took."""
    caches = tuple(replace(c, source="override", **changes.get(c.level, {})) for c in machine.caches)
    started = time.perf_counter()
    points = probe.simulate_hit_rates(machine.multimaps, caches, np.random.default_rng(0))
    return replace(machine, caches=caches, multimaps=points), time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--profile", help="a measured profile (default: the shipped example)")
    source.add_argument("--probe", action="store_true", help="probe this host now (full settings, no MPI)")
    parser.add_argument("--figures", default=str(ROOT / "docs" / "figures"), help="where the PNGs go")
    parser.add_argument("--variants", action="store_true", help="also refit on other hit-rate models")
    parser.add_argument("--no-paper", action="store_true", help="skip the paper's 10,000 x 200 GA and the figures")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", help="a second probe of the same host: print how far the two differ")
    args = parser.parse_args()
    if args.probe:
        machine = probe.probe(replace(probe.ProbeSettings(), mpi=False, fit=False), notes="bench/ga_fit.py --probe",
                              log=lambda text: print(text, file=sys.stderr))
    else:
        shipped = profile.shipped_profiles()
        path = args.profile or next(iter(shipped.values()), None)
        if path is None:
            parser.error("no shipped profile: pass --profile or --probe")
        machine = profile.load(path)
    print(f"profile {machine.name}: {machine.host.cpu_model}, measured {machine.host.measured_at} "
          f"({machine.host.notes or 'no notes'}); {len(machine.multimaps)} MultiMAPS points; caches "
          + ", ".join(f"L{c.level} {c.size_bytes >> 10} KiB {c.ways}-way {c.line_bytes} B {c.replacement} "
                      f"prefetch {c.prefetch}" for c in machine.caches))
    machine, *small_seconds = report("small GA", machine, replace(SMALL, seed=args.seed))
    small_error = machine.bandwidth_fit.avg_abs_rel_error if machine.bandwidth_fit else None
    if not args.no_paper:
        machine, *paper_seconds = report("paper's GA", machine, replace(PAPER, seed=args.seed))
        fit = machine.bandwidth_fit
        assert fit is not None and small_error is not None
        print(f"\naverage |error|: paper's GA {100 * (fit.avg_abs_rel_error or 0):.2f} % in {paper_seconds[0]:.1f} s "
              f"({paper_seconds[1]:.1f} s CPU), small GA {100 * small_error:.2f} % in {small_seconds[0]:.1f} s "
              f"({small_seconds[1]:.1f} s CPU); goal <= 3.6 % (the paper's best system; its average 6.4 %), <= 30 s")
        directory = Path(args.figures)
        directory.mkdir(parents=True, exist_ok=True)
        print(figures.plot_multimaps(machine, directory / "multimaps-fit.png"))
        print(figures.plot_errors(machine, directory / "multimaps-errors-stride4.png", "stride 4"))
    if args.repeat:
        repeat_report(machine, args.repeat)
    if args.variants:
        for label, changes in VARIANTS.items():
            other, seconds = variant(machine, changes)
            report(f"hit rates with {label} (simulated in {seconds:.1f} s)", other, replace(SMALL, seed=args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
