"""NPB CG's timed section, repeated in one MPI job: the worker that bench/cg_overhead.py launches.

    mpiexec -n P python bench/cg_repeat.py --class W --serve SOCKET
    ma run -n P -- python bench/cg_repeat.py --class W --switch --repeat R

Sets the problem up once and runs NPB's untimed warm-up iteration. Then each timed section is x reset to
ones, a barrier, the niter timed outer iterations (exactly NPB's timed section) and the slowest rank's
time, verified against NPB's zeta. Repeating in-process spreads the seconds of interpreter and MPI
start-up over many samples.

With --serve, every rank connects to the bench's Unix socket and runs a section each time it is sent
``g`` (it sleeps in ``recv`` meanwhile, taking no CPU), until ``q``; rank 0 answers each section with its
seconds (``FAIL`` when unverified). The bench runs an annotated and a MA_DISABLE=1 job side by side this
way and alternates their sections. With --noops as well (under ``ma run``), the served sections run with the
annotations bound to the no-ops while the runtime and the PMPI library stay live.

With --switch (under ``ma run``), R pairs of sections instead: in each pair one section runs with the
annotations bound to the runtime and one with them bound to the no-ops of MA_DISABLE=1, in alternating
order, and rank 0 prints ``ON t ...`` and ``OFF t ...``. Both halves of a pair run a fraction of a second
apart in the same processes, so the host's drift and the job's placement of ranks on cores cancel; what
differs is only what the annotations do (the PMPI library and the decorated subroutines stay in both).
"""

from __future__ import annotations

import argparse
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ma
from examples.npb_cg import cg
from examples.npb_cg.classes import VERIFY_EPSILON, relative_error
from examples.npb_common.mpi import start_mpi


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--class", dest="class_name", default="W")
    parser.add_argument("--repeat", type=int, default=10, help="pairs of sections with --switch")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--serve", metavar="SOCKET", help="run a section on each order from this Unix socket")
    mode.add_argument("--switch", action="store_true",
                      help="pairs of sections, annotations on and off (needs the runtime: ma run)")
    parser.add_argument("--noops", action="store_true",
                        help="with --serve: the runtime live, the annotations bound to its no-ops")
    args = parser.parse_args()
    if (args.switch or args.noops) and ma.DISABLED:
        raise SystemExit("--switch and --noops compare the runtime with the no-ops: run without MA_DISABLE")
    if args.noops and not args.serve:
        raise SystemExit("--noops goes with --serve (--switch alternates the no-ops itself)")

    MPI = start_mpi()
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

    from ma._noop import bindings

    noops = bindings(ma.MPI_ANNOTATIONS)
    annotations: dict[str, Any] = {name: getattr(ma, name) for name in noops}
    if args.serve:
        if args.noops:
            vars(ma).update(noops)  # what ``ma.flop`` & co. look up at each call
        return serve(args.serve, comm.rank, timed_section)
    lines: dict[str, list[float]] = {"ON": [], "OFF": []}
    for pair in range(args.repeat):
        for on in (True, False) if pair % 2 == 0 else (False, True):
            vars(ma).update(annotations if on else noops)  # what ``ma.flop`` & co. look up at each call
            seconds = timed_section()
            if seconds is None:
                return 1
            lines["ON" if on else "OFF"].append(seconds)
    vars(ma).update(annotations)
    if comm.rank == 0:
        for key, times in lines.items():
            print(f"{key} " + " ".join(f"{t:.6f}" for t in times), flush=True)
    return 0


def serve(path: str, rank: int, timed_section: Callable[[], float | None]) -> int:
    """Run a timed section on each ``g`` from the bench's socket until ``q`` (or the bench closes it)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as link:
        link.connect(path)
        link.sendall(f"{rank}\n".encode())
        while link.recv(1) == b"g":
            seconds = timed_section()
            if rank == 0:
                link.sendall(b"FAIL\n" if seconds is None else f"{seconds:.6f}\n".encode())
            if seconds is None:
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
