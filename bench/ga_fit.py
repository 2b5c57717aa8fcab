"""The GA bandwidth fit (Tikir et al. SC07, Equation 1) on this machine's measured MultiMAPS surface.

1. Takes a profile measured by ``ma machine probe`` (``--profile``; default: the shipped example of this host
   kind), or probes this host now (``--probe``, a few minutes).
2. Fits Equation 1 with the paper's GA settings (population 10,000 x 200 generations) and with a small GA
   (2,000 x 40), side by side, each on the profile's hit rates; prints the Table-4 figures (average absolute
   relative error and its standard deviation, overall and per stride; the random curve is not fitted, it is
   the interpolation check) and the time of each fit.
3. With ``--variants``, also re-simulates the hit rates on other descriptions of the same hierarchy and refits
   (small GA): every level LRU, the last level with random replacement (the probe's default where sysfs says
   the level is shared), and that plus 128-byte L2/L3 lines (the adjacent-line prefetcher fetches pairs of
   lines), to show how much of the error is the hit-rate model's rather than the fit's.
4. Writes the figures: measured curves with the fitted ones over them and the cache sizes marked (Figures 3
   and 7), and the error per point of the stride-4 curve (Figure 8).

Run: .venv/bin/python bench/ga_fit.py [--profile P | --probe] [--figures DIR] [--variants] [--seed N]
"""

from __future__ import annotations

import argparse
import copy
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

from backends.machine import figures, gafit, probe, profile
from backends.machine.profile import CacheLevel, MachineProfile

ROOT = Path(__file__).resolve().parents[1]
PAPER = gafit.GASettings()  # 10,000 x 200
SMALL = gafit.GASettings(population=2000, generations=40, lamarck_every=10)


def report(label: str, machine: MachineProfile, ga: gafit.GASettings) -> tuple[float, float]:
    fit = probe.fit_profile(machine, ga)
    table = fit.error_table()
    print(f"\n== {label}: GA {ga.population} x {ga.generations}, seed {ga.seed}: fit in {fit.ga['seconds']:.1f} s "
          f"({fit.ga['cpu_seconds']:.1f} s CPU), fitness (sum of |relative errors|) {fit.ga['fitness']:.2f}")
    print(gafit.format_error_table(table))
    print("   c = " + ", ".join(f"{v:.3g}" for v in fit.latencies) + "; b (GB/s) = "
          + ", ".join(f"{v:.3g}" for v in fit.plateaus_gbs) + "; f = " + ", ".join(f"{v:.3g}" for v in fit.penalty_f)
          + "; x = " + ", ".join(f"{v:.3g}" for v in fit.penalty_x))
    return float(fit.ga["seconds"]), float(fit.ga["cpu_seconds"])


def variant(machine: MachineProfile, policy: str, lines: int | None) -> MachineProfile:
    other = copy.deepcopy(machine)
    other.caches = [CacheLevel(c.level, c.size_bytes, c.ways, lines if lines and c.level > 1 else c.line_bytes,
                               "override", policy if c.level == len(machine.caches) else c.replacement)
                    for c in machine.caches]
    probe.simulate_hit_rates(other.multimaps, other.caches, np.random.default_rng(0))
    return other


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--profile", help="a measured profile (default: the shipped example)")
    source.add_argument("--probe", action="store_true", help="probe this host now (full settings, no MPI)")
    parser.add_argument("--figures", default=str(ROOT / "docs" / "figures"), help="where the PNGs go")
    parser.add_argument("--variants", action="store_true", help="also refit on two other hit-rate models")
    parser.add_argument("--seed", type=int, default=0)
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
    print(f"profile {machine.name}: {machine.host.get('cpu_model')}, measured {machine.host.get('measured_at')} "
          f"({machine.host.get('notes') or 'no notes'}); {len(machine.multimaps)} MultiMAPS points; caches "
          + ", ".join(f"L{c.level} {c.size_bytes >> 10} KiB {c.ways}-way {c.line_bytes} B {c.replacement}"
                      for c in machine.caches))
    small_seconds = report("small GA", machine, replace(SMALL, seed=args.seed))
    small_error = machine.bandwidth_fit.avg_abs_rel_error if machine.bandwidth_fit else None
    paper_seconds = report("paper's GA", machine, replace(PAPER, seed=args.seed))
    fit = machine.bandwidth_fit
    assert fit is not None and small_error is not None
    print(f"\naverage |error|: paper's GA {100 * (fit.avg_abs_rel_error or 0):.2f} % in {paper_seconds[0]:.1f} s "
          f"({paper_seconds[1]:.1f} s CPU), small GA {100 * small_error:.2f} % in {small_seconds[0]:.1f} s "
          f"({small_seconds[1]:.1f} s CPU); goal <= 3.6 % (the paper's best system; its average 6.4 %), <= 30 s")
    directory = Path(args.figures)
    directory.mkdir(parents=True, exist_ok=True)
    print(figures.plot_multimaps(machine, directory / "multimaps-fit.png"))
    print(figures.plot_errors(machine, directory / "multimaps-errors-stride4.png", "stride 4"))
    if args.variants:
        for label, policy, lines in (("every level LRU", "LRU", None), ("L3 random replacement", "RR", None),
                                     ("L3 random replacement, 128-byte L2/L3 lines", "RR", 128)):
            report(f"hit rates with {label}", variant(machine, policy, lines), replace(SMALL, seed=args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
