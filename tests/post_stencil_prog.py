"""A small annotated program whose work scales with its inputs (end-to-end test of ma_post).

A 5-point stencil on an n x m block per rank for ``steps`` sweeps: a derived variable, a subroutine called
twice per sweep, nested loops, a heap allocation and, with more than one MPI rank, a halo exchange of one
row with each ring neighbour per sweep.

Usage: python post_stencil_prog.py N M STEPS [--mpi]
"""

from __future__ import annotations

import sys

import ma


@ma.subroutine("smooth")
def smooth(grid: list[list[float]], n: int, m: int) -> list[list[float]]:
    out = [row[:] for row in grid]
    with ma.loop("rows", "n - 2") as rows:
        for i in rows.range(1, n - 1):
            with ma.flop("stencil", "5*(m - 2)"), ma.loop("cols", "m - 2") as cols:
                for j in cols.range(1, m - 1):
                    out[i][j] = 0.2 * (grid[i][j] + grid[i - 1][j] + grid[i + 1][j] + grid[i][j - 1]
                                       + grid[i][j + 1])
    return out


def exchange(comm, grid: list[list[float]], m: int) -> None:  # type: ignore[no-untyped-def]
    import numpy as np

    rank, size = comm.Get_rank(), comm.Get_size()
    send = np.array(grid[-2], dtype=np.float64)
    recv = np.empty(m, dtype=np.float64)
    with ma.mpi_sendrecv("halo_down", "8*m"):
        comm.Sendrecv(send, dest=(rank + 1) % size, recvbuf=recv, source=(rank - 1) % size)
    grid[0] = recv.tolist()
    with ma.loop("halo_up_loop", "2") as halo:
        for _ in halo.range(2):
            with ma.mpi_send("halo_up", "8*m"):
                comm.Send(np.array(grid[1], dtype=np.float64), dest=(rank - 1) % size)
            with ma.mpi_recv("halo_up_recv", "8*m"):
                comm.Recv(recv, source=(rank + 1) % size)


def main(n: int, m: int, steps: int, use_mpi: bool) -> float:
    comm = None
    if use_mpi:
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
    ma.variable("n", n)
    ma.variable("m", m)
    ma.variable("steps", steps)
    ma.variable("nprocs", comm.Get_size() if comm is not None else 1)
    ma.assign("cells", "n*m", n * m)
    with ma.heap_memory("grid", "8*cells"):
        grid = [[float((i * 7 + j * 3) % 11) for j in range(m)] for i in range(n)]
    with ma.loop("sweep", "steps") as sweep:
        for _ in sweep.range(steps):
            grid = smooth(grid, n, m)
            grid = smooth(grid, n, m)
            if comm is not None:
                exchange(comm, grid, m)
            with ma.flop("norm", "2*cells"):
                total = sum(v * v for row in grid for v in row)
    if comm is not None:
        import numpy as np

        result = np.zeros(1)
        with ma.mpi_allreduce("total", "8"):
            comm.Allreduce(np.array([total]), result)
        total = float(result[0])
    return total


if __name__ == "__main__":
    n, m, steps = (int(a) for a in sys.argv[1:4])
    print(main(n, m, steps, "--mpi" in sys.argv[4:]))
