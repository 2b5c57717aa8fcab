"""Validating a compiled code: a C MPI mini-app (a stencil-like kernel, a halo exchange with the neighbours along
one axis, a dot product's allreduce) annotated with ma.h, run for real under ``ma run`` (and the maflops Valgrind
tool), validated and modelled: regions that count the program and not the runtime, exchanges of no message on a
rank without a neighbour, counts that depend on the iteration, models in the rank at process counts never run,
heap assertions under the Valgrind counter, and a run with the annotations off (docs/c-api.md, "Validating a
compiled code").
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import VENV_BIN, clean_env

import ma_post
from ma_cli.main import main
from ma_tools import cparts
from ma_tools.toolchain import find_mpicc

TIMEOUT = 600

MINI_APP = r"""
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "ma.h"

static double *volatile kept; /* escapes: the compiler keeps the allocation */

/* 2 flops per element (a multiply and an add; no FMA contraction at -O0 or -O2 without -march) */
static void relax(double *x, const double *b, int n)
{
    for (int i = 0; i < n; i++)
        x[i] = 0.5 * x[i] + b[i];
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int nx = atoi(argv[1]), max_iter = atoi(argv[2]);
    ma_def_variable_int("rank", rank);
    ma_def_variable_int("nprocs", size);
    ma_def_variable_int("nx", nx);
    ma_def_variable_int("max_iter", max_iter);
    int nbr = (rank > 0) + (rank < size - 1);  /* neighbours along the axis: none on a single rank */
    ma_def_variable_assign_int("nbr", "min(rank, 1) + min(nprocs - 1 - rank, 1)", nbr);
    double *x = calloc(nx, sizeof *x), *b = calloc(nx, sizeof *b), *halo = calloc(2 * nx, sizeof *halo);
    for (int i = 0; i < nx; i++)
        b[i] = 1.0 / (i + 1);

    ma_subroutine_start("solve");
    ma_loop_start("iterations", "max_iter", max_iter);
    for (int it = 0; it < max_iter; it++) {
        ma_loop_next("iterations");
        ma_loadstore_start("empty", "0", 0);
        ma_loadstore_stop("empty");
        int calls = it == 0 ? 1 : 2; /* the preconditioner is applied once in the first iteration, twice after */
        ma_loop_start("precondition", "1 + min(iter, 1)", calls);
        for (int c = 0; c < calls; c++) {
            ma_flop_start("relax", "2*nx", 2 * nx);
            relax(x, b, nx);
            ma_flop_stop("relax");
        }
        ma_loop_end("precondition", calls);
        ma_flop_start("smooth", "4*nx", 4 * nx); /* encloses a nested region and a declaration */
        relax(x, b, nx);
        ma_flop_start("inner", "2*nx", 2 * nx);
        relax(x, b, nx);
        ma_flop_stop("inner");
        ma_def_variable_assign_int("half", "nx/2", nx / 2);
        ma_flop_stop("smooth");

        MPI_Request requests[4];
        int k = 0;
        ma_mpi("mpi_irecv", "halo_recv", "8*nx", 8 * nx, "nbr", nbr);
        if (rank > 0)
            MPI_Irecv(halo, nx, MPI_DOUBLE, rank - 1, 0, MPI_COMM_WORLD, &requests[k++]);
        if (rank < size - 1)
            MPI_Irecv(halo + nx, nx, MPI_DOUBLE, rank + 1, 0, MPI_COMM_WORLD, &requests[k++]);
        ma_mpi("mpi_isend", "halo_send", "8*nx", 8 * nx, "nbr", nbr);
        if (rank > 0)
            MPI_Isend(x, nx, MPI_DOUBLE, rank - 1, 0, MPI_COMM_WORLD, &requests[k++]);
        if (rank < size - 1)
            MPI_Isend(x, nx, MPI_DOUBLE, rank + 1, 0, MPI_COMM_WORLD, &requests[k++]);
        MPI_Waitall(k, requests, MPI_STATUSES_IGNORE);
        double local = x[0], global = 0;
        ma_mpi_allreduce("dot", "8", 8, 1);
        MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    ma_loop_end("iterations", MA_NO_VALUE); /* counted by ma_loop_next */
    ma_subroutine_end("solve");

    ma_heap_memory_start("buffer", "8*nx*64", 8 * nx * 64); /* (above glibc's per-thread cache of small chunks) */
    kept = malloc(8 * (size_t)nx * 64);
    ma_heap_memory_stop("buffer");
    kept[0] = x[0];
    printf("rank %d done %g\n", rank, kept[0] + halo[0]);
    free(kept);
    free(x);
    free(b);
    free(halo);
    MPI_Finalize();
    return 0;
}
"""


@pytest.fixture(scope="module")
def mini_app(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    work = tmp_path_factory.mktemp("mini_app")
    source = work / "mini_app.c"
    source.write_text(MINI_APP)
    built = {"work": work}
    for level in ("-O0", "-O2"):
        output = work / f"mini_app{level}"
        command = [str(find_mpicc()), level, "-Wall", "-Wextra", "-Werror", *cparts.c_flags(), str(source), "-o",
                   str(output), *cparts.c_libs()]
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
        assert done.returncode == 0, f"{' '.join(command)}\n{done.stderr}"
        built[level] = output
    return built


def ma_run(program: Path, trace_dir: Path, nprocs: int, *args: str, counters: str | None = None,
           **env: str) -> subprocess.CompletedProcess[str]:
    options = ["--counters", counters] if counters else []
    done = subprocess.run([str(VENV_BIN / "ma"), "run", "-n", str(nprocs), *options, "--trace-dir", str(trace_dir),
                           "--", str(program), *args], env=clean_env(**env), capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    return done


def results(trace_dir: Path, **options: Any) -> dict[str, ma_post.validation.SiteResult]:
    return {r.id: r for r in ma_post.validate(ma_post.load(trace_dir), **options).results}


@pytest.mark.mpi
@pytest.mark.valgrind
@pytest.mark.parametrize("level", ["-O0", "-O2"])
def test_regions_count_the_program_not_the_runtime(mini_app: dict[str, Path], level: str) -> None:
    """Under the Valgrind tool at tolerance 0.01 (the runtime then does floating-point work in every check): an
    empty loadstore region measures 0 and a flop region around a nested region and a declaration measures its
    kernels exactly, at both optimisation levels. The heap assertion is measured (glibc's chunk header: 16
    bytes over the asserted 8*nx*64)."""
    trace_dir = mini_app["work"] / f"valgrind{level}"
    ma_run(mini_app[level], trace_dir, 2, "64", "3", counters="valgrind",
           MA_TOLERANCE="flop=0.01,heap_memory=0.05")
    found = results(trace_dir)
    assert found["empty"].measured == (0, 0, 0) and found["empty"].status == "PASS"
    assert found["smooth"].measured == (4 * 64,) * 3 and found["smooth"].fails == 0
    assert found["inner"].measured == found["relax"].measured == (2 * 64,) * 3
    assert found["buffer"].status == "PASS" and found["buffer"].measured[0] == 8 * 64 * 64 + 16
    assert ma_post.load(trace_dir).headers[0]["counters"]["measures"]["heap_memory"]["provider"] == "mallinfo"


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", [1, 2])
def test_an_exchange_of_no_message_passes(mini_app: dict[str, Path], nprocs: int, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """On one rank there is no neighbour (nbr = 0): no message asserted, none made, the exchange passes; on two,
    each rank has one. Every output agrees, at any tolerance, and the attribution finds no error."""
    trace_dir = tmp_path / "t"
    ma_run(mini_app["-O2"], trace_dir, nprocs, "32", "4", MA_TOLERANCE="heap_memory=0.01")
    for tolerance in (None, "0.01,heap_memory=0.01"):
        found = results(trace_dir, tolerance=tolerance)
        for site in ("halo_recv", "halo_send"):
            assert (found[site].status, found[site].fails, found[site].passes) == ("PASS", 0, 4 * nprocs), site
            assert found[site].worst_error == 0
        report = ma_post.validate(ma_post.load(trace_dir))
        assert not [a for a in report.attribution if a.type.startswith("mpi_")]
    assert main(["validate", str(trace_dir), "--tolerance", "0.01,heap_memory=0.01"]) == 0
    assert "halo_recv:ma_mpi_irecv:" in capsys.readouterr().out


@pytest.mark.mpi
def test_iteration_dependent_counts_at_two_trip_counts(mini_app: dict[str, Path], tmp_path: Path) -> None:
    """The preconditioner's trip count 1 + min(iter, 1) passes at every iteration, and the model built from a run
    of 3 iterations is right at 7 (and any other count): 2*max_iter - 1 applications."""
    runs = {}
    for max_iter in (3, 7):
        trace_dir = tmp_path / f"it{max_iter}"
        ma_run(mini_app["-O2"], trace_dir, 2, "16", str(max_iter))
        found = results(trace_dir)
        assert found["precondition"].status == "PASS" and found["precondition"].passes == 2 * max_iter
        assert found["iterations"].measured == (max_iter,) * 3  # counted by ma_loop_next
        assert found["relax"].calls == 2 * (2 * max_iter - 1)
        runs[max_iter] = ma_post.load(trace_dir)
    model = ma_post.model(runs[3], "flops")
    assert not [n for n in model.notes if n.kind in ("check", "conditional", "varying", "calls")], model.notes
    truth = ma_post.ModelBuilder(runs[7]).model("flops").check
    assert truth is not None
    # relax: 2*nx per application; smooth (4*nx, its nested inner counted in it) and inner (2*nx) once per iteration
    for max_iter, expected in ((7, truth.trace_predicted[0]), (100, 2 * 16 * (2 * 100 - 1) + 6 * 16 * 100)):
        assert model.evaluate({"max_iter": max_iter}) == expected


@pytest.mark.mpi
def test_rank_dependent_model_at_64_ranks(mini_app: dict[str, Path], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Traced on 3 ranks, the halo volume per rank at 64 ranks: ranks 0 and 63 have one neighbour, the 62 others
    two, so 5 iterations x 8*nx bytes x (2 + 2*62) / 64 received per rank on average."""
    trace_dir = tmp_path / "t"
    ma_run(mini_app["-O2"], trace_dir, 3, "10", "5")
    ts = ma_post.load(trace_dir)
    recv = ma_post.model(ts, "mpi_irecv_bytes")
    hand = 5 * 8 * 10 * (2 + 2 * 62) / 64
    assert ma_post.evaluate(recv, {"nprocs": 64}).value == hand == 787.5
    assert main(["eval", str(trace_dir), "-q", "mpi_irecv_bytes", "--set", "nprocs=64", "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    assert row["mpi_irecv_bytes"] == hand and row["mpi_irecv_bytes:min"] == 400 and row["mpi_irecv_bytes:max"] == 800
    assert main(["eval", str(trace_dir), "-q", "mpi_irecv_bytes", "--set", "nprocs=64", "--rank", "64"]) == 2
    assert "rank 64 is not a rank of a job of nprocs=64 processes" in capsys.readouterr().err


@pytest.mark.mpi
def test_a_run_with_the_annotations_off(mini_app: dict[str, Path], tmp_path: Path) -> None:
    done = ma_run(mini_app["-O2"], tmp_path / "t", 2, "8", "2", MA_DISABLE="1")
    assert done.stdout.count("done") == 2
    assert done.stderr.strip().splitlines() == [
        "ma run: exit status 0; the annotations were off (MA_DISABLE=1), so no trace was written"]
