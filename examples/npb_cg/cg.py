"""NPB 3.4 MPI CG in Python + mpi4py: driver, report and command line.

    mpiexec -n P python examples/npb_cg/cg.py --class S [--niter N]

P must be a power of two. Exit status: 0 verified (or no verification asked for, with a non-standard
--niter), 1 verification failed, 2 bad process count, class or iteration count.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if __package__ in (None, ""):
    # Run as a script: put the repository root (not this folder) on the path, import as the package.
    sys.path[0] = str(Path(__file__).resolve().parents[2])
    __package__ = "examples.npb_cg"

import numpy as np

import ma
from examples.npb_common import cli
from examples.npb_common.mpi import start_run
from examples.npb_common.report import completed_lines

from .classes import CGITMAX, CLASSES, RCOND, VERIFY_EPSILON, ProblemClass, official_op_count, relative_error
from .conj_grad import NORMS, ROOT, CGState, butterfly_sum, conj_grad, local_dot, matrix_in_common_block
from .grid import CGSetupError, decompose
from .makea import generate_vectors, makea
from .randlc import MULTIPLIER, SEED, LcgStream, randlc
from .simd import ufunc_doubles

if TYPE_CHECKING:
    import argparse

    from mpi4py import MPI


@dataclass
class Result:
    """Outcome on one rank. ``time`` is the slowest rank's timed loop on the root, the own one elsewhere."""

    class_name: str
    na: int
    nonzer: int
    niter: int
    nprocs: int
    zeta: float
    rnorm: float
    verified: bool | None            # None: niter differs from the class, so nothing to compare with
    error: float | None              # |zeta - ref| / ref when verified is not None
    time: float
    mops: float
    init_time: float
    zetas: list[float] = field(default_factory=list)


def resolve_class(class_name: str, niter: int | None) -> tuple[ProblemClass, int]:
    """The class parameters and the number of timed iterations, or CGSetupError."""
    return cli.resolve_class(CLASSES, class_name, niter, CGSetupError)


def declare_parameters(problem: ProblemClass, niter: int, nprocs: int) -> None:
    """The model's inputs and derived variables (MA paper, Figure 4)."""
    ma.variable("na", problem.na)
    ma.variable("nonzer", problem.nonzer)
    ma.variable("niter", niter)
    ma.variable("nprocs", nprocs)
    ma.variable("shift", problem.shift)
    ma.variable("cgitmax", CGITMAX)
    ma.variable("dp", 8)                        # bytes of a double
    ma.variable("vlen", ufunc_doubles())        # doubles per access of NumPy's arithmetic loops here
    grid = decompose(problem.na, nprocs, 0)
    ma.assign("num_proc_cols", "2^ceil(log2(nprocs)/2)", grid.num_proc_cols)
    ma.assign("num_proc_rows", "2^floor(log2(nprocs)/2)", grid.num_proc_rows)
    ma.assign("l2npcols", "ceil(log2(nprocs)/2)", grid.l2npcols)


def setup(problem: ProblemClass, niter: int, comm: MPI.Comm) -> CGState:
    """Declare the model's parameters, partition, generate this rank's block, allocate the vectors."""
    declare_parameters(problem, niter, comm.Get_size())  # at top level: visible to every site
    with ma.subroutine("setup"):
        grid = decompose(problem.na, comm.Get_size(), comm.Get_rank())
        tran, _ = randlc(SEED, MULTIPLIER)      # NPB discards the first draw before makea
        vectors = generate_vectors(problem.na, problem.nonzer, LcgStream(tran, MULTIPLIER))
        # CSR block: 8-byte values and 4-byte column indices for its nonzeros, 4-byte row pointers; in a
        # common block, with its alignment page and a 64-byte gap after each array.
        with ma.heap_memory("matrix", "(dp+4)*na*nonzer*(nonzer+1)/nprocs + 4*(na/num_proc_rows+1) + 4096+3*64"):
            a = matrix_in_common_block(makea(vectors, grid, RCOND, problem.shift))
        del vectors
        # x, z, p, q, r, w, a scratch vector and two 2-element buffers, in one common block.
        with ma.heap_memory("vectors", "7*(dp*(na/num_proc_rows+2) + 64) + 2*(2*dp + 64) + 4096"):
            return CGState(class_name=problem.name, na=problem.na, nonzer=problem.nonzer, niter=niter,
                           shift=problem.shift, grid=grid, comm=comm, a=a)


def reset_x(st: CGState) -> None:
    """x = (1, ..., 1) over naa+1 entries: NPB's starting vector."""
    st.x[:st.grid.naa + 1] = 1.0


def norms_x_z(st: CGState) -> tuple[float, float]:
    """(x.z, z.z) summed over the whole matrix order (local sums, then the row butterfly)."""
    with ma.flop("norm_dots", "4*na/num_proc_cols"), ma.loadstore("norm_dots_ls", "2*na/num_proc_cols"):
        local = np.array([local_dot(st, st.x, st.z), local_dot(st, st.z, st.z)])
    xz, zz = butterfly_sum(st, local, NORMS)
    return float(xz), float(zz)


def normalize_x(st: CGState, inv_norm_z: float) -> None:
    """x = z / ||z|| over this rank's columns."""
    n = st.grid.ncols
    with ma.flop("normalize", "na/num_proc_cols"), ma.loadstore("normalize_ls", "2*na/num_proc_cols/vlen"):
        np.multiply(st.z[:n], inv_norm_z, out=st.x[:n])


def power_iteration(st: CGState) -> tuple[float, float]:
    """One outer iteration: solve A z = x, then zeta = shift + 1/(x.z) and x = z/||z||."""
    rnorm = conj_grad(st)
    xz, zz = norms_x_z(st)
    normalize_x(st, 1.0 / math.sqrt(zz))
    return rnorm, st.shift + 1.0 / xz


def timed_loop(st: CGState,
               on_iteration: Callable[[int, float, float], None] | None) -> list[tuple[float, float]]:
    """The niter timed outer iterations; returns (rnorm, zeta) after each one."""
    history = []
    with ma.loop("conj_loop", "niter") as lp:
        for it in lp.range(1, st.niter + 1):
            rnorm, zeta = power_iteration(st)
            history.append((rnorm, zeta))
            if on_iteration is not None:
                on_iteration(it, rnorm, zeta)
    return history


def run(class_name: str, niter: int | None = None, comm: MPI.Comm | None = None,
        verbose: bool = False) -> Result:
    """Run CG on ``comm`` (default COMM_WORLD); ``verbose`` prints NPB's report on the root rank."""
    MPI, comm, say = start_run(comm, verbose)
    problem, niter = resolve_class(class_name, niter)
    me = comm.Get_rank()

    t0 = MPI.Wtime()
    st = setup(problem, niter, comm)
    init_time = MPI.Wtime() - t0
    say(banner(problem, niter, comm.Get_size(), init_time))

    reset_x(st)
    with ma.subroutine("warmup"):
        power_iteration(st)                   # untimed warm-up: pages in code and data
    reset_x(st)

    with ma.mpi_barrier("start_barrier", "0"):
        comm.Barrier()
    say("\n   iteration           ||r||                 zeta")
    t_start = MPI.Wtime()
    history = timed_loop(st, lambda it, rn, z: say(f"    {it:5d}      {fortran_e(rn, 21, 14)}{z:20.13f}"))
    t_local = MPI.Wtime() - t_start

    t_max = np.zeros(1)
    with ma.mpi_reduce("time_reduce", "dp", peer="0"):
        comm.Reduce(np.array([t_local]), t_max, op=MPI.MAX, root=ROOT)
    elapsed = float(t_max[0]) if me == ROOT else t_local
    mops = 1.0e-6 * official_op_count(problem.na, problem.nonzer, niter) / elapsed if elapsed > 0 else 0.0

    rnorm, zeta = history[-1]
    if niter == problem.niter:
        error = relative_error(zeta, problem.zeta_verify)
        verified: bool | None = bool(error <= VERIFY_EPSILON)   # NaN compares False
    else:
        error, verified = None, None
    result = Result(class_name=problem.name, na=problem.na, nonzer=problem.nonzer, niter=niter,
                    nprocs=comm.Get_size(), zeta=zeta, rnorm=rnorm, verified=verified,
                    error=error, time=elapsed, mops=mops, init_time=init_time,
                    zetas=[z for _, z in history])
    say(report(result, problem))
    return result


# --------------------------------------------------------------------------------------------------
# Report (NPB layout)
# --------------------------------------------------------------------------------------------------

def fortran_e(value: float, width: int, digits: int) -> str:
    """Fortran ``Ew.d``: 0.ddddE+xx, right-aligned in ``width``."""
    if not np.isfinite(value):
        return str(value).rjust(width)
    if value == 0.0:
        return f"0.{'0' * digits}E+00".rjust(width)
    sci = f"{abs(value):.{digits - 1}e}"            # d.ddd e±xx -> 0.dddd with exponent + 1
    digits_str, exp = sci.split("e")
    mantissa = "0." + digits_str.replace(".", "")
    exponent = int(exp) + 1
    sign = "-" if value < 0 else ""
    return f"{sign}{mantissa}E{exponent:+03d}".rjust(width)


def banner(problem: ProblemClass, niter: int, nprocs: int, init_time: float) -> str:
    return "\n".join([
        "\n\n NAS Parallel Benchmarks 3.4 -- CG Benchmark (Python + mpi4py port)\n",
        f" Size: {problem.na:10d}  (class {problem.name})",
        f" Iterations: {niter:5d}",
        f" Number of processes: {nprocs:5d}",
        f" Number of nonzeroes per row: {problem.nonzer:8d}",
        f" Eigenvalue shift: {problem.shift:9.3f}",
        f" Initialization time = {init_time:15.3f} seconds",
    ])


def report(result: Result, problem: ProblemClass) -> str:
    lines = ["\n Benchmark completed "]
    if result.verified is None:
        lines += [f" NO VERIFICATION PERFORMED (niter={result.niter}, class {problem.name} "
                  f"verifies after {problem.niter})",
                  f" Zeta is    {fortran_e(result.zeta, 20, 13)}"]
        status = "NOT PERFORMED"
    elif result.verified:
        lines += [" VERIFICATION SUCCESSFUL ",
                  f" Zeta is    {fortran_e(result.zeta, 20, 13)}",
                  f" Error is   {fortran_e(result.error or 0.0, 20, 13)}"]
        status = "SUCCESSFUL"
    else:
        lines += [" VERIFICATION FAILED",
                  f" Zeta                {fortran_e(result.zeta, 20, 13)}",
                  f" The correct zeta is {fortran_e(problem.zeta_verify, 20, 13)}",
                  f" Error is   {fortran_e(result.error if result.error is not None else float('nan'), 20, 13)}"]
        status = "UNSUCCESSFUL"
    lines += completed_lines("CG", class_name=result.class_name, size=str(result.na), niter=result.niter,
                             time=result.time, nprocs=result.nprocs, mops=result.mops, status=status)
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------------

def main(argv: Sequence[str] | None = None) -> int:
    def check(args: argparse.Namespace, comm: MPI.Comm) -> None:
        resolve_class(args.class_name, args.niter)
        decompose(CLASSES[args.class_name.upper()].na, comm.Get_size(), comm.Get_rank())

    return cli.main(argv, prog="cg.py", description="NAS Parallel Benchmarks 3.4 CG (Python + mpi4py)",
                    class_metavar="{S,W,A,B,C,D}",
                    niter_help="timed iterations (default: the class's; verification needs the default)",
                    check=check, setup_error=CGSetupError,
                    run=run)


if __name__ == "__main__":
    sys.exit(main())
