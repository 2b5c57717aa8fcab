"""The README's example: a distributed axpy and norm, annotated.

    ma run -n 2 -- python examples/quickstart/axpy.py [n] [niter]
    ma validate ma-traces
"""

import sys

import numpy as np
from mpi4py import MPI

import ma

comm = MPI.COMM_WORLD
n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
niter = int(sys.argv[2]) if len(sys.argv) > 2 else 10

ma.variable("n", n)                                   # input parameters (ma_def_variable_int)
ma.variable("niter", niter)
ma.variable("nprocs", comm.size)
ma.assign("local", "n/nprocs", n // comm.size)        # derived; the program's own value is checked

x = np.ones(n // comm.size)
y = np.zeros(n // comm.size)


@ma.subroutine("step")                                # a level of the site tree
def step() -> float:
    global y
    with ma.flop("axpy", "2*local"):                  # measured by PAPI or the Valgrind tool where possible
        y += 2.5 * x
    with ma.flop("dot", "2*local"):
        local_sum = np.array([x @ y])
    total = np.empty(1)
    with ma.mpi_allreduce("norm", "8"):               # bytes per message (count=1), measured through PMPI
        comm.Allreduce(local_sum, total)
    return float(total[0])


with ma.loop("iterations", "niter") as lp:           # trip count, counted by lp.range
    for _ in lp.range(niter):
        result = step()

if comm.rank == 0:
    print(f"x.y after {niter} iterations: {result:.6g}")
