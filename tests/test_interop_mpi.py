"""Partner assertions (``peer=``), the PMPI per-call log (MA_PMPI_LOG) and synthetic SMPI traces replayed in
SimGrid, from one real 4-rank run of CG class S under mpiexec.

CG's butterfly and transpose partners are asserted as expressions of the rank in examples/npb_cg/conj_grad.py:
at 4 ranks every call's partner PASSes, and the per-call log shows the same partners call by call. A ring
with a wrong partner FAILs, naming the rank, the actual and the asserted partner. ``ma synth`` at 4 ranks
writes, call for call, the sequence the per-call log recorded; smpirun replays it (and a 64-rank one never
run), its compute time being exactly the traced flops at the given rate. On 2-rank runs of classes S and W, the
replay with compute priced by the maps backend (``ma synth --machine``) follows ``ma predict``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import REPO, VENV_BIN, clean_env
from test_machine_profile import sample_profile
from trace_schema import check_trace_schema

import ma_post
from examples.npb_cg.conj_grad import TRANSPOSE_PEER
from ma_core.expr import parse_expression
from ma_core.trace_format import MERGED_FILE, rank_file
from ma_post.interop.simgrid import Machine, replay
from ma_post.interop.synth import synthesize
from ma_post.peers import peer_results

pytestmark = pytest.mark.mpi
CG = REPO / "examples" / "npb_cg" / "cg.py"


def read_call_log(path: Path) -> list[tuple[str, int, int, int]]:
    """(routine, peer, tag, bytes) per line of a rank's MA_PMPI_LOG file."""
    rows = []
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            continue
        routine, peer, tag, nbytes = line.split("\t")
        rows.append((routine, int(peer), int(tag), int(nbytes)))
    return rows


@pytest.fixture(scope="module")
def cg_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("cg-peers")
    trace_dir, log_dir = root / "traces", root / "calls"
    log_dir.mkdir()
    argv = [str(VENV_BIN / "ma"), "run", "-n", "4", "--trace-dir", str(trace_dir), "--",
            sys.executable, str(CG), "--class", "S"]
    done = subprocess.run(argv, env=clean_env(MA_PMPI_LOG=str(log_dir)), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return trace_dir, log_dir


def test_cg_partners_pass_at_four_ranks(cg_run: tuple[Path, Path]) -> None:
    trace_dir, _ = cg_run
    results = peer_results(ma_post.load(trace_dir))
    names = {r.path.rsplit("/", 1)[-1] for r in results}
    assert {"transpose_snd", "transpose_rcv", "rowred_snd", "rowred_rcv", "pq_snd", "rr_rcv"} <= names
    for result in results:
        assert result.ok and result.unmeasured == 0, result.line()
        assert result.passes > 0, result.line()
    check_trace_schema(json.loads(rank_file(trace_dir, 1).read_text()))
    done = subprocess.run([str(VENV_BIN / "ma"), "validate", str(trace_dir)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:]
    assert "transpose_snd:peer:ma_mpi_send:PASS=" in done.stdout


def test_call_log_records_every_call_with_its_partner(cg_run: tuple[Path, Path]) -> None:
    trace_dir, log_dir = cg_run
    transpose = parse_expression(TRANSPOSE_PEER)
    ts = ma_post.load(trace_dir)
    for rank in range(4):
        calls = read_call_log(log_dir / f"rank-{rank}.calls.tsv")
        profile = ts.mpi_profiles[rank] or {}
        # the log has as many calls of each routine as the whole-run profile counts
        for routine, entry in profile["calls"].items():
            assert sum(1 for c in calls if c[0] == routine) == entry["calls"], routine
        sends = [c for c in calls if c[0] == "MPI_Send"]
        assert sends and all(tag >= 1 for _, _, tag, _ in sends)
        # 4 ranks: a 2x2 grid; the transpose partner is the rank's mirror across the diagonal
        partner = transpose.evaluate({"rank": rank, "num_proc_cols": 2, "num_proc_rows": 2})
        big = {peer for routine, peer, _, nbytes in sends if nbytes > 16}
        assert partner in big


RING = """
import sys
import numpy as np
import ma
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
ma.variable("nprocs", size)
peer = sys.argv[1]
send, recv = np.zeros(4), np.empty(4)
with ma.loop("ring", "3") as lp:
    for _ in lp.range(3):
        with ma.mpi_irecv("rcv", "32", peer="mod(rank-1, nprocs)"):
            request = comm.Irecv(recv, source=(rank - 1) % size)
        with ma.mpi_send("snd", "32", peer=peer):
            comm.Send(send, dest=(rank + 1) % size)
        request.Wait()
"""


@pytest.mark.parametrize("peer, ok", [("mod(rank+1, nprocs)", True), ("mod(rank+2, nprocs)", False)])
def test_ring_partner_pass_and_fail_with_both_ranks(tmp_path: Path, peer: str, ok: bool) -> None:
    script = tmp_path / "ring.py"
    script.write_text(textwrap.dedent(RING))
    trace_dir = tmp_path / "traces"
    argv = [str(VENV_BIN / "ma"), "run", "-n", "4", "--trace-dir", str(trace_dir), "--", sys.executable, str(script),
            peer]
    done = subprocess.run(argv, env=clean_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    validated = subprocess.run([str(VENV_BIN / "ma"), "validate", str(trace_dir)], capture_output=True, text=True)
    lines = {line.split(":peer:")[0]: line for line in validated.stdout.splitlines() if ":peer:" in line}
    assert lines["ring/rcv"].startswith("ring/rcv:peer:ma_mpi_irecv:PASS=12:FAIL=0")
    if ok:
        assert validated.returncode == 0
        assert lines["ring/snd"] == "ring/snd:peer:ma_mpi_send:PASS=12:FAIL=0"
    else:
        assert validated.returncode == 1
        # rank 0 sent to rank 1 where rank 2 was asserted; every rank failed on every call
        assert lines["ring/snd"].startswith("ring/snd:peer:ma_mpi_send:PASS=0:FAIL=12 "), lines["ring/snd"]
        assert "rank 0 call 1: partner was rank 1, asserted rank 2; 3 more rank(s) failed" in lines["ring/snd"]


# --- synthetic traces ----------------------------------------------------------------------------------------
LOGGED = {"MPI_Irecv": "irecv", "MPI_Isend": "isend", "MPI_Send": "send", "MPI_Recv": "recv", "MPI_Wait": "wait",
          "MPI_Reduce": "reduce", "MPI_Barrier": "barrier", "MPI_Allreduce": "allreduce", "MPI_Bcast": "bcast"}


def smpi_calls(path: Path) -> list[tuple[str, int, int]]:
    """(action, partner or root, bytes) of a rank's SMPI trace, computes left out; waits carry no partner."""
    calls = []
    for line in path.read_text().splitlines():
        fields = line.split()
        action = fields[1]
        if action in ("send", "isend", "recv", "irecv"):
            calls.append((action, int(fields[2]), int(fields[4])))
        elif action in ("reduce", "bcast"):
            calls.append((action, int(fields[-1]), int(fields[2])))
        elif action in ("wait", "barrier", "allreduce"):
            calls.append((action, -1, int(fields[2]) if action == "allreduce" else 0))
    return calls


def logged_calls(path: Path) -> list[tuple[str, int, int]]:
    out = []
    for routine, peer, _tag, nbytes in read_call_log(path):
        action = LOGGED[routine]
        out.append((action, -1 if action in ("wait", "barrier", "allreduce") else peer,
                    0 if action in ("wait", "barrier") else nbytes))
    return out


def test_synthetic_traces_match_the_logged_run_call_for_call(cg_run: tuple[Path, Path], tmp_path: Path) -> None:
    trace_dir, log_dir = cg_run
    result = synthesize(ma_post.load(trace_dir), tmp_path / "smpi", {"nprocs": 4})
    assert result.nprocs == 4 and result.index.read_text().count("\n") == 4
    for rank in range(4):
        synthetic = smpi_calls(result.files[rank])
        real = logged_calls(log_dir / f"rank-{rank}.calls.tsv")
        assert len(synthetic) == len(real) > 5000
        mismatch = next((i for i, (a, b) in enumerate(zip(synthetic, real, strict=True)) if a != b), None)
        assert mismatch is None, (rank, mismatch, synthetic[mismatch], real[mismatch])


def test_replay_in_simgrid_computes_the_traced_flops(cg_run: tuple[Path, Path], tmp_path: Path) -> None:
    trace_dir, _ = cg_run
    ts = ma_post.load(trace_dir)
    result = synthesize(ts, tmp_path / "smpi", {}, region="conj_loop")
    speed = 1e9
    # the flops the runtime predicted inside the timed loop, per rank: the slowest rank's at `speed`
    loop = ts.find("conj_loop", "loop")
    flops = sum(site.predicted.sum.sum(axis=1) for site in ts.walk(loop) if site.type == "flop")
    expected = float(flops.max()) / speed
    ideal = replay(result, Machine(0.0, 1e15, speed))
    assert ideal.compute_s == pytest.approx(expected, rel=1e-12)
    assert ideal.simulated_s == pytest.approx(expected, rel=1e-5)  # a free network: computing only
    slow = replay(result, Machine(5e-6, 1e9, speed), per_rank=True)
    assert len(slow.rank_s) == 4 and max(slow.rank_s) == pytest.approx(slow.simulated_s, rel=1e-5)
    assert all(0 < seconds <= slow.simulated_s * (1 + 1e-6) for seconds in slow.rank_s)
    fast = replay(result, Machine(5e-6, 1e10, speed))
    assert slow.simulated_s > fast.simulated_s > ideal.simulated_s
    assert slow.communication_s > 0


def test_replay_takes_the_machine_from_a_profile(cg_run: tuple[Path, Path], tmp_path: Path) -> None:
    """--profile reads the probe's ping-pong and peak flop rate; the same numbers as options replay the same."""
    trace_dir, _ = cg_run
    machine = sample_profile()
    assert machine.network is not None
    profile_path = machine.save(tmp_path / "machine.json")
    options = ["--latency", repr(machine.network.latency_s), "--bandwidth",
               repr(machine.network.bandwidth_bytes_per_s), "--speed", repr(machine.peak_flops)]
    printed = []
    for i, machine_args in enumerate((["--profile", str(profile_path)], options)):
        done = subprocess.run([str(VENV_BIN / "ma"), "synth", str(trace_dir), str(tmp_path / f"s{i}"),
                               "--region", "conj_loop", "--replay", *machine_args],
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        line = next(line for line in done.stdout.splitlines() if "predicted time:" in line)
        printed.append(line.split(" (SimGrid took")[0])  # SimGrid's own wall time varies
    assert printed[0] == printed[1]
    broken = tmp_path / "broken.json"
    broken.write_text(profile_path.read_text().replace('"latency_s"', '"latency"'))
    done = subprocess.run([str(VENV_BIN / "ma"), "synth", str(trace_dir), str(tmp_path / "s2"), "--replay",
                           "--profile", str(broken)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 2 and "broken.json" in done.stderr and "network" in done.stderr


PROFILE = "amd-epyc-zen4-kvm"


@pytest.fixture(scope="module", params=["S", "W"])
def cg_two_ranks(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    if request.param == "S":  # the session's run of class S on 2 ranks (tests/conftest.py): the same command
        return Path(request.getfixturevalue("cg_class_s_on_two_ranks"))
    trace_dir = tmp_path_factory.mktemp(f"cg-{request.param}-2") / "traces"
    argv = [str(VENV_BIN / "ma"), "run", "-n", "2", "--trace-dir", str(trace_dir), "--",
            sys.executable, str(CG), "--class", request.param]
    done = subprocess.run(argv, env=clean_env(), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return trace_dir


def replayed_through_the_model(trace_dir: Path, out: Path, *options: str) -> tuple[float, float]:
    """``ma synth --region conj_loop --replay --machine PROFILE``: the simulated time and its compute part."""
    done = subprocess.run([str(VENV_BIN / "ma"), "synth", str(trace_dir), str(out), "--region", "conj_loop",
                           "--replay", "--machine", PROFILE, *options], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    found = re.search(r"predicted time: (\S+) s = compute (\S+) s", done.stdout)
    assert found is not None, done.stdout
    return float(found.group(1)), float(found.group(2))


def test_replay_through_the_model_agrees_with_ma_predict(cg_two_ranks: Path, tmp_path: Path) -> None:
    """The replay of NPB's timed loop is the maps prediction's work plus SimGrid's messages: within 10 percentage
    points of ma predict's error against the run's measured time (the difference is the Python program's
    per-message cost, which maps counts as communication and SimGrid's ping-pong network does not have)."""
    from backends.base import PARTS
    from backends.machine import profile
    from backends.maps.backend import MapsBackend
    from ma_post import ModelBuilder

    ts = ma_post.load(cg_two_ranks)
    model = ModelBuilder(ts)
    machine = profile.load(profile.shipped_profiles()[PROFILE])
    measured = float(ts.find("conj_loop", "loop").wall_ns.max()) / 1e9
    for exchange, options in ((True, ()), (False, ("--no-python-exchange",))):
        seconds = MapsBackend(python_exchange=exchange).predict(model, machine, {}).seconds(model)
        loop = seconds.within("conj_loop")
        predicted = float(seconds.total(loop).max())
        work = seconds.total(loop) - seconds.parts(loop)[PARTS.index("communication")]
        replayed, compute = replayed_through_the_model(cg_two_ranks, tmp_path / f"x{exchange}", *options)
        assert compute == pytest.approx(float(work.max()), rel=1e-5)
        assert abs(replayed - predicted) <= 0.10 * measured, (replayed, predicted, measured)
        if not exchange:  # the same model then: SimGrid's messages and Hockney's agree at 2 ranks
            assert replayed == pytest.approx(predicted, rel=0.02)


@pytest.mark.slow
def test_synthesis_and_replay_at_a_process_count_never_run(cg_run: tuple[Path, Path], tmp_path: Path) -> None:
    trace_dir, _ = cg_run
    done = subprocess.run([str(VENV_BIN / "ma"), "synth", str(trace_dir), str(tmp_path / "s64"), "--set", "nprocs=64",
                           "--region", "conj_loop", "--replay", "--latency", "2e-6", "--bandwidth", "1e10",
                           "--speed", "1e9"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("64 rank traces") and "predicted time:" in done.stdout
    # every message has its matching receive: rank r's sends to p are p's receives from r, in order
    sends: dict[tuple[int, int], list[int]] = {}
    recvs: dict[tuple[int, int], list[int]] = {}
    for rank in range(64):
        for action, peer, nbytes in smpi_calls(tmp_path / "s64" / f"rank-{rank}.smpi"):
            if action == "send":
                sends.setdefault((rank, peer), []).append(nbytes)
            elif action == "irecv":
                recvs.setdefault((peer, rank), []).append(nbytes)
    assert sends == recvs and len(sends) > 64


C_RING = r"""
#include <mpi.h>
#include <stdlib.h>
#include <ma.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    ma_def_variable_int("rank", rank);
    ma_def_variable_int("nprocs", size);
    double out = rank, in = 0;
    ma_loop_start("ring", "3", 3);
    for (int i = 0; i < 3; i++) {
        MPI_Request request;
        ma_mpi_irecv("rcv", "8", MA_NO_VALUE, 1);
        ma_mpi_peer("mod(rank-1, nprocs)");
        MPI_Irecv(&in, 1, MPI_DOUBLE, (rank + size - 1) % size, 0, MPI_COMM_WORLD, &request);
        ma_mpi_send("snd", "8", MA_NO_VALUE, 1);
        ma_mpi_peer(argc > 1 ? argv[1] : "mod(rank+1, nprocs)");
        MPI_Send(&out, 1, MPI_DOUBLE, (rank + 1) % size, 0, MPI_COMM_WORLD);
        MPI_Wait(&request, MPI_STATUS_IGNORE);
    }
    ma_loop_end("ring", 3);
    MPI_Finalize();
    return 0;
}
"""


def test_c_partner_assertions_pass_and_fail(tmp_path: Path) -> None:
    from ma_tools import cparts
    from ma_tools.toolchain import find_mpicc

    source = tmp_path / "ring.c"
    source.write_text(C_RING)
    binary = tmp_path / "ring"
    built = subprocess.run([str(find_mpicc()), "-O2", "-Wall", "-Wextra", "-Werror", *cparts.c_flags(), str(source),
                            "-o", str(binary), *cparts.c_libs()], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    for peer, ok in (("mod(rank+1, nprocs)", True), ("mod(rank+2, nprocs)", False)):
        trace_dir = tmp_path / f"traces-{ok}"
        done = subprocess.run([str(VENV_BIN / "mpiexec"), "-n", "4", str(binary), peer],
                              env=clean_env(MA_TRACE_DIR=str(trace_dir)), capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        check_trace_schema(json.loads(rank_file(trace_dir, 0).read_text()))
        validated = subprocess.run([str(VENV_BIN / "ma"), "validate", str(trace_dir)], capture_output=True, text=True)
        lines = {line.split(":peer:")[0]: line for line in validated.stdout.splitlines() if ":peer:" in line}
        assert lines["ring/rcv"] == "ring/rcv:peer:ma_mpi_irecv:PASS=12:FAIL=0"
        if ok:
            assert validated.returncode == 0 and lines["ring/snd"] == "ring/snd:peer:ma_mpi_send:PASS=12:FAIL=0"
        else:
            assert validated.returncode == 1
            assert lines["ring/snd"].startswith("ring/snd:peer:ma_mpi_send:PASS=0:FAIL=12 (rank 0 call 1: partner "
                                                "was rank 1, asserted rank 2; 3 more rank(s) failed)"), lines


C_RING_WITH_VEC_LOOP = C_RING.replace('    ma_loop_end("ring", 3);\n', """    ma_loop_end("ring", 3);
    ma_def_variable_int("n", 1000);
    double x[1000], y[1000];
    for (int i = 0; i < 1000; i++)
        x[i] = i, y[i] = 1;
    ma_vec_loop_start("daxpy", "3*n/4", 750, "2*n", 2000, "4", 4, 2);
    ma_vec_loop_gathers("daxpy", "n", 1000, "8*n", MA_NO_VALUE);
    for (int i = 0; i < 1000; i++)
        y[i] += 2.5 * x[i];
    ma_vec_loop_stop("daxpy");
    if (y[999] < 0)
        return 1;
""")


def test_c_partner_and_vec_loop_results_agree_between_layouts(tmp_path: Path) -> None:
    """The C runtime's merge carries each rank's peers and vector_loops into trace.json: the merged trace
    validates exactly as the rank files of the same run do."""
    from ma_post.vector import vec_loop_results
    from ma_tools import cparts
    from ma_tools.toolchain import find_mpicc

    assert C_RING_WITH_VEC_LOOP != C_RING
    source = tmp_path / "ring.c"
    source.write_text(C_RING_WITH_VEC_LOOP)
    binary = tmp_path / "ring"
    built = subprocess.run([str(find_mpicc()), "-O2", "-Wall", "-Wextra", "-Werror", *cparts.c_flags(), str(source),
                            "-o", str(binary), *cparts.c_libs()], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    for layout in ("merged", "per-rank"):
        done = subprocess.run([str(VENV_BIN / "mpiexec"), "-n", "4", str(binary), "mod(rank+2, nprocs)"],
                              env=clean_env(MA_TRACE_DIR=str(tmp_path / layout), MA_TRACE_LAYOUT=layout),
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "merged").iterdir()) == [MERGED_FILE]
    merged, per_rank = ma_post.load(tmp_path / "merged"), ma_post.load(tmp_path / "per-rank")
    results = [[r.to_json() for r in peer_results(ts)] for ts in (merged, per_rank)]
    assert results[0] == results[1]
    by_path = {r["path"]: r for r in results[0]}
    assert by_path["ring/rcv"]["pass"] == 12 and by_path["ring/snd"]["fail"] == 12
    assert by_path["ring/snd"]["failures"][0] == {"rank": 0, "call": 1, "expected": 2.0, "actual": 1}
    loops = [vec_loop_results(ts) for ts in (merged, per_rank)]
    assert loops[0] == loops[1] and [r.rank for r in loops[0]] == [0, 1, 2, 3]
    assert loops[0][0].predicted == {"vloadstore": 750, "vflops": 2000, "avl": 4} and loops[0][0].calls == 1
    assert loops[0][0].gathers == {"gathers": 1000, "gathered_bytes": 8000}
    outputs = [subprocess.run([str(VENV_BIN / "ma"), "validate", str(tmp_path / layout), "--vec-loops", "figure8"],
                              capture_output=True, text=True) for layout in ("merged", "per-rank")]
    assert outputs[0].returncode == outputs[1].returncode == 1, outputs[0].stderr
    assert outputs[0].stdout == outputs[1].stdout and "daxpy:vec_loop.avl:4:unmeasured:-" in outputs[0].stdout


def test_only_the_first_calls_of_a_site_are_checked(tmp_path: Path) -> None:
    script = tmp_path / "ring.py"
    script.write_text(textwrap.dedent(RING))
    trace_dir = tmp_path / "traces"
    argv = [str(VENV_BIN / "ma"), "run", "-n", "4", "--trace-dir", str(trace_dir), "--", sys.executable, str(script),
            "mod(rank+2, nprocs)"]
    done = subprocess.run(argv, env=clean_env(MA_PEER_CHECKS="2"), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    results = {r.path: r for r in peer_results(ma_post.load(trace_dir))}
    assert (results["ring/rcv"].passes, results["ring/rcv"].fails) == (8, 0)  # 2 of the 3 calls, on 4 ranks
    assert (results["ring/snd"].passes, results["ring/snd"].fails) == (0, 8)
