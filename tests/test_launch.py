"""`ma run` end to end under the environment's real mpiexec."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import VENV_BIN, clean_env, find_node

PROGRAM = """
import sys
import ma
from mpi4py import MPI

comm = MPI.COMM_WORLD
n = int(sys.argv[1])
ma.variable("n", n)
ma.variable("nprocs", comm.size)
ma.assign("local", "n/nprocs", n // comm.size)
with ma.subroutine("main"):
    with ma.loop("work", "local") as lp:
        for i in lp.range(n // comm.size):
            pass
print("rank", comm.rank, "of", comm.size, "done", flush=True)
"""


def ma_run(tmp_path: Path, *args: str, source: str = PROGRAM, timeout: float = 120,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(source))
    environment = env or clean_env()
    return subprocess.run([str(VENV_BIN / "ma"), "run", *args], cwd=tmp_path, env=environment,
                          capture_output=True, text=True, timeout=timeout)


def load(trace_dir: Path, rank: int) -> dict:
    return json.loads((trace_dir / f"rank-{rank}.ma.json").read_text())


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", [1, 2])
def test_ma_run_writes_one_trace_per_rank(tmp_path: Path, nprocs: int) -> None:
    done = ma_run(tmp_path, "-n", str(nprocs), "--trace-dir", "out", "--", sys.executable, "prog.py", "64")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("done") == nprocs
    traces = [load(tmp_path / "out", r) for r in range(nprocs)]
    assert [t["header"]["rank"] for t in traces] == list(range(nprocs))
    assert {t["header"]["size"] for t in traces} == {nprocs}
    assert len({t["header"]["run_id"] for t in traces}) == 1 and traces[0]["header"]["run_id"]
    for trace in traces:
        assert trace["header"]["status"] == "complete"
        work = find_node(trace["threads"][0]["root"], "main/work")
        assert work["predicted"]["sum"] == 64 // nprocs and work["pass"] == 1
    assert f"{nprocs} of {nprocs} rank traces" in done.stderr


@pytest.mark.mpi
def test_a_run_with_the_annotations_off_succeeds_and_says_so(tmp_path: Path) -> None:
    done = ma_run(tmp_path, "-n", "2", "--trace-dir", "out", "--", sys.executable, "prog.py", "64",
                  env=clean_env(MA_DISABLE="1"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("done") == 2
    assert done.stderr.strip().splitlines() == [
        "ma run: exit status 0; the annotations were off (MA_DISABLE=1), so no trace was written"]
    assert not list((tmp_path / "out").glob("rank-*.ma.json"))
    # A program that fails still fails.
    failing = ma_run(tmp_path, "-n", "1", "--", sys.executable, "-c", "raise SystemExit(3)",
                     env=clean_env(MA_DISABLE="1"))
    assert failing.returncode == 3 and "exit status 3; the annotations were off" in failing.stderr


@pytest.mark.mpi
def test_stale_traces_of_a_larger_run_are_removed(tmp_path: Path) -> None:
    assert ma_run(tmp_path, "-n", "2", "--trace-dir", "out", "--", sys.executable, "prog.py", "8").returncode == 0
    assert ma_run(tmp_path, "-n", "1", "--trace-dir", "out", "--", sys.executable, "prog.py", "8").returncode == 0
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["ma-run.json", "rank-0.ma.json"]


@pytest.mark.mpi
def test_an_uncaught_exception_on_one_rank_aborts_the_job(tmp_path: Path) -> None:
    source = """
        import ma
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        ma.variable("n", 1)
        with ma.subroutine("main"):
            if comm.rank == 1:
                raise RuntimeError("rank 1 fails")
            comm.recv(source=1)   # would wait forever without the abort
    """
    done = ma_run(tmp_path, "-n", "2", "--", sys.executable, "prog.py", source=source, timeout=60)
    assert done.returncode != 0
    # Said by `ma run` from the trace, so it holds even when Hydra loses the rank's traceback in the abort.
    assert "ma run: rank 1 ended with exception: RuntimeError: rank 1 fails" in done.stderr
    failed = load(tmp_path / "ma-traces", 1)["header"]
    assert failed["status"] == "exception" and "rank 1 fails" in failed["exit_reason"]


def test_an_unreadable_trace_is_named_among_the_unclean_exits(tmp_path: Path) -> None:
    from ma_tools.launch import unclean_exits

    (tmp_path / "rank-1.ma.json").write_text('{"header": {"status": "exc', encoding="utf-8")
    found = unclean_exits(tmp_path, 2)
    assert list(found) == [1] and "unreadable trace" in found[1] and "rank-1.ma.json" in found[1]


@pytest.mark.mpi
def test_the_environments_mpiexec_wins_over_path(tmp_path: Path) -> None:
    from ma_tools.launch import plan

    launch = plan(["python", "x.py"], 2)
    assert launch.argv[0] == str(VENV_BIN / "mpiexec")
    assert launch.env["PATH"].startswith(str(VENV_BIN))
    assert plan(["python", "x.py"], 1).argv == ["python", "x.py"]
    custom = plan(["python", "x.py"], 4, launcher="srun --mpi=pmi2")
    assert custom.argv[:4] == ["srun", "--mpi=pmi2", "-n", "4"]


@pytest.mark.mpi
def test_launcher_option_runs_the_job(tmp_path: Path) -> None:
    done = ma_run(tmp_path, "-n", "2", "--launcher", str(VENV_BIN / "mpiexec"), "--",
                  sys.executable, "prog.py", "10")
    assert done.returncode == 0, done.stderr
    assert load(tmp_path / "ma-traces", 1)["header"]["size"] == 2


def test_bad_invocations_are_clear_errors(tmp_path: Path) -> None:
    no_command = ma_run(tmp_path, "-n", "2")
    assert no_command.returncode == 2 and "no command to run" in no_command.stderr
    bad_counter = ma_run(tmp_path, "--counters", "perf", "--", "true")
    assert bad_counter.returncode == 2 and "unknown counter provider 'perf'" in bad_counter.stderr
    missing = ma_run(tmp_path, "--", "/nonexistent/program")
    assert missing.returncode == 2 and "no such program" in missing.stderr
    assert "Traceback" not in no_command.stderr + bad_counter.stderr + missing.stderr


@pytest.mark.parametrize("setting, value, words", [
    ("MA_TOLERANCE", "abc", "ma run: error: MA_TOLERANCE='abc': 'abc' is not a number"),
    ("MA_TRACE_LAYOUT", "bogus", "ma run: error: MA_TRACE_LAYOUT='bogus' is not one of merged, per-rank, both"),
    ("MA_MERGE_TIMEOUT", "abc", "ma run: error: MA_MERGE_TIMEOUT='abc' is not a number of seconds"),
    ("MA_MERGE_TIMEOUT", "0", "ma run: error: MA_MERGE_TIMEOUT='0': expected a finite number of seconds, more than 0"),
    ("MA_FLUSH_SECONDS", "-5", "ma run: error: MA_FLUSH_SECONDS='-5': expected a finite number of seconds, 0 or more"),
    ("MA_FLUSH_SECONDS", "inf", "ma run: error: MA_FLUSH_SECONDS='inf': expected a finite number of seconds"),
    ("MA_CPU_TIME", "some", "ma run: error: MA_CPU_TIME='some': expected subroutines, all or none"),
])
def test_bad_settings_stop_ma_run_before_the_job_starts(tmp_path: Path, setting: str, value: str,
                                                         words: str) -> None:
    """The runtime's own parsers (ma_core.settings) run in ma run on the environment the ranks would inherit:
    one error line, exit status 2, no rank started, no trace directory made."""
    done = ma_run(tmp_path, "-n", "2", "--", sys.executable, "-c", "open('RAN', 'w').close()",
                  env=clean_env(**{setting: value}))
    assert done.returncode == 2 and words in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert not (tmp_path / "RAN").exists() and not (tmp_path / "ma-traces").exists()


@pytest.mark.mpi
def test_a_pmpi_library_that_cannot_be_built_is_reported_and_the_job_still_runs(tmp_path: Path) -> None:
    env = clean_env(MA_BUILD_DIR=str(tmp_path / "empty-build"), MA_MPICC="/bin/false")
    done = ma_run(tmp_path, "-n", "2", "--", sys.executable, "prog.py", "8", env=env)
    assert done.returncode == 0, done.stderr
    assert "ma run: MPI calls will not be measured: building" in done.stderr
    assert "Traceback" not in done.stderr
    header = load(tmp_path / "ma-traces", 0)["header"]
    assert header["mpi"]["profiling"] is False and header["mpi"]["reason"]


def test_the_launchers_rank_variables_are_read_in_one_order_by_python_and_c() -> None:
    import re

    from ma_core.launchers import RANK_SIZE_VARIABLES, launcher_rank_size
    from ma_tools.cparts import CSRC_DIR

    assert launcher_rank_size({}) is None
    assert launcher_rank_size({"PMIX_RANK": "3", "PMIX_SIZE": "8"}) == (3, 8)
    assert launcher_rank_size({"SLURM_PROCID": "5"}) == (5, 6)  # no size: the least the rank implies
    assert launcher_rank_size({"PMI_RANK": "x", "OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "2"}) == (1, 2)
    pair = re.compile(r'\{\s*"(\w+)",\s*"(\w+)"\s*\}')
    in_c = [found for path in sorted(CSRC_DIR.rglob("*.c")) for found in pair.findall(path.read_text())
            if found[0] in dict(RANK_SIZE_VARIABLES)]
    assert tuple(in_c) == RANK_SIZE_VARIABLES


def test_ma_run_finds_a_rank_by_the_launchers_variable_in_its_environment() -> None:
    import os
    import time

    from ma_tools.runwatch import _environ_rank

    env = {**os.environ, "MA_RUN_ID": "run-under-test", "PMIX_RANK": "3", "PMIX_SIZE": "4"}
    env.pop("PMI_RANK", None)
    env.pop("OMPI_COMM_WORLD_RANK", None)
    child = subprocess.Popen(["sleep", "30"], env=env)
    try:
        deadline = time.monotonic() + 10  # Popen may return before the child's exec shows its environment
        while b"run-under-test" not in Path(f"/proc/{child.pid}/environ").read_bytes() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _environ_rank(child.pid, b"run-under-test") == 3
        assert _environ_rank(child.pid, b"another-run") is None
    finally:
        child.kill()
        child.wait()
