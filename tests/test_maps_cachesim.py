"""The Valgrind tool's cache simulation (``--ma-cache``): kernels with analytic hit rates, checked against the
analytic values (within 1 %) and against pycachesim (the machine profile's simulator); the ctypes reader."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from backends.machine.hitrates import stride_hit_rates
from backends.machine.profile import CacheLevel
from ma_core.errors import LaunchError
from ma_runtime.counters.valgrind import CacheCounts
from ma_tools import launch
from ma_tools.valgrind import valgrind_launch_prefix

pytestmark = pytest.mark.valgrind

HERE = Path(__file__).resolve().parent
CSRC = HERE.parent / "ma_runtime" / "csrc"
CACHES = [CacheLevel(1, 32768, 8, 64), CacheLevel(2, 262144, 4, 64)]
OPTION = "32768:8:64,262144:4:64"


def run_under_tool(argv: list[str], cache: str | None) -> subprocess.CompletedProcess[str]:
    prefix, env = valgrind_launch_prefix(cache)
    done = subprocess.run([*prefix, *argv], env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=300, check=False)
    return done


@pytest.fixture(scope="module")
def kernels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[float]]:
    exe = tmp_path_factory.mktemp("cachesim") / "kernels"
    gcc = shutil.which("gcc")
    assert gcc
    # -O1 without vectorisation: one 8-byte access per element, so the analytic rates are 1 - 8/64 per line
    subprocess.run([gcc, "-O1", "-fno-tree-vectorize", f"-I{CSRC}", str(HERE / "maps_cache_kernels.c"),
                    "-o", str(exe)], check=True)
    done = run_under_tool([str(exe)], OPTION)
    assert done.returncode in (0, 1), done.stderr
    out = {}
    for line in done.stdout.splitlines():
        name, accesses, *rates = line.split()
        assert int(accesses) > 0
        out[name] = [float(r) for r in rates]
    return out


def test_streaming_triad_misses_once_per_line(kernels: dict[str, list[float]]) -> None:
    # 3 arrays of 4 MiB, 16x the L2: each 64-byte line is touched 8 times, the first misses at every level
    assert kernels["triad"] == pytest.approx([0.875, 0.875], abs=0.01)


def test_stride_64_walks(kernels: dict[str, list[float]]) -> None:
    # 128 KiB with a 512-byte stride: 256 lines in 8 of L1's 64 sets (64 lines fit) -> every access misses L1;
    # in L2 they spread over 128 of 1024 sets, two lines a set of 4 ways -> every access hits L2
    assert kernels["stride64_128k"] == pytest.approx([0.0, 1.0], abs=0.01)
    assert kernels["stride64_128k"] == pytest.approx(stride_hit_rates(CACHES, 131072, 64)[:2], abs=0.01)
    # 4 MiB once, cold: nothing is in any cache
    assert kernels["stride64_4m"] == pytest.approx([0.0, 0.0], abs=0.01)


def test_python_reads_the_simulation_through_the_shim() -> None:
    script = ("from ma_runtime.counters.valgrind import ValgrindProvider\n"
              "p = ValgrindProvider(); a = p.cache_read(); b = p.cache_read()\n"
              "print(a.accesses > 0, len(a.hits), (b - a).accesses >= 0)\n")
    done = run_under_tool([sys.executable, "-c", script], "32768:8:64")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "1", "True"]
    assert CacheCounts(100, (50, 30)).hit_rates() == [0.5, 0.8, 1.0]


def test_bad_hierarchy_is_refused_by_the_tool() -> None:
    done = run_under_tool(["/bin/true"], "32768:8:60")
    assert "Bad option: --ma-cache" in done.stderr and "power of 2" in done.stderr


def test_run_plan_passes_the_hierarchy() -> None:
    plan = launch.plan(["python", "app.py"], 2, counters="valgrind", cache=OPTION)
    assert f"--ma-cache={OPTION}" in plan.argv and plan.env["MA_VG_CACHE"] == OPTION
    with pytest.raises(LaunchError, match="needs the valgrind counter"):
        launch.plan(["python", "app.py"], 1, counters="none", cache=OPTION)
