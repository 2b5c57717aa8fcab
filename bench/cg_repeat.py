"""NPB CG's timed section, repeated in one MPI job: the worker that bench/cg_overhead.py launches.

    mpiexec -n P python bench/cg_repeat.py --class W --repeat R

Sets the problem up once, runs NPB's untimed warm-up iteration, then R times: x reset to ones, a barrier,
the niter timed outer iterations (exactly NPB's timed section), the slowest rank's time. Each repetition
is verified against NPB's zeta. Rank 0 prints one line, ``TIMES t1 t2 ...`` (seconds), for the bench to
read. Repeating in-process spreads the seconds of interpreter and MPI start-up over R samples.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ma  # noqa: E402  (first: loads the PMPI library before MPI starts, when annotations are on)
from examples.npb_cg import cg  # noqa: E402
from examples.npb_cg.classes import VERIFY_EPSILON, relative_error  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--class", dest="class_name", default="W")
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()

    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    problem, niter = cg.resolve_class(args.class_name, None)
    st = cg.setup(problem, niter, comm)
    cg.reset_x(st)
    with ma.subroutine("warmup"):
        cg.power_iteration(st)

    times = []
    for _ in range(args.repeat):
        cg.reset_x(st)
        comm.Barrier()
        start = MPI.Wtime()
        history = cg.timed_loop(st, None)
        slowest = comm.allreduce(MPI.Wtime() - start, op=MPI.MAX)
        error = relative_error(history[-1][1], problem.zeta_verify)
        if not error <= VERIFY_EPSILON:
            if comm.rank == 0:
                print(f"VERIFICATION UNSUCCESSFUL: zeta relative error {error:.3e}", flush=True)
            return 1
        times.append(slowest)
    if comm.rank == 0:
        print("TIMES " + " ".join(f"{t:.6f}" for t in times), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
