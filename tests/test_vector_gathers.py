"""A sparse row loop's gathered reads, priced where they are served: the gathers' hit rates separated from the
streams' in a load/store site's simulated cache counts (backends/vector/gathers.py), on hand-computed counts and on
the C kernel set's matvec traced under the Valgrind tool's cache simulation, and priced by the backend on the
sparse-row curve of the loop's build (backends/vector/bandwidth.py's sparse_row_curve)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from conftest import REPO, VENV_BIN, clean_env

import ma_post
from backends.machine.profile import load as load_profile
from backends.vector import VectorLoop, loops_from_trace
from backends.vector.gathers import TracedCache, separate
from ma_core.errors import BackendError

PROFILE = REPO / "backends" / "profiles" / "amd-epyc-zen4-kvm.json"


def test_streams_from_memory_leave_the_gathers_the_second_cache() -> None:
    """800 streamed words (100 lines of 64 bytes, 800 accesses: 700 first-cache hits, 100 lines from memory) and
    1000 gathers all served by L2: the site counts 1800 accesses, 700 L1 hits, 1000 L2 hits, 100 from memory."""
    cache = TracedCache(1800, (700, 1000), gathers=1000, loadstores=1800)
    assert separate(cache, 64) == (0.0, 1.0, 1.0)


def test_the_streams_lines_are_taken_outermost_first() -> None:
    """Streams of 800 words in 32-byte accesses (200 accesses, 100 lines, 100 first-cache hits) served by L2;
    gathers 400 in L1, 300 in L2, 300 from memory. The site: 1200 accesses, L1 500, L2 400, memory 300. The first
    cache separates exactly (0.4); beyond it the streams' 100 lines are taken from memory first, so the gathers get
    L2 400, memory 200: h = 0.4, 0.8, 1, an upper bound of the truth (0.4, 0.7, 1) when gathers are served further
    out than the streams (the module's docstring)."""
    cache = TracedCache(1200, (500, 400), gathers=1000, loadstores=1800)
    assert separate(cache, 64) == pytest.approx((0.4, 0.8, 1.0))


def test_streams_missing_more_than_once_a_line_leave_the_gathers_no_first_cache_hits() -> None:
    """A site whose first-cache hits are fewer than the streams' (a stream line evicted between its accesses) gives
    the gathers none (not a negative count); the rest of the misses beyond it are the streams'."""
    cache = TracedCache(1800, (690, 1000), gathers=1000, loadstores=1800)
    assert separate(cache, 64) == pytest.approx((0.0, 1.0, 1.0))


def test_counts_that_cannot_hold_the_gathers_are_errors() -> None:
    with pytest.raises(BackendError, match=r"1000 gathers do not fit the 900 line accesses .* at a/ldst"):
        separate(TracedCache(900, (700, 100), 1000, 1800, ("a/ldst",)), 64)
    with pytest.raises(BackendError, match=r"serve more accesses than they count"):
        separate(TracedCache(1800, (1700, 1000), 1000, 1800), 64)


def mpicc_build(exe: Path) -> None:
    from ma_tools import cparts
    from ma_tools.toolchain import find_mpicc

    subprocess.run([str(find_mpicc()), "-O3", "-march=x86-64-v3", "-falign-loops=64", "-DMA_TRACED",
                    *cparts.c_flags(), str(REPO / "examples" / "vector_kernels" / "kernels.c"), "-o", str(exe),
                    *cparts.c_libs()], check=True, timeout=300)


@pytest.mark.mpi
@pytest.mark.valgrind
def test_matvecs_gathers_hit_rates_from_its_signature_run(tmp_path: Path) -> None:
    """kernels.c's matvec at 20,000 rows (p 160 KB: five times L1, a sixth of L2), traced under the tool's
    simulation of the shipped profile's caches: its load/store site mixes 1,320,000 streamed words (a, colidx, q,
    rowstr) and 640,000 gathers; separated, the gathers are served by L2 (p fits it; every line of p comes back
    after 20,000 entries, 160 KB of p's and 2 x 160 KB of streamed lines later, beyond L1), while the site as a
    whole has half its accesses in L1. The backend prices them on the curve by level, and says so."""
    exe, trace = tmp_path / "kernels", tmp_path / "trace"
    mpicc_build(exe)
    done = subprocess.run([str(VENV_BIN / "ma"), "run", "-n", "1", "--counters", "valgrind", "--cache", str(PROFILE),
                           "--trace-dir", str(trace), "--", str(exe), "matvec", "20000", "1"], env=clean_env(),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    ts = ma_post.load(trace)
    loop = loops_from_trace(ts)["matvec"]
    cache = loop.traced_cache
    assert cache is not None and cache.sites == ("matvec/matvec_flops/matvec_ldst",)
    assert (cache.gathers, cache.loadstores) == (640_000, 3 * 640_000 + 2 * 20_000)
    site = next(s for s in ts.walk() if s.path == "matvec/matvec_flops/matvec_ldst")
    assert site.hit_rates is not None and 0.4 < site.hit_rates[0] < 0.7  # the streams' L1 hits, mixed in
    rates = separate(cache, load_profile(str(PROFILE)).caches[0].line_bytes)
    assert rates[0] < 0.01 and rates[1] > 0.99 and rates[2:] == pytest.approx((1.0, 1.0))
    simd = tmp_path / "curves.simd.json"
    simd.write_text('{"schema": "ma-vector-simd-bandwidth", "version": 4, "isa": "avx2+fma", '
                    '"triad": [{"size_bytes": 4096, "bandwidth_gbs": 100}], '
                    '"sparse_dot": [{"size_bytes": 4096, "bandwidth_gbs": 16}, {"size_bytes": 262144, '
                    '"bandwidth_gbs": 8}, {"size_bytes": 8388608, "bandwidth_gbs": 4}]}')
    shown = subprocess.run([str(VENV_BIN / "ma"), "predict", str(trace), "--backend", "vector", "--machine",
                            str(PROFILE), "--simd-bandwidth", str(simd), "--set", "rows=20000", "--set",
                            "nnz=640000"], env=clean_env(), capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "gathers on the sparse_dot curve by level at hit rates 0.00/1.00/1.00/1.00 (the signature run's " \
           "simulated caches at matvec/matvec_flops/matvec_ldst" in shown.stdout
    assert "no sparse_rows_vectorised curve" in shown.stdout  # matvec asserts MV 2; the file has no such curve


def test_given_hit_rates_win_over_traced_counts_which_need_the_profiles_levels() -> None:
    """Given hit rates win over traced counts; traced counts must have the profile's levels; without either, no
    rates (the backend then prices the curve at the array's size, with a note: tests/test_vector_backend.py)."""
    from backends.vector import VectorBackend

    loop = VectorLoop(0, gathers="1000", gathered_bytes="2**20",
                      traced_cache=TracedCache(1800, (700, 1000), 1000, 1800))
    machine = load_profile(str(PROFILE))
    with pytest.raises(BackendError, match=r"has 2 levels, machine profile .* 3"):
        VectorBackend.gather_hit_rates(machine, loop)
    given = VectorLoop(0, gather_hit_rates=(0.5, 0.5, 1.0, 1.0), traced_cache=loop.traced_cache)
    assert VectorBackend.gather_hit_rates(machine, given) == ((0.5, 0.5, 1.0, 1.0), "given")
    assert VectorBackend.gather_hit_rates(machine, VectorLoop(0)) == (None, "")
