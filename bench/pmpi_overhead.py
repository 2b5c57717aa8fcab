"""Cost of the PMPI wrapper library: small-message ping-pong with and without libmapmpi, in one run.

A C ping-pong (mpiexec -n 2, shared memory) runs with libmapmpi preloaded and alternates blocks of round
trips through the MPI_ entry points (the wrappers) and through the PMPI_ ones (never wrapped): both sides
share the same processes, warm-up and machine load, and the median block of each is compared. A message
crosses two wrappers (MPI_Send in the sender, MPI_Recv in the receiver), both on the critical path, so the
difference per one-way message is the full cost a message pays (goal: <= 1 us). The same is done on one
rank with MPI_Send+MPI_Recv to MPI_PROC_NULL (MPI returns at once: what remains is the wrapper), at
MPI_THREAD_SINGLE (plain counter adds) and MPI_THREAD_MULTIPLE (atomic adds, what mpi4py asks for).

mpi4py cannot bypass the wrappers, so its ping-pong (comm.Send/comm.Recv, which reach MPI_Send_c and
MPI_Recv_c) runs plain and preloaded in alternating runs; last, the cost of one Python counter read (what
an MPI assertion does twice): the ctypes-array reader of ``PmpiLibrary.reader`` next to a ctypes call.

    python bench/pmpi_overhead.py [--blocks 40] [--block-iters 5000] [--rounds 5] [--size 8]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import ma  # noqa: F401  (the application layer first, as a user program does)
from ma_runtime import pmpi
from ma_tools import cparts
from ma_tools.toolchain import env_bin_dir, find_mpicc, run_compiler

PINGPONG_C = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*send_fn)(const void *, int, MPI_Datatype, int, int, MPI_Comm);
typedef int (*recv_fn)(void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Status *);

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Microseconds per one-way message (pingpong) or per Send+Recv pair (null) over `iters` iterations. */
static double block(send_fn send, recv_fn recv, int pingpong, int rank, char *buf, int size, long iters)
{
    int peer = pingpong ? 1 - rank : MPI_PROC_NULL;
    PMPI_Barrier(MPI_COMM_WORLD);
    double t0 = PMPI_Wtime();
    for (long i = 0; i < iters; i++) {
        if (rank == 0 || !pingpong) {
            send(buf, size, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
            recv(buf, size, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            recv(buf, size, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            send(buf, size, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
        }
    }
    return (PMPI_Wtime() - t0) / ((pingpong ? 2.0 : 1.0) * iters) * 1e6;
}

/* argv: pingpong|null blocks iters_per_block size [multiple]
 * Prints: median and best block time through the MPI_ entry points, then through the PMPI_ ones. */
int main(int argc, char **argv)
{
    int provided;
    if (argc > 5 && !strcmp(argv[5], "multiple"))
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    else
        MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int pingpong = !strcmp(argv[1], "pingpong"), blocks = atoi(argv[2]), size = atoi(argv[4]);
    long iters = atol(argv[3]);
    char *buf = calloc((size_t)size + 1, 1);
    double *wrapped = calloc((size_t)blocks, sizeof *wrapped), *direct = calloc((size_t)blocks, sizeof *direct);
    block(MPI_Send, MPI_Recv, pingpong, rank, buf, size, iters); /* warm-up */
    block(PMPI_Send, PMPI_Recv, pingpong, rank, buf, size, iters);
    for (int b = 0; b < blocks; b++) {
        wrapped[b] = block(MPI_Send, MPI_Recv, pingpong, rank, buf, size, iters);
        direct[b] = block(PMPI_Send, PMPI_Recv, pingpong, rank, buf, size, iters);
    }
    qsort(wrapped, (size_t)blocks, sizeof *wrapped, cmp);
    qsort(direct, (size_t)blocks, sizeof *direct, cmp);
    if (rank == 0)
        printf("%.6f %.6f %.6f %.6f\n", wrapped[blocks / 2], wrapped[0], direct[blocks / 2], direct[0]);
    free(buf);
    free(wrapped);
    free(direct);
    MPI_Finalize();
    return 0;
}
"""

PINGPONG_PY = r"""
import sys, numpy as np
from mpi4py import MPI
comm = MPI.COMM_WORLD
rank, peer = comm.Get_rank(), 1 - comm.Get_rank()
iters, size = int(sys.argv[1]), int(sys.argv[2])
buf = np.zeros(size, dtype="u1")
send, recv = comm.Send, comm.Recv
for i in range(-iters // 10, iters):
    if i == 0:
        comm.Barrier()
        t0 = MPI.Wtime()
    if rank == 0:
        send(buf, peer, 0); recv(buf, peer, 0)
    else:
        recv(buf, peer, 0); send(buf, peer, 0)
if rank == 0:
    print(f"{(MPI.Wtime() - t0) / (2 * iters) * 1e6:.6f}")
"""


def launch(argv: list[str], preload: Path | None, nprocs: int) -> list[float]:
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    env["PATH"] = f"{env_bin_dir()}{os.pathsep}{env.get('PATH', '')}"
    env["MA_DISABLE"] = "1"
    if preload is not None:
        env["LD_PRELOAD"] = str(preload)
    done = subprocess.run([str(env_bin_dir() / "mpiexec"), "-n", str(nprocs), *argv], env=env, capture_output=True,
                          text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"{argv} failed:\n{done.stdout}\n{done.stderr}")
    return [float(x) for x in done.stdout.split()]


def interleaved(label: str, argv: list[str], library: Path, nprocs: int) -> float:
    """One run, blocks through the wrappers and around them alternating; returns the extra us (medians)."""
    wrapped_median, wrapped_best, direct_median, direct_best = launch(argv, library, nprocs)
    extra = wrapped_median - direct_median
    print(f"{label:40} PMPI_ (unwrapped) {direct_median:7.3f} us (best {direct_best:.3f})   "
          f"MPI_ (libmapmpi) {wrapped_median:7.3f} us (best {wrapped_best:.3f})   extra {extra * 1000:+5.0f} ns")
    return extra


def alternating_runs(label: str, argv: list[str], library: Path, rounds: int) -> None:
    plain, wrapped = [], []
    for _ in range(rounds):  # alternate, so that drifts in machine load hit both sides alike
        plain.append(launch(argv, None, 2)[0])
        wrapped.append(launch(argv, library, 2)[0])
    p, w = statistics.median(plain), statistics.median(wrapped)
    print(f"{label:40} plain {p:7.3f} us (best {min(plain):.3f})   with libmapmpi {w:7.3f} us "
          f"(best {min(wrapped):.3f})   extra {(w - p) * 1000:+5.0f} ns (medians of {rounds} runs each)")


def reader_cost(library: Path, reads: int) -> None:
    lib = ctypes.CDLL(str(library), mode=ctypes.RTLD_GLOBAL)  # live in this process, as under mpi4py.profile
    loaded = pmpi.loaded_library()
    assert loaded is not None
    reader = loaded.reader("mpi_send")
    calls, nbytes = ctypes.c_uint64(), ctypes.c_uint64()
    read, by_calls, by_bytes = lib.ma_pmpi_read, ctypes.byref(calls), ctypes.byref(nbytes)

    def via_call() -> tuple[int, int]:
        read(0, by_calls, by_bytes)
        return calls.value, nbytes.value

    for label, fn in (("PmpiLibrary.reader (array view)", reader), ("ctypes call of ma_pmpi_read", via_call)):
        start = time.perf_counter_ns()
        for _ in range(reads):
            fn()
        print(f"  {label:38} {(time.perf_counter_ns() - start) / reads:7.1f} ns per read")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--blocks", type=int, default=40, help="blocks of each kind in the interleaved runs")
    parser.add_argument("--block-iters", type=int, default=5000, help="iterations per block")
    parser.add_argument("--py-iters", type=int, default=30000, help="round trips per mpi4py run")
    parser.add_argument("--rounds", type=int, default=5, help="mpi4py runs of each variant")
    parser.add_argument("--size", type=int, default=8, help="message size in bytes")
    args = parser.parse_args()

    library = cparts.build_pmpi()
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "pingpong.c"
        source.write_text(PINGPONG_C)
        program = Path(tmp) / "pingpong"
        run_compiler([find_mpicc(), "-O2", source, "-o", program], "the ping-pong benchmark")
        script = Path(tmp) / "pingpong.py"
        script.write_text(PINGPONG_PY)
        print(f"{args.size}-byte messages; libmapmpi: {library}")
        blocks = [str(args.blocks), str(args.block_iters), str(args.size)]
        extra = interleaved("C ping-pong, per message (-n 2)", [str(program), "pingpong", *blocks], library, 2)
        null = interleaved("C Send+Recv to MPI_PROC_NULL (-n 1)", [str(program), "null", *blocks], library, 1)
        interleaved("  the same at MPI_THREAD_MULTIPLE", [str(program), "null", *blocks, "multiple"], library, 1)
        alternating_runs("mpi4py ping-pong, per message (-n 2)",
                         [sys.executable, str(script), str(args.py_iters), str(args.size)], library, args.rounds)
    verdict = "met" if max(extra, null) <= 1.0 else "NOT met"
    print(f"extra time per message: {extra * 1000:.0f} ns (ping-pong), {null * 1000:.0f} ns (PROC_NULL pair) "
          f"-- goal <= 1 us: {verdict}")
    print("cost of one counter read from Python:")
    reader_cost(library, 200000)


if __name__ == "__main__":
    main()
