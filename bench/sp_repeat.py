"""NPB SP's timed section, repeated in one MPI job with the annotations switched on and off: the worker of
``bench/sp_speed.py --in-process``.

    ma run -n P -- python bench/sp_repeat.py --class W --repeat R [--niter N]

Sets SP up once and runs NPB's untimed first step. Then R pairs of timed sections, each NPB's: the state
re-initialised, a barrier, the niter steps, the slowest rank's time, and (with the class's niter) the
verification. In each pair one section runs with the annotations bound to the runtime and one with them
bound to the no-ops of MA_DISABLE=1, in alternating order; rank 0 prints ``ON t ...`` and ``OFF t ...``.
Both halves of a pair run seconds apart in the same processes, so most of the host's drift cancels; what
differs is what the annotations do (the PMPI library, and the subroutines decorated at import, stay live
in both).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ma  # first: loads the PMPI library before MPI starts, when annotations are on
from examples.npb_common.mpi import start_mpi
from examples.npb_sp import sp
from examples.npb_sp.exact import initialize


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--class", dest="class_name", default="W")
    parser.add_argument("--repeat", type=int, default=3, help="pairs of sections")
    parser.add_argument("--niter", type=int, default=None, help="steps per section (default: the class's)")
    args = parser.parse_args()
    if ma.DISABLED:
        raise SystemExit("sp_repeat.py compares the runtime with the no-ops: run it under ma run, without MA_DISABLE")
    MPI = start_mpi()
    comm = MPI.COMM_WORLD
    problem, niter = sp.resolve_class(args.class_name, args.niter)
    st = sp.setup(problem, niter, comm)
    with ma.subroutine("warmup"):
        sp.adi(st)

    def timed_section() -> float:
        initialize(st)
        comm.Barrier()
        start = MPI.Wtime()
        sp.timed_loop(st)
        slowest: float = comm.allreduce(MPI.Wtime() - start, op=MPI.MAX)
        if niter == problem.niter:
            xcr, xce = sp.norms(st)
            errors = [abs(x - r) / r for x, r in zip([*xcr, *xce], [*problem.xcr, *problem.xce], strict=True)]
            if not max(errors) <= sp.VERIFY_EPSILON:
                raise SystemExit(f"verification unsuccessful: largest relative error {max(errors):.3e}")
        return slowest

    from ma._noop import bindings

    noops = bindings(ma.MPI_ANNOTATIONS)
    annotations: dict[str, Any] = {name: getattr(ma, name) for name in noops}
    times: dict[str, list[float]] = {"ON": [], "OFF": []}
    for pair in range(args.repeat):
        for on in (True, False) if pair % 2 == 0 else (False, True):
            vars(ma).update(annotations if on else noops)  # what ``ma.flop`` & co. look up at each call
            times["ON" if on else "OFF"].append(timed_section())
    vars(ma).update(annotations)
    if comm.rank == 0:
        for key, values in times.items():
            print(f"{key} " + " ".join(f"{t:.6f}" for t in values), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
