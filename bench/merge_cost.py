"""The cost of the merged trace at exit (ma_runtime/merge.py): measured at a few rank counts, simulated at 10^4-10^5.

1. Real runs: ``mpiexec -n N`` of a Python program with a CG-sized site tree (~55 sites: loops, flop and MPI
   assertions, variables), ``MA_MERGE_TIMING=1``; rank 0 reports the reduction (binomial tree of MPI messages,
   from entering the merge to holding every rank's part) and the write of ``job.ma.npz``. The program ends with
   a barrier so that the ranks enter the merge together: the figure is the merge, not the skew of the ranks.
   More ranks than cores are oversubscribed: the reduction then waits for the scheduler as much as for MPI.
2. Simulation at 10^4-10^5 ranks: the size of one rank's part (pickled, as it travels) from a CG-shaped trace;
   the binomial tree's depth and the bytes each rank sends (rank r sends the parts of its subtree, min(lowbit(r),
   N - r) ranks); rank 0's assembly and write of the file for N parts, timed for real in this process.

Run: .venv/bin/python bench/merge_cost.py [--ranks 4 16 64] [--simulate 10000 30000 100000]
"""

from __future__ import annotations

import argparse
import math
import os
import pickle
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import post_fixtures  # noqa: E402

from ma_runtime.merge import Bundle, build_archive, part_of, write_archive  # noqa: E402

PROGRAM = """
    from mpi4py import MPI
    import ma

    comm = MPI.COMM_WORLD
    ma.variable("na", 1400)
    ma.variable("nprocs", comm.size)
    with ma.subroutine("cg"):
        for k in range(12):
            with ma.subroutine(f"phase{k}"):
                with ma.loop("inner", "4") as lp:
                    for _ in lp.range(4):
                        with ma.flop("work", "2*na/nprocs"):
                            pass
                with ma.mpi_allreduce("norm", "8"):
                    comm.allreduce(1.0)
    comm.Barrier()
"""
TIMING = re.compile(r"merged (\d+) ranks \((\d+) structures\): reduction ([\d.]+) s, write ([\d.]+) s")


def real_runs(counts: list[int]) -> None:
    mpiexec = Path(sys.executable).parent / "mpiexec"
    print(f"real runs (mpiexec, {os.cpu_count()} cores: more ranks than that are oversubscribed):")
    print(f"  {'ranks':>6} {'reduction s':>12} {'write s':>9} {'file KiB':>9} {'job wall s':>11}")
    with tempfile.TemporaryDirectory(prefix="ma-merge-bench-") as tmp:
        (Path(tmp) / "prog.py").write_text(textwrap.dedent(PROGRAM))
        for n in counts:
            env = {**os.environ, "MA_TRACE_LAYOUT": "merged", "MA_MERGE_TIMING": "1",
                   "MA_TRACE_DIR": str(Path(tmp) / f"t{n}")}
            start = time.perf_counter()
            done = subprocess.run([str(mpiexec), "-n", str(n), sys.executable, "prog.py"], cwd=tmp, env=env,
                                  capture_output=True, text=True, timeout=900)
            wall = time.perf_counter() - start
            found = TIMING.search(done.stderr)
            if done.returncode != 0 or not found:
                print(f"  {n:>6} failed: {done.stderr.strip()[-300:]}")
                continue
            size = (Path(tmp) / f"t{n}" / "job.ma.npz").stat().st_size / 1024
            print(f"  {n:>6} {float(found.group(3)):>12.4f} {float(found.group(4)):>9.4f} {size:>9.1f} {wall:>11.2f}")


def simulate(counts: list[int]) -> None:
    program = post_fixtures.cg_program(na=150000, nonzer=15, niter=75, flop_noise=0.05)
    base = [part_of(post_fixtures.make_trace(program, r, 1024, run_id="bench")) for r in range(4)]
    one = Bundle()
    one.add(base[1])
    part_bytes = len(pickle.dumps(one, protocol=pickle.HIGHEST_PROTOCOL))
    numbers = len(base[1][2]) + len(base[1][3])
    structure = len(base[1][1]) + len(base[1][4])
    per_rank = part_bytes - structure
    print(f"\nsimulation: one rank's part {part_bytes / 1024:.1f} KiB pickled ({numbers / 1024:.1f} KiB of doubles, "
          f"{structure / 1024:.1f} KiB structure and header text, sent once per distinct structure)")
    print(f"  {'ranks':>7} {'depth':>6} {'max sent MiB':>13} {'mean sent KiB':>14} {'root recv MiB':>14} "
          f"{'assemble+write s':>17} {'file MiB':>9}")
    for n in counts:
        ranks = np.arange(1, n)
        subtree = np.minimum(ranks & -ranks, n - ranks)  # parts rank r sends to its parent
        sent = subtree * per_rank + structure
        bundle = Bundle()
        for r in range(n):
            _, *rest = base[r % len(base)]
            bundle.add((r, *rest))  # type: ignore[arg-type]
        with tempfile.TemporaryDirectory(prefix="ma-merge-sim-") as tmp:
            start = time.perf_counter()
            path = write_archive(Path(tmp), build_archive(bundle, n))
            elapsed = time.perf_counter() - start
            size = path.stat().st_size
        print(f"  {n:>7} {math.ceil(math.log2(n)):>6} {sent.max() / 2**20:>13.1f} {sent.mean() / 1024:>14.1f} "
              f"{(n - 1) * per_rank / 2**20:>14.1f} {elapsed:>17.2f} {size / 2**20:>9.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, nargs="*", default=[4, 16, 64])
    parser.add_argument("--simulate", type=int, nargs="*", default=[10_000, 30_000, 100_000])
    args = parser.parse_args()
    if args.ranks:
        real_runs(args.ranks)
    if args.simulate:
        simulate(args.simulate)


if __name__ == "__main__":
    main()
