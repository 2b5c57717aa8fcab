"""`ma run` under Slurm: srun of a real single-node cluster (the `slurm` fixture, scripts/slurm-local.sh) runs
the C ring example and the Python quickstart, inside an allocation (salloc, sbatch) and with --launcher srun;
a killed rank is named from srun's report; each MPI gets the PMI it needs (ma_tools/slurm.py)."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import REPO, VENV_BIN, clean_env
from mpi_builds import DEBIAN_MPICH, DEBIAN_OPENMPI, Mpi, mpi_sites, validation
from test_c_runtime import RING, compile_c
from test_run_record import PROGRAM, Chunks, wait_for

from ma_core.trace_format import rank_file

AXPY = REPO / "examples" / "quickstart" / "axpy.py"
TIMEOUT = 300
SRUN_OPTIONS = ["--mpi=pmi2", "--kill-on-bad-exit=1", "--export=ALL"]  # what ma run adds for the wheel's MPICH
RING_MPI_LINES = ("from_left:ma_mpi_irecv:8000:8000:0.0:PASS=8:FAIL=0",  # ./ring 1000 4 on 2 ranks
                  "to_right:ma_mpi_send:8000:8000:0.0:PASS=8:FAIL=0", "sum_dot:ma_mpi_allreduce:8:8:0.0:PASS=8:FAIL=0")


@pytest.fixture(scope="module")
def ring(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_c(RING, tmp_path_factory.mktemp("slurm_ring") / "ring")


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT)


def ma(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run([str(VENV_BIN / "ma"), *args], cwd, env)


def record(directory: Path) -> dict:
    return json.loads((directory / "ma-traces" / "ma-run.json").read_text())


def validated(directory: Path) -> list[str]:
    done = ma("validate", "ma-traces", cwd=directory, env=clean_env())
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.splitlines()


def assert_ranks_watched(directory: Path, nprocs: int) -> None:
    """ma run found every rank's own process (not srun's, nor the sbatch script's): the PIDs of its record are
    those the ranks wrote in their traces."""
    ended = {end["rank"]: end["pid"] for end in record(directory)["ended"]}
    written = {rank: json.loads(rank_file(directory / "ma-traces", rank).read_text())["header"]["pid"]
               for rank in range(nprocs)}
    assert ended == written


@pytest.mark.mpi
@pytest.mark.slurm
def test_the_c_ring_under_srun_merges_and_validates(slurm: dict[str, str], ring: Path, tmp_path: Path) -> None:
    env = clean_env(**slurm, MA_TOLERANCE="heap_memory=0.01", MA_TRACE_LAYOUT="both")
    done = ma("run", "--launcher", "srun", "-n", "2", "--", str(ring), "1000", "4", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert "nprocs=2" in done.stdout and "2 of 2 rank traces" in done.stderr
    run_record = record(tmp_path)
    assert run_record["launcher"] == "srun" and run_record["argv"][:6] == ["srun", "-n", "2", *SRUN_OPTIONS]
    assert run_record["first_failure"] is None and run_record["launcher_report"] is None
    assert (tmp_path / "ma-traces" / "job.ma.npz").is_file()  # rank 0 merged the job's traces
    assert_ranks_watched(tmp_path, 2)
    lines = validated(tmp_path)
    assert set(RING_MPI_LINES) <= set(lines), lines  # every MPI assertion measured through PMPI under srun


@pytest.mark.mpi
@pytest.mark.slurm
def test_the_python_quickstart_under_srun(slurm: dict[str, str], tmp_path: Path) -> None:
    done = ma("run", "--launcher", "srun", "-n", "2", "--", sys.executable, str(AXPY), "4000", "5", cwd=tmp_path,
              env=clean_env(**slurm))
    assert done.returncode == 0, done.stderr
    assert "x.y after 5 iterations: 50000" in done.stdout
    assert record(tmp_path)["argv"][:6] == ["srun", "-n", "2", *SRUN_OPTIONS]  # the PMPI library's MPI: MPICH
    assert_ranks_watched(tmp_path, 2)
    lines = validated(tmp_path)
    assert {"iterations:ma_loop:5:5:0.0:PASS=2:FAIL=0", "norm:ma_mpi_allreduce:8:8:0.0:PASS=10:FAIL=0"} <= set(lines)


@pytest.mark.mpi
@pytest.mark.slurm
def test_inside_salloc_ma_run_uses_srun_on_the_allocations_tasks(slurm: dict[str, str], tmp_path: Path) -> None:
    done = run(["salloc", "-n", "3", str(VENV_BIN / "ma"), "run", "--", sys.executable, str(AXPY), "4000", "5"],
               tmp_path, clean_env(**slurm))
    assert done.returncode == 0, done.stderr
    assert "Granted job allocation" in done.stderr and "3 of 3 rank traces" in done.stderr
    run_record = record(tmp_path)
    assert (run_record["launcher"], run_record["ranks"], run_record["argv"][:3]) == ("srun", 3, ["srun", "-n", "3"])
    assert_ranks_watched(tmp_path, 3)
    lines = validated(tmp_path)
    assert {"iterations:ma_loop:5:5:0.0:PASS=3:FAIL=0", "norm:ma_mpi_allreduce:8:8:0.0:PASS=15:FAIL=0"} <= set(lines)


@pytest.mark.mpi
@pytest.mark.slurm
def test_an_sbatch_script_runs_the_ring_with_ma_run(slurm: dict[str, str], ring: Path, tmp_path: Path) -> None:
    script = tmp_path / "job.sh"
    script.write_text(textwrap.dedent(f"""\
        #!/bin/bash
        #SBATCH --ntasks=2
        #SBATCH --output={tmp_path}/job.out
        MA_TOLERANCE=heap_memory=0.01 {VENV_BIN / 'ma'} run -- {ring} 1000 4
        """))
    done = run(["sbatch", "--wait", str(script)], tmp_path, clean_env(**slurm))
    output = (tmp_path / "job.out").read_text()
    assert done.returncode == 0, done.stderr + output
    assert "2 of 2 rank traces" in output and record(tmp_path)["argv"][:3] == ["srun", "-n", "2"]
    assert_ranks_watched(tmp_path, 2)  # the script's own SLURM_PROCID=0 did not make srun a rank
    assert set(RING_MPI_LINES) <= set(validated(tmp_path))


def start_killable(tmp_path: Path, slurm: dict[str, str], *args: str) -> subprocess.Popen[str]:
    (tmp_path / "prog.py").write_text(textwrap.dedent(PROGRAM))
    argv = [str(VENV_BIN / "ma"), "run", "--launcher", "srun", "-n", "3", "--", sys.executable, "prog.py", *args]
    return subprocess.Popen(argv, cwd=tmp_path, env=clean_env(**slurm, MA_FLUSH_SECONDS="0.2"), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.mark.mpi
@pytest.mark.slurm
def test_a_rank_killed_under_srun_is_named(slurm: dict[str, str], tmp_path: Path) -> None:
    job = start_killable(tmp_path, slurm)
    traces = tmp_path / "ma-traces"
    wait_for(lambda: all(rank_file(traces, r).exists() for r in range(3)))
    victim = int((tmp_path / "pid-1").read_text())
    os.kill(victim, signal.SIGKILL)
    _, err = job.communicate(timeout=TIMEOUT)
    assert job.returncode != 0
    run_record = record(tmp_path)
    assert "rank 1 ended first: it was killed by signal 9 (SIGKILL)" in err, (err, run_record)
    first = run_record["first_failure"]
    assert (first["rank"], first["pid"], first["how"], first["signal"]) == (1, victim, "signal", 9)
    assert first["tied_with"] == []
    report = run_record["launcher_report"]  # srun's own lines: task 1 first, then the ones Slurm stopped for it
    assert report["first_failed_ranks"] == [1]
    assert (report["failures"][0]["ranks"], report["failures"][0]["how"]) == ([1], "Killed")
    assert sorted(r for failure in report["failures"][1:] for r in failure["ranks"]) == [0, 2]
    assert "srun: error:" in err and "task 1: Killed" in err  # srun's words still reach the user
    done = ma("validate", "ma-traces", cwd=tmp_path, env=clean_env())
    assert done.returncode == 1
    assert "incomplete run: rank 1 failed first: it was killed by signal 9 (SIGKILL)" in done.stderr, done.stderr


@pytest.mark.mpi
@pytest.mark.slurm
def test_a_rank_that_exits_under_srun_is_named_with_its_status(slurm: dict[str, str], tmp_path: Path) -> None:
    job = start_killable(tmp_path, slurm, "3")
    _, err = job.communicate(timeout=TIMEOUT)
    assert job.returncode != 0
    assert "rank 1 ended first: it exited with status 3" in err, err
    assert record(tmp_path)["launcher_report"]["failures"][0]["how"] == "Exited with exit code 3"


@pytest.mark.mpi
@pytest.mark.slurm
def test_ranks_that_did_not_form_one_job_are_an_error(slurm: dict[str, str], ring: Path, tmp_path: Path) -> None:
    """With no PMI (--mpi=none) every task is a one-process MPI job of its own, all writing rank 0."""
    done = ma("run", "--launcher", "srun --mpi=none", "-n", "2", "--", str(ring), "100", "1", cwd=tmp_path,
              env=clean_env(**slurm))
    assert done.returncode == 1
    assert "nprocs=1" in done.stdout and record(tmp_path)["argv"][:4] == ["srun", "--mpi=none", "-n", "2"]
    assert "error: the 2 ranks ran as 2 one-process MPI jobs" in done.stderr, done.stderr
    assert "--mpi=pmi2 for MPICH, --mpi=pmix for Open MPI" in done.stderr


HELLO = """
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    printf("rank %d of %d\\n", rank, size);
    MPI_Finalize();
    return 0;
}
"""
# The MPIs of this machine: the wheel's MPICH, Debian's MPICH and Open MPI (scripts/setup.sh installs them).
MPICCS = {"wheel MPICH": str(VENV_BIN / "mpicc"), "Debian MPICH": "mpicc.mpich", "Debian Open MPI": "mpicc.openmpi"}


@pytest.mark.mpi
@pytest.mark.slurm
@pytest.mark.parametrize("mpi", sorted(MPICCS))
def test_each_mpi_forms_one_job_under_the_plugin_ma_run_picks_and_no_other(slurm: dict[str, str], tmp_path: Path,
                                                                           mpi: str, monkeypatch: pytest.MonkeyPatch
                                                                           ) -> None:
    from ma_tools import launch
    from ma_tools import slurm as slurm_launch

    monkeypatch.setenv("SLURM_CONF", slurm["SLURM_CONF"])  # plan() asks this cluster's srun for its plugins

    (tmp_path / "hello.c").write_text(HELLO)
    built = run([MPICCS[mpi], "hello.c", "-o", "hello"], tmp_path, clean_env())
    assert built.returncode == 0, built.stderr
    env = clean_env(**slurm)
    argv = launch.plan([str(tmp_path / "hello")], 2, launcher="srun").argv
    chosen = next(word.removeprefix("--mpi=") for word in argv if word.startswith("--mpi="))
    assert chosen == ("pmix" if "Open MPI" in mpi else "pmi2")
    offered = slurm_launch.offered_plugins("srun")
    for plugin in ("none", "pmi2", "pmix"):
        assert plugin in offered
        # the program alone (no PMPI library preloaded): what srun and the MPI make of each plugin
        done = run(["srun", "-n", "2", f"--mpi={plugin}", "--kill-on-bad-exit=1", "./hello"], tmp_path, env)
        one_job = done.returncode == 0 and sorted(done.stdout.splitlines()) == ["rank 0 of 2", "rank 1 of 2"]
        assert one_job == (plugin == chosen), (plugin, done.returncode, done.stdout, done.stderr)


@pytest.mark.mpi
@pytest.mark.slurm
@pytest.mark.parametrize("language", ["c", "fortran"])
@pytest.mark.parametrize("mpi", [DEBIAN_MPICH, DEBIAN_OPENMPI], ids=lambda m: m.name)
def test_annotated_rings_built_with_each_distribution_mpi_validate_under_srun(
        slurm: dict[str, str], tmp_path: Path, mpi: Mpi, language: str) -> None:
    """The C and Fortran rings linked with Debian's MPICH or Open MPI (and that MPI's build of the SDK): srun with
    the PMI that MPI needs starts one job whose every MPI assertion, partners included, is measured through the
    PMPI library of the program's own MPI."""
    mpi.skip_unless_available()
    if language == "c":
        program = mpi.compile_c(REPO / "examples" / "c_ring" / "ring.c", tmp_path / "ring")
    else:
        program = mpi.compile_fortran(REPO / "examples" / "fortran_ring" / "ring.F90", tmp_path / "ring")
    env = clean_env(**slurm, MA_TOLERANCE="heap_memory=0.01")
    done = ma("run", "--launcher", "srun", "-n", "2", "--", str(program), cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 of 2 rank traces" in done.stderr, done.stderr
    plugin = "--mpi=pmix" if mpi is DEBIAN_OPENMPI else "--mpi=pmi2"
    assert record(tmp_path)["argv"][:4] == ["srun", "-n", "2", plugin]
    assert_ranks_watched(tmp_path, 2)
    report = validation(tmp_path / "ma-traces")
    assert report["exit"] == 0, report
    sites = mpi_sites(report)
    assert sites and report["trace"]["language"] == language
    for site in sites:
        assert site["unmeasured"] == 0 and site["status"] == "PASS" and site["pass"] == site["calls"] > 0, site
    if language == "fortran":
        assert report["peers"] and all(p["fail"] == 0 and p["pass"] > 0 for p in report["peers"]), report["peers"]


# ---- srun's report, read on the way (no Slurm needed) -------------------------------------------------------
def test_sruns_failure_lines_are_read_and_passed_on() -> None:
    from ma_tools.hydra import forward
    from ma_tools.slurm import SrunReport

    out, report = io.BytesIO(), SrunReport()
    text = (b"a rank's own stderr\nsrun: error: node-a: task 5: Segmentation fault (core dumped)\n"
            b"srun: launch/slurm: _step_signal: Terminating StepId=7.0\n"
            b"srun: error: node-b: tasks 0,2-3: Terminated\nsrun: error: node-a: task 1: Exited with exit code 3\n")
    forward(Chunks(text[:30], text[30:70], text[70:]), out, report)  # type: ignore[arg-type]
    assert out.getvalue() == text
    assert report.first_ranks() == [5]
    assert [ranks for _, ranks, _ in report.failures] == [[5], [0, 2, 3], [1]]
    assert report.wait_statuses() == {5: signal.SIGSEGV, 0: signal.SIGTERM, 2: signal.SIGTERM, 3: signal.SIGTERM,
                                      1: 3 << 8}


def test_sruns_first_report_names_the_rank_where_ma_runs_watch_saw_a_tie(tmp_path: Path) -> None:
    from ma_tools import runwatch, slurm

    report = slurm.SrunReport()
    for line in (b"srun: error: n1: task 2: Killed\n", b"srun: error: n1: tasks 0-1: Terminated\n"):
        report.feed(line)
    # one wake-up of the watch saw all three gone, slurmstepd having reaped them: how, from srun's words
    ended = [runwatch.RankEnd(rank, 100 + rank, 1.5) for rank in range(3)]
    first, tied = slurm.first_failure(ended, report, 3, tmp_path) or (None, None)
    assert first is not None and (first.rank, first.pid, first.how, first.signal, tied) == (2, 102, "signal", 9, [])
    assert (ended[0].how, ended[0].signal) == ("signal", signal.SIGTERM)
    # a rank on another node: srun's word only (no PID, no time)
    first, _ = slurm.first_failure(ended[:2], report, 3, tmp_path) or (None, None)
    assert first is not None and (first.rank, first.pid, first.after_s, first.signal) == (2, None, None, 9)


def test_an_mpi_library_is_known_by_its_file_name() -> None:
    from ma_tools.slurm import library_family

    assert library_family("libmpi.so.40") == "openmpi"
    assert library_family("libmpich.so.12") == library_family("libmpi.so.12") == "mpich"
    assert library_family("libmpi_cxx.so.40") is None and library_family("libmpi.so.1") is None
