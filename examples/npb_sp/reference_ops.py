"""Count the operations NPB 3.4's own Fortran SP executes, per kernel and time step, with the maflops tool.

    python examples/npb_sp/reference_ops.py NPB3.4-MPI [--sizes 12 13 20 36]

NPB3.4-MPI is a copy of NPB 3.4's MPI sources (not part of this repository). The script copies it to a
temporary directory, puts a client request of the Valgrind tool around every kernel call there
(``adi.f``: copy_faces, txinvr, x/y/z_solve, add; ``copy_faces.f``: compute_rhs; the solves: lhsx/y/z,
ninvr, pinvr, tzetar), builds SP serially against NPB's MPI_dummy with ``gfortran -O2``, runs it under
maflops at each grid size (an ``inputsp.data`` with one timed step; NPB adds its untimed one) and
prints the flops and loads+stores per call of each kernel and of the whole step, with the cubic in N
through the four smallest sizes and its residual at the others. Needs gfortran and the SDK's Valgrind
tool (``ma tools build``). docs/npb-sp.md quotes its output.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

KERNELS = ("copy_faces", "txinvr", "x_solve", "y_solve", "z_solve", "add", "compute_rhs", "lhs", "ninvr_pinvr",
           "tzetar")
STEP = KERNELS[:6]                   # what adi calls: together one time step

SHIM = r"""
#include <stdio.h>
#include "ma_vgcount.h"
#define K 16
static unsigned long long fl0[K], ls0[K], fl[K], ls[K], calls[K], depth[K];
static const char *names[K] = {"", %(names)s};
void vgb_(int *id) { if (depth[*id]++ == 0) { fl0[*id] = ma_vg_flops(); ls0[*id] = ma_vg_loadstores(); } }
void vge_(int *id) {
    if (--depth[*id] != 0) return;
    fl[*id] += ma_vg_flops() - fl0[*id];
    ls[*id] += ma_vg_loadstores() - ls0[*id];
    calls[*id]++;
}
__attribute__((destructor)) static void dump(void) {
    FILE *f = fopen("kernels.out", "w");
    if (!f) return;
    for (int i = 1; i < K; i++) if (calls[i]) fprintf(f, "%%s %%llu %%llu %%llu\n", names[i], calls[i], fl[i], ls[i]);
    fclose(f);
}
"""

MAKE_DEF = """MPIFC = gfortran
FLINK = $(MPIFC)
FMPI_LIB = -L../MPI_dummy -lmpi {shim}
FMPI_INC = -I../MPI_dummy
FFLAGS = -O2 -fallow-argument-mismatch
FLINKFLAGS = $(FFLAGS)
MPICC = gcc
CLINK = $(MPICC)
CMPI_LIB = -L../MPI_dummy -lmpi
CMPI_INC = -I../MPI_dummy
CFLAGS = -O2
CLINKFLAGS = $(CFLAGS)
CC = gcc
BINDIR = ../bin
RAND = randi8
"""


def kernel_id(name: str) -> int:
    return KERNELS.index(name) + 1


def wrap_calls(path: Path, callee: str, name: str) -> None:
    """Put ``call vgb(id)`` / ``call vge(id)`` around every call of ``callee`` (a regex) in ``path``."""
    ident = kernel_id(name)
    out = []
    for line in path.read_text().split("\n"):
        m = re.match(r"^(\s+)(if \(stage \.eq\. 1\) )?call (" + callee + r")\b(.*)$", line)
        if m:
            pad, guard, rest = m.group(1), m.group(2), f"call {m.group(3)}{m.group(4)}"
            body = [f"{pad}call vgb({ident})", f"{pad}{rest}", f"{pad}call vge({ident})"]
            out += [f"{pad}if (stage .eq. 1) then", *body, f"{pad}endif"] if guard else body
        else:
            out.append(line)
    path.write_text("\n".join(out))


def build(source: Path, work: Path) -> Path:
    tree = work / "NPB3.4-MPI"
    shutil.copytree(source, tree)
    csrc = Path(__file__).resolve().parents[2] / "ma_runtime" / "csrc"
    shim = work / "kernels.c"
    shim.write_text(SHIM % {"names": ", ".join(f'"{k}"' for k in KERNELS)})
    subprocess.run(["gcc", "-O2", "-c", f"-I{csrc}", str(shim), "-o", str(work / "kernels.o")], check=True)
    (tree / "config" / "make.def").write_text(MAKE_DEF.format(shim=work / "kernels.o"))
    sp = tree / "SP"
    for name in STEP:
        wrap_calls(sp / "adi.f", name, name)
    wrap_calls(sp / "copy_faces.f", "compute_rhs", "compute_rhs")
    for solve in ("x_solve.f", "y_solve.f", "z_solve.f"):
        wrap_calls(sp / solve, "lhs[xyz]", "lhs")
        wrap_calls(sp / solve, "ninvr|pinvr", "ninvr_pinvr")
        wrap_calls(sp / solve, "tzetar", "tzetar")
    subprocess.run(["make", "FC=gfortran -fallow-argument-mismatch", "CC=gcc", "libmpi.a"], cwd=tree / "MPI_dummy",
                   check=True, capture_output=True)
    (tree / "bin").mkdir(exist_ok=True)
    done = subprocess.run(["make", "sp", "CLASS=A"], cwd=tree, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"building NPB SP failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return tree / "bin" / "sp.A.x"


def run(binary: Path, n: int, work: Path) -> dict[str, tuple[float, float]]:
    """kernel -> (flops, loads+stores) per call at an n^3 grid."""
    from ma_tools.valgrind import build_valgrind_tool

    rundir = work / f"n{n}"
    rundir.mkdir()
    (rundir / "inputsp.data").write_text(f"1\n0.015d0\n{n} {n} {n}\n")
    env = {**os.environ, "VALGRIND_LIB": str(build_valgrind_tool() / "lib")}
    subprocess.run(["valgrind", "--tool=maflops", "-q", str(binary)], cwd=rundir, env=env, check=True,
                   capture_output=True)
    out = {}
    for line in (rundir / "kernels.out").read_text().split("\n"):
        if line:
            name, calls, flops, ldst = line.split()
            out[name] = (int(flops) / int(calls), int(ldst) / int(calls))
    out["step"] = (sum(out[k][0] for k in STEP), sum(out[k][1] for k in STEP))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("npb_mpi", type=Path, help="NPB 3.4's MPI source tree (with SP/ and MPI_dummy/)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[12, 13, 20, 36])
    args = parser.parse_args(argv)
    if shutil.which("gfortran") is None:
        print("reference_ops.py: needs gfortran (apt-get install gfortran)", file=sys.stderr)
        return 2
    if len(args.sizes) < 4 or not (args.npb_mpi / "SP" / "adi.f").is_file():
        print("reference_ops.py: give NPB3.4-MPI's directory and at least four sizes", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        binary = build(args.npb_mpi, work)
        counts = {n: run(binary, n, work) for n in args.sizes}
    fit_at = sorted(args.sizes)[:4]
    powers = np.array([[n ** 3, n ** 2, n, 1] for n in fit_at], dtype=float)
    for which, col in (("flops", 0), ("loads+stores", 1)):
        print(f"{which} per call (one process): cubic through N = {fit_at}, residual at the other sizes")
        for name in ("step", *KERNELS):
            coef = np.linalg.solve(powers, [counts[n][name][col] for n in fit_at])
            others = [counts[n][name][col] - np.polyval(coef, n) for n in args.sizes if n not in fit_at]
            at = "  ".join(f"N={n}: {counts[n][name][col]:.0f}" for n in args.sizes)
            print(f"  {name:<12} {coef[0]:9.2f} N^3 {coef[1]:+10.2f} N^2 {coef[2]:+10.2f} N {coef[3]:+10.2f}   "
                  f"{at}   residual {max(map(abs, others), default=0.0):.2g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
