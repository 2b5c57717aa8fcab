"""What the modeling assertions cost NPB CG: class W on 4 ranks, annotated vs MA_DISABLE=1.

Each round starts two jobs side by side: one under ``ma run`` (PMPI library preloaded, traces written) and
one through the same mpiexec with MA_DISABLE=1. Both run bench/cg_repeat.py --serve: set up, warm up, then
wait, asleep, for orders on a Unix socket. The bench then alternates them, one timed section (NPB's, verified,
timed as NPB does: the slowest rank) at a time: annotated, disabled, disabled, annotated, ..., after one
untimed section of each. Only one job computes at any moment. Printed: each round's median ratio of
adjacent sections (annotated / disabled), the median over all rounds with a 90 % bootstrap interval
(rounds resampled, then sections within them; goal <= 1.03), and the port's Mop/s next to the annotated
run's.

Why sections and not whole jobs: on a shared VM the speed steps by 10-20 % from one second to
the next (and 4 ranks oversubscribe 2 cores). Sections a second apart see the same host; whole jobs ten
seconds apart do not. What stays per job (where its code and data land) is what the rounds sample.

--variant puts another job A beside the same port (job B), to take the overhead apart:
  annotated  ``ma run``, annotations live (the default; the figure the goal is about);
  noops      ``ma run``, runtime and PMPI library live, the annotations bound to the no-ops of MA_DISABLE=1
             (bench/cg_repeat.py --noops): what a job carries besides the annotations' own work;
  pmpi       ``ma run`` with MA_DISABLE=1: the PMPI library alone;
  null       a second MA_DISABLE=1 job: identical programs, so its ratio and interval show what the method
             itself can resolve on the host (--null is short for it).
Most of the round-to-round spread is address-space layout (Mytkowicz et al., "Producing wrong data without
doing anything obviously wrong!", ASPLOS 2009): compare the rounds of --null with those of --null --no-aslr.
The rounds sample layouts; randomisation stays on by default, since a fixed layout is one sample, not the
mean.

--in-process measures the annotations alone: each of --rounds jobs (under ``ma run``) alternates NPB's
timed section with the annotations bound to the runtime and to the no-ops of MA_DISABLE=1 (bench/cg_repeat.py
--switch). It leaves out what a job carries besides the annotations (the PMPI library:
bench/pmpi_overhead.py; the larger process).

Usage: python bench/cg_overhead.py [--class W] [--nprocs 4] [--rounds 6] [--repeat 20] [--bind-to core]
       python bench/cg_overhead.py --variant noops|pmpi|null [--rounds 6] [--no-aslr]
       python bench/cg_overhead.py --in-process [--rounds 4] [--repeat 20]
"""

from __future__ import annotations

import argparse
import os
import random
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
WORKER = REPO / "bench" / "cg_repeat.py"
sys.path.insert(0, str(REPO))
from examples.npb_cg.classes import CLASSES, official_op_count  # noqa: E402

SETUP_SECONDS = 600  # longest wait for a job's ranks to connect (set-up and warm-up under load)


@dataclass(frozen=True)
class JobKind:
    """How a bench job starts: under ``ma run`` or a plain mpiexec, with the annotations live or not."""

    label: str
    under_ma_run: bool
    disabled: bool  # MA_DISABLE=1: the no-ops from import on, no runtime
    noops: bool = False  # runtime live, annotations rebound to the no-ops (cg_repeat.py --noops)


PORT = JobKind("port (MA_DISABLE=1)", under_ma_run=False, disabled=True)
VARIANTS = {
    "annotated": JobKind("annotated (ma run)", under_ma_run=True, disabled=False),
    "noops": JobKind("ma run, no-op annotations", under_ma_run=True, disabled=False, noops=True),
    "pmpi": JobKind("ma run, MA_DISABLE=1", under_ma_run=True, disabled=True),
    "null": JobKind("port again (MA_DISABLE=1)", under_ma_run=False, disabled=True),
}


def job_argv(args: argparse.Namespace, kind: JobKind, trace_dir: Path, *worker_args: str) -> list[str]:
    command = [sys.executable, str(WORKER), "--class", args.class_name, *worker_args,
               *(["--noops"] if kind.noops else [])]
    mpiexec = [str(BIN / "mpiexec"), *(["-bind-to", args.bind_to] if args.bind_to != "none" else [])]
    # setarch -R turns address-space randomisation off for the launcher and everything it starts.
    prefix = ["setarch", "-R"] if args.no_aslr else []
    if kind.under_ma_run:
        return [*prefix, str(BIN / "ma"), "run", "-n", str(args.nprocs), "--launcher", shlex.join(mpiexec),
                "--trace-dir", str(trace_dir), "--", *command]
    return [*prefix, *mpiexec, "-n", str(args.nprocs), *command]


def job_env(kind: JobKind, settings: Sequence[str] = ()) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MA_")}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    if kind.disabled:
        env["MA_DISABLE"] = "1"
    for setting in settings:
        name, value = setting.split("=", 1)
        env[name] = value
    return env


class ServedJob:
    """One MPI job of bench/cg_repeat.py --serve: its ranks' sockets, and a timed section on demand."""

    def __init__(self, args: argparse.Namespace, kind: JobKind, work: Path, name: str) -> None:
        self.label = f"{name}, {kind.label},"
        self.log_path = work / f"{name}.log"
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        path = str(work / f"{name}.sock")
        self.listener.bind(path)
        self.listener.listen(args.nprocs)
        self.listener.settimeout(1.0)
        self.log: IO[str] = open(self.log_path, "w")  # noqa: SIM115 (open for the job's life, closed in stop())
        argv = job_argv(args, kind, work / "traces", "--serve", path)
        env = job_env(kind, args.env if kind is not PORT else ())
        self.process = subprocess.Popen(argv, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self.nprocs = args.nprocs
        self.ranks: dict[int, socket.socket] = {}
        self.results: IO[str] | None = None  # rank 0's answers, once connected

    def connect(self) -> None:
        """Wait until every rank has set up, warmed up and connected."""
        deadline = time.monotonic() + SETUP_SECONDS
        while len(self.ranks) < self.nprocs:
            try:
                link, _ = self.listener.accept()
            except TimeoutError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.fail("did not reach its timed sections")
                continue
            link.settimeout(SETUP_SECONDS)
            self.ranks[int(link.makefile("r").readline())] = link
        self.results = self.ranks[0].makefile("r")

    def section(self) -> float:
        for link in self.ranks.values():
            link.sendall(b"g")
        assert self.results is not None, "section() before connect()"
        answer = self.results.readline().strip()
        if not answer or answer == "FAIL":
            self.fail("section unverified" if answer else "stopped in a section")
        return float(answer)

    def stop(self) -> None:
        for link in self.ranks.values():
            link.sendall(b"q")
        if self.process.wait(timeout=SETUP_SECONDS) != 0:
            self.fail(f"exited with {self.process.returncode}")
        self.close()

    def close(self) -> None:
        for link in self.ranks.values():
            link.close()
        self.listener.close()
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.log.close()

    def fail(self, what: str) -> None:
        self.close()
        raise SystemExit(f"{self.label} job {what}:\n{self.log_path.read_text()}")


def side_by_side_round(args: argparse.Namespace, number: int) -> tuple[list[float], list[float]]:
    """Job A (the --variant) and the port side by side, their sections alternated: the seconds of each."""
    times: dict[bool, list[float]] = {True: [], False: []}
    with tempfile.TemporaryDirectory() as work:
        # Job A is the --variant, job B the port. Which starts first alternates, so that start order cannot
        # bias the figure.
        jobs: dict[bool, ServedJob] = {}
        try:
            for a in (True, False) if number % 2 == 0 else (False, True):
                jobs[a] = ServedJob(args, VARIANTS[args.variant] if a else PORT, Path(work), "A" if a else "B")
            for job in jobs.values():
                job.connect()
            # The first section of a pair follows its own job's previous one and runs warmer; the orders
            # alternate so that each job is first in half the pairs. One untimed section each (B, then A)
            # puts pair 0 on the same footing (without it, identical jobs measured 1.017 apart).
            for a in (False, True):
                jobs[a].section()
            for pair in range(args.repeat):
                for a in (True, False) if pair % 2 == 0 else (False, True):
                    times[a].append(jobs[a].section())
            for job in jobs.values():
                job.stop()
        finally:
            for job in jobs.values():
                job.close()
    return times[True], times[False]


def in_process_round(args: argparse.Namespace, number: int) -> tuple[list[float], list[float]]:
    """One annotated job switching its annotations on and off between sections: the seconds of each."""
    with tempfile.TemporaryDirectory() as work:
        annotated = VARIANTS["annotated"]
        argv = job_argv(args, annotated, Path(work) / "traces", "--switch", "--repeat", str(args.repeat))
        done = subprocess.run(argv, env=job_env(annotated, args.env), capture_output=True, text=True, timeout=3600)
    lines = {line.split()[0]: [float(t) for t in line.split()[1:]] for line in done.stdout.splitlines()
             if line.startswith(("ON ", "OFF "))}
    if done.returncode != 0 or len(lines) != 2:
        raise SystemExit(f"job {number + 1} failed:\n{done.stdout}\n{done.stderr}")
    return lines["ON"], lines["OFF"]


def bootstrap_interval(rounds: list[list[float]], draws: int = 5000) -> tuple[float, float]:
    """5th and 95th percentile of the median ratio, resampling rounds and then the sections within them:
    what differs from job to job is sampled as well as what differs from section to section."""
    rng = random.Random(1)
    medians = []
    for _ in range(draws):
        sample = [ratio for chosen in rng.choices(rounds, k=len(rounds))
                  for ratio in rng.choices(chosen, k=len(chosen))]
        medians.append(statistics.median(sample))
    medians.sort()
    return medians[int(0.05 * draws)], medians[int(0.95 * draws)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--class", dest="class_name", default="W")
    parser.add_argument("--nprocs", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=6, help="pairs of jobs (jobs with --in-process)")
    parser.add_argument("--repeat", type=int, default=20, help="pairs of timed sections per round")
    parser.add_argument("--bind-to", default="none", help="mpiexec's -bind-to for both jobs (none, core, ...)")
    parser.add_argument("--no-aslr", action="store_true",
                        help="jobs without address-space randomisation (setarch -R): one layout per program")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting for job A only (e.g. MA_COUNTERS=none), to probe what it costs")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--in-process", action="store_true", help="annotations on and off within each job")
    mode.add_argument("--variant", choices=sorted(VARIANTS), default="annotated",
                      help="job A beside the port: annotated (default), noops, pmpi or null (see above)")
    mode.add_argument("--null", dest="variant", action="store_const", const="null",
                      help="short for --variant null: how far apart identical jobs measure")
    args = parser.parse_args()
    for setting in args.env:
        if "=" not in setting or not setting.split("=", 1)[0]:
            parser.error(f"--env {setting!r}: expected NAME=VALUE")

    problem = CLASSES[args.class_name.upper()]
    ops = official_op_count(problem.na, problem.nonzer, problem.niter)
    run_round = in_process_round if args.in_process else side_by_side_round
    on_times: list[float] = []
    off_times: list[float] = []
    rounds: list[list[float]] = []  # each round's ratios of adjacent sections, on / off
    for number in range(args.rounds):
        on, off = run_round(args, number)
        on_times.extend(on)
        off_times.extend(off)
        rounds.append([a / b for a, b in zip(on, off, strict=False)])
        print(f"  round {number + 1}: median ratio of {args.repeat} adjacent pairs of sections "
              f"{statistics.median(rounds[-1]):.3f}", flush=True)
    if args.in_process:
        print(f"class {problem.name}, {args.nprocs} ranks, {args.rounds} jobs x {args.repeat} pairs of timed "
              "sections, annotations on and off in the same processes:")
        labels = ("annotations off (no-ops)", "annotations on")
    else:
        kind = VARIANTS[args.variant]
        print(f"class {problem.name}, {args.nprocs} ranks, {args.rounds} rounds of two jobs side by side "
              f"({kind.label}; {PORT.label}) x {args.repeat} pairs of alternated timed sections:")
        labels = (PORT.label, kind.label)
    for label, times in zip(labels, (off_times, on_times), strict=False):
        median = statistics.median(times)
        print(f"  {label + ':':<26}{median:7.4f} s  {ops / median / 1e6:9.2f} Mop/s  (median of {len(times)})")
    ratio = statistics.median(ratio for ratios in rounds for ratio in ratios)
    low, high = bootstrap_interval(rounds)
    print(f"ratio {labels[1]} / {labels[0]} = {ratio:.3f}  (median of {len(on_times)} adjacent pairs; 90 % "
          f"bootstrap interval {low:.3f} .. {high:.3f})")
    if args.in_process or args.variant != "annotated":
        return 0
    print("  (goal <= 1.03)")
    return 0 if ratio <= 1.03 else 1


if __name__ == "__main__":
    sys.exit(main())
