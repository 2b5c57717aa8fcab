"""libmapmpi, the PMPI wrapper library, measured from real mpi4py programs under the venv's mpiexec.

Each MPI program reads the counters through ``loaded_library().reader(...)`` and ``.profile()`` around
calls whose sizes are known, and prints what it saw as one JSON file per rank; the tests compare that with
the exact calls and bytes the byte rules of docs/c-api.md give. Every program runs twice: with the
library preloaded (LD_PRELOAD, what ``ma run`` does) and loaded by ``prepare_for_mpi4py()``.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import ma  # noqa: F401  (import order: the application layer first, as a user program does)
from ma_runtime import pmpi
from ma_tools import cparts
from ma_tools.toolchain import env_bin_dir

TIMEOUT = 180
MODES = ("preload", "profile")

# Imports and helpers shared by the MPI programs. In "profile" mode the program loads the wrapper itself.
PRELUDE = '''
import json, os, sys
from ma_runtime import pmpi
if os.environ.get("TEST_PMPI_MODE") == "profile":
    reason = pmpi.prepare_for_mpi4py()
    assert reason is None, reason
import numpy as np
from mpi4py import MPI
lib = pmpi.loaded_library()
assert lib is not None, "the wrapper library is not live"
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
other = 1 - rank if size == 2 else None
readers = {t: lib.reader(t) for t in pmpi.MPI_TYPES}
results = {}

def measure(name, mpi_type, action):
    """(calls, bytes) of mpi_type made by action(); a barrier first keeps the ranks in step."""
    comm.Barrier()
    before = readers[mpi_type]()
    value = action()
    after = readers[mpi_type]()
    results[name] = [after[0] - before[0], after[1] - before[1]]
    return value
'''

EPILOGUE = '''
results["profile"] = lib.profile()
results["library"] = str(lib.path)
with open(f"result-{rank}.json", "w") as handle:  # a file per rank: mpiexec interleaves stdout lines
    json.dump(results, handle)
'''


@pytest.fixture(scope="module")
def library() -> Path:
    return cparts.build_pmpi()


def run_mpi(tmp_path: Path, body: str, nprocs: int, mode: str, library: Path) -> dict[int, dict]:
    script = tmp_path / f"prog_{mode}_{nprocs}.py"
    script.write_text(PRELUDE + textwrap.dedent(body) + EPILOGUE)
    env = dict(os.environ)
    env["PATH"] = f"{env_bin_dir()}{os.pathsep}{env.get('PATH', '')}"
    env["TEST_PMPI_MODE"] = mode
    env["MA_DISABLE"] = "1"  # these programs test the wrapper alone: no annotation runtime, no traces
    env.pop("LD_PRELOAD", None)
    if mode == "preload":
        env["LD_PRELOAD"] = str(library)
    done = subprocess.run([str(env_bin_dir() / "mpiexec"), "-n", str(nprocs), sys.executable, str(script)],
                          env=env, capture_output=True, text=True, timeout=TIMEOUT, cwd=tmp_path)
    assert done.returncode == 0, f"mpiexec failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return {rank: json.loads((tmp_path / f"result-{rank}.json").read_text()) for rank in range(nprocs)}


POINT_TO_POINT = '''
obj = {"grid": [1, 2, 3], "name": "cg", "tol": 1e-10}
results["pickled"] = len(MPI.pickle.dumps(obj))
if rank == 0:
    measure("Send", "mpi_send", lambda: comm.Send(np.arange(10, dtype="d"), dest=1, tag=1))
    measure("Recv", "mpi_recv", lambda: None)
    measure("send_obj", "mpi_send", lambda: comm.send(obj, dest=1, tag=2))
    measure("recv_obj", "mpi_recv", lambda: None)
    measure("Isend", "mpi_isend", lambda: comm.Isend(np.ones(5, dtype="i"), dest=1, tag=3).Wait())
    measure("Irecv", "mpi_irecv", lambda: None)
    measure("Ssend", "mpi_send", lambda: comm.Ssend(np.ones(3, dtype="d"), dest=1, tag=4))
    comm.send("matched", dest=1, tag=5)
    measure("Imrecv", "mpi_irecv", lambda: None)
else:
    buf = np.empty(10, dtype="d")
    measure("Send", "mpi_send", lambda: None)
    measure("Recv", "mpi_recv", lambda: comm.Recv(buf, source=0, tag=1))
    measure("send_obj", "mpi_send", lambda: None)
    got = measure("recv_obj", "mpi_recv", lambda: comm.recv(source=0, tag=2))
    assert got == obj
    measure("Isend", "mpi_isend", lambda: None)
    posted = np.empty(8, dtype="i")  # room for 8 ints, 5 arrive: Irecv counts the posted 32 bytes
    measure("Irecv", "mpi_irecv", lambda: comm.Irecv(posted, source=0, tag=3).Wait())
    measure("Ssend", "mpi_send", lambda: comm.Recv(np.empty(3, dtype="d"), source=0, tag=4))

    def matched_receive():
        message = None
        while message is None:
            message = comm.improbe(source=MPI.ANY_SOURCE, tag=5)
        return message.irecv().wait()  # MPI_Imrecv: its peer comes from the probe

    assert measure("Imrecv", "mpi_irecv", matched_receive) == "matched"
results["matched_pickled"] = len(MPI.pickle.dumps("matched"))
buf_in = np.empty(6, dtype="d")
measure("Sendrecv", "mpi_sendrecv",
        lambda: comm.Sendrecv(np.full(6, rank, dtype="d"), dest=other, recvbuf=buf_in, source=other))
assert buf_in[0] == other
'''


@pytest.mark.mpi
@pytest.mark.parametrize("mode", MODES)
def test_point_to_point_buffers_and_pickles(tmp_path: Path, library: Path, mode: str) -> None:
    ranks = run_mpi(tmp_path, POINT_TO_POINT, 2, mode, library)
    r0, r1 = ranks[0], ranks[1]
    pickled = r0["pickled"]
    assert pickled > 0
    assert r0["Send"] == [1, 80] and r1["Send"] == [0, 0]
    assert r1["Recv"] == [1, 80] and r0["Recv"] == [0, 0]
    # pickle-based: one MPI_Send of the pickle; the receiver's matched-probe MPI_Mrecv gets the same bytes
    assert r0["send_obj"] == [1, pickled]
    assert r1["recv_obj"] == [1, pickled]
    assert r0["Isend"] == [1, 20]
    assert r1["Irecv"] == [1, 32]
    assert r0["Ssend"] == [1, 24]
    assert r0["Sendrecv"] == r1["Sendrecv"] == [1, 48]
    assert r1["Imrecv"] == [1, r1["matched_pickled"]] and r0["Imrecv"] == [0, 0]
    profile0, profile1 = r0["profile"]["calls"], r1["profile"]["calls"]
    # per-routine view: the probe and the matched receive of comm.recv(); peers are communicator ranks
    assert profile1["MPI_Mrecv"]["calls"] == 1 and profile1["MPI_Mrecv"]["bytes"] == pickled
    assert profile1["MPI_Mrecv"]["peers"] == {"0": [1, pickled]}
    assert profile1["MPI_Mprobe"]["calls"] >= 1 and profile1["MPI_Mprobe"]["bytes"] == 0
    assert profile0["MPI_Ssend"]["peers"] == {"1": [1, 24]}
    sent = 80 + pickled + r0["matched_pickled"]
    assert profile0["MPI_Send"]["calls"] == 3 and profile0["MPI_Send"]["bytes"] == sent
    assert profile0["MPI_Send"]["peers"] == {"1": [3, sent]}
    assert profile1["MPI_Irecv"]["peers"] == {"0": [1, 32]}
    assert profile0["MPI_Sendrecv"]["peers"] == {"1": [1, 48]}
    assert profile1["MPI_Imrecv"]["peers"] == {"0": [1, r1["matched_pickled"]]}
    assert profile1["MPI_Improbe"]["calls"] >= 1
    assert profile1["MPI_Sendrecv"]["peers"] == {"0": [1, 48]}
    for routine in profile0.values():
        assert routine["time_ns"] >= 0
    assert Path(r0["library"]).resolve() == library.resolve()


COLLECTIVES = '''
out = np.empty(7)
measure("Allreduce", "mpi_allreduce", lambda: comm.Allreduce(np.ones(7), out, op=MPI.SUM))
assert out[0] == size
measure("Allreduce_in_place", "mpi_allreduce", lambda: comm.Allreduce(MPI.IN_PLACE, out, op=MPI.SUM))
measure("Reduce", "mpi_reduce", lambda: comm.Reduce(np.ones(3, dtype="i"), np.empty(3, dtype="i"), root=0))
payload = {"params": list(range(20))} if rank == 0 else None
results["bcast_pickled"] = len(MPI.pickle.dumps({"params": list(range(20))}))
got = measure("bcast_obj", "mpi_bcast", lambda: comm.bcast(payload, root=0))
assert got == {"params": list(range(20))}
measure("Bcast", "mpi_bcast", lambda: comm.Bcast(np.zeros(11, dtype="i"), root=0))
measure("Barrier", "mpi_barrier", lambda: comm.Barrier())
gathered = np.empty(3 * size, dtype="i") if rank == 0 else None
measure("Gather", "mpi_gather", lambda: comm.Gather(np.full(3, rank, dtype="i"), gathered, root=0))
measure("Allgather", "mpi_allgather", lambda: comm.Allgather(np.full(2, rank, dtype="d"), np.empty(2 * size)))
chunks = np.arange(4 * size, dtype="d") if rank == 0 else None
measure("Scatter", "mpi_scatter", lambda: comm.Scatter(chunks, np.empty(4), root=0))
measure("Alltoall", "mpi_alltoall", lambda: comm.Alltoall(np.zeros(2 * size), np.empty(2 * size)))
# v-forms: rank r owns r+1 elements
counts = [r + 1 for r in range(size)]
displs = [sum(counts[:r]) for r in range(size)]
mine = np.full(rank + 1, rank, dtype="d")
total = np.empty(sum(counts))
measure("Gatherv", "mpi_gather",
        lambda: comm.Gatherv(mine, [total, counts, displs, MPI.DOUBLE] if rank == 0 else None, root=0))
measure("Allgatherv", "mpi_allgather", lambda: comm.Allgatherv(mine, [total, counts, displs, MPI.DOUBLE]))
measure("Scatterv", "mpi_scatter",
        lambda: comm.Scatterv([total, counts, displs, MPI.DOUBLE] if rank == 0 else None, np.empty(rank + 1), root=0))
send_counts = [rank + 1] * size          # rank r sends r+1 doubles to every rank
recv_counts = [r + 1 for r in range(size)]
measure("Alltoallv", "mpi_alltoall", lambda: comm.Alltoallv(
    [np.zeros(size * (rank + 1)), send_counts, [i * (rank + 1) for i in range(size)], MPI.DOUBLE],
    [np.empty(sum(recv_counts)), recv_counts, [sum(recv_counts[:i]) for i in range(size)], MPI.DOUBLE]))
x = measure("allreduce_obj", "mpi_allreduce", lambda: comm.allreduce(rank, op=MPI.SUM))
assert x == size * (size - 1) // 2
'''


@pytest.mark.mpi
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("nprocs", [2, 4])
def test_collectives(tmp_path: Path, library: Path, mode: str, nprocs: int) -> None:
    ranks = run_mpi(tmp_path, COLLECTIVES, nprocs, mode, library)
    for rank, r in ranks.items():
        assert r["Allreduce"] == [1, 56]
        assert r["Allreduce_in_place"] == [1, 56]
        assert r["Reduce"] == [1, 12]
        # mpi4py broadcasts a pickled object as its length (one 8-byte MPI_Count) and then the pickle
        assert r["bcast_obj"] == [2, 8 + r["bcast_pickled"]]
        assert r["Bcast"] == [1, 44]
        assert r["Barrier"] == [1, 0]
        assert r["Gather"] == [1, 12]              # this rank's contribution
        assert r["Allgather"] == [1, 16]
        assert r["Scatter"] == [1, 32]             # the block each rank receives
        assert r["Alltoall"] == [1, 2 * nprocs * 8]  # everything this rank sends
        assert r["Gatherv"] == [1, 8 * (rank + 1)]
        assert r["Allgatherv"] == [1, 8 * (rank + 1)]
        assert r["Scatterv"] == [1, 8 * (rank + 1)]
        assert r["Alltoallv"] == [1, 8 * (rank + 1) * nprocs]
        # mpi4py's pickle-based allreduce is built on point-to-point calls, not on MPI_Allreduce
        assert r["allreduce_obj"] == [0, 0]
        calls = r["profile"]["calls"]
        assert calls["MPI_Gatherv"]["calls"] == 1 and calls["MPI_Gather"]["calls"] == 1
        assert calls["MPI_Barrier"]["bytes"] == 0
        assert calls["MPI_Barrier"]["hist"] == [[0, 0, calls["MPI_Barrier"]["calls"]]]
        assert calls["MPI_Allreduce"]["peers"] == {}


HISTOGRAM = '''
lib.reset()
sizes = [0, 1, 3, 80, 1000, 4096]
if rank == 0:
    for n in sizes:
        comm.Send(np.zeros(n, dtype="u1"), dest=1, tag=n)
else:
    for n in sizes:
        comm.Recv(np.empty(n, dtype="u1"), source=0, tag=n)
results["send"] = readers["mpi_send"]()
results["recv"] = readers["mpi_recv"]()

# The structured read the merged trace uses (ma_pmpi_read_hist, ma_pmpi_read_peers): the rows of each routine's
# histogram and peers, as C structs, with the count of rows returned even when the room is smaller.
import ctypes
class Bucket(ctypes.Structure):
    _fields_ = [("lo", ctypes.c_uint64), ("hi", ctypes.c_uint64), ("calls", ctypes.c_uint64)]
class PeerTotal(ctypes.Structure):
    _fields_ = [("peer", ctypes.c_int), ("calls", ctypes.c_uint64), ("bytes", ctypes.c_uint64)]
c = ctypes.CDLL(str(lib.path))
c.ma_pmpi_read_hist.restype = c.ma_pmpi_read_peers.restype = ctypes.c_size_t
c.ma_pmpi_routine_name.restype = ctypes.c_char_p
structured = {}
for routine in range(c.ma_pmpi_nroutines()):
    buckets, peers = (Bucket * 65)(), (PeerTotal * size)()
    n_buckets, n_peers = c.ma_pmpi_read_hist(routine, buckets, 65), c.ma_pmpi_read_peers(routine, peers, size)
    if n_buckets:
        assert c.ma_pmpi_read_hist(routine, buckets, 1) == n_buckets
        structured[c.ma_pmpi_routine_name(routine).decode()] = {
            "hist": [[b.lo, b.hi, b.calls] for b in buckets[:n_buckets]],
            "peers": {str(p.peer): [p.calls, p.bytes] for p in peers[:n_peers]}}
assert c.ma_pmpi_read_hist(-1, buckets, 65) == 0 and c.ma_pmpi_read_peers(999, peers, size) == 0
results["structured"] = structured
'''


@pytest.mark.mpi
@pytest.mark.parametrize("mode", MODES)
def test_histogram_peers_and_reset(tmp_path: Path, library: Path, mode: str) -> None:
    ranks = run_mpi(tmp_path, HISTOGRAM, 2, mode, library)
    expected_hist = [[0, 0, 1], [1, 1, 1], [2, 3, 1], [64, 127, 1], [512, 1023, 1], [4096, 8191, 1]]
    total = sum([0, 1, 3, 80, 1000, 4096])
    send = ranks[0]["profile"]["calls"]["MPI_Send"]
    recv = ranks[1]["profile"]["calls"]["MPI_Recv"]
    # reset() zeroed what MPI_Init-time and earlier calls had counted: only these six remain
    assert ranks[0]["send"] == [6, total] and ranks[1]["recv"] == [6, total]
    assert send["calls"] == 6 and send["bytes"] == total and send["hist"] == expected_hist
    assert send["peers"] == {"1": [6, total]}
    assert recv["hist"] == expected_hist and recv["peers"] == {"0": [6, total]}
    for r in ranks.values():  # the structured read gives what the profile's JSON says
        assert r["structured"] == {name: {"hist": entry["hist"], "peers": entry["peers"]}
                                   for name, entry in r["profile"]["calls"].items() if entry["hist"]}
    assert "MPI_Barrier" not in ranks[0]["profile"]["calls"]


RING = '''
right, left = (rank + 1) % size, (rank - 1) % size
n = 16 * (rank + 1)                       # rank r sends 16(r+1) doubles to its right neighbour
incoming = np.empty(16 * (left + 1))
measure("sendrecv", "mpi_sendrecv", lambda: comm.Sendrecv(np.zeros(n), dest=right, recvbuf=incoming, source=left))
request = measure("irecv", "mpi_irecv", lambda: comm.Irecv(incoming, source=left, tag=5))
measure("isend", "mpi_isend", lambda: comm.Isend(np.zeros(n), dest=right, tag=5).Wait())
request.Wait()
'''


@pytest.mark.mpi
@pytest.mark.parametrize("mode", MODES)
def test_ring_of_four_peers(tmp_path: Path, library: Path, mode: str) -> None:
    ranks = run_mpi(tmp_path, RING, 4, mode, library)
    for rank, r in ranks.items():
        right, left = (rank + 1) % 4, (rank - 1) % 4
        n = 16 * (rank + 1)
        assert r["sendrecv"] == [1, 8 * n]
        assert r["isend"] == [1, 8 * n]
        assert r["irecv"] == [1, 8 * 16 * (left + 1)]
        calls = r["profile"]["calls"]
        assert calls["MPI_Sendrecv"]["peers"] == {str(right): [1, 8 * n]}
        assert calls["MPI_Isend"]["peers"] == {str(right): [1, 8 * n]}
        assert calls["MPI_Irecv"]["peers"] == {str(left): [1, 8 * 16 * (left + 1)]}


READERS_MATCH_PROFILE = '''
comm.Send(np.zeros(3), dest=other) if rank == 0 else comm.Recv(np.empty(3), source=other)
comm.Allreduce(np.ones(2), np.empty(2))
comm.bcast("x" * 50, root=0)
comm.Barrier()
results["readers"] = {t: list(readers[t]()) for t in pmpi.MPI_TYPES}
'''


@pytest.mark.mpi
def test_readers_sum_the_routines_of_their_type(tmp_path: Path, library: Path) -> None:
    ranks = run_mpi(tmp_path, READERS_MATCH_PROFILE, 2, "preload", library)
    for r in ranks.values():
        calls = r["profile"]["calls"]
        for mpi_type, routines in pmpi.MPI_TYPES.items():
            expected = [sum(calls[x]["calls"] for x in routines if x in calls),
                        sum(calls[x]["bytes"] for x in routines if x in calls)]
            assert r["readers"][mpi_type] == expected, mpi_type
        assert r["readers"]["mpi_allreduce"] == [1, 16]


# ---- without MPI ---------------------------------------------------------------------------------
def test_import_is_cheap_and_does_not_start_mpi() -> None:
    code = ("import sys; import ma_runtime.pmpi as p; "
            "print(sorted(m for m in sys.modules if m.startswith('mpi4py') or m == 'ctypes')); "
            "print(p.loaded_library() is None)")
    env = {**os.environ, "MA_DISABLE": "1"}
    env.pop("LD_PRELOAD", None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    modules, not_loaded = done.stdout.splitlines()
    assert modules == "[]"
    assert not_loaded == "True"


def test_routine_table_matches_mpi_types(library: Path) -> None:
    """The C library's groups and routines are exactly MPI_TYPES (+ the timing-only routines)."""
    lib = ctypes.CDLL(str(library))  # RTLD_LOCAL: not live for mpi4py, just inspected
    lib.ma_pmpi_routine_name.restype = ctypes.c_char_p
    lib.ma_pmpi_group_name.restype = ctypes.c_char_p
    by_group: dict[str, list[str]] = {}
    for index in range(lib.ma_pmpi_nroutines()):
        name = lib.ma_pmpi_routine_name(index).decode()
        group = lib.ma_pmpi_group_name(lib.ma_pmpi_routine_group(index)).decode()
        by_group.setdefault(group, []).append(name)
    assert {g: tuple(r) for g, r in by_group.items() if g != "other"} == pmpi.MPI_TYPES
    assert tuple(by_group["other"]) == pmpi.OTHER_ROUTINES
    assert lib.ma_pmpi_group_name(len(pmpi.MPI_TYPES) + 1) is None
    assert lib.ma_pmpi_group_id(b"mpi_bogus") == -1
    # every wrapper exists in both the classic and the MPI-4 large-count form
    for routine in [r for rs in pmpi.MPI_TYPES.values() for r in rs]:
        assert hasattr(lib, routine), routine
        if routine != "MPI_Barrier":
            assert hasattr(lib, routine + "_c"), routine + "_c"


def test_profile_json_is_empty_before_any_call(library: Path) -> None:
    lib = ctypes.CDLL(str(library))
    lib.ma_pmpi_profile_json.restype = ctypes.c_size_t
    lib.ma_pmpi_profile_json.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    needed = lib.ma_pmpi_profile_json(None, 0)
    buffer = ctypes.create_string_buffer(needed + 1)
    assert lib.ma_pmpi_profile_json(buffer, needed + 1) == needed
    assert json.loads(buffer.value.decode()) == {"calls": {}}
    small = ctypes.create_string_buffer(4)  # too small: truncated, NUL-terminated, full size reported
    assert lib.ma_pmpi_profile_json(small, 4) == needed and small.value == b'{"c'


def test_rebuild_is_skipped_when_sources_are_unchanged(library: Path) -> None:
    before = library.stat().st_mtime_ns
    assert cparts.build_pmpi() == library
    assert library.stat().st_mtime_ns == before


@pytest.mark.mpi
def test_prepare_reports_why_not_when_mpi4py_came_first(tmp_path: Path, library: Path) -> None:
    script = tmp_path / "late.py"
    script.write_text("from mpi4py import MPI\nfrom ma_runtime import pmpi\n"
                      "print('REASON', pmpi.prepare_for_mpi4py())\nprint('LIVE', pmpi.loaded_library() is not None)\n")
    env = {**os.environ, "MA_DISABLE": "1", "PATH": f"{env_bin_dir()}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("LD_PRELOAD", None)
    done = subprocess.run([str(env_bin_dir() / "mpiexec"), "-n", "1", sys.executable, str(script)], env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert "REASON mpi4py.MPI was imported before the PMPI library could be loaded" in done.stdout
    assert "LIVE False" in done.stdout
