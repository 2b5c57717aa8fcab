"""``ma loopmark``: MV scores from real GCC and Clang vectorisation reports, mapped onto a C trace's loops."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import ma  # noqa: F401  (the application layer first)
from ma_post.loopmark import DEFAULT_FLAGS, Loopmark, loopmarks
from ma_tools import cparts
from ma_tools.toolchain import env_bin_dir, find_mpicc

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "examples" / "vector_kernels" / "kernels.c"


def line_of(text: str) -> int:
    """The line of KERNELS holding ``text`` (so that the test follows edits of the file)."""
    for number, line in enumerate(KERNELS.read_text().splitlines(), start=1):
        if text in line:
            return number
    raise AssertionError(f"{text!r} not in {KERNELS}")


def by_line(compiler: str, flags: tuple[str, ...] = DEFAULT_FLAGS) -> dict[int, Loopmark]:
    return {m.line: m for m in loopmarks(KERNELS, compiler, flags)}


def test_gcc_vectorises_tzetar_matvec_rows_and_triad_and_refuses_the_recurrence() -> None:
    marks = by_line("gcc")
    tz_i = marks[line_of("for (long i = 1; i < n - 1; i++)")]
    assert tz_i.vectorised and tz_i.lanes == 4 and tz_i.mv == 2  # AVX2: 32-byte vectors
    tz_k = marks[line_of("for (long k = 1; k < n - 1; k++)")]
    assert not tz_k.vectorised and tz_k.reason == "multiple nested loops"
    gather = marks[line_of("for (long k = rowstr[j]")]
    assert gather.vectorised and gather.mv == 2  # AVX2 has gathers
    rows = marks[line_of("for (long j = 0; j < rows; j++)")]
    assert not rows.vectorised and rows.reason == "control flow in loop"
    triad = marks[line_of("a[i] = b[i] + s * c[i]") - 1]
    assert triad.omp == "parallel for" and triad.multithreaded and triad.vectorised and triad.mv == 3
    recurrence = marks[line_of("for (long i = 1; i < n; i++)")]
    assert not recurrence.vectorised and recurrence.mv == 0 and recurrence.reason


def test_without_the_vectoriser_or_openmp_every_score_is_zero() -> None:
    marks = by_line("gcc", ("-O3", "-fno-tree-vectorize"))
    assert marks and all(m.mv == 0 for m in marks.values())


def test_clang_remarks_give_width_and_reasons() -> None:
    assert shutil.which("clang"), "clang is missing (scripts/setup.sh installs it)"
    marks = by_line("clang")
    triad = marks[line_of("a[i] = b[i] + s * c[i]") - 1]
    recurrence = marks[line_of("for (long i = 1; i < n; i++)")]
    assert triad.vectorised is False or triad.lanes in (2, 4, 8)
    assert not recurrence.vectorised and recurrence.reason and "reduction" in recurrence.reason
    assert any(m.vectorised and m.lanes == 4 for m in marks.values())


ANNOTATED = r"""
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include "ma.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    long n = 1000;
    ma_def_variable_int("n", n);
    double *x = calloc(n, sizeof *x), *b = calloc(n, sizeof *b);
    ma_vec_loop_start("scale", "n/2", MA_NO_VALUE, "n", MA_NO_VALUE, "4", NAN, 2);
    ma_loop_start("scale", "n", n);
    for (long i = 0; i < n; i++)
        x[i] = 2.0 * b[i];
    ma_loop_end("scale", n);
    ma_vec_loop_stop("scale");
    ma_vec_loop_start("recurrence", "n/2", MA_NO_VALUE, "2*n", MA_NO_VALUE, "4", NAN, 2); /* wrongly asserted */
    ma_loop_start("recurrence", "n-1", n - 1);
    for (long i = 1; i < n; i++)
        x[i] = x[i - 1] * 0.5 + b[i];
    ma_loop_end("recurrence", n - 1);
    ma_vec_loop_stop("recurrence");
    free(x); free(b);
    MPI_Finalize();
    return 0;
}
"""


@pytest.mark.mpi
def test_loopmarks_map_onto_the_annotated_loops_of_a_c_trace(tmp_path: Path) -> None:
    source = tmp_path / "annotated.c"
    source.write_text(ANNOTATED)
    exe = tmp_path / "annotated"
    subprocess.run([str(find_mpicc()), "-O3", "-march=x86-64-v3", *cparts.c_flags(), str(source), "-o", str(exe),
                    *cparts.c_libs()], check=True, timeout=300)
    trace = tmp_path / "trace"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MA_") or k == "MA_BUILD_DIR"}
    env.update(PATH=f"{env_bin_dir()}{os.pathsep}{env.get('PATH', '')}", MA_TRACE_DIR=str(trace))
    subprocess.run([str(env_bin_dir() / "mpiexec"), "-n", "1", str(exe)], env=env, check=True, timeout=300)
    includes = " ".join([*cparts.c_flags(), f"-I{env_bin_dir().parent / 'include'}"])  # ma.h, mpi.h
    done = subprocess.run([str(env_bin_dir() / "ma"), "loopmark", str(source), "--trace", str(trace), "--json",
                           "--flags", f"-O3 -march=x86-64-v3 {includes}"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    sites = report["sites"]
    assert sites["scale"]["mv"] == 2 and sites["scale"]["lanes"] == 4
    assert sites["recurrence"]["mv"] == 0 and sites["recurrence"]["reason"]
    # the ma_vec_loop assertions, by their file and line: the recurrence is asserted vectorised, GCC refused it
    checks = {c["id"]: c for c in report["vec_loops"]}
    line = next(i for i, text in enumerate(ANNOTATED.splitlines(), start=1) if 'ma_vec_loop_start("recurrence"' in text)
    assert checks["scale"]["agrees"] and checks["scale"]["loop"]["mv"] == 2
    assert not checks["recurrence"]["agrees"] and checks["recurrence"]["where"] == f"{source}:{line}"
    assert checks["recurrence"]["loop"]["line"] == line + 2 and checks["recurrence"]["loop"]["reason"]
    text = subprocess.run([str(env_bin_dir() / "ma"), "loopmark", str(source), "--trace", str(trace), "--flags",
                           f"-O3 -march=x86-64-v3 {includes}"], capture_output=True, text=True, timeout=300,
                          check=True).stdout
    assert f"vec_loop recurrence at {source}:{line}: compiler MV 0, but MV 2 is asserted" in text
