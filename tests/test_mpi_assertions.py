"""Python MPI assertions measured through the PMPI library, under the real mpiexec of the environment."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import VENV_BIN, clean_env, find_node
from trace_schema import check_trace_schema

pytestmark = pytest.mark.mpi

PROGRAM = """
import sys
import numpy as np
import ma
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
wrong = "--wrong" in sys.argv
n = 1000
ma.variable("n", n)
ma.variable("nprocs", size)
ma.variable("dp", 8)
right, left = (rank + 1) % size, (rank - 1) % size
send = np.full(n, rank, dtype=np.float64)
recv = np.empty(n, dtype=np.float64)

with ma.loop("ring", "3") as lp:
    for step in lp.range(3):
        with ma.subroutine("exchange"):
            with ma.mpi_irecv("rcv", "dp*n"):
                request = comm.Irecv(recv, source=left)
            with ma.mpi_send("snd", "dp*(n+1)" if wrong else "dp*n"):
                comm.Send(send, dest=right)
            request.Wait()
        with ma.mpi_allreduce("norm", "dp*2", count="2" if wrong else "1"):
            total = np.empty(2)
            comm.Allreduce(np.array([1.0, float(rank)]), total, op=MPI.SUM)
        with ma.mpi_barrier("sync", "0"):
            comm.Barrier()

payload = {"rank": rank, "data": list(range(10))}
with ma.mpi_send("pickled_send", "1", count=1):
    comm.send(payload, dest=right)
with ma.mpi_recv("pickled_recv", "1", count=1):
    got = comm.recv(source=left)
with ma.mpi_bcast("bcast", "dp*n"):
    comm.Bcast(send, root=0)
with ma.mpi_gather("gather", "dp*n"):
    comm.Gather(send, np.empty(n * size) if rank == 0 else None, root=0)
with ma.mpi_alltoall("alltoall", "dp*n"):
    comm.Alltoall(np.ones(n), np.empty(n))
print("done", rank, got["rank"] == left, flush=True)
"""


def run_job(tmp_path: Path, nprocs: int, *args: str, via_ma_run: bool = True) -> list[dict[str, Any]]:
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(PROGRAM))
    trace_dir = tmp_path / "traces"
    if via_ma_run:
        argv = [str(VENV_BIN / "ma"), "run", "-n", str(nprocs), "--trace-dir", str(trace_dir), "--",
                sys.executable, str(script), *args]
        env = clean_env()
    else:  # plain mpiexec: `import ma` loads the PMPI library ahead of mpi4py.MPI
        argv = [str(VENV_BIN / "mpiexec"), "-n", str(nprocs), sys.executable, str(script), *args]
        env = clean_env(MA_TRACE_DIR=str(trace_dir))
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("True") == nprocs, done.stdout
    return [json.loads((trace_dir / f"rank-{r}.ma.json").read_text()) for r in range(nprocs)]


def node(trace: dict[str, Any], path: str) -> dict[str, Any]:
    return find_node(trace["threads"][0]["root"], path)


@pytest.mark.parametrize("nprocs, via_ma_run", [(2, True), (4, True), (2, False)])
def test_right_assertions_pass_with_measured_equal_to_predicted(tmp_path: Path, nprocs: int,
                                                                 via_ma_run: bool) -> None:
    for trace in run_job(tmp_path, nprocs, via_ma_run=via_ma_run):
        check_trace_schema(trace)
        assert trace["header"]["mpi"]["profiling"] is True
        for path, size, count in (("ring/exchange/rcv", 8000, 1), ("ring/exchange/snd", 8000, 1),
                                  ("ring/norm", 16, 1), ("ring/sync", 0, 1), ("bcast", 8000, 1),
                                  ("gather", 8000, 1), ("alltoall", 8000, 1)):
            site = node(trace, path)
            assert site["fail"] == 0 and site["unmeasured"] == 0, site
            assert site["measured"]["min"] == site["measured"]["max"] == size, site
            assert site["count"]["measured"]["sum"] == site["count"]["predicted"]["sum"] == count * site["calls"]
        assert node(trace, "ring/exchange/snd")["pass"] == 3
        profile = trace["mpi_profile"]["calls"]
        assert profile["MPI_Send"]["calls"] >= 4  # 3 buffer sends + the pickled one, seen outside assertions too
        assert profile["MPI_Allreduce"]["bytes"] == 3 * 16
        assert [8000 in range(lo, hi + 1) for lo, hi, _ in profile["MPI_Irecv"]["hist"]] == [True]


def test_pickle_based_calls_are_seen(tmp_path: Path) -> None:
    for trace in run_job(tmp_path, 2):
        sent = node(trace, "pickled_send")
        received = node(trace, "pickled_recv")
        # The pickle's size is not the asserted 1 byte, so these FAIL, with the real size shown.
        for site in (sent, received):
            assert site["count"]["measured"]["sum"] == 1 and site["fail"] == 1
            assert site["measured"]["sum"] > 40  # a pickled dict of ten ints
        assert sent["measured"]["sum"] == received["measured"]["sum"]
        assert sent["first_fail"]["predicted"] == 1 and sent["first_fail"]["measured"] == sent["measured"]["sum"]


def test_wrong_size_or_count_fails_with_both_numbers(tmp_path: Path) -> None:
    for trace in run_job(tmp_path, 2, "--wrong"):
        send = node(trace, "ring/exchange/snd")
        assert send["fail"] == 3 and send["pass"] == 0
        assert send["first_fail"] == {"call": 1, "predicted": 8008, "measured": 8000,
                                      "count_predicted": 1, "count_measured": 1}
        norm = node(trace, "ring/norm")
        assert norm["fail"] == 3
        assert norm["first_fail"] == {"call": 1, "predicted": 16, "measured": 16,
                                      "count_predicted": 2, "count_measured": 1}
        assert node(trace, "ring/exchange/rcv")["pass"] == 3


def test_without_mpi_the_assertions_are_unmeasured(run_program) -> None:
    run = run_program("""
        import ma
        with ma.mpi_send("s", "8"):
            pass
        print("fine")
    """)
    assert run.returncode == 0 and "fine" in run.stdout
    site = find_node(run.tree(), "s")
    assert site["unmeasured"] == 1 and site["fail"] == 0
    assert run.trace()["header"]["mpi"]["reason"]


def test_python_and_c_traces_have_the_same_schema(tmp_path: Path) -> None:
    from ma_tools import cparts
    from ma_tools.toolchain import find_mpicc

    python_trace = run_job(tmp_path, 2)[0]
    ring = Path(__file__).resolve().parent.parent / "examples" / "c_ring" / "ring.c"
    binary = tmp_path / "ring"
    subprocess.run([str(find_mpicc()), "-O2", str(ring), "-o", str(binary), *cparts.c_flags(), *cparts.c_libs()],
                   check=True, capture_output=True)
    c_dir = tmp_path / "c-traces"
    subprocess.run([str(VENV_BIN / "mpiexec"), "-n", "2", str(binary), "100", "2"], check=True, timeout=120,
                   env=clean_env(MA_TRACE_DIR=str(c_dir)), capture_output=True)
    c_trace = json.loads((c_dir / "rank-0.ma.json").read_text())
    for trace in (python_trace, c_trace):
        check_trace_schema(trace)
    assert {python_trace["header"]["language"], c_trace["header"]["language"]} == {"python", "c"}
    assert python_trace["version"] == c_trace["version"]
    assert set(python_trace["header"]) == set(c_trace["header"])
    assert set(python_trace["threads"][0]["root"]) == set(c_trace["threads"][0]["root"])


REPEATS = """
import numpy as np
import ma
from mpi4py import MPI

comm = MPI.COMM_WORLD
other = 1 - comm.rank
ma.variable("dp", 8)
buf = np.zeros(30)
for k in (1, 1, 1, 2, 2, 1, 1, 0, 0, 3, 3):  # ends on a repeat: written while still pending
    ma.variable("k", k)
    with ma.mpi_send("snd", "dp*10*k", count="min(k, 1)"):
        if k:
            comm.Send(buf[:10 * k], dest=other)
    with ma.mpi_recv("rcv", "dp*10", count="min(k, 1)"):  # right only for k = 1 (and 0: nothing sent)
        if k:
            comm.Recv(buf[:10 * k], source=other)
print("done", comm.rank, flush=True)
"""


@pytest.mark.parametrize("flush_seconds", ["5", "0.000001"])
def test_repeated_messages_fold_into_exact_statistics(tmp_path: Path, flush_seconds: str) -> None:
    """Repeats of the previous call are counted without folding: sizes and counts must stay exact."""
    script = tmp_path / "repeats.py"
    script.write_text(textwrap.dedent(REPEATS))
    argv = [str(VENV_BIN / "ma"), "run", "-n", "2", "--trace-dir", str(tmp_path / "traces"), "--",
            sys.executable, str(script)]
    done = subprocess.run(argv, cwd=tmp_path, env=clean_env(MA_FLUSH_SECONDS=flush_seconds),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    sizes = [80, 80, 80, 160, 160, 80, 80, 0, 0, 240, 240]
    for rank in range(2):
        trace = json.loads((tmp_path / "traces" / f"rank-{rank}.ma.json").read_text())
        send = node(trace, "snd")
        expected = {"n": 11, "min": 0, "max": 240, "sum": sum(sizes)}
        assert send["measured"] == expected and send["predicted"] == expected
        assert send["count"]["measured"] == send["count"]["predicted"] == {"n": 11, "min": 0, "max": 1, "sum": 9}
        assert send["pass"] == 11 and send["fail"] == 0
        recv = node(trace, "rcv")
        assert recv["measured"] == expected
        assert recv["predicted"] == {"n": 11, "min": 0, "max": 80, "sum": 80 * 9}  # k = 0: no message, size 0
        assert recv["pass"] == 7 and recv["fail"] == 4  # k = 2 and k = 3, twice each
        assert recv["first_fail"] == {"call": 4, "predicted": 80, "measured": 160,
                                      "count_predicted": 1, "count_measured": 1}
