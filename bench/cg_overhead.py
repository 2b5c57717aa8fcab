"""What the modeling assertions cost NPB CG: class W on 4 ranks, annotated vs MA_DISABLE=1.

Jobs alternate in this one invocation (annotated, disabled, disabled, annotated, ...): the annotated ones
go through ``ma run`` (PMPI library preloaded, traces written), the disabled ones through the same
mpiexec with MA_DISABLE=1. Each job runs bench/cg_repeat.py: NPB's timed section, verified, --repeat
times after one set-up and warm-up, timed as NPB does (the slowest rank). Printed: every pair's medians
and ratio (annotated / disabled), the median of those ratios with a 90 % bootstrap interval over pairs
(goal <= 1.03), and the port's Mop/s next to the annotated run's.

This host is a 2-core VM: the 4 ranks are oversubscribed and its speed drifts by tens of per cent within
a minute. Pairing adjacent jobs cancels the drift; repeating in each job spreads the start-up over many
samples. The defaults (16 pairs x 10 repetitions) take about three minutes. What pairing cannot cancel is
each job's own luck (how the scheduler places its ranks on the cores): here a job's median differs from
the next one's by ±15 %, so the interval stays several per cent wide even at 40 pairs.

--in-process measures the annotations alone, without that job-to-job noise: each of --jobs jobs (under
``ma run``) alternates NPB's timed section with the annotations bound to the runtime and to the no-ops
of MA_DISABLE=1, --repeat pairs of sections (bench/cg_repeat.py --switch). The figure is the median of
the pairs' ratios with a bootstrap interval. It leaves out what a job carries besides the annotations
(the PMPI library: bench/pmpi_overhead.py; the larger process).

Usage: python bench/cg_overhead.py [--class W] [--nprocs 4] [--pairs 16] [--repeat 10]
       python bench/cg_overhead.py --in-process [--jobs 4] [--repeat 20]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
WORKER = REPO / "bench" / "cg_repeat.py"
sys.path.insert(0, str(REPO))
from examples.npb_cg.classes import CLASSES, official_op_count  # noqa: E402


def run_job(class_name: str, nprocs: int, repeat: int, annotated: bool, trace_dir: Path,
            switch: bool = False) -> dict[str, list[float]]:
    """Seconds of each verified repetition of the timed section in one MPI job, by the worker's line key
    (TIMES; or ON and OFF with ``switch``)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MA_")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    command = [sys.executable, str(WORKER), "--class", class_name, "--repeat", str(repeat)]
    if switch:
        command.append("--switch")
    if annotated:
        argv = [str(BIN / "ma"), "run", "-n", str(nprocs), "--trace-dir", str(trace_dir), "--", *command]
    else:
        env["MA_DISABLE"] = "1"
        argv = [str(BIN / "mpiexec"), "-n", str(nprocs), *command]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1800)
    lines = {line.split()[0]: [float(t) for t in line.split()[1:]] for line in done.stdout.splitlines()
             if line.startswith(("TIMES ", "ON ", "OFF "))}
    if done.returncode != 0 or not lines:
        raise SystemExit(f"job failed ({'annotated' if annotated else 'disabled'}):\n{done.stdout}\n{done.stderr}")
    return lines


def bootstrap_interval(ratios: list[float], rounds: int = 5000) -> tuple[float, float]:
    """5th and 95th percentile of the median pair ratio over pairs resampled with replacement."""
    rng = random.Random(1)
    medians = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(rounds))
    return medians[int(0.05 * rounds)], medians[int(0.95 * rounds)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--class", dest="class_name", default="W")
    parser.add_argument("--nprocs", type=int, default=4)
    parser.add_argument("--pairs", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=None, help="sections (pairs with --in-process) per job")
    parser.add_argument("--in-process", action="store_true", help="annotations on and off within each job")
    parser.add_argument("--jobs", type=int, default=4, help="jobs of --in-process")
    args = parser.parse_args()

    problem = CLASSES[args.class_name.upper()]
    ops = official_op_count(problem.na, problem.nonzer, problem.niter)
    if args.in_process:
        return in_process(args, ops)
    args.repeat = args.repeat or 10
    on_times: list[float] = []
    off_times: list[float] = []
    ratios: list[float] = []
    with tempfile.TemporaryDirectory() as work:
        for pair in range(args.pairs):
            medians = {}
            for annotated in (True, False) if pair % 2 == 0 else (False, True):
                times = run_job(args.class_name, args.nprocs, args.repeat, annotated, Path(work) / "traces")["TIMES"]
                (on_times if annotated else off_times).extend(times)
                medians[annotated] = statistics.median(times)
            ratios.append(medians[True] / medians[False])
            print(f"  pair {pair + 1:2d}: annotated {medians[True]:.4f} s, MA_DISABLE=1 {medians[False]:.4f} s"
                  f"  (medians of {args.repeat})  ratio {ratios[-1]:.3f}", flush=True)

    print(f"class {problem.name}, {args.nprocs} ranks, {args.pairs} alternating pairs of jobs x {args.repeat} timed "
          f"sections (medians):")
    ratio = report(ops, ("port (MA_DISABLE=1)", off_times), ("annotated (ma run)", on_times), ratios,
                   "annotated / disabled time")
    print("  (goal <= 1.03)")
    return 0 if ratio <= 1.03 else 1


def report(ops: float, off: tuple[str, list[float]], on: tuple[str, list[float]], ratios: list[float],
           what: str) -> float:
    """Print the median times and Mop/s of both sides, the median pair ratio and its interval; return it."""
    medians = {}
    for label, times in (off, on):
        medians[label] = statistics.median(times)
        print(f"  {label + ':':<26}{medians[label]:7.4f} s  {ops / medians[label] / 1e6:9.2f} Mop/s")
    ratio = statistics.median(ratios)
    low, high = bootstrap_interval(ratios)
    print(f"ratio {what} = {ratio:.3f}  (median of {len(ratios)} pair ratios; 90 % bootstrap interval "
          f"{low:.3f} .. {high:.3f}; pooled medians {medians[on[0]] / medians[off[0]]:.3f})")
    return ratio


def in_process(args: argparse.Namespace, ops: float) -> int:
    repeat = args.repeat or 20
    on_times: list[float] = []
    off_times: list[float] = []
    ratios: list[float] = []
    with tempfile.TemporaryDirectory() as work:
        for job in range(args.jobs):
            times = run_job(args.class_name, args.nprocs, repeat, True, Path(work) / "traces", switch=True)
            on_times.extend(times["ON"])
            off_times.extend(times["OFF"])
            job_ratios = [on / off for on, off in zip(times["ON"], times["OFF"])]
            ratios.extend(job_ratios)
            print(f"  job {job + 1}: median ratio of {repeat} pairs {statistics.median(job_ratios):.3f}", flush=True)
    print(f"class {args.class_name.upper()}, {args.nprocs} ranks, {args.jobs} jobs x {repeat} pairs of timed sections, "
          "annotations on and off in the same processes (medians):")
    report(ops, ("annotations off (no-ops)", off_times), ("annotations on", on_times), ratios, "on / off")
    return 0


if __name__ == "__main__":
    sys.exit(main())
