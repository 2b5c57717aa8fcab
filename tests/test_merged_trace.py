"""The merged trace of a job: written through MPI at exit, read into the rank dimension, and the same
validation and models as the rank files of the same run; plus the strict reading of rank files."""

from __future__ import annotations

import io
import json
import math
import os
import re
import signal
import subprocess
import textwrap
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import VENV_BIN, clean_env
from post_fixtures import cg_program, make_trace

from ma_core.errors import TraceError
from ma_core.trace_format import MERGED_FILE, MERGED_INDEX, RUN_RECORD_FILE
from ma_post import load, model, validate
from ma_post.models import available_quantities
from ma_post.validation import format_lines
from ma_runtime.merge import Bundle, build_archive, part_of, write_archive

PROGRAM = """
    import os, sys
    from mpi4py import MPI
    import ma

    comm = MPI.COMM_WORLD
    ma.variable("n", 64)
    ma.variable("nprocs", comm.size)
    ma.variable("me", comm.rank)
    with ma.subroutine("main"):
        with ma.loop("iters", "3") as lp:
            for _ in lp.range(3):
                with ma.mpi_allreduce("sum", "8"):
                    comm.allreduce(1.0)
        with ma.loop("wrong", "n + 1") as lp:       # fails on every rank: a first_fail in the trace
            for _ in lp.range(64):
                pass
        if comm.rank == 0:
            with ma.loop("only_rank0", "2") as lp:   # a site the other ranks lack
                for _ in lp.range(2):
                    pass
        with ma.loop("per_rank", "me + 1") as lp:    # a rank-dependent count
            for _ in lp.range(comm.rank + 1):
                pass
    if os.environ.get("DIE_ON_RANK") == str(comm.rank):
        raise RuntimeError("rank failed on purpose")
"""


def run_job(tmp_path: Path, ranks: int, trace_dir: str, layout: str, **env: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "prog.py").write_text(textwrap.dedent(PROGRAM))
    environment = {**clean_env(), "MA_TRACE_LAYOUT": layout, **env}
    return subprocess.run([str(VENV_BIN / "ma"), "run", "-n", str(ranks), "--trace-dir", trace_dir, "--",
                           str(VENV_BIN / "python"), "prog.py"], cwd=tmp_path, env=environment, capture_output=True,
                          text=True, timeout=180)


def report_of(directory: Path) -> tuple[str, list[str]]:
    ts = load(directory)
    lines = format_lines(validate(ts))
    models = [f"{q} = {model(ts, q).expr}" for q in available_quantities(ts)]
    assert any(m.startswith("mpi_bytes") for m in models)
    return "\n".join(lines), models



def trace_files(directory: Path) -> list[str]:
    """The files a run left in its trace directory, besides the run record `ma run` writes."""
    return sorted(p.name for p in directory.iterdir() if p.name != RUN_RECORD_FILE)

@pytest.mark.mpi
@pytest.mark.parametrize("ranks", [2, 4])
def test_merged_and_rank_files_of_one_run_agree(tmp_path: Path, ranks: int) -> None:
    merged = run_job(tmp_path, ranks, "merged", "merged", MA_FLUSH_SECONDS="0.000001")
    assert merged.returncode == 0, merged.stderr
    assert f"{ranks} of {ranks} rank traces" in merged.stderr
    # Only the merged file: the periodic flushes of every rank were superseded and removed.
    assert trace_files(tmp_path / "merged") == [MERGED_FILE]
    per_rank = run_job(tmp_path, ranks, "per-rank", "per-rank")
    assert per_rank.returncode == 0, per_rank.stderr
    assert not (tmp_path / "per-rank" / MERGED_FILE).exists()
    assert report_of(tmp_path / "merged") == report_of(tmp_path / "per-rank")
    for cli in (["validate", "--format", "json"], ["msgdist"], ["model"]):
        outputs = [subprocess.run([str(VENV_BIN / "ma"), *cli, layout], cwd=tmp_path, env=clean_env(),
                                  capture_output=True, text=True, timeout=120) for layout in ("merged", "per-rank")]
        assert outputs[0].returncode == outputs[1].returncode
        texts = [re.sub(r'"run_id": "\w+"', "", out.stdout).replace(f'"{layout}"', "D")
                 for out, layout in zip(outputs, ("merged", "per-rank"), strict=True)]
        assert texts[0] == texts[1], cli
    ts = load(tmp_path / "merged")
    only = ts.find("main/only_rank0")
    assert only.ranks_present().tolist() == [True] + [False] * (ranks - 1)  # absent ranks marked
    assert ts.find("main/per_rank").measured.per_rank().sum.tolist() == [r + 1 for r in range(ranks)]
    assert sorted(ts.find("main/wrong").first_fail) == list(range(ranks))
    assert [h["rank"] for h in ts.headers] == list(range(ranks)) and {h["status"] for h in ts.headers} == {"complete"}
    profiles = [ts.mpi_profiles[ranks - 1], load(tmp_path / "per-rank").mpi_profiles[ranks - 1]]
    assert profiles[0] is not None and profiles[1] is not None
    assert [{name: {**entry, "time_ns": 0} for name, entry in p["calls"].items()} for p in profiles
            ] == [{name: {**entry, "time_ns": 0} for name, entry in profiles[1]["calls"].items()}] * 2


@pytest.mark.mpi
def test_layout_both_writes_both_and_the_merged_file_is_plain_numpy(tmp_path: Path) -> None:
    done = run_job(tmp_path, 2, "both", "both")
    assert done.returncode == 0, done.stderr
    names = trace_files(tmp_path / "both")
    assert names == [MERGED_FILE, "rank-0.ma.json", "rank-1.ma.json"]
    # Readable without the SDK: numpy and the standard library.
    with np.load(tmp_path / "both" / MERGED_FILE) as archive:
        index = json.loads(zipfile.ZipFile(tmp_path / "both" / MERGED_FILE).read(MERGED_INDEX))
        assert len(index["groups"]) == 2  # rank 0 has a site rank 1 lacks: two tree structures
        for g, group in enumerate(index["groups"]):
            row = next(i for i, node in enumerate(group["threads"][0]["nodes"]) if node[3] == "main/per_rank")
            (rank,) = archive[f"group-{g}-ranks"].tolist()
            assert archive[f"group-{g}-values"][0, row, index["fields"].index("meas_sum")] == rank + 1
        assert archive["rank"].tolist() == [0, 1]
    rank_file = json.loads((tmp_path / "both" / "rank-1.ma.json").read_text())
    assert rank_file["header"]["status"] == "complete"


@pytest.mark.mpi
def test_a_job_that_died_before_finalize_is_read_from_its_flushes(tmp_path: Path) -> None:
    start = time.monotonic()
    done = run_job(tmp_path, 2, "died", "merged", MA_FLUSH_SECONDS="0.000001", DIE_ON_RANK="1")
    assert time.monotonic() - start < 60  # rank 0, waiting in the merge for rank 1, was not left hanging
    assert done.returncode != 0
    assert not (tmp_path / "died" / MERGED_FILE).exists()
    ts = load(tmp_path / "died")
    assert ts.ranks.tolist() == [0, 1]
    statuses = ts.incomplete_ranks()
    assert statuses[1].startswith("exception: RuntimeError: rank failed on purpose")
    assert ts.find("main/per_rank").measured.per_rank().sum.tolist()[1] == 2  # rank 1's final numbers


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", [2, 4])
def test_the_c_ring_example_writes_the_same_merged_format(tmp_path: Path, ranks: int) -> None:
    from test_c_runtime import RING, compile_c, environment, mpiexec, run

    ring = compile_c(RING, tmp_path / "ring")
    for layout in ("merged", "per-rank"):
        env = environment(tmp_path / layout, MA_TRACE_LAYOUT=layout, MA_FLUSH_SECONDS="0.000001",
                          MA_TOLERANCE="heap_memory=0.01")
        run(mpiexec(ranks, str(ring), "1000", "3", "--wrong"), env, tmp_path)
    assert trace_files(tmp_path / "merged") == [MERGED_FILE]
    index = json.loads(zipfile.ZipFile(tmp_path / "merged" / MERGED_FILE).read(MERGED_INDEX))
    assert index["writer"]["producer"].startswith("libma") and index["size"] == ranks and index["absent"] == []
    assert report_of(tmp_path / "merged") == report_of(tmp_path / "per-rank")
    merged, per_rank = load(tmp_path / "merged"), load(tmp_path / "per-rank")
    assert np.array_equal(merged.data[:, :5], per_rank.data[:, :5])  # counts, pass, fail, unmeasured, mismatch
    assert list(merged.sites) == list(per_rank.sites)
    assert [h["language"] for h in merged.headers] == ["c"] * ranks
    assert {k: (s.first_fail, s.first_mismatch) for k, s in merged.sites.items()} == {
        k: (s.first_fail, s.first_mismatch) for k, s in per_rank.sites.items()}
    assert [a.ranks for a in merged.anomalies] == [a.ranks for a in per_rank.anomalies]
    def untimed(profiles: Any) -> list[Any]:
        return [{name: {**e, "time_ns": 0} for name, e in p["calls"].items()} for p in profiles]

    assert untimed(merged.mpi_profiles) == untimed(per_rank.mpi_profiles)  # calls, bytes, histogram, peers


@pytest.mark.mpi
def test_a_program_that_finalizes_mpi_itself_writes_rank_files(tmp_path: Path) -> None:
    (tmp_path / "fin.py").write_text(textwrap.dedent("""
        from mpi4py import MPI
        import ma
        with ma.loop("l", "2") as lp:
            for _ in lp.range(2):
                pass
        MPI.Finalize()
    """))
    done = subprocess.run([str(VENV_BIN / "ma"), "run", "-n", "2", "--trace-dir", "t", "--", str(VENV_BIN / "python"),
                           "fin.py"], cwd=tmp_path, env=clean_env(MA_TRACE_LAYOUT="merged"), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert trace_files(tmp_path / "t") == ["rank-0.ma.json", "rank-1.ma.json"]
    assert load(tmp_path / "t").find("l").measured.per_rank().sum.tolist() == [2, 2]


# --- merged files built from documents in memory (quick lane) ------------------------------------------
def merged_from(documents: list[dict[str, Any]], directory: Path, size: int | None = None) -> Path:
    bundle = Bundle()
    for document in documents:
        bundle.add(part_of(document))
    return write_archive(directory, build_archive(bundle, size or len(documents)))


def test_merged_file_gives_what_the_rank_files_give(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ma_post.merged import ValueMember

    monkeypatch.setattr(ValueMember, "BLOCK_BYTES", 1)  # one rank per block: the blocked read is exercised
    program = cg_program()
    documents = [make_trace(program, r, 4, threads=[program[:2]] if r == 1 else ()) for r in range(4)]
    documents[2]["anomalies"] = [{"kind": "unbalanced", "path": "cg", "message": "m", "count": 2, "file": "f",
                                  "line": 3}]
    per_rank = tmp_path / "per-rank"
    per_rank.mkdir()
    for r, document in enumerate(documents):
        (per_rank / f"rank-{r}.ma.json").write_text(json.dumps(document))
    merged_from(documents, tmp_path / "merged")
    a, b = load(tmp_path / "merged"), load(per_rank)
    assert np.array_equal(a.data, b.data, equal_nan=True)
    assert list(a.sites) == list(b.sites)
    assert list(a.headers) == list(b.headers) and list(a.mpi_profiles) == list(b.mpi_profiles)
    assert [(x.kind, x.path, x.count, x.ranks) for x in a.anomalies] == [(x.kind, x.path, x.count, x.ranks)
                                                                          for x in b.anomalies]
    assert {k: v.values.tolist() for k, v in a.variables.items()} == {k: v.values.tolist()
                                                                      for k, v in b.variables.items()}
    assert format_lines(validate(a)) == format_lines(validate(b))


def test_merged_file_plus_the_rank_file_of_a_rank_it_lacks(tmp_path: Path) -> None:
    program = cg_program()
    documents = [make_trace(program, r, 3) for r in range(3)]
    merged_from(documents[:2], tmp_path, size=3)
    with pytest.raises(TraceError, match=r"1 of 3 ranks are neither in job.ma.npz nor in a rank file"):
        load(tmp_path)
    (tmp_path / "rank-2.ma.json").write_text(json.dumps(documents[2]))
    both = load(tmp_path)
    (tmp_path / MERGED_FILE).unlink()
    merged_from(documents, tmp_path / "all")
    whole = load(tmp_path / "all")
    assert both.ranks.tolist() == [0, 1, 2]
    assert np.array_equal(both.data, whole.data, equal_nan=True)
    assert [h["rank"] for h in both.headers] == [0, 1, 2]


def test_damaged_merged_files_are_trace_errors_naming_file_and_member(tmp_path: Path) -> None:
    path = merged_from([make_trace(cg_program(), r, 2) for r in range(2)], tmp_path)
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(TraceError, match=r"job.ma.npz: cannot read the merged trace .*truncated"):
        load(tmp_path)
    with zipfile.ZipFile(tmp_path / "x.npz", "w") as archive:
        archive.writestr(MERGED_INDEX, b"{}")
    with pytest.raises(TraceError, match=r"x.npz: trace.json: format is not 'ma-trace-merged'"):
        load(tmp_path / "x.npz")
    members = build_archive(_bundle([make_trace(cg_program(), 0, 1)]), 1)
    index = json.loads(members[MERGED_INDEX])
    index["version"] = 99
    members[MERGED_INDEX] = json.dumps(index).encode()
    write_archive(tmp_path / "v", members)
    with pytest.raises(TraceError, match=r"merged format version 99 is newer"):
        load(tmp_path / "v")
    members = build_archive(_bundle([make_trace(cg_program(), 0, 1)]), 1)
    members["group-0-values.npy"] = members["rank_time.npy"]
    write_archive(tmp_path / "s", members)
    with pytest.raises(TraceError, match=r"member group-0-values.npy has shape \(1, 2\) of float64, expected"):
        load(tmp_path / "s")


def _bundle(documents: list[dict[str, Any]]) -> Bundle:
    bundle = Bundle()
    for document in documents:
        bundle.add(part_of(document))
    return bundle


# --- strict reading of rank files --------------------------------------------------------------------
def _one_rank(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "rank-0.ma.json"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def test_deep_nesting_is_a_trace_error_naming_the_file(tmp_path: Path) -> None:
    _one_rank(tmp_path, b"[" * 1_000_000)
    with pytest.raises(TraceError, match=r"rank-0.ma.json: .*(nested more than|JSON at line)"):
        load(tmp_path)
    document = make_trace(cg_program(), 0, 1)
    # a 20,000-deep site tree (written as text: json.dumps itself would recurse)
    text = json.dumps({"format": "ma-trace", "version": 1, "header": document["header"], "threads": []})
    text = text.replace('"threads": []', '"threads": [{"thread": 0, "root": ' + '{"children": [' * 20_000
                        + "]}" * 20_000 + "}]")
    _one_rank(tmp_path, text)
    with pytest.raises(TraceError, match=r"rank-0.ma.json: JSON nested more than \d+ levels deep"):
        load(tmp_path)


@pytest.mark.parametrize(("change", "message"), [
    (lambda n: n.update(calls="1e6"), r"site 'na': field 'calls' is str '1e6', expected an integer"),
    (lambda n: n.update(calls=True), r"site 'na': field 'calls' is bool True, expected an integer"),
    (lambda n: n.update(calls=1.5), r"site 'na': field 'calls' is float 1.5, expected an integer"),
    (lambda n: n.update(predicted="x"), r"site 'na': field 'predicted' is str 'x', expected an object or null"),
    (lambda n: n.update(predicted={"n": 1, "min": "2", "max": 2, "sum": 2}),
     r"site 'na': field 'predicted.min' is str '2', expected a number or null"),
    (lambda n: n.update(predicted={"n": 1, "min": 2}), r"site 'na': field 'predicted.max' is missing"),
    (lambda n: n.update(line="7"), r"site 'na': field 'line' is str '7', expected an integer or null"),
    (lambda n: n.update(id=7), r"site '.*': field 'id' is int 7, expected a string"),
    (lambda n: n.update(children={}), r"site 'na': field 'children' is dict {}, expected an array of sites"),
    (lambda n: n["children"].append(3), r"a child of site 'na' is int 3, expected a site object"),
])
def test_field_types_are_exact_and_errors_name_file_site_and_field(tmp_path: Path, change: Any, message: str
                                                                     ) -> None:
    document = make_trace(cg_program(), 0, 1)
    node = document["threads"][0]["root"]["children"][0]
    assert node["path"] == "na"
    change(node)
    _one_rank(tmp_path, json.dumps(document))
    with pytest.raises(TraceError, match=r"rank-0.ma.json: " + message):
        load(tmp_path)


def test_numbers_past_the_double_range_read_as_infinities(tmp_path: Path) -> None:
    document = make_trace(cg_program(), 0, 1)
    node = document["threads"][0]["root"]["children"][0]
    node["predicted"] = {"n": 1, "min": 2, "max": 2, "sum": 10**400}
    document["variables"][0].update(value=-(10**400), max=10**400)
    _one_rank(tmp_path, json.dumps(document))
    ts = load(tmp_path)
    assert ts.find("na").predicted.sum.tolist() == [[math.inf]]
    variable = ts.variables[(document["variables"][0]["name"], document["variables"][0]["scope"] or "")]
    assert variable.values.tolist() == [-math.inf] and variable.maxs.tolist() == [math.inf]
    document["variables"][0]["value"] = "12"
    _one_rank(tmp_path, json.dumps(document))
    with pytest.raises(TraceError, match=r"rank-0.ma.json: variable .*field 'value' is str '12', expected a number"):
        load(tmp_path)


@pytest.mark.mpi
def test_merge_waits_are_bounded(tmp_path: Path) -> None:
    """A rank that never reaches the merge (stopped here) costs the others MA_MERGE_TIMEOUT, not a hang: rank 0
    writes the merged file without it, and the reader adds the stopped rank's last flush."""
    (tmp_path / "prog.py").write_text(textwrap.dedent("""
        import os, signal
        from mpi4py import MPI
        import ma
        with ma.loop("l", "1") as lp:
            for _ in lp.range(1):
                pass
        if MPI.COMM_WORLD.rank == 1:
            open("stopped.pid", "w").write(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGSTOP)
    """))
    environment = clean_env(MA_TRACE_LAYOUT="merged", MA_MERGE_TIMEOUT="2", MA_TRACE_DIR=str(tmp_path / "t"),
                            MA_FLUSH_SECONDS="0.000001")
    job = subprocess.Popen([str(VENV_BIN / "mpiexec"), "-n", "2", str(VENV_BIN / "python"), "prog.py"],
                           cwd=tmp_path, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    written = tmp_path / "t" / MERGED_FILE
    try:
        deadline = time.monotonic() + 60
        while not written.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert written.exists(), "rank 0 waited for the stopped rank for ever"
        assert json.loads(zipfile.ZipFile(written).read(MERGED_INDEX))["absent"] == [1]
        ts = load(tmp_path / "t")
        assert ts.ranks.tolist() == [0, 1] and ts.incomplete_ranks() == {1: "running"}
        assert ts.find("l").measured.per_rank().sum.tolist() == [1, 1]
    finally:
        pid_file = tmp_path / "stopped.pid"
        if pid_file.exists():
            os.kill(int(pid_file.read_text()), signal.SIGKILL)  # the rank this test stopped
        job.kill()
        job.communicate(timeout=30)


def test_the_typed_fast_path_reads_what_the_checked_path_reads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    from ma_post import reader

    program = cg_program()
    for r in range(3):
        document = make_trace(program, r, 3, threads=[program[:2]] if r == 2 else ())
        document["threads"][0]["root"]["children"][0].pop("wall_ns")  # a default the structs fill in
        (tmp_path / f"rank-{r}.ma.json").write_text(json.dumps(document))
    fast = load(tmp_path)
    monkeypatch.setattr(reader, "FAST_JSON", False)
    checked = load(tmp_path)
    assert reader.typed_reader.decode((tmp_path / "rank-0.ma.json").read_bytes()) is not None
    assert np.array_equal(fast.data, checked.data, equal_nan=True) and list(fast.sites) == list(checked.sites)
    assert list(fast.headers) == list(checked.headers) and list(fast.mpi_profiles) == list(checked.mpi_profiles)
    assert {k: (s.first_fail, s.first_mismatch) for k, s in fast.sites.items()} == {
        k: (s.first_fail, s.first_mismatch) for k, s in checked.sites.items()}


OPTIONAL_PROGRAM = """
    import sys
    import numpy as np
    from mpi4py import MPI
    import ma

    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size
    ma.variable("nprocs", size)
    ma.variable("n", 1000)
    send, recv = np.zeros(4), np.empty(4)
    with ma.loop("ring", "3") as lp:
        for _ in lp.range(3):
            with ma.mpi_irecv("rcv", "32", peer="mod(rank-1, nprocs)"):
                request = comm.Irecv(recv, source=(rank - 1) % size)
            with ma.mpi_send("snd", "32", peer=sys.argv[1]):
                comm.Send(send, dest=(rank + 1) % size)
            request.Wait()
    x, y = np.arange(1000.0), np.ones(1000)
    if rank % 2 == 0:  # only some ranks hold vector_loops
        with ma.vec_loop("daxpy", "5*n/4", "2*n", "4", 2):
            y += 2.5 * x
"""


@pytest.mark.mpi
@pytest.mark.parametrize("ranks", [2, 4])
def test_partner_and_vec_loop_results_agree_between_layouts(tmp_path: Path, ranks: int) -> None:
    """The optional top-level lists (peers, vector_loops) of every rank travel through the merge (trace.json's
    ``optional``) and read back the same as from the rank files of the same run."""
    from ma_post.peers import peer_results
    from ma_post.vector import vec_loop_results

    (tmp_path / "opt.py").write_text(textwrap.dedent(OPTIONAL_PROGRAM))
    for layout in ("merged", "per-rank"):
        done = subprocess.run([str(VENV_BIN / "ma"), "run", "-n", str(ranks), "--trace-dir", layout, "--",
                               str(VENV_BIN / "python"), "opt.py", "mod(rank+2, nprocs)"], cwd=tmp_path,
                              env={**clean_env(), "MA_TRACE_LAYOUT": layout}, capture_output=True, text=True,
                              timeout=180)
        assert done.returncode == 0, done.stderr
    assert trace_files(tmp_path / "merged") == [MERGED_FILE]
    index = json.loads(zipfile.ZipFile(tmp_path / "merged" / MERGED_FILE).read(MERGED_INDEX))
    assert [entry[0] for entry in index["optional"]] == list(range(ranks))
    merged, per_rank = load(tmp_path / "merged"), load(tmp_path / "per-rank")
    assert [s.rank for s in merged.optional("vector_loops")] == list(range(0, ranks, 2))
    assert [s.rank for s in merged.optional("peers")] == [s.rank for s in per_rank.optional("peers")]
    peers = [[r.to_json() for r in peer_results(ts)] for ts in (merged, per_rank)]
    assert peers[0] == peers[1]
    by_path = {r["path"]: r for r in peers[0]}
    assert by_path["ring/rcv"]["pass"] == 3 * ranks and by_path["ring/rcv"]["ok"]
    # rank+2 is not the partner (rank+1 is): every send fails, rank 0's first one named with both ranks
    assert by_path["ring/snd"]["fail"] == 3 * ranks and by_path["ring/snd"]["failures"][0]["actual"] == 1
    loops = [vec_loop_results(ts) for ts in (merged, per_rank)]
    assert loops[0] == loops[1] and [r.rank for r in loops[0]] == list(range(0, ranks, 2))
    assert loops[0][0].predicted == {"vloadstore": 1250, "vflops": 2000, "avl": 4}
    outputs = [subprocess.run([str(VENV_BIN / "ma"), "validate", layout, "--vec-loops", "both"], cwd=tmp_path,
                              env=clean_env(), capture_output=True, text=True, timeout=120)
               for layout in ("merged", "per-rank")]
    assert outputs[0].returncode == outputs[1].returncode == 1, outputs[0].stderr
    assert outputs[0].stdout == outputs[1].stdout and "ring/snd:peer:ma_mpi_send:" in outputs[0].stdout
    assert "daxpy:vec_loop.vflops:2000:unmeasured:-" in outputs[0].stdout


def test_a_malformed_optional_entry_of_the_merged_index_is_named(tmp_path: Path) -> None:
    part = part_of(make_trace(cg_program(), 0, 1) | {"peers": [{"path": "p", "type": "mpi_send"}]})
    bundle = Bundle()
    bundle.add(part)
    members = build_archive(bundle, 1)
    index = json.loads(members[MERGED_INDEX])
    assert index["optional"] == [[0, {"peers": [{"path": "p", "type": "mpi_send"}]}]]
    write_archive(tmp_path, members)
    assert load(tmp_path).optional("peers")[0].entries == [{"path": "p", "type": "mpi_send"}]
    with pytest.raises(ValueError, match="not an optional trace key"):
        load(tmp_path).optional("nonsense")
    index["optional"] = [[0, {"peers": {"not": "a list"}}]]
    write_archive(tmp_path, {**members, MERGED_INDEX: json.dumps(index).encode()})
    with pytest.raises(TraceError, match=r"trace.json: optional\[0\]: key 'peers' with dict"):
        load(tmp_path)


def test_a_version_2_merged_file_reads_with_the_subscripts_unmeasured(tmp_path: Path) -> None:
    """Version 2 lacked the last two value columns (subscripts_n, subscripts); its numbers read as before."""
    from ma_core.trace_format import MERGED_V2_FIELDS, NODE_C_CALLS_KEY, NODE_SUBSCRIPTS_KEY, VALUE_FIELDS

    document = make_trace(cg_program(), 0, 1)
    first = document["threads"][0]["root"]["children"][0]
    first[NODE_C_CALLS_KEY], first[NODE_SUBSCRIPTS_KEY] = 7, 5
    members = build_archive(_bundle([document]), 1)
    write_archive(tmp_path / "v3", members)
    now = load(tmp_path / "v3").find(first["path"], first["type"])
    assert (now.c_calls, now.subscripts) == (7, 5)
    index = json.loads(members[MERGED_INDEX])
    index["version"], index["fields"] = 2, list(VALUE_FIELDS[:MERGED_V2_FIELDS])
    values = np.load(io.BytesIO(members["group-0-values.npy"]))
    stream = io.BytesIO()
    np.save(stream, np.ascontiguousarray(values[:, :, :MERGED_V2_FIELDS]))
    write_archive(tmp_path / "v2", {**members, MERGED_INDEX: json.dumps(index).encode(),
                                    "group-0-values.npy": stream.getvalue()})
    old = load(tmp_path / "v2").find(first["path"], first["type"])
    assert (old.c_calls, old.subscripts) == (7, None)
    assert old.wall_ns.tolist() == now.wall_ns.tolist()
