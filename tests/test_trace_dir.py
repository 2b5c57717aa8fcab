"""The trace directory: checked before a job starts, never the reason an application dies, claimed by one job at a
time, and written safely by many threads (docs/reliability.md)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import VENV_BIN, clean_env

from ma_core.trace_format import rank_file


def ma(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(VENV_BIN / "ma"), *args], cwd=cwd, env=clean_env(**env), capture_output=True,
                          text=True, timeout=300)


STARTED = "import pathlib; pathlib.Path('started').touch()"


@pytest.mark.parametrize("where", ["file", "below-a-file", "empty"])
def test_ma_run_refuses_a_trace_directory_it_cannot_write_before_starting_the_job(tmp_path: Path,
                                                                                  where: str) -> None:
    (tmp_path / "taken").write_text("not a directory\n")
    trace_dir = {"file": "taken", "below-a-file": "taken/traces", "empty": ""}[where]
    done = ma("run", "--trace-dir", trace_dir, "--", sys.executable, "-c", STARTED, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    expected = {"file": f"ma run: error: --trace-dir {tmp_path / 'taken'}: it is a file, not a directory\n",
                "below-a-file": f"ma run: error: --trace-dir {tmp_path / 'taken' / 'traces'}: cannot write there "
                                "(Not a directory)\n",
                "empty": "ma run: error: --trace-dir is empty: name the directory for the traces (default "
                         "ma-traces)\n"}[where]
    assert done.stderr == expected
    assert not (tmp_path / "started").exists()  # the job never ran
    assert (tmp_path / "taken").read_text() == "not a directory\n"


FLUSHING = """
import os
import pathlib
import shutil
import sys
import time

import ma

traces = pathlib.Path(os.environ["MA_TRACE_DIR"])
n = ma.variable("n", 3)
for step in range(200):
    with ma.loop("l", "n") as lp:
        for _ in lp.range(3):
            pass
    if step == 20 and len(sys.argv) > 1:  # the directory is taken away while the program runs
        shutil.rmtree(traces)
        traces.write_text("now a file\\n")
    if step > 20:
        time.sleep(0.002)  # so that the periodic write (every millisecond) comes due
print("the program ran to its end")
"""


def test_a_failed_periodic_write_is_said_once_and_the_program_runs_on(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(textwrap.dedent(FLUSHING))
    done = subprocess.run([sys.executable, "prog.py", "take-it-away"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env=clean_env(MA_TRACE_DIR=str(tmp_path / "traces"), MA_FLUSH_SECONDS="0.001"))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "the program ran to its end\n", done.stderr
    periodic = [line for line in done.stderr.splitlines() if "later writes will try again" in line]
    assert len(periodic) == 1, done.stderr  # said once, however many flushes failed
    assert periodic[0].startswith(f"ma: rank 0: cannot write the trace into {tmp_path / 'traces'}: "), done.stderr
    assert f"ma: rank 0: cannot write the final trace into {tmp_path / 'traces'}" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr


def test_ma_run_reports_a_trace_the_job_could_not_write(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(textwrap.dedent(FLUSHING))
    done = ma("run", "--", sys.executable, "prog.py", "take-it-away", cwd=tmp_path, MA_FLUSH_SECONDS="0.001")
    assert "the program ran to its end" in done.stdout
    assert done.returncode == 1, done.stderr  # the program succeeded, but its numbers are not there
    assert "ma run: error: no trace from rank 0 (1 of 1)" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_flush_that_fails_then_succeeds_keeps_an_anomaly(tmp_path: Path) -> None:
    program = textwrap.dedent("""
        import os, pathlib
        import ma
        traces = pathlib.Path(os.environ["MA_TRACE_DIR"])
        traces.write_text("in the way\\n")
        with ma.subroutine("s"):
            pass
        traces.unlink()
        with ma.subroutine("t"):
            pass
    """)
    (tmp_path / "prog.py").write_text(program)
    done = subprocess.run([sys.executable, "prog.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env=clean_env(MA_TRACE_DIR=str(tmp_path / "traces"), MA_FLUSH_SECONDS="0.000001"))
    assert done.returncode == 0, done.stderr
    trace = json.loads(rank_file(tmp_path / "traces", 0).read_text())
    (anomaly,) = [a for a in trace["anomalies"] if a["kind"] == "trace_write"]
    assert anomaly["message"].startswith(f"cannot write the trace into {tmp_path / 'traces'}: ")


THREADS = """
import threading

import ma

CALLS = 400


def work(k: int) -> None:
    for i in range(CALLS):
        with ma.loop(f"l{k}", "2") as lp:
            for _ in lp.range(2):
                pass
        if i % 4 == 0:
            ma.flush()  # besides the periodic write every millisecond


threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print("done")
"""


def test_eight_threads_flushing_every_millisecond_lose_nothing(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(textwrap.dedent(THREADS))
    done = subprocess.run([sys.executable, "prog.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env=clean_env(MA_TRACE_DIR=str(tmp_path / "traces"), MA_FLUSH_SECONDS="0.001"))
    assert (done.returncode, done.stdout, done.stderr) == (0, "done\n", "")
    trace = json.loads(rank_file(tmp_path / "traces", 0).read_text())
    assert trace["header"]["status"] == "complete" and trace["anomalies"] == []
    calls = {child["id"]: (child["calls"], child["pass"]) for thread in trace["threads"]
             for child in thread["root"]["children"]}
    assert calls == {f"l{k}": (400, 400) for k in range(8)}
    assert [path.name for path in (tmp_path / "traces").iterdir()] == ["rank-0.ma.json"]  # no temporary left


ANNOTATED = "import ma\nwith ma.subroutine('s'):\n    pass\n"
WAITING = ("import pathlib, time\nimport ma\nwith ma.subroutine('s'):\n    pathlib.Path('started').touch()\n"
           "    while not pathlib.Path('go').exists():\n        time.sleep(0.05)\n")


def run_id(trace_dir: Path) -> str:
    return str(json.loads(rank_file(trace_dir, 0).read_text())["header"]["run_id"])


def test_a_second_job_on_a_claimed_trace_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "wait.py").write_text(WAITING)
    first = subprocess.Popen([str(VENV_BIN / "ma"), "run", "--", sys.executable, "wait.py"], cwd=tmp_path,
                             env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "started").exists():
            assert time.monotonic() < deadline and first.poll() is None, "the first job did not start"
            time.sleep(0.05)
        (tmp_path / "other.py").write_text(STARTED.replace("started", "second-started"))
        second = ma("run", "--", sys.executable, "other.py", cwd=tmp_path)
        (tmp_path / "go").touch()
        _out, err = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
    assert second.returncode == 2
    assert second.stderr == (f"ma run: error: --trace-dir {tmp_path / 'ma-traces'} is in use by another job (ma run "
                             f"with PID {first.pid}, run {run_id(tmp_path / 'ma-traces')}): wait for it to end or "
                             "give this one another --trace-dir\n")
    assert not (tmp_path / "second-started").exists()
    assert first.returncode == 0, err  # the first job and its trace are untouched
    assert json.loads(rank_file(tmp_path / "ma-traces", 0).read_text())["header"]["status"] == "complete"


def test_the_previous_traces_are_replaced_only_once_the_new_job_wrote_its_own(tmp_path: Path) -> None:
    traces = tmp_path / "ma-traces"
    (tmp_path / "prog.py").write_text(ANNOTATED)
    assert ma("run", "--", sys.executable, "prog.py", cwd=tmp_path).returncode == 0
    first = run_id(traces)

    (tmp_path / "none.py").write_text("print('no annotation')\n")  # writes no trace
    done = ma("run", "--", sys.executable, "none.py", cwd=tmp_path)
    assert done.returncode == 1
    assert (f"the job wrote no trace, so the previous run's traces in {traces} are kept as they were"
            in done.stderr)
    assert run_id(traces) == first and not (traces / ".ma-previous").exists()

    assert ma("run", "--", sys.executable, "prog.py", cwd=tmp_path).returncode == 0
    assert run_id(traces) != first
    assert sorted(path.name for path in traces.iterdir()) == ["ma-run.json", "rank-0.ma.json"]
