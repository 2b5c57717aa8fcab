"""NPB CG's timed section, repeated in one MPI job: the worker that bench/cg_overhead.py launches.

    mpiexec -n P python bench/cg_repeat.py --class W --repeat R [--switch]

Sets the problem up once, runs NPB's untimed warm-up iteration, then R times: x reset to ones, a barrier,
the niter timed outer iterations (exactly NPB's timed section), the slowest rank's time. Each repetition
is verified against NPB's zeta. Rank 0 prints one line, ``TIMES t1 t2 ...`` (seconds), for the bench to
read. Repeating in-process spreads the seconds of interpreter and MPI start-up over R samples.

With --switch (under ``ma run``), R pairs of sections instead: in each pair one section runs with the
annotations bound to the runtime and one with them bound to the no-ops of MA_DISABLE=1, in alternating
order, and rank 0 prints ``ON t ...`` and ``OFF t ...``. Both halves of a pair run a fraction of a second
apart in the same processes, so the host's drift and the job's placement of ranks on cores cancel; what
differs is only what the annotations do (the PMPI library and the decorated subroutines stay in both).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ma  # noqa: E402  (first: loads the PMPI library before MPI starts, when annotations are on)
from examples.npb_cg import cg  # noqa: E402
from examples.npb_cg.classes import VERIFY_EPSILON, relative_error  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--class", dest="class_name", default="W")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--switch", action="store_true",
                        help="pairs of sections, annotations on and off (needs the runtime: ma run)")
    args = parser.parse_args()
    if args.switch and ma.DISABLED:
        raise SystemExit("--switch compares the runtime with the no-ops: run it without MA_DISABLE")

    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    problem, niter = cg.resolve_class(args.class_name, None)
    st = cg.setup(problem, niter, comm)
    cg.reset_x(st)
    with ma.subroutine("warmup"):
        cg.power_iteration(st)

    def timed_section() -> float | None:
        cg.reset_x(st)
        comm.Barrier()
        start = MPI.Wtime()
        history = cg.timed_loop(st, None)
        slowest: float = comm.allreduce(MPI.Wtime() - start, op=MPI.MAX)
        error = relative_error(history[-1][1], problem.zeta_verify)
        if not error <= VERIFY_EPSILON:
            if comm.rank == 0:
                print(f"VERIFICATION UNSUCCESSFUL: zeta relative error {error:.3e}", flush=True)
            return None
        return slowest

    lines: dict[str, list[float]] = {}
    if args.switch:
        from ma._noop import bindings

        noops = bindings(ma.MPI_ANNOTATIONS)
        annotations: dict[str, Any] = {name: getattr(ma, name) for name in noops}
        for pair in range(args.repeat):
            for on in (True, False) if pair % 2 == 0 else (False, True):
                vars(ma).update(annotations if on else noops)  # what ``ma.flop`` & co. look up at each call
                seconds = timed_section()
                if seconds is None:
                    return 1
                lines.setdefault("ON" if on else "OFF", []).append(seconds)
        vars(ma).update(annotations)
    else:
        for _ in range(args.repeat):
            seconds = timed_section()
            if seconds is None:
                return 1
            lines.setdefault("TIMES", []).append(seconds)
    if comm.rank == 0:
        for key, times in lines.items():
            print(f"{key} " + " ".join(f"{t:.6f}" for t in times), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
