"""The probe's estimate of its time against the time it took: ``ma machine probe`` on this host, part by part.

Prints the plan (backends/machine/plan.py) for this host's hierarchy, runs the probe it describes, and prints
each part's estimated and measured seconds (wall, and this process's CPU seconds in total: on a host others
load, the wall time stretches and the CPU time does not). Then the plans of a declared 300 MiB L3 (the 16-core
server of the many-core issue), full and quick, with their estimates; those are not run here.

The estimate is meant as an upper bound on a quiet host (its cost model is deliberately slow); take the figure
from a quiet run.

Run: .venv/bin/python bench/probe_plan.py [--full] [--no-mpi]   (quick: under a minute; --full: a few minutes)
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

from backends.machine import hierarchy, probe


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--full", action="store_true", help="the full probe (default: --quick)")
    parser.add_argument("--no-mpi", action="store_true", help="leave out the MPI parts")
    args = parser.parse_args()
    settings = probe.ProbeSettings() if args.full else probe.ProbeSettings.quick()
    settings = replace(settings, mpi=not args.no_mpi)
    caches = hierarchy.from_sysfs()
    plan = probe.plan_for(caches, settings)
    print(plan.summary())
    wall, cpu = time.perf_counter(), time.process_time()
    machine = probe.probe(settings, caches=caches)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    measured = dict(machine.host.phase_seconds)
    print(f"\n{'part':<20}{'estimated s':>12}{'measured s':>12}")
    for name, estimate in plan.phases:
        print(f"{name:<20}{estimate:12.1f}{measured.pop(name, float('nan')):12.1f}")
    for name, seconds in measured.items():
        print(f"{name:<20}{'-':>12}{seconds:12.1f}")
    print(f"{'total':<20}{plan.estimate_s:12.1f}{wall:12.1f}   (this process's CPU: {cpu:.1f} s; MPI ranks and "
          "their CPU not counted)")
    print("\nplans not run here:")
    server = hierarchy.apply_overrides(caches, {3: "300M:20:64"})
    for name, chosen in (("full", probe.ProbeSettings()), ("quick", probe.ProbeSettings.quick())):
        print(f"  L3 300 MiB, {name}: {probe.plan_for(server, chosen).summary()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
