"""What annotating the compiled CG costs: the Fortran port (``examples/npb_cg_fortran``) annotated against its build
with every annotation a call that does nothing (``ma config --disabled``), at class A on one rank.

- **Instructions** (Callgrind, which the host's load does not move): each build runs ``--niter 1`` and ``--niter
  1+K`` under Callgrind; the difference is K iterations of the timed loop, start-up, ``makea`` and the warm-up
  iteration cancelled. The annotated build runs with its runtime live (a trace, no counter, no periodic flush);
  no MPI launcher (MPICH starts a singleton). Goal: the annotated over the disabled at most 1.01.
- **Wall clock** (``--rounds R``): the two builds alternately, R times each, NPB's own time of the timed loop
  (the annotated one under ``ma run``, as a user runs it); the ratio of the medians and, as its interval, the
  range of the per-round ratios. A timing: take it on a quiet host.

Usage: python bench/fortran_cg_cost.py [--class A] [--iterations 2] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
PORT = REPO / "examples" / "npb_cg_fortran"
MPICC = Path("/usr/bin/mpicc.mpich")  # Debian's MPICH: the MPI with Fortran bindings the port is tested with
NPB_TIME = re.compile(r"Time in seconds =\s+([\d.]+)")


def build(work: Path) -> dict[str, Path]:
    """``make`` both builds into ``work`` with this environment's ``ma``."""
    if not MPICC.is_file():
        raise SystemExit(f"{MPICC} (Debian's MPICH) is not installed: scripts/setup.sh installs it")
    done = subprocess.run(["make", "-C", str(PORT), f"BUILD={work}", f"MPICC={MPICC}",
                           f"MA={Path(sys.executable).parent / 'ma'}"], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"make in {PORT} failed:\n{done.stderr[-3000:]}")
    return {"annotated": work / "cg", "disabled": work / "cg_disabled"}


def clean_environment(**extra: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("MA_") and k != "LD_PRELOAD"}, **extra}


def instructions(program: Path, klass: str, niter: int, env: dict[str, str]) -> int:
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", str(program),
                           "--class", klass, "--niter", str(niter)], env=env, capture_output=True, text=True,
                          timeout=3600, check=False)
    found = re.search(r"Collected\s*:\s*(\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"callgrind run of {program.name} failed:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def loop_instructions(programs: dict[str, Path], klass: str, iterations: int, work: Path) -> dict[str, int]:
    """Instructions of ``iterations`` iterations of the timed loop, per build."""
    envs = {"annotated": clean_environment(MA_TRACE_DIR=str(work / "traces"), MA_COUNTERS="none",
                                           MA_FLUSH_SECONDS="0"),
            "disabled": clean_environment()}
    # Four runs of one process each, as many at once as there are cores: instruction counts do not depend on load
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        counts = {(name, niter): pool.submit(instructions, program, klass, niter, envs[name])
                  for name, program in programs.items() for niter in (1 + iterations, 1)}
        return {name: counts[name, 1 + iterations].result() - counts[name, 1].result() for name in programs}


def npb_seconds(command: list[str]) -> float:
    done = subprocess.run(command, env=clean_environment(), capture_output=True, text=True, check=False)
    found = NPB_TIME.search(done.stdout)
    if done.returncode != 0 or found is None or "VERIFICATION SUCCESSFUL" not in done.stdout:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return float(found.group(1))


def wall_ratios(programs: dict[str, Path], klass: str, rounds: int, work: Path) -> list[tuple[float, float]]:
    """(annotated, disabled) seconds of the timed loop per round, the two builds alternately."""
    ma = [sys.executable, "-m", "ma_cli.main", "run", "-n", "1", "--trace-dir", str(work / "timed"), "--"]
    launcher = shutil.which("mpiexec.mpich") or "mpiexec.mpich"
    return [(npb_seconds([*ma, str(programs["annotated"]), "--class", klass]),
             npb_seconds([launcher, "-n", "1", str(programs["disabled"]), "--class", klass]))
            for _ in range(rounds)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--class", dest="klass", default="A", help="NPB class (default A)")
    parser.add_argument("--iterations", type=int, default=2, help="timed-loop iterations counted (default 2)")
    parser.add_argument("--rounds", type=int, default=5, help="wall-clock rounds, 0 for none (default 5)")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (scripts/setup.sh installs it)")
    with tempfile.TemporaryDirectory() as name:
        work = Path(name)
        programs = build(work)
        counted = loop_instructions(programs, args.klass, args.iterations, work)
        ratio = counted["annotated"] / counted["disabled"]
        print(f"CG {args.klass}, 1 rank, {args.iterations} iterations of the timed loop (Callgrind): annotated "
              f"{counted['annotated']:,} / disabled {counted['disabled']:,} instructions = {ratio:.5f} "
              f"({(ratio - 1) * 100:+.3f} %; goal at most +1 %)")
        if args.rounds:
            pairs = wall_ratios(programs, args.klass, args.rounds, work)
            annotated, disabled = (np.array(column) for column in zip(*pairs, strict=True))
            per_round = annotated / disabled
            print(f"wall clock of the timed loop, {args.rounds} rounds: annotated {np.median(annotated):.3f} s / "
                  f"disabled {np.median(disabled):.3f} s (medians) = {np.median(annotated) / np.median(disabled):.3f}"
                  f"; per round {per_round.min():.3f}-{per_round.max():.3f}")
    return 0 if ratio <= 1.01 else 1


if __name__ == "__main__":
    sys.exit(main())
