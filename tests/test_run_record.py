"""A killed rank under real mpiexec: the run record names it, ma validate says so and fails, the survivors'
last flushes are read, and loops cut off by the end of the run are INTERRUPTED."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import VENV_BIN, clean_env

from ma_core.trace_format import END_KEYS, LAUNCHER_KINDS, RUN_KEYS

# Each rank writes its PID, then runs an outer loop that never ends on its own; the inner loop ends every
# 10 ms, so the periodic flush (every 0.2 s) runs often.
PROGRAM = """
import os
import sys
import time

import ma
from mpi4py import MPI

comm = MPI.COMM_WORLD
with open(f"pid-{comm.rank}", "w") as handle:
    handle.write(str(os.getpid()))
exit_code = int(sys.argv[1]) if len(sys.argv) > 1 else None
n = 100000
ma.variable("n", n)
with ma.subroutine("main"):
    with ma.loop("steps", "n") as lp:
        for step in lp.range(n):
            with ma.loop("inner", "2") as inner:
                for _ in inner.range(2):
                    pass
            time.sleep(0.01)
            if exit_code is not None and comm.rank == 1 and step == 60:
                os._exit(exit_code)  # a rank that ends on its own, without finalising
"""
NPROCS = 3


def wait_for(condition, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def start_run(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    (tmp_path / "prog.py").write_text(textwrap.dedent(PROGRAM))
    argv = [str(VENV_BIN / "ma"), "run", "-n", str(NPROCS), "--", sys.executable, "prog.py", *args]
    return subprocess.Popen(argv, cwd=tmp_path, env=clean_env(MA_FLUSH_SECONDS="0.2"), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def validate(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(VENV_BIN / "ma"), "validate", "ma-traces", *args], cwd=tmp_path, env=clean_env(),
                          capture_output=True, text=True, timeout=120)


def inner_calls(tmp_path: Path, rank: int) -> int:
    trace = json.loads((tmp_path / "ma-traces" / f"rank-{rank}.ma.json").read_text())
    assert trace["header"]["status"] == "running"  # a periodic flush: nobody finalised
    main = trace["threads"][0]["root"]["children"][1]
    steps = main["children"][0]
    assert (steps["path"], steps["calls"]) == ("main/steps", 0)  # entered, never ended
    return int(steps["children"][0]["calls"])


@pytest.mark.mpi
def test_a_rank_killed_by_pid_is_named_and_the_run_fails(tmp_path: Path) -> None:
    job = start_run(tmp_path)
    traces = tmp_path / "ma-traces"
    wait_for(lambda: all((traces / f"rank-{r}.ma.json").exists() for r in range(NPROCS)))
    time.sleep(0.5)  # a few more flushes on every rank
    victim = int((tmp_path / "pid-1").read_text())
    os.kill(victim, signal.SIGKILL)
    out, err = job.communicate(timeout=120)
    assert job.returncode != 0, err
    record = json.loads((traces / "ma-run.json").read_text())
    assert "rank 1 ended first: it was killed by signal 9 (SIGKILL)" in err, (err, record)
    assert "ma run stopped the other ranks after it: 0, 2" in err and "ended with running" not in err

    assert record["format"] == "ma-run" and record["ranks"] == NPROCS and record["launcher"] == "hydra"
    assert tuple(record) == RUN_KEYS and record["launcher"] in LAUNCHER_KINDS
    assert tuple(record["ended"][0]) == END_KEYS and tuple(record["first_failure"]) == (*END_KEYS, "tied_with")
    assert record["command"] == [sys.executable, "prog.py"] and record["exit_status"] == job.returncode
    first = record["first_failure"]
    assert (first["rank"], first["pid"], first["how"], first["signal"]) == (1, victim, "signal", 9), record
    assert record["ended"][0]["rank"] == 1 and len(record["ended"]) == NPROCS
    assert record["stopped_by_ma_run"] == [0, 2]  # ma run, not Hydra, stopped them, after noting rank 1
    assert {"-print-all-exitcodes", "-disable-auto-cleanup"} <= set(record["argv"])
    # Hydra's own words, as it said them (forwarded to the user as well)
    report = record["launcher_report"]
    assert report["exit_string"] == "Killed (signal 9)" and len(report["exit_codes"]) == NPROCS
    assert "EXIT STRING: Killed (signal 9)" in out and "Exit codes" not in out  # that list only in the record

    # The survivors' last flushes are read: their inner-loop calls are in the report.
    calls = [inner_calls(tmp_path, rank) for rank in range(NPROCS)]
    assert all(c > 10 for c in calls)
    done = validate(tmp_path)
    assert done.returncode == 1, done.stderr
    assert f"inner:ma_loop:2:2:0.0:PASS={sum(calls)}:FAIL=0" in done.stdout
    assert ("incomplete run: rank 1 failed first: it was killed by signal 9 (SIGKILL) (run record ma-run.json, "
            "seen by ma run)") in done.stderr
    assert "incomplete run: the others were stopped: ranks 0,2 (their traces end at their last flush)" in done.stderr
    assert "prog.py:16: interrupted: main/steps (loop): no call had ended when the run did" in done.stderr
    assert "trip count was not reported" not in done.stderr
    assert "INCOMPLETE RUN" in done.stderr and "1 INTERRUPTED" in done.stderr

    table = validate(tmp_path, "--format", "table")
    assert table.returncode == 1
    assert any(line.startswith("main/steps") and "INTERRUPTED" in line for line in table.stdout.splitlines())
    document = json.loads(validate(tmp_path, "--format", "json").stdout)
    assert document["summary"]["complete"] is False and document["summary"]["interrupted"] == 1
    assert document["trace"]["first_failure"]["rank"] == 1
    assert document["summary"]["problems"] == ["the run is incomplete"]


@pytest.mark.mpi
def test_a_rank_that_exits_on_its_own_is_named_with_its_exit_status(tmp_path: Path) -> None:
    job = start_run(tmp_path, "3")
    _, err = job.communicate(timeout=120)
    assert job.returncode != 0
    assert "rank 1 ended first: it exited with status 3" in err, (tmp_path / "ma-traces" / "ma-run.json").read_text()
    record = json.loads((tmp_path / "ma-traces" / "ma-run.json").read_text())
    assert record["first_failure"]["how"] == "exit" and record["first_failure"]["exit_code"] == 3
    done = validate(tmp_path)
    assert done.returncode == 1
    assert "incomplete run: rank 1 failed first: it exited with status 3" in done.stderr


def test_a_single_process_killed_by_a_signal(tmp_path: Path) -> None:
    """Without a launcher ma run is the parent and sees the signal itself."""
    program = "import os, signal\nimport ma\nma.variable('n', 1)\nos.kill(os.getpid(), signal.SIGKILL)\n"
    (tmp_path / "one.py").write_text(program)
    done = subprocess.run([str(VENV_BIN / "ma"), "run", "--", sys.executable, "one.py"], cwd=tmp_path,
                          env=clean_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 128 + 9
    record = json.loads((tmp_path / "ma-traces" / "ma-run.json").read_text())
    assert record["launcher"] == "direct" and record["exit_status"] == -9
    assert record["first_failure"]["signal_name"] == "SIGKILL"
    # Under ma run the runtime writes a first file when it starts: it shows the process never finished.
    assert "1 of 1 rank traces" in done.stderr and "no trace" not in done.stderr
    assert json.loads((tmp_path / "ma-traces" / "rank-0.ma.json").read_text())["header"]["status"] == "running"


def test_a_run_record_of_another_run_is_left_out(tmp_path: Path) -> None:
    from post_fixtures import Loop, Var, write_run

    from ma_post import load

    run = write_run(tmp_path / "run", [Var("n", 2), Loop("l", "n")])
    (run / "ma-run.json").write_text(json.dumps({"format": "ma-run", "version": 1, "run_id": "another", "ranks": 1,
                                                 "exit_status": 9, "ended": [], "first_failure": None}))
    with pytest.warns(UserWarning, match="run id 'another' differs"):
        assert load(run).run_record is None
    (run / "ma-run.json").write_text(json.dumps({"format": "ma-run", "version": 1, "run_id": "run-1", "ranks": 1,
                                                 "exit_status": 9, "ended": [{"rank": "1"}]}))
    from ma_core.errors import TraceError

    with pytest.raises(TraceError, match=r"ma-run.json: ended\[0\]\.how is None"):
        load(run)


class Chunks:
    """A pipe that delivers the launcher's output in the pieces given."""

    def __init__(self, *pieces: bytes) -> None:
        self.pieces = list(pieces)

    def read1(self, size: int) -> bytes:
        return self.pieces.pop(0) if self.pieces else b""


def test_hydras_lines_are_read_on_the_way_and_its_exit_code_list_kept_out_of_the_output() -> None:
    import io

    from ma_tools.hydra import LauncherReport, forward

    out, report = io.BytesIO(), LauncherReport()
    forward(Chunks(b"progress 10%", b" 20%\n[mpi", b"exec@vm] Exit codes: [vm] 0,9,768\n",  # type: ignore[arg-type]
                   b"=   PID 12 RUNNING AT vm\n=   EXIT CODE: 9\n", b"YOUR APPLICATION TERMINATED WITH THE EXIT "
                   b"STRING: Killed (signal 9)\n", b"no newline at the end"), out, report)
    assert out.getvalue() == (b"progress 10% 20%\n=   PID 12 RUNNING AT vm\n=   EXIT CODE: 9\nYOUR APPLICATION "
                              b"TERMINATED WITH THE EXIT STRING: Killed (signal 9)\nno newline at the end")
    assert (report.exit_codes, report.pid, report.exit_code, report.exit_string) == ([0, 9, 768], 12, 9,
                                                                                       "Killed (signal 9)")


SLEEPER = """
import os
import time

import ma
from mpi4py import MPI

with open(f"pid-{MPI.COMM_WORLD.rank}", "w") as handle:
    handle.write(str(os.getpid()))
with ma.subroutine("main"):
    time.sleep(600)
"""


def alive(pid: int) -> bool:
    """Whether the process still runs (a zombie waiting for its new parent to reap it does not)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


@pytest.mark.mpi
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_ma_run_stops_the_whole_job_and_is_recorded(tmp_path: Path, stop: signal.Signals) -> None:
    (tmp_path / "prog.py").write_text(textwrap.dedent(SLEEPER))
    argv = [str(VENV_BIN / "ma"), "run", "-n", "2", "--", sys.executable, "prog.py"]
    job = subprocess.Popen(argv, cwd=tmp_path, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    try:
        wait_for(lambda: all((tmp_path / f"pid-{r}").exists() for r in range(2)))
        wait_for(lambda: all((tmp_path / "ma-traces" / f"rank-{r}.ma.json").exists() for r in range(2)))
        pids = [int((tmp_path / f"pid-{r}").read_text()) for r in range(2)]
        launcher = [int(p) for p in subprocess.run(["pgrep", "-P", str(job.pid)], capture_output=True,
                                                   text=True).stdout.split()]
        assert launcher, "mpiexec was not found under ma run"
        sent = time.monotonic()
        job.send_signal(stop)
        _out, err = job.communicate(timeout=30)
    finally:
        if job.poll() is None:
            job.kill()
    assert time.monotonic() - sent < 10, "ma run took more than seconds to stop the job"
    assert job.returncode == 128 + stop, err
    assert f"ma run: stopped by {stop.name}: the signal was passed to the job" in err
    wait_for(lambda: not any(alive(pid) for pid in [*pids, *launcher]), timeout=5)  # nothing outlives ma run
    record = json.loads((tmp_path / "ma-traces" / "ma-run.json").read_text())
    assert record["signal_to_ma_run"] == {"signal": int(stop), "signal_name": stop.name}
    assert record["first_failure"] is None and record["exit_status"] != 0
    assert validate(tmp_path).returncode == 1  # the run did not end: never a clean validation


EARLY_EXIT = """
import os

import ma
from mpi4py import MPI

comm = MPI.COMM_WORLD
with ma.subroutine("main"):
    if comm.rank == 1:
        os._exit(0)  # before MPI_Finalize: the other rank waits for it in the barrier
    comm.Barrier()
"""


@pytest.mark.mpi
def test_a_rank_that_exits_0_before_finalize_never_hangs_ma_run(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(textwrap.dedent(EARLY_EXIT))
    argv = [str(VENV_BIN / "ma"), "run", "-n", "2", "--", sys.executable, "prog.py"]
    for attempt in range(10):
        started = time.monotonic()
        done = subprocess.run(argv, cwd=tmp_path, env=clean_env(), capture_output=True, text=True, timeout=60)
        assert done.returncode != 0, (attempt, done.stderr)
        assert time.monotonic() - started < 30, attempt
        # (Hydra's own exit code list says how it ended, unless its proxy fails when the other rank is killed)
        assert "rank 1 ended first: it " in done.stderr, (attempt, done.stderr)
        record = json.loads((tmp_path / "ma-traces" / "ma-run.json").read_text())
        assert record["first_failure"]["rank"] == 1 and record["stopped_by_ma_run"] == [0], (attempt, record)
        wait_for(lambda: not any(alive(end["pid"]) for end in record["ended"]), timeout=5)  # noqa: B023
