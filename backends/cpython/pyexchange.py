"""The oversubscribed exchange with work between messages, run by Python ranks (mpi4py and NumPy): what a Python
MPI program's ranks see, next to ``backends/machine/csrc/pingpong.c``'s ``exchange-work`` mode, which is the same
measurement in C.

    mpiexec -n R python -m backends.cpython.pyexchange [exchange-work | work] MIN_TIME BATCHES PASSES...

Same pattern, message size and output as the C probe: rounds of 8-byte exchanges at distances 1, 2, 4, ... < R
(send to rank + d, receive from rank - d), before each message every rank makes PASSES passes of a multiply-add
over its own 32 KiB NumPy buffer (two ufunc calls per pass: the interpreter's call cost is part of the work, as
in the programs); rank 0 prints "passes median_seconds best_seconds" per amount of work, wall seconds per
message over BATCHES batches that each last at least MIN_TIME. ``work`` times rank 0's work alone.

Options for diagnosis (not used by the probe): ``--irecv`` posts an Irecv, Sends and Waits (NPB CG's exchange)
instead of a Sendrecv; ``--pairs`` exchanges with rank XOR d (a butterfly: pairs, as in CG's reductions; a power
of two of ranks) instead of the shifted partners; ``--lump`` does a round's work before its first message only
(the same work per message, unevenly spread, as CG's matrix product before its exchanges); ``--grid`` is NPB
CG's step on a 2 x 2 grid (4 ranks): 70 % of the step's work, the row exchange (rank XOR 1), 10 %, the
transpose (ranks 1 and 2 swap, 0 and 3 send to themselves), 10 %, two row butterflies with 10 % before the
last, Irecv/Send/Wait, the work per message the same on average; ``--kib N`` sizes the work's buffer (beyond
the caches: memory-bound work, as CG's matrix product); ``--bytes N`` sends messages of N bytes instead of 8
(CG's row reduction and transpose move na / num_proc_cols doubles); ``--stream MIB`` does each pass on the
next 32 KiB of a MIB MiB buffer (work from memory: the profile's ``cpython.exchange``, :mod:`.exchange`);
``--all`` has every rank work in ``work`` mode (the work with the memory system shared); ``--sched`` has every
rank print its scheduler counters (``/proc/self/sched``: migrations, voluntary and involuntary switches) to stderr.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

import numpy as np

WORK_DOUBLES = 4096  # 32 KiB, in L1 like the C probe's buffer
SCHED_FIELDS = ("se.nr_migrations", "nr_switches", "nr_voluntary_switches", "nr_involuntary_switches")


def work(buffer: np.ndarray, passes: int) -> None:
    for _ in range(passes):
        np.multiply(buffer, 0.999, out=buffer)
        np.add(buffer, 0.001, out=buffer)


class Stream:
    """Work whose data comes from memory: each pass is :func:`work` on the next WORK_DOUBLES-sized chunk of a
    buffer larger than the caches, in turn, so no chunk is still cached when its turn comes again."""

    def __init__(self, mib: int) -> None:
        self.chunks = np.full(mib * 1024 * 1024 // 8, 1.0).reshape(-1, WORK_DOUBLES)
        self.next = 0

    def __call__(self, _buffer: np.ndarray, passes: int) -> None:
        for _ in range(passes):
            work(self.chunks[self.next], 1)
            self.next = (self.next + 1) % len(self.chunks)


def sched_counters() -> dict[str, int]:
    """This process's scheduler counters (Linux ``/proc/self/sched``); {} where there is none."""
    try:
        with open("/proc/self/sched") as text:
            lines = text.read().splitlines()
    except OSError:
        return {}
    out = {}
    for line in lines:
        name, _, value = line.partition(":")
        if name.strip() in SCHED_FIELDS:
            out[name.strip()] = int(float(value))
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="pyexchange")
    parser.add_argument("mode", choices=("exchange-work", "work"))
    parser.add_argument("min_time", type=float)
    parser.add_argument("batches", type=int)
    parser.add_argument("passes", type=int, nargs="+")
    parser.add_argument("--irecv", action="store_true")
    parser.add_argument("--lump", action="store_true")
    parser.add_argument("--pairs", action="store_true")
    parser.add_argument("--grid", action="store_true")
    parser.add_argument("--kib", type=int, default=WORK_DOUBLES * 8 // 1024)
    parser.add_argument("--bytes", type=int, default=8)
    parser.add_argument("--stream", type=int, default=0, metavar="MIB",
                        help="each pass on the next 32 KiB of a MIB MiB buffer (work from memory)")
    parser.add_argument("--all", action="store_true", help="work: every rank works at once (rank 0's time)")
    parser.add_argument("--sched", action="store_true")
    args = parser.parse_args(argv)

    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    buffer = np.full(args.kib * 1024 // 8, 1.0)
    do_work: Callable[[np.ndarray, int], None] = Stream(args.stream) if args.stream else work
    words = max(1, args.bytes // 8)
    outgoing, incoming = np.ones(words), np.empty(words)
    distances = [1 << k for k in range(max(1, size - 1).bit_length()) if 1 << k < size]
    rounds = len(distances)
    if args.grid:  # (partner, tenths of the step's work before the message) of CG's step on a 2 x 2 grid
        transpose = {0: 0, 1: 2, 2: 1, 3: 3}[rank]
        step = [(rank ^ 1, 28), (transpose, 4), (rank ^ 1, 4), (rank ^ 1, 4)]  # of 40 = 4 messages x 10

    def grid_step(passes: int) -> None:
        for partner, share in step:
            do_work(buffer, passes * share // 10)
            request = comm.Irecv(incoming, source=partner, tag=1)
            comm.Send(outgoing, dest=partner, tag=1)
            request.Wait()

    def exchange(passes: int, count: int) -> float:
        comm.Barrier()
        start = MPI.Wtime()
        for _ in range(count):
            if args.grid:
                grid_step(passes)
                continue
            for d in distances:
                if not args.lump:
                    do_work(buffer, passes)
                elif d == 1:
                    do_work(buffer, passes * rounds)
                dest, source = (rank ^ d, rank ^ d) if args.pairs else ((rank + d) % size, (rank - d) % size)
                if args.irecv:
                    request = comm.Irecv(incoming, source=source, tag=d)
                    comm.Send(outgoing, dest=dest, tag=d)
                    request.Wait()
                else:
                    comm.Sendrecv(outgoing, dest, d, incoming, source, d)
        return MPI.Wtime() - start

    def alone(passes: int, count: int) -> float:
        comm.Barrier()
        start = MPI.Wtime()
        if rank == 0 or args.all:
            for _ in range(count):
                do_work(buffer, passes)
        return MPI.Wtime() - start

    batch: Callable[[int, int], float] = alone if args.mode == "work" else exchange
    messages = 1 if args.mode == "work" else 4 if args.grid else rounds
    for passes in args.passes:
        batch(passes, 10)  # warm up
        count = 1
        while not comm.bcast(batch(passes, count) >= args.min_time, root=0):  # rank 0 decides for all
            count *= 2
        times = sorted(batch(passes, count) / (messages * count) for _ in range(max(1, args.batches)))
        if rank == 0:
            print(f"{passes} {times[len(times) // 2]:.9e} {times[0]:.9e}", flush=True)
    if args.sched:
        counters = " ".join(f"{k}={v}" for k, v in sched_counters().items())
        print(f"rank {rank}: {counters}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
