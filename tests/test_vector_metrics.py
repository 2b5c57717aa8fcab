"""Vector metrics of the maflops Valgrind tool: vector vs scalar flops and memory operations, and AVL.

Measured for real under the tool: a C daxpy built with and without the vectoriser, and NumPy's
``y += a*x`` from Python. The expected lane counts are those of the instructions the code really runs
(read from the disassembly for C; for NumPy, from the SIMD extensions it reports for this host under
Valgrind, which hides AVX-512), never assumed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ma  # noqa: F401  (the application layer first, as a user program does)
from ma_tools.cparts import CSRC_DIR
from ma_tools.toolchain import env_bin_dir
from ma_tools.valgrind import build_valgrind_tool, valgrind_launch_prefix

pytestmark = pytest.mark.valgrind

CSRC = CSRC_DIR
TIMEOUT = 300
N = 1000

DAXPY_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include "ma_vgcount.h"

__attribute__((noinline)) void daxpy(long n, double a, const double *x, double *y)
{ for (long i = 0; i < n; i++) y[i] += a * x[i]; }

int main(int argc, char **argv)
{
    long n = atol(argv[1]);
    double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    for (long i = 0; i < n; i++) { x[i] = i; y[i] = 1.0; }
    ma_vg_vec_counts a, b, c, d;  /* a..b: an empty region (the reads' own cost), c..d: daxpy */
    ma_vg_vec_read(&a);
    ma_vg_vec_read(&b);
    ma_vg_vec_read(&c);
    daxpy(n, 2.5, x, y);
    ma_vg_vec_read(&d);
#define DIFF(f) ((d.f - c.f) - (b.f - a.f))
    printf("%d %llu %llu %llu %llu %llu %llu %llu %llu\n", ma_vg_running(), DIFF(vec_flops), DIFF(scalar_flops),
           DIFF(vec_fp_insns), DIFF(vec_lanes), DIFF(vec_loads), DIFF(vec_stores), DIFF(scalar_loads),
           DIFF(scalar_stores));
    return 0;
}
"""
KEYS = ("vec_flops", "scalar_flops", "vec_fp_insns", "vec_lanes", "vec_loads", "vec_stores", "scalar_loads",
        "scalar_stores")


@pytest.fixture(scope="module")
def launch() -> tuple[list[str], dict[str, str]]:
    if shutil.which("valgrind") is None:
        pytest.fail("valgrind is not installed on this host: scripts/setup.sh installs it")
    build_valgrind_tool()
    prefix, env_add = valgrind_launch_prefix()
    env = {**os.environ, **env_add, "PATH": f"{env_bin_dir()}{os.pathsep}{os.environ.get('PATH', '')}"}
    return prefix, env


def run_under_tool(launch: tuple[list[str], dict[str, str]], argv: list[str]) -> str:
    prefix, env = launch
    done = subprocess.run([*prefix, *argv], env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert done.returncode == 0, f"{argv} failed under the tool:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def packed_width(exe: Path) -> int:
    """Doubles per packed multiply in daxpy's machine code (1 when it has none)."""
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(exe)], capture_output=True, text=True,
                          check=True).stdout
    body = text.split("<daxpy>:", 1)[1].split("\n\n", 1)[0]
    packed = [line for line in body.splitlines() if re.search(r"\b(v?mulpd|vfn?m(add|sub)\d*pd)\b", line)]
    if not packed:
        return 1
    return 4 if any("%ymm" in line for line in packed) else 2


@pytest.mark.parametrize("flags", ["-O3 -fno-tree-vectorize", "-O3", "-O3 -mavx2", "-O3 -mavx2 -mfma"])
def test_c_daxpy_avl_follows_the_vectoriser(launch: tuple[list[str], dict[str, str]], tmp_path: Path,
                                            flags: str) -> None:
    source = tmp_path / "daxpy.c"
    source.write_text(DAXPY_C)
    exe = tmp_path / "daxpy"
    subprocess.run(["gcc", *flags.split(), f"-I{CSRC}", "-o", str(exe), str(source)], check=True)
    running, *values = map(int, run_under_tool(launch, [str(exe), str(N)]).split())
    counts = dict(zip(KEYS, values, strict=True))
    assert running == 1
    width = packed_width(exe)
    assert counts["vec_flops"] + counts["scalar_flops"] == 2 * N
    if width == 1:  # not vectorised: every flop scalar, every access 8 bytes
        assert counts["vec_flops"] == counts["vec_fp_insns"] == counts["vec_loads"] == counts["vec_stores"] == 0
        assert counts["scalar_loads"] >= 2 * N and counts["scalar_stores"] >= N
        return
    avl = counts["vec_lanes"] / counts["vec_fp_insns"]
    assert avl == pytest.approx(width)  # N is a multiple of 4: no remainder loop runs
    assert counts["vec_flops"] == 2 * N and counts["scalar_flops"] == 0
    # x and y are read in whole vectors (a load may be folded into the arithmetic instruction), y written so
    assert N // width <= counts["vec_loads"] <= 2 * N // width and counts["vec_stores"] == N // width
    assert counts["scalar_loads"] < 16 and counts["scalar_stores"] < 16


NUMPY_SCRIPT = r"""
import json
import ma
import numpy as np
from numpy.core._multiarray_umath import __cpu_features__ as features
from ma_runtime.counters.valgrind import ValgrindProvider

provider = ValgrindProvider()
x, y = np.arange(%(n)d, dtype=np.float64), np.ones(%(n)d)
before = provider.read_vector()
y += 2.5 * x
after = provider.read_vector()
d = after - before
print(json.dumps({"avx2": bool(features.get("AVX2")), "avx512f": bool(features.get("AVX512F")),
                  "avl": d.avl, "vec_flops": d.vec_flops, "scalar_flops": d.scalar_flops,
                  "vec_loads": d.vec_loads, "vec_stores": d.vec_stores}))
"""


def test_numpy_daxpy_avl_is_the_simd_width_numpy_uses(launch: tuple[list[str], dict[str, str]],
                                                      tmp_path: Path) -> None:
    n = 100_000
    script = tmp_path / "daxpy.py"
    script.write_text(NUMPY_SCRIPT % {"n": n})
    measured = json.loads(run_under_tool(launch, [sys.executable, str(script)]).splitlines()[-1])
    assert not measured["avx512f"]  # Valgrind 3.19 hides AVX-512
    lanes = 4 if measured["avx2"] else 2
    assert measured["avl"] == pytest.approx(lanes, rel=1e-3)
    assert measured["vec_flops"] >= 2 * n and measured["scalar_flops"] < n / 100
    assert measured["vec_loads"] >= 2 * n / lanes
