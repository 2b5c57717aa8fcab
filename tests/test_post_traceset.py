"""ma_post.load: reading rank files into a TraceSet, and every bad-trace case as a clean error."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from post_fixtures import Loop, Op, Sub, Var, cg_program, make_trace, site_node, stats, trace_doc, write_run

from ma_core.errors import MAError, SiteNotFoundError, TraceError
from ma_post.reader import TraceWarning
from ma_post.traceset import load


@pytest.fixture
def cg_dir(tmp_path: Path) -> Path:
    return write_run(tmp_path / "cg", cg_program(), size=4)


def test_load_cg_run(cg_dir: Path) -> None:
    ts = load(cg_dir)
    assert ts.ranks.tolist() == [0, 1, 2, 3]
    assert ts.size == 4 and ts.run_id == "run-1" and ts.language == "python"
    flopq = ts.find("conj_loop/conj_grad/cgit/flopq")
    assert flopq.type == "flop" and flopq.depth == 4
    assert flopq.calls.shape == (4, 1)
    assert flopq.calls[:, 0].tolist() == [375] * 4  # niter * cgitmax
    assert flopq.predicted.mean() == 2 * 7 * 8 * 1400 / 4
    assert [a.id for a in ts.ancestors(flopq)] == ["conj_loop", "conj_grad", "cgit"]
    with pytest.raises(SiteNotFoundError, match="0 sites match 'conj_loop/nothing'"):
        ts.find("conj_loop/nothing")
    nprocs = ts.variables[("nprocs", "")]
    assert nprocs.values.tolist() == [4.0] * 4 and not nprocs.rank_dependent
    assert ts.variables[("num_proc_cols", "")].kind == "derived"
    profile = ts.mpi_profiles[0]
    assert profile is not None and profile["calls"]["MPI_Send"]["calls"] > 0
    # Same id under two parents are two sites.
    assert len([s for s in ts.sites.values() if s.id == "flopq"]) == 2


def test_same_path_different_types_are_different_sites(tmp_path: Path) -> None:
    doc = trace_doc([
        site_node("loop", "x", "x", "2", 1, predicted=stats(1, 2, 2, 2), measured=stats(1, 2, 2, 2), passes=1,
                  children=[site_node("flop", "f", "x/f", "3", 2, predicted=stats(2, 3, 3, 6))]),
        site_node("flop", "x", "x", "5", 1, predicted=stats(1, 5, 5, 5),
                  children=[site_node("loop", "f", "x/f", "1", 1, predicted=stats(1, 1, 1, 1))]),
    ])
    (tmp_path / "rank-0.ma.json").write_text(json.dumps(doc))
    ts = load(tmp_path)
    assert len(ts.sites) == 5  # root + 4
    assert ts.find("x/f", "flop").parent == (("loop", "x"),)
    assert ts.find("x/f", "loop").parent == (("flop", "x"),)


def test_c_trace_and_python_trace_read_alike(tmp_path: Path) -> None:
    program = [Var("n", 10), Loop("l", "n", [Op("flop", "f", "2*n")])]
    for language in ("python", "c"):
        doc = make_trace(program, language=language)
        if language == "c":  # the C runtime may not know files and lines
            def strip(node: dict) -> None:
                node["file"] = node["line"] = None
                for child in node["children"]:
                    strip(child)
            for child in doc["threads"][0]["root"]["children"]:
                strip(child)
        d = tmp_path / language
        d.mkdir()
        (d / "rank-0.ma.json").write_text(json.dumps(doc))
    py, c = load(tmp_path / "python"), load(tmp_path / "c")
    assert py.language == "python" and c.language == "c"
    assert c.find("l/f").file is None
    assert np.array_equal(py.find("l/f").predicted.sum, c.find("l/f").predicted.sum)


def test_threads_are_a_dimension(tmp_path: Path) -> None:
    main = [Var("n", 4), Loop("work", "n", [Op("flop", "f", "10")])]
    worker = [Var("n", 4), Loop("work", "n", [Op("flop", "f", "10")]), Op("flop", "extra", "7")]
    doc = make_trace(main, threads=[worker])
    (tmp_path / "rank-0.ma.json").write_text(json.dumps(doc))
    ts = load(tmp_path)
    assert ts.thread_ids == [0, 1]
    f = ts.find("work/f")
    assert f.calls.shape == (1, 2) and f.calls.tolist() == [[4, 4]]
    assert ts.find("extra").present.tolist() == [[False, True]]
    assert f.predicted.per_rank().sum.tolist() == [80]


def test_rank_dependent_variable(tmp_path: Path) -> None:
    write_run(tmp_path, [Var("local", lambda e: 100 + e["__rank"]), Loop("l", "local")], size=3)
    ts = load(tmp_path)
    var = ts.variables[("local", "")]
    assert var.rank_dependent and var.values.tolist() == [100, 101, 102]


# --- error paths -----------------------------------------------------------------------------------------------


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no such trace directory") as info:
        load(tmp_path / "nope")
    assert info.value.path == str(tmp_path / "nope")


def test_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a trace")
    (tmp_path / ".rank-0.ma.json.tmp").write_text("{")  # a writer's temporary file is not a rank file
    with pytest.raises(TraceError, match=r"no job.ma.npz or rank-<r>.ma.json trace files"):
        load(tmp_path)


def test_missing_rank_is_an_error_naming_the_file(cg_dir: Path) -> None:
    (cg_dir / "rank-2.ma.json").unlink()
    with pytest.raises(TraceError) as info:
        load(cg_dir)
    assert info.value.path.endswith("rank-2.ma.json")
    assert "1 of 4 rank files missing" in str(info.value) and "allow_missing" in str(info.value)
    assert isinstance(info.value, MAError)


def test_missing_rank_allowed_warns_and_keeps_the_others(cg_dir: Path) -> None:
    (cg_dir / "rank-2.ma.json").unlink()
    with pytest.warns(TraceWarning, match=r"rank-2\.ma\.json.*keeping the 3 ranks present"):
        ts = load(cg_dir, allow_missing=True)
    assert ts.ranks.tolist() == [0, 1, 3] and ts.missing_ranks == [2]
    assert ts.find("conj_loop").calls.shape == (3, 1)


def test_truncated_file(cg_dir: Path) -> None:
    path = cg_dir / "rank-1.ma.json"
    text = path.read_text()
    path.write_text(text[: len(text) // 2])
    with pytest.raises(TraceError, match="truncated JSON at line 1") as info:
        load(cg_dir)
    assert info.value.path == str(path)


def test_corrupt_file(cg_dir: Path) -> None:
    path = cg_dir / "rank-3.ma.json"
    path.write_text(path.read_text().replace('"calls":', '"calls"', 1))
    with pytest.raises(TraceError, match="corrupt JSON") as info:
        load(cg_dir)
    assert info.value.path == str(path)


def test_binary_garbage_and_empty_file(cg_dir: Path) -> None:
    (cg_dir / "rank-0.ma.json").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(TraceError, match=r"rank-0.ma.json: corrupt"):
        load(cg_dir)
    (cg_dir / "rank-0.ma.json").write_text("")
    with pytest.raises(TraceError, match=r"rank-0.ma.json: empty file"):
        load(cg_dir)


def test_truncated_file_allowed_is_skipped_with_a_warning(cg_dir: Path) -> None:
    path = cg_dir / "rank-1.ma.json"
    path.write_text(path.read_text()[:100])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ts = load(cg_dir, allow_missing=True)
    messages = [str(w.message) for w in caught]
    assert any("rank-1.ma.json: truncated" in m for m in messages)
    assert any("keeping the 3 ranks present" in m for m in messages)
    assert ts.ranks.tolist() == [0, 2, 3] and str(path) in ts.skipped


def _rewrite(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def test_newer_schema_version(cg_dir: Path) -> None:
    _rewrite(cg_dir / "rank-0.ma.json", lambda d: d.update(version=2))
    with pytest.raises(TraceError, match=r"schema version 2 is newer than this reader supports \(1\)"):
        load(cg_dir)


@pytest.mark.parametrize("version", ["1", 0, None, True])
def test_bad_schema_version(cg_dir: Path, version: object) -> None:
    _rewrite(cg_dir / "rank-0.ma.json", lambda d: d.update(version=version))
    with pytest.raises(TraceError, match="bad schema version"):
        load(cg_dir)


def test_not_an_ma_trace(cg_dir: Path) -> None:
    _rewrite(cg_dir / "rank-0.ma.json", lambda d: d.update(format="otf2"))
    with pytest.raises(TraceError, match="not an ma trace: format is 'otf2', expected 'ma-trace'"):
        load(cg_dir)
    (cg_dir / "rank-0.ma.json").write_text("[1, 2]")
    with pytest.raises(TraceError, match="expected a JSON object at top level"):
        load(cg_dir)


def test_inconsistent_size(cg_dir: Path) -> None:
    _rewrite(cg_dir / "rank-3.ma.json", lambda d: d["header"].update(size=8))
    with pytest.raises(TraceError, match=r"header.size is 8 but rank-0.ma.json says 4") as info:
        load(cg_dir)
    assert info.value.path.endswith("rank-3.ma.json")


def test_inconsistent_run_id(cg_dir: Path) -> None:
    _rewrite(cg_dir / "rank-1.ma.json", lambda d: d["header"].update(run_id="other-run"))
    with pytest.raises(TraceError, match="run_id 'other-run' differs from 'run-1'") as info:
        load(cg_dir, allow_missing=True)  # a stray file from another run is never silently mixed in
    assert info.value.path.endswith("rank-1.ma.json")


def test_rank_in_header_must_match_file_name(cg_dir: Path) -> None:
    _rewrite(cg_dir / "rank-1.ma.json", lambda d: d["header"].update(rank=2))
    with pytest.raises(TraceError, match=r"header.rank is 2 but the file name says rank 1"):
        load(cg_dir)


def test_rank_outside_size(cg_dir: Path) -> None:
    (cg_dir / "rank-7.ma.json").write_text((cg_dir / "rank-0.ma.json").read_text())
    _rewrite(cg_dir / "rank-7.ma.json", lambda d: d["header"].update(rank=7))
    with pytest.raises(TraceError, match="rank 7 of size 4"):
        load(cg_dir)


def test_missing_header_fields_and_bad_nodes(cg_dir: Path) -> None:
    _rewrite(cg_dir / "rank-0.ma.json", lambda d: d["header"].pop("size"))
    with pytest.raises(TraceError, match=r"header.size is None, expected an integer"):
        load(cg_dir)
    write_run(cg_dir, cg_program(), size=4)
    _rewrite(cg_dir / "rank-2.ma.json", lambda d: d.pop("threads"))
    with pytest.raises(TraceError, match=r"rank-2.ma.json: missing 'threads' array"):
        load(cg_dir)
    write_run(cg_dir, cg_program(), size=4)
    _rewrite(cg_dir / "rank-2.ma.json",
             lambda d: d["threads"][0]["root"]["children"][0].pop("calls"))
    with pytest.raises(TraceError, match=r"rank-2.ma.json: site 'na': missing field 'calls'"):
        load(cg_dir)


def test_incomplete_ranks_are_reported(tmp_path: Path) -> None:
    write_run(tmp_path, [Var("n", 3), Sub("s", [Loop("l", "n")])], size=2)
    _rewrite(tmp_path / "rank-1.ma.json",
             lambda d: d["header"].update(status="terminated", exit_reason="SIGTERM", end_time=None))
    ts = load(tmp_path)
    assert ts.incomplete_ranks() == {1: "terminated: SIGTERM"}


def test_parallel_load_matches_serial_and_reports_bad_files(tmp_path: Path) -> None:
    program = [Var("n", 3), Loop("l", "n", [Op("flop", "f", "2*n")])]
    run = write_run(tmp_path, program, size=150)
    serial, parallel = load(run, workers=0), load(run, workers=2)
    assert np.array_equal(serial.data, parallel.data, equal_nan=True)
    assert [s.key for s in serial.sites.values()] == [s.key for s in parallel.sites.values()]
    assert serial.headers == parallel.headers
    (run / "rank-77.ma.json").write_text('{"format": "ma-trace", "version": 1, "header": {"rank": 77, "si')
    with pytest.raises(TraceError, match="truncated JSON") as info:
        load(run, workers=2)
    assert info.value.path == str(run / "rank-77.ma.json")
    with pytest.warns(TraceWarning, match=r"rank-77.ma.json"):
        assert load(run, workers=2, allow_missing=True).n_ranks == 149


def test_fixtures_follow_the_shared_schema_check() -> None:
    """The synthetic traces of these tests pass the schema check the runtimes' own tests use."""
    from trace_schema import check_trace_schema

    check_trace_schema(make_trace(cg_program(), 1, 4))
    check_trace_schema(make_trace([Var("n", 3), Loop("l", "n", [Op("flop", "f", "2")])], mpi=False,
                                  measured_kinds=("loop",), threads=[[Var("n", 3), Loop("l", "n")]]))


def test_loading_many_rank_files_shows_progress_on_a_terminal_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from ma_post import progress, reader

    write_run(tmp_path, [Loop("l", "2")], size=6)
    monkeypatch.setattr(reader, "PROGRESS_FROM", 4)
    load(tmp_path, workers=0)
    assert "rank" not in capsys.readouterr().err  # stderr is not a terminal here: nothing
    monkeypatch.setattr(progress, "enabled", lambda: True)
    ts = load(tmp_path, workers=0)
    assert ts.n_ranks == 6
    err = capsys.readouterr().err
    assert f"reading {tmp_path}" in err and "/6 " in err and "rank" in err
    monkeypatch.setattr(reader, "PROGRESS_FROM", 7)  # fewer files than that: no bar even on a terminal
    load(tmp_path, workers=0)
    assert "reading" not in capsys.readouterr().err
