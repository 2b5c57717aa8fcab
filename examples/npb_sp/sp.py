"""NPB 3.4 MPI SP in Python + mpi4py: driver, verification, report and command line.

    mpiexec -n P python examples/npb_sp/sp.py --class S [--niter N]

P must be a perfect square (1, 4, 9, 16, ...) with cells of at least 3 points. Exit status: 0 verified
(or no verification asked for, with a non-standard --niter), 1 verification failed, 2 bad process
count, class, cell size or iteration count.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if __package__ in (None, ""):
    # Run as a script: put the repository root (not this folder) on the path, import as the package.
    sys.path[0] = str(Path(__file__).resolve().parents[2])
    __package__ = "examples.npb_sp"

import numpy as np

import ma
from examples.npb_common import cli
from examples.npb_common.mpi import ROOT, start_run
from examples.npb_common.report import completed_lines

from .adi import adi, copy_faces
from .classes import CLASSES, VERIFY_EPSILON, ProblemClass, official_op_count
from .constants import Constants
from .exact import error_sums, exact_rhs, initialize, rhs_sums
from .layout import Layout, SPSetupError, make_set
from .state import SPState

if TYPE_CHECKING:
    import argparse

    from mpi4py import MPI


@dataclass
class Result:
    """Outcome on one rank; ``time`` is the slowest rank's timed loop on the root, the own one elsewhere."""

    class_name: str
    problem_size: int
    niter: int
    dt: float
    nprocs: int
    xcr: np.ndarray
    xce: np.ndarray
    verified: bool | None            # None: niter differs from the class, so nothing to compare with
    xcr_error: np.ndarray | None
    xce_error: np.ndarray | None
    time: float
    mops: float


def resolve_class(class_name: str, niter: int | None) -> tuple[ProblemClass, int]:
    """The class parameters and the number of timed steps, or SPSetupError."""
    return cli.resolve_class(CLASSES, class_name, niter, SPSetupError)


def declare_parameters(lay: Layout, niter: int) -> None:
    """The model's inputs and derived variables (MA paper section 3, vector paper section 5.1).

    ``size`` is the paper's cell size: problem_size div ncells, the smallest cell (the first
    problem_size mod ncells cells along a direction get one point more). ``csize`` and ``isize`` are the
    mean points of a cell per direction, all of them and those off the grid's faces; every rank has one
    cell in each slab, so its means are the grid's.
    """
    ma.variable("problem_size", lay.n)
    ma.variable("niter", niter)
    ma.variable("nprocs", lay.nprocs)
    ma.assign("ncells", "sqrt(nprocs)", lay.ncells)
    ma.assign("size", "floor(problem_size/ncells)", min(c.size[0] for c in lay.cells))
    ma.assign("csize", "problem_size/ncells", sum(c.size[0] for c in lay.cells) / lay.ncells)
    ma.assign("isize", "(problem_size-2)/ncells",
              sum(hi - lo for lo, hi in (c.interior(0) for c in lay.cells)) / lay.ncells)


def broadcast_inputs(problem: ProblemClass, niter: int, comm: MPI.Comm) -> tuple[int, float, int]:
    """NPB's four broadcasts from the root: niter, dt, grid_points(3), timeron."""
    values = (np.array([niter], dtype=np.int32), np.array([problem.dt]),
              np.full(3, problem.problem_size, dtype=np.int32), np.zeros(1, dtype=np.int32))
    for (name, size), buf in zip((("bcast_niter", "4"), ("bcast_dt", "8"), ("bcast_grid", "12"),
                                  ("bcast_timeron", "4")), values, strict=True):
        with ma.mpi_bcast(name, size):
            comm.Bcast(buf, root=ROOT)
    return int(values[0][0]), float(values[1][0]), int(values[2][0])


def setup(problem: ProblemClass, niter: int, comm: MPI.Comm) -> SPState:
    """NPB's start: the cells laid out (the model's parameters declared from them), NPB's broadcasts of the
    inputs, the arrays, the initial state and the forcing term."""
    layout = make_set(problem.problem_size, comm.Get_size(), comm.Get_rank())
    declare_parameters(layout, niter)           # at top level: visible to every site
    with ma.subroutine("setup"):
        niter, dt, n = broadcast_inputs(problem, niter, comm)
        # Per cell: u with two ghost layers, rhs and forcing, the eight point-wise quantities with one,
        # and the solve's lhs (15) and rhs (5) work arrays of (csize+2) x isize^2, all doubles.
        # The communicators first: MPI's own allocations for them are not the cells' (glibc's heap counts them).
        comm_solve, comm_rhs = comm.Dup(), comm.Dup()
        with ma.heap_memory("cells", "8*ncells*(5*(csize+4)^3 + 10*csize^3 + 8*(csize+2)^3 "
                                     "+ 20*(csize+2)*isize^2)"):
            st = SPState(class_name=problem.name, niter=niter, layout=layout, k=Constants.make(n, dt),
                         comm_setup=comm, comm_solve=comm_solve, comm_rhs=comm_rhs)
        with ma.subroutine("initialize"):
            initialize(st)
        with ma.subroutine("exact_rhs"):
            exact_rhs(st)
    return st


def norms(st: SPState) -> tuple[np.ndarray, np.ndarray]:
    """(xcr, xce): RMS residual / dt and RMS error, over the whole grid (NPB's verify before the comparison)."""
    from mpi4py import MPI

    scale = float(np.prod([st.layout.n - 2] * 3))
    xce = np.empty(5)
    sums = error_sums(st)
    with ma.mpi_allreduce("error_norm", "40"):
        st.comm_setup.Allreduce(sums, xce, op=MPI.SUM)
    copy_faces(st)
    xcr = np.empty(5)
    sums = rhs_sums(st)
    with ma.mpi_allreduce("rhs_norm", "40"):
        st.comm_setup.Allreduce(sums, xcr, op=MPI.SUM)
    return np.sqrt(xcr / scale) / st.k.dt, np.sqrt(xce / scale)


def timed_loop(st: SPState, on_step: Callable[[int], None] | None = None) -> None:
    with ma.loop("step", "niter") as lp:
        for step in lp.range(1, st.niter + 1):
            if on_step is not None:
                on_step(step)
            adi(st)


def run(class_name: str, niter: int | None = None, comm: MPI.Comm | None = None,
        verbose: bool = False) -> Result:
    """Run SP on ``comm`` (default COMM_WORLD); ``verbose`` prints NPB's report on the root rank."""
    MPI, comm, say = start_run(comm, verbose)
    problem, niter = resolve_class(class_name, niter)
    me = comm.Get_rank()
    say(banner(problem, niter, comm.Get_size()))

    st = setup(problem, niter, comm)
    with ma.subroutine("warmup"):
        adi(st)                               # one untimed step touches all code and data ...
        with ma.subroutine("initialize"):     # ... and the state starts again
            initialize(st)
    with ma.mpi_barrier("start", "0"):
        comm.Barrier()
    t_start = MPI.Wtime()
    timed_loop(st, lambda step: say(f" Time step {step:4d}") if step % 20 == 0 or step == 1 else None)
    t_local = MPI.Wtime() - t_start
    with ma.subroutine("verify"):
        xcr, xce = norms(st)
    t_max = np.zeros(1)
    with ma.mpi_reduce("time_max", "8"):
        comm.Reduce(np.array([t_local]), t_max, op=MPI.MAX, root=ROOT)
    elapsed = float(t_max[0]) if me == ROOT else t_local
    mops = 1.0e-6 * official_op_count(problem.problem_size, niter) / elapsed if elapsed > 0 else 0.0

    if niter == problem.niter:
        xcr_error = np.abs(xcr - np.array(problem.xcr)) / np.array(problem.xcr)
        xce_error = np.abs(xce - np.array(problem.xce)) / np.array(problem.xce)
        verified: bool | None = bool(np.all(xcr_error <= VERIFY_EPSILON) and np.all(xce_error <= VERIFY_EPSILON))
    else:
        xcr_error = xce_error = None
        verified = None
    result = Result(class_name=problem.name, problem_size=problem.problem_size, niter=niter, dt=problem.dt,
                    nprocs=comm.Get_size(), xcr=xcr, xce=xce, verified=verified, xcr_error=xcr_error,
                    xce_error=xce_error, time=elapsed, mops=mops)
    say(report(result, problem))
    return result


# --------------------------------------------------------------------------------------------------
# Report (NPB layout)
# --------------------------------------------------------------------------------------------------

def banner(problem: ProblemClass, niter: int, nprocs: int) -> str:
    n = problem.problem_size
    return "\n".join([
        "\n\n NAS Parallel Benchmarks 3.4 -- SP Benchmark (Python + mpi4py port)\n",
        f" Size: {n:4d}x{n:4d}x{n:4d}  (class {problem.name})",
        f" Iterations: {niter:4d}    dt: {problem.dt:11.7f}",
        f" Total number of processes: {nprocs:5d}\n",
    ])


def report(result: Result, problem: ProblemClass) -> str:
    lines = []
    if result.verified is None:
        lines += [f" No verification performed (niter={result.niter}; class {problem.name} verifies after "
                  f"{problem.niter})", " RMS-norms of residual"]
        lines += [f"           {m + 1:2d}{x:20.13E}" for m, x in enumerate(result.xcr)]
        lines += [" RMS-norms of solution error"]
        lines += [f"           {m + 1:2d}{x:20.13E}" for m, x in enumerate(result.xce)]
        status = "NOT PERFORMED"
    else:
        assert result.xcr_error is not None and result.xce_error is not None
        lines += [f" Verification being performed for class {problem.name}",
                  f" accuracy setting for epsilon = {VERIFY_EPSILON:20.13E}",
                  " Comparison of RMS-norms of residual"]
        for m in range(5):
            tag = "          " if result.xcr_error[m] <= VERIFY_EPSILON else " FAILURE: "
            lines.append(f"{tag}{m + 1:2d}{result.xcr[m]:20.13E}{problem.xcr[m]:20.13E}{result.xcr_error[m]:20.13E}")
        lines.append(" Comparison of RMS-norms of solution error")
        for m in range(5):
            tag = "          " if result.xce_error[m] <= VERIFY_EPSILON else " FAILURE: "
            lines.append(f"{tag}{m + 1:2d}{result.xce[m]:20.13E}{problem.xce[m]:20.13E}{result.xce_error[m]:20.13E}")
        lines.append(" Verification Successful" if result.verified else " Verification failed")
        status = "SUCCESSFUL" if result.verified else "UNSUCCESSFUL"
    n = result.problem_size
    lines += completed_lines("SP", class_name=result.class_name, size=f"{n:4d}x{n:4d}x{n:4d}", niter=result.niter,
                             time=result.time, nprocs=result.nprocs, mops=result.mops, status=status)
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------------

def main(argv: Sequence[str] | None = None) -> int:
    def check(args: argparse.Namespace, comm: MPI.Comm) -> None:
        problem, _ = resolve_class(args.class_name, args.niter)
        make_set(problem.problem_size, comm.Get_size(), comm.Get_rank())

    return cli.main(argv, prog="sp.py", description="NAS Parallel Benchmarks 3.4 SP (Python + mpi4py)",
                    class_metavar="{S,W,A,B,C}",
                    niter_help="timed steps (default: the class's; verification needs the default)",
                    check=check, setup_error=SPSetupError,
                    run=run)


if __name__ == "__main__":
    sys.exit(main())
