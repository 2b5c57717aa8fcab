"""NPB SP's speed and what its modeling assertions cost: class W on 1 and 4 ranks, annotated vs MA_DISABLE=1.

For each process count, rounds of two whole jobs, in alternating order (annotated first in even rounds,
disabled first in odd ones): ``ma run -n P -- python examples/npb_sp/sp.py --class W`` (PMPI library
preloaded, every assertion checked, traces written) and the same command through the same mpiexec with
MA_DISABLE=1. Each job's figure is NPB's: the timed steps on the slowest rank, and Mop/s from NPB's
official operation count. Printed: each job's time and Mop/s, each round's ratio annotated / disabled,
and the median ratio (goal <= 1.05).

SP's annotations run far more often than CG's: per time step and cell, a flop region around each of
some twenty kernels, a loop around every pipeline stage and plane recurrence, and a message assertion
per send and receive. On a shared 2-core host whole jobs tens of seconds apart see different machine
speeds (other work, frequency steps): treat the figures as indicative, and look at the spread of the
rounds before the median.

--in-process: one job per process count under ``ma run`` (bench/sp_repeat.py), alternating NPB's timed
section with the annotations bound to the runtime and to the no-ops of MA_DISABLE=1; printed are the
ratios of the --rounds pairs and their median. The host's drift mostly cancels within a pair; the PMPI
library and the decorated subroutines stay live in both halves, so this is the annotations' own cost.

With --jobs J, J such jobs per process count, and the median over all their pairs with a 90 % bootstrap
interval (jobs resampled, then pairs within them).

Usage: python bench/sp_speed.py [--class W] [--nprocs 1 4] [--rounds 2] [--niter N] [--in-process [--jobs J]]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SP = REPO / "examples" / "npb_sp" / "sp.py"
WORKER = REPO / "bench" / "sp_repeat.py"


def in_process(class_name: str, nprocs: int, niter: int | None, rounds: int) -> list[float]:
    """Ratios annotated / no-ops of ``rounds`` pairs of timed sections in one job."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MA_")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    with tempfile.TemporaryDirectory(prefix="sp-speed-") as traces:
        argv = [str(BIN / "ma"), "run", "-n", str(nprocs), "--trace-dir", traces, "--", sys.executable, str(WORKER),
                "--class", class_name, "--repeat", str(rounds), *([] if niter is None else ["--niter", str(niter)])]
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"sp_speed: {' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    times = {line.split()[0]: [float(t) for t in line.split()[1:]] for line in done.stdout.splitlines()
             if line.startswith(("ON ", "OFF "))}
    return [on / off for on, off in zip(times["ON"], times["OFF"], strict=True)]


def bootstrap_median(jobs: list[list[float]], draws: int = 4000, seed: int = 1) -> tuple[float, float]:
    """90 % interval of the median ratio: resample the jobs, then the pairs within each drawn job."""
    rng = random.Random(seed)
    medians = []
    for _ in range(draws):
        sample = [rng.choice(job) for job in (rng.choice(jobs) for _ in jobs) for _ in job]
        medians.append(statistics.median(sample))
    medians.sort()
    return medians[int(0.05 * draws)], medians[int(0.95 * draws)]


def run_job(class_name: str, nprocs: int, niter: int | None, annotated: bool) -> tuple[float, float]:
    """(seconds, Mop/s) of NPB's timed steps in one job."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MA_")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    program = [sys.executable, str(SP), "--class", class_name, *([] if niter is None else ["--niter", str(niter)])]
    with tempfile.TemporaryDirectory(prefix="sp-speed-") as traces:
        if annotated:
            argv = [str(BIN / "ma"), "run", "-n", str(nprocs), "--trace-dir", traces, "--", *program]
        else:
            env["MA_DISABLE"] = "1"
            argv = [str(BIN / "mpiexec"), "-n", str(nprocs), *program]
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"sp_speed: {' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    if niter is None and "Verification Successful" not in done.stdout:
        raise SystemExit(f"sp_speed: {' '.join(argv)}: verification did not succeed")
    seconds = float(re.search(r"Time in seconds =\s+(\S+)", done.stdout).group(1))  # type: ignore[union-attr]
    mops = float(re.search(r"Mop/s total\s+=\s+(\S+)", done.stdout).group(1))      # type: ignore[union-attr]
    return seconds, mops


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--class", dest="class_name", default="W")
    parser.add_argument("--nprocs", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--niter", type=int, default=None, help="time steps (default: the class's, verified)")
    parser.add_argument("--in-process", action="store_true",
                        help="alternate annotations on and off within one job per process count")
    parser.add_argument("--jobs", type=int, default=1, help="in-process jobs per process count")
    args = parser.parse_args(argv)
    if args.in_process:
        print(f"NPB SP class {args.class_name}: annotations live vs no-ops, in {args.jobs} job(s), {args.rounds} "
              f"pairs each")
        for nprocs in args.nprocs:
            jobs = []
            for j in range(args.jobs):
                jobs.append(in_process(args.class_name, nprocs, args.niter, args.rounds))
                print(f"  {nprocs} ranks job {j + 1}: pairs " + " ".join(f"{r:.3f}" for r in jobs[-1]), flush=True)
            low, high = bootstrap_median(jobs)
            print(f"  {nprocs} ranks: median {statistics.median(r for job in jobs for r in job):.3f} "
                  f"(90 % [{low:.3f}, {high:.3f}]; goal <= 1.05)")
        return 0
    print(f"NPB SP class {args.class_name}: annotated (ma run) vs MA_DISABLE=1, {args.rounds} rounds "
          f"(shared host: indicative figures)")
    for nprocs in args.nprocs:
        ratios = []
        for r in range(args.rounds):
            order = (True, False) if r % 2 == 0 else (False, True)
            result = {annotated: run_job(args.class_name, nprocs, args.niter, annotated) for annotated in order}
            (t_on, mops_on), (t_off, mops_off) = result[True], result[False]
            ratios.append(t_on / t_off)
            print(f"  {nprocs} ranks round {r + 1}: annotated {t_on:7.2f} s {mops_on:8.1f} Mop/s   "
                  f"disabled {t_off:7.2f} s {mops_off:8.1f} Mop/s   ratio {ratios[-1]:.3f}")
        print(f"  {nprocs} ranks: median ratio annotated/disabled {statistics.median(ratios):.3f} "
              f"(rounds {min(ratios):.3f} .. {max(ratios):.3f}; goal <= 1.05)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
