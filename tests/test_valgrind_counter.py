"""The maflops Valgrind tool and the ``valgrind`` counter provider, run for real under Valgrind.

Exactness is checked on kernels whose operation counts are known: a C daxpy at four optimisation levels
(scalar SSE2, AVX2, AVX2+FMA), ADDSUB/HADD intrinsics, x87 code, data-dependent branches, and NumPy's
``y += a*x`` and dot product measured from Python through the ctypes shim.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import VENV_BIN, clean_env

import ma  # noqa: F401  (import order: the application layer first, as a user program does)
from ma_core.errors import ToolBuildError
from ma_runtime.built import read_stamp
from ma_runtime.counters.valgrind import SHIM_NAME, TOOL_NAME, ValgrindProvider
from ma_tools.cparts import CSRC_DIR
from ma_tools.toolchain import env_bin_dir
from ma_tools.valgrind import TOOL_VERSION, build_valgrind_tool, find_valgrind, valgrind_launch_prefix

pytestmark = pytest.mark.valgrind

CSRC = CSRC_DIR
TIMEOUT = 300


@pytest.fixture(scope="session")
def tool_dir() -> Path:
    if shutil.which("valgrind") is None:
        pytest.fail("valgrind is not installed on this host: scripts/setup.sh installs it")
    return build_valgrind_tool()


@pytest.fixture(scope="session")
def launch(tool_dir: Path) -> tuple[list[str], dict[str, str]]:
    prefix, env_add = valgrind_launch_prefix()
    env = {**os.environ, **env_add, "PATH": f"{env_bin_dir()}{os.pathsep}{os.environ.get('PATH', '')}"}
    return prefix, env


def run_under_tool(launch: tuple[list[str], dict[str, str]], argv: list[str]) -> str:
    prefix, env = launch
    done = subprocess.run([*prefix, *argv], env=env, capture_output=True, text=True, timeout=TIMEOUT,
                          check=False)
    assert done.returncode == 0, f"{argv} under {TOOL_NAME} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


# ------------------------------------------------------------------------------------------------------
# Building


def test_build_lays_out_a_valgrind_lib_dir(tool_dir: Path) -> None:
    install = find_valgrind()
    lib = tool_dir / "lib"
    assert (lib / f"{TOOL_NAME}-{install.platform}").is_file()
    assert (lib / f"vgpreload_core-{install.platform}.so").resolve() == \
        install.core_lib_dir / f"vgpreload_core-{install.platform}.so"
    assert (tool_dir / SHIM_NAME).is_file()
    stamp = read_stamp(tool_dir)
    version = subprocess.run([str(install.launcher), "--version"], capture_output=True, text=True,
                             check=True).stdout
    assert f"valgrind-{stamp['valgrind']}" == version.strip()
    assert stamp["tool_version"] == TOOL_VERSION


def test_up_to_date_build_is_not_redone(tool_dir: Path) -> None:
    tool = tool_dir / "lib" / f"{TOOL_NAME}-{find_valgrind().platform}"
    before = tool.stat().st_mtime_ns
    assert build_valgrind_tool() == tool_dir
    assert tool.stat().st_mtime_ns == before


def test_launch_prefix_starts_the_tool(launch: tuple[list[str], dict[str, str]]) -> None:
    prefix, env = launch
    assert Path(prefix[0]).name == "valgrind" and f"--tool={TOOL_NAME}" in prefix
    assert Path(env["VALGRIND_LIB"], f"{TOOL_NAME}-{find_valgrind().platform}").is_file()


def test_missing_valgrind_is_a_clear_error(tool_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    monkeypatch.setenv("MA_VALGRIND", str(tmp_path / "no-valgrind-here"))
    with pytest.raises(ToolBuildError, match=r"Valgrind is not installed.*apt-get install valgrind"):
        build_valgrind_tool(force=True)


def test_missing_static_libraries_are_a_clear_error(tool_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    monkeypatch.setenv("MA_VALGRIND_STATIC_LIBS", str(tmp_path))
    with pytest.raises(ToolBuildError, match=r"static core libraries \(libcoregrind-amd64-linux\.a") as info:
        build_valgrind_tool(force=True)
    assert str(tmp_path) in str(info.value)


def test_missing_headers_are_a_clear_error(tool_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    monkeypatch.setenv("MA_VALGRIND_INCLUDE", str(tmp_path))
    with pytest.raises(ToolBuildError, match=r"tool headers \(pub_tool_basics\.h"):
        build_valgrind_tool(force=True)


# ------------------------------------------------------------------------------------------------------
# Outside Valgrind


def test_outside_valgrind_the_provider_is_unmeasured(tool_dir: Path) -> None:
    provider = ValgrindProvider()
    status = provider.status()
    assert not status.available and "not running under the maflops" in (status.reason or "")
    assert provider.reader("flop") is None and provider.reader("loadstore") is None
    assert provider.read() is None


def test_unbuilt_shim_is_reported(tmp_path: Path) -> None:
    status = ValgrindProvider(shim=tmp_path / SHIM_NAME).status()
    assert not status.available and "is not built" in (status.reason or "")


# ------------------------------------------------------------------------------------------------------
# C kernels: the same count at every optimisation level

KERNELS_C = r"""
#include <immintrin.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "ma_vgcount.h"

#define NOINLINE __attribute__((noinline))

NOINLINE void daxpy(long n, double a, const double *x, double *y)
{ for (long i = 0; i < n; i++) y[i] += a * x[i]; }

NOINLINE void saxpy(long n, float a, const float *x, float *y)
{ for (long i = 0; i < n; i++) y[i] += a * x[i]; }

NOINLINE void sqrt_div(long n, const double *x, const double *y, double *z)
{ for (long i = 0; i < n; i++) z[i] = sqrt(x[i]) / y[i]; }

NOINLINE double branchy(long n, const double *x)  /* 2 flops where x > 0, 1 elsewhere */
{ double s = 0; for (long i = 0; i < n; i++) { if (x[i] > 0) s += 2.0 * x[i]; else s -= 1.0; } return s; }

__attribute__((target("sse3"))) NOINLINE void addsub128(long n, const double *x, const double *y, double *z)
{ for (long i = 0; i + 2 <= n; i += 2) _mm_storeu_pd(z + i, _mm_addsub_pd(_mm_loadu_pd(x + i), _mm_loadu_pd(y + i))); }

__attribute__((target("avx"))) NOINLINE void addsub256(long n, const double *x, const double *y, double *z)
{ for (long i = 0; i + 4 <= n; i += 4)
    _mm256_storeu_pd(z + i, _mm256_addsub_pd(_mm256_loadu_pd(x + i), _mm256_loadu_pd(y + i))); }

__attribute__((target("sse3"))) NOINLINE void hadd128(long n, const double *x, const double *y, double *z)
{ for (long i = 0; i + 2 <= n; i += 2) _mm_storeu_pd(z + i, _mm_hadd_pd(_mm_loadu_pd(x + i), _mm_loadu_pd(y + i))); }

NOINLINE long double x87_sum(long n, const double *x)
{ long double s = 0; for (long i = 0; i < n; i++) s += x[i]; return s; }

static void report(const char *name, const ma_vg_counts *a, const ma_vg_counts *b, long expect)
{
    printf("%s %llu %llu %llu %llu %llu %llu %ld\n", name, b->dp_flops - a->dp_flops, b->sp_flops - a->sp_flops,
           b->loads - a->loads, b->stores - a->stores, b->load_bytes - a->load_bytes,
           b->store_bytes - a->store_bytes, expect);
}

#define REGION(name, expect, stmt) do { ma_vg_counts a_, b_; ma_vg_read(&a_); stmt; ma_vg_read(&b_); \
                                        report(name, &a_, &b_, expect); } while (0)

int main(int argc, char **argv)
{
    long n = atol(argv[1]), positives = 0;
    double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *z = malloc(n * sizeof *z);
    float *xs = malloc(n * sizeof *xs), *ys = malloc(n * sizeof *ys);
    for (long i = 0; i < n; i++) {
        x[i] = (i % 3 == 0) ? -1.0 - i : 1.0 + i;
        y[i] = 1.0 + 0.5 * i;
        xs[i] = (float)x[i]; ys[i] = (float)y[i];
        positives += x[i] > 0;
    }
    volatile double result;
    printf("running %d\n", ma_vg_running());
    REGION("empty", 0, (void)0);
    REGION("daxpy", 2 * n, daxpy(n, 2.5, x, y));
    REGION("saxpy", 2 * n, saxpy(n, 2.5f, xs, ys));
    REGION("sqrt_div", 2 * n, sqrt_div(n, y, y, z));
    REGION("branchy", 2 * positives + (n - positives), result = branchy(n, x));
    REGION("addsub128", 2 * (n / 2), addsub128(n, x, y, z));
    REGION("addsub256", 4 * (n / 4), addsub256(n, x, y, z));
    REGION("hadd128", 2 * (n / 2), hadd128(n, x, y, z));
    REGION("x87_sum", n, result = (double)x87_sum(n, x));
    (void)result;
    return 0;
}
"""

N_C = 1001  # odd: exercises the vectoriser's peel and remainder loops
FLAG_SETS = ["-O0", "-O2", "-O3 -mavx2", "-O3 -mavx2 -mfma"]


def parse_regions(stdout: str) -> tuple[bool, dict[str, dict[str, int]]]:
    lines = stdout.splitlines()
    running = lines[0] == "running 1"
    keys = ("dp", "sp", "loads", "stores", "load_bytes", "store_bytes", "expect")
    regions = {}
    for line in lines[1:]:
        name, *values = line.split()
        regions[name] = dict(zip(keys, map(int, values), strict=False))
    return running, regions


def compile_kernels(tmp_path: Path, flags: str) -> Path:
    compiler = shutil.which("gcc") or shutil.which("cc")
    assert compiler, "a C compiler is needed"
    source = tmp_path / "kernels.c"
    source.write_text(KERNELS_C)
    exe = tmp_path / "kernels"
    subprocess.run([compiler, *flags.split(), f"-I{CSRC}", "-o", str(exe), str(source), "-lm"], check=True)
    return exe


@pytest.mark.parametrize("flags", FLAG_SETS)
def test_c_kernels_count_exactly_at_every_optimisation_level(
        launch: tuple[list[str], dict[str, str]], tmp_path: Path, flags: str) -> None:
    exe = compile_kernels(tmp_path, flags)
    if "-mfma" in flags:  # make sure the FMA path really is exercised
        disassembly = subprocess.run(["objdump", "-d", str(exe)], capture_output=True, text=True,
                                     check=True).stdout
        assert "vfmadd" in disassembly
    running, regions = parse_regions(run_under_tool(launch, [str(exe), str(N_C)]))
    assert running
    assert regions["empty"]["dp"] == regions["empty"]["sp"] == 0
    for name, counts in regions.items():
        precision = "sp" if name == "saxpy" else "dp"
        other = "dp" if precision == "sp" else "sp"
        assert counts[precision] == counts["expect"], f"{name} at {flags}: {counts}"
        assert counts[other] == 0, f"{name} at {flags}: {counts}"
    assert regions["daxpy"]["dp"] == 2 * N_C


@pytest.mark.parametrize("flags", FLAG_SETS[1:])
def test_c_daxpy_memory_traffic(launch: tuple[list[str], dict[str, str]], tmp_path: Path, flags: str) -> None:
    """Bytes do not depend on vectorisation: 16n read, 8n written (plus the call's return address)."""
    running, regions = parse_regions(run_under_tool(launch, [str(compile_kernels(tmp_path, flags)), str(N_C)]))
    assert running
    empty, daxpy = regions["empty"], regions["daxpy"]
    load_bytes = daxpy["load_bytes"] - empty["load_bytes"]
    store_bytes = daxpy["store_bytes"] - empty["store_bytes"]
    assert 16 * N_C <= load_bytes <= 16 * N_C + 64
    assert 8 * N_C <= store_bytes <= 8 * N_C + 64
    loads, stores = daxpy["loads"] - empty["loads"], daxpy["stores"] - empty["stores"]
    if flags == "-O2":  # scalar: two loads and one store per element
        assert 2 * N_C <= loads <= 2 * N_C + 8 and N_C <= stores <= N_C + 8
    else:  # AVX2: four doubles per access
        assert loads < N_C and stores < N_C / 2


def test_c_client_api_outside_valgrind(tmp_path: Path) -> None:
    exe = compile_kernels(tmp_path, "-O2")
    done = subprocess.run([str(exe), "64"], capture_output=True, text=True, timeout=TIMEOUT, check=True)
    running, regions = parse_regions(done.stdout)
    assert not running
    assert all(v == 0 for counts in regions.values() for k, v in counts.items() if k != "expect")


# ------------------------------------------------------------------------------------------------------
# NumPy, read from Python through the provider

NUMPY_SCRIPT = r"""
import json, sys
import ma
import numpy as np
from ma_runtime.counters.valgrind import ValgrindProvider

provider = ValgrindProvider()
status = provider.status()
flop, loadstore = provider.reader("flop"), provider.reader("loadstore")
out = {"status": status.to_json(), "source": provider.source("flop")}

def region(name, fn):
    f0, before = flop(), provider.read()
    fn()
    after, f1 = provider.read(), flop()
    d = after - before
    out[name] = {"dp": d.dp_flops, "sp": d.sp_flops, "loads": d.loads, "stores": d.stores,
                 "load_bytes": d.load_bytes, "store_bytes": d.store_bytes, "reader": f1 - f0}

def axpy(y, a, x):
    y += a * x

for n in (4096, 100000, 1001):
    x, y = np.arange(n, dtype=np.float64), np.ones(n)
    region("empty", lambda: None)
    region(f"axpy{n}", lambda: axpy(y, 2.5, x))
    region(f"saxpy{n}", lambda: axpy(y.astype(np.float32), np.float32(2.5), x.astype(np.float32)))
    region(f"dot{n}", lambda: np.dot(x, y))
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def numpy_regions(launch: tuple[list[str], dict[str, str]], tmp_path_factory: pytest.TempPathFactory) -> dict:
    script = tmp_path_factory.mktemp("numpy") / "regions.py"
    script.write_text(NUMPY_SCRIPT)
    return json.loads(run_under_tool(launch, [sys.executable, str(script)]).splitlines()[-1])


def test_provider_is_available_under_the_tool(numpy_regions: dict) -> None:
    status = numpy_regions["status"]
    assert status["available"] and status["name"] == "valgrind"
    version = subprocess.run(["valgrind", "--version"], capture_output=True, text=True,
                             check=True).stdout.strip()
    assert status["version"] == f"{version} {TOOL_NAME}-{TOOL_VERSION}"
    assert numpy_regions["source"] == "maflops:dp_flops+sp_flops"


@pytest.mark.parametrize("n", [4096, 100000])
def test_numpy_axpy_is_2n_flops(numpy_regions: dict, n: int) -> None:
    axpy, empty = numpy_regions[f"axpy{n}"], numpy_regions["empty"]
    assert (axpy["dp"], axpy["sp"]) == (2 * n, 0)
    assert axpy["reader"] == 2 * n  # the provider's flop reader sees the same region
    assert empty["dp"] == empty["sp"] == empty["reader"] == 0
    # a*x reads x and writes a temporary; y += reads both and writes y; the interpreter adds a little
    load_bytes = axpy["load_bytes"] - empty["load_bytes"]
    store_bytes = axpy["store_bytes"] - empty["store_bytes"]
    assert 24 * n <= load_bytes <= 24 * n + 64 * 1024
    assert 16 * n <= store_bytes <= 16 * n + 64 * 1024


def test_numpy_single_precision_is_counted_apart(numpy_regions: dict) -> None:
    saxpy = numpy_regions["saxpy4096"]
    assert saxpy["sp"] == 2 * 4096 and saxpy["dp"] == 0


def test_numpy_simd_tail_is_a_full_vector(numpy_regions: dict) -> None:
    """NumPy finishes n mod lanes elements with one zero-padded vector op: that arithmetic is counted."""
    n = 1001
    assert 2 * n <= numpy_regions[f"axpy{n}"]["dp"] < 2 * (n + 4)   # 4 doubles per AVX2 vector
    assert 2 * n <= numpy_regions[f"saxpy{n}"]["sp"] < 2 * (n + 8)  # 8 floats


@pytest.mark.parametrize("n", [4096, 100000, 1001])
def test_numpy_dot_is_2n_flops_up_to_the_reduction(numpy_regions: dict, n: int) -> None:
    dot = numpy_regions[f"dot{n}"]
    assert dot["sp"] == 0 and abs(dot["dp"] - 2 * n) <= 64


# ------------------------------------------------------------------------------------------------------
# Every rank of an MPI job under the tool

MPI_SCRIPT = r"""
import json
import ma
import numpy as np
from mpi4py import MPI
from ma_runtime.counters.valgrind import ValgrindProvider

comm = MPI.COMM_WORLD
flop = ValgrindProvider().reader("flop")
n = 2048 * (comm.rank + 1)
x, y = np.arange(n, dtype=np.float64), np.ones(n)
before = flop()
y += 2.5 * x
measured = flop() - before
big = np.full(1 << 18, float(comm.rank + 1))
comm.Allreduce(MPI.IN_PLACE, big)  # 2 MiB through MPICH's shared memory
rows = comm.gather({"rank": comm.rank, "n": n, "flops": measured, "sum": float(big[0])})
if comm.rank == 0:
    print(json.dumps(rows))
"""


@pytest.mark.mpi
def test_every_mpi_rank_runs_under_the_tool(launch: tuple[list[str], dict[str, str]], tmp_path: Path) -> None:
    mpiexec = env_bin_dir() / "mpiexec"
    if not mpiexec.is_file():
        pytest.fail("the environment has no mpiexec (pip install mpich)")
    script = tmp_path / "ranks.py"
    script.write_text(MPI_SCRIPT)
    prefix, env = launch
    done = subprocess.run([str(mpiexec), "-n", "2", *prefix, sys.executable, str(script)], env=env,
                          capture_output=True, text=True, timeout=TIMEOUT, check=False)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout.splitlines()[-1])
    assert [row["rank"] for row in rows] == [0, 1]
    for row in rows:
        assert row["flops"] == 2 * row["n"]
        assert row["sum"] == 3.0


# ------------------------------------------------------------------------------------------------------
# The SDK fence: regions count the program, not the runtime


FENCED_PROGRAM = """
import sys
import numpy as np
import ma

n = int(sys.argv[1])
x, y = np.ones(n), np.zeros(n)
ma.variable("n", n)
with ma.loop("steps", "5") as lp:
    for _ in lp.range(5):
        with ma.loadstore("empty", "0"):
            pass
        with ma.flop("outer", "4*n"):
            y += 2.5 * x
            with ma.flop("inner", "2*n"):
                y += 2.5 * x
            ma.assign("half", "n/2", n // 2)
"""


@pytest.mark.mpi
@pytest.mark.parametrize("runtime", [{}, {"MA_PURE_PYTHON": "1"}], ids=["compiled", "pure"])
def test_python_regions_leave_the_runtime_out(tmp_path: Path, runtime: dict[str, str]) -> None:
    """A flop region around a nested region and a declaration, judged at a tolerance (which makes the runtime do
    floating-point work), measures exactly its kernels; an empty region measures only the interpreter's way
    from the end of __enter__ to the start of __exit__."""
    import ma_post

    script = tmp_path / "fenced.py"
    script.write_text(FENCED_PROGRAM)
    done = subprocess.run([str(VENV_BIN / "ma"), "run", "-n", "1", "--counters", "valgrind", "--trace-dir",
                           str(tmp_path / "t"), "--", sys.executable, str(script), "4096"],
                          env=clean_env(MA_TOLERANCE="flop=0.01", **runtime), capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    results = {r.id: r for r in ma_post.validate(ma_post.load(tmp_path / "t")).results}
    assert results["outer"].measured == (4 * 4096,) * 3 and results["inner"].measured == (2 * 4096,) * 3
    glue = results["empty"].measured[2]
    assert glue < (400 if not runtime else 3000), glue  # (the whole runtime call is thousands)


@pytest.mark.mpi
def test_python_heap_assertions_are_measured_under_the_valgrind_counter(tmp_path: Path) -> None:
    import ma_post

    script = tmp_path / "heap.py"
    script.write_text("import numpy as np\nimport ma\nkept = []\n"
                      "for _ in range(3):\n    with ma.heap_memory('buffer', '8*1000'):\n"
                      "        kept.append(np.ones(1000))\n")
    done = subprocess.run([str(VENV_BIN / "ma"), "run", "-n", "1", "--counters", "valgrind", "--trace-dir",
                           str(tmp_path / "t"), "--", sys.executable, str(script)],
                          env=clean_env(MA_TOLERANCE="heap_memory=0.05"), capture_output=True, text=True,
                          timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    ts = ma_post.load(tmp_path / "t")
    buffer = next(r for r in ma_post.validate(ts).results if r.id == "buffer")
    assert buffer.status == "PASS" and buffer.measured == (8000 + 16,) * 3, buffer  # (glibc's chunk header)
    assert ts.headers[0]["counters"]["measures"]["heap_memory"]["provider"] == "mallinfo"
