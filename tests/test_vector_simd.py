"""The vector backend's SIMD bandwidth curve (backends/vector/simd.py): its AVX2 kernels measured on this host,
the file kept beside a machine profile, and the Figure 4 mapping on a host: vector memory operations of a
vectorised unit-stride loop at the SIMD curve, scalar ones at the machine profile's scalar curves."""

from __future__ import annotations

import math
import re
import shutil
import subprocess

import pytest

from backends.machine.profile import CPU, CacheLevel, Host, MachineProfile, Memory, MultiMapsPoint
from backends.vector import host_profile, loop_time
from backends.vector import simd as simd_curve
from backends.vector.bandwidth import (
    gather_seconds,
    gather_seconds_by_level,
    level_reference_sizes,
    scalar_unit_scenario_bandwidths,
    sparse_row_curve,
)
from backends.vector.simd import SimdBandwidth, SimdPoint
from ma_core.errors import BackendError


def test_the_avx2_and_scalar_kernels_measure_this_host() -> None:
    """A quick run of the three kernels at three working sets, in rounds: sizes rounded to whole unrolled
    iterations, the best of the samples kept."""
    kernels = simd_curve.SimdKernels()
    # The project's hosts are x86-64-v3 (AVX2+FMA; no AVX-512 under Valgrind): a CPU without it is a failure.
    assert kernels.supported, "this CPU has no AVX2+FMA: the SIMD bandwidth probe needs x86-64-v3"
    measured = simd_curve.measure([4096, 200_000, 3_000_000], min_time=2e-4, samples=3, kernels=kernels)
    assert [p.size_bytes for p in measured.triad] == [3840, 199_680, 2_999_808]  # 3 arrays x 16-word blocks
    assert [p.size_bytes for p in measured.scalar_triad] == [3840, 199_680, 2_999_808]  # the same arrays
    assert [p.size_bytes for p in measured.read] == [4096, 199_936, 2_999_808]  # 32-word blocks
    for point in (*measured.triad, *measured.scalar_triad, *measured.read):
        assert len(point.samples_gbs) == 3 and point.bandwidth_gbs == pytest.approx(max(point.samples_gbs), 1e-3)
        assert 0 < point.bandwidth_gbs < 10_000
    assert measured.isa == "avx2+fma" and measured.settings["statistic"] == "best"
    assert SimdBandwidth.from_json(measured.to_json()) == measured


def test_the_gather_curve_measures_this_host() -> None:
    """The gather kernel at two array sizes (powers of two), its indices streamed: a point per size, in GB/s of
    gathered 8-byte words; other sizes are refused, as one random index array serves every power of two."""
    kernels = simd_curve.SimdKernels()
    # The project's hosts are x86-64-v3 (AVX2+FMA; no AVX-512 under Valgrind): a CPU without it is a failure.
    assert kernels.supported, "this CPU has no AVX2+FMA: the SIMD bandwidth probe needs x86-64-v3"
    measured = simd_curve.measure([4096], min_time=2e-4, samples=2, kernels=kernels, gather_sizes=[4096, 1 << 20],
                                  index_bytes=1 << 20)
    assert [p.size_bytes for p in measured.gather] == [4096, 1 << 20]
    assert [p.size_bytes for p in measured.sparse_dot] == [4096, 1 << 20]
    assert [p.size_bytes for p in measured.sparse_rows_vectorised] == [4096, 1 << 20]
    assert all(0 < p.bandwidth_gbs < 1000 and len(p.samples_gbs) == 2
               for p in measured.gather + measured.sparse_dot + measured.sparse_rows_vectorised)
    assert measured.settings["index_bytes"] == 1 << 20 and measured.settings["row_entries"] == 32
    with pytest.raises(BackendError, match=r"gather sizes must be powers of two"):
        simd_curve.measure([4096], kernels=kernels, gather_sizes=[3000], index_bytes=1 << 20)


def test_the_gather_term_by_hand() -> None:
    """The extension's gather term: reads x 8 bytes at the gather curve at the gathered array's size (log-size
    interpolation: 1.6 MB between 1 MiB at 6 GB/s and 2 MiB at 5 GB/s); a file without the curve is an error."""
    curve = SimdBandwidth("avx2+fma", SIMD.triad, gather=(SimdPoint(1 << 20, 6.0), SimdPoint(1 << 21, 5.0)))
    assert gather_seconds(curve, 1e6, 1 << 20) == pytest.approx(8e6 / 6e9)
    weight = math.log(1.6e6 / (1 << 20)) / math.log(2)
    assert gather_seconds(curve, 1e6, 1.6e6) == pytest.approx(8e6 / ((6.0 - weight) * 1e9))
    with pytest.raises(BackendError, match="no gather curve"):
        gather_seconds(SIMD, 1e6, 1.6e6)


def test_the_sparse_row_term_by_hand() -> None:
    """With ``values`` (a CSR row: a value streamed with each gathered read), the sparse-dot curve, not the gather
    curve: 1e6 entries of a 1 MiB array at 4 GB/s are 2 ms; a file without it (version 2) is an error."""
    curve = SimdBandwidth("avx2+fma", SIMD.triad, gather=(SimdPoint(1 << 20, 6.0),),
                          sparse_dot=(SimdPoint(1 << 20, 4.0), SimdPoint(1 << 21, 3.0)))
    assert gather_seconds(curve, 1e6, 1 << 20, values=True) == pytest.approx(8e6 / 4e9)
    assert gather_seconds(curve, 1e6, 1 << 20) == pytest.approx(8e6 / 6e9)
    with pytest.raises(BackendError, match="no sparse_dot curve"):
        gather_seconds(SimdBandwidth("avx2+fma", SIMD.triad, gather=curve.gather), 1e6, 1 << 20, values=True)


def test_a_vectorised_loop_takes_the_vectorised_sparse_row_curve_where_the_file_has_it() -> None:
    """MV >= 2: the sparse_rows_vectorised curve (1e6 entries at 2 GB/s at 1 MiB: 4 ms); scalar loops, and
    vectorised ones with a file older than version 4, the sparse-dot curve (4 GB/s: 2 ms); by level too."""
    dot = SimdBandwidth("avx2+fma", SIMD.triad, sparse_dot=(SimdPoint(1 << 20, 4.0),))
    both = SimdBandwidth("avx2+fma", SIMD.triad, sparse_dot=dot.sparse_dot,
                         sparse_rows_vectorised=(SimdPoint(1 << 20, 2.0),))
    assert sparse_row_curve(both, True) == ("sparse_rows_vectorised", both.sparse_rows_vectorised)
    assert sparse_row_curve(both, False) == ("sparse_dot", dot.sparse_dot)
    assert sparse_row_curve(dot, True) == ("sparse_dot", dot.sparse_dot)
    assert gather_seconds(both, 1e6, 1 << 20, curve=sparse_row_curve(both, True)[1]) == pytest.approx(4e-3)
    assert gather_seconds(both, 1e6, 1 << 20, values=True) == pytest.approx(2e-3)
    assert gather_seconds_by_level(machine(), both, 1e6, [0.0, 0.0, 1.0],
                                   curve=both.sparse_rows_vectorised) == pytest.approx(4e-3)
    with pytest.raises(BackendError, match="no sparse_dot curve"):
        sparse_row_curve(SimdBandwidth("avx2+fma", SIMD.triad), False)


def test_the_sparse_row_probe_is_vectorised_as_gcc_vectorises_matvec() -> None:
    """The disassembly of the sparse row probe's loop (sparse_rows.c, built with the vectoriser on, as kernels.c's
    -O3 build): p's words inserted into a vector (vmovhpd, vinsertf128), one packed multiply, in-order scalar adds
    (a fold-left reduction), no hardware gather; the same shape as the kernel set's vectorised matvec."""
    objdump = shutil.which("objdump")
    assert objdump is not None, "objdump is missing (binutils comes with gcc, which scripts/setup.sh installs)"
    listing = subprocess.run([objdump, "-d", "--no-show-raw-insn", str(simd_curve.SimdKernels().rows_path)],
                             capture_output=True, text=True, check=True).stdout
    body = listing[listing.index("<rows_product>:"):]
    body = body[:body.index("\n\n")]
    mnemonics = {line.split("\t")[1].split()[0] for line in body.splitlines() if line.count("\t") >= 1
                 and re.match(r"\s+[0-9a-f]+:\t", line)}
    assert {"vmulpd", "vaddsd", "vmovhpd", "vinsertf128"} <= mnemonics, sorted(mnemonics)
    assert not {m for m in mnemonics if m.startswith("vgather")}


def test_the_scalar_triad_is_compiled_scalar_with_its_loop_in_one_line() -> None:
    """The disassembly of ma_scalar_triad: scalar double ops only (no packed op, no ymm register: the build's
    -fno-tree-vectorize), one scalar FMA per element, and its inner loop starting on a 64-byte boundary (the
    build's -falign-loops=64: five instructions in one line; across two, Zen 4 runs the loop at half speed)."""
    objdump = shutil.which("objdump")
    assert objdump is not None, "objdump is missing (binutils comes with gcc, which scripts/setup.sh installs)"
    listing = subprocess.run([objdump, "-d", "--no-show-raw-insn", "--disassemble=ma_scalar_triad",
                              str(simd_curve.SimdKernels().path)], capture_output=True, text=True, check=True).stdout
    body = [line.split("\t") for line in listing.splitlines() if re.match(r"\s+[0-9a-f]+:\t", line)]
    mnemonics = [fields[1].split()[0] for fields in body if len(fields) > 1]
    assert "vfmadd213sd" in mnemonics or "vfmadd231sd" in mnemonics or "vfmadd132sd" in mnemonics
    assert not [m for m in mnemonics if m.endswith("pd") and "mov" not in m]  # no packed arithmetic
    assert "ymm" not in listing
    backward = [int(f[1].split()[1], 16) for f in body if len(f) > 1 and f[1].startswith("jne")
                and int(f[1].split()[1], 16) < int(f[0].strip().rstrip(":"), 16)]
    inner = max(backward)  # the innermost loop is the last to start
    assert inner % 64 == 0, hex(inner)


def test_the_curve_file_beside_a_profile(tmp_path) -> None:
    curve = SimdBandwidth("avx2+fma", (SimdPoint(1024, 100.0, (99.0, 100.0)),), (SimdPoint(1024, 80.0),),
                          "2026-11-24T16:00:00Z")
    profile = tmp_path / "host.json"
    assert simd_curve.sidecar_path(profile) == tmp_path / "host.simd.json"
    assert simd_curve.for_profile(profile) is None
    curve.save(simd_curve.sidecar_path(profile))
    assert simd_curve.for_profile(profile) == curve
    (tmp_path / "bad.json").write_text('{"schema": "ma-vector-simd-bandwidth", "version": 2, "isa": "x", "triad": '
                                       '[{"size_bytes": 1, "bandwidth_gbs": 2}], "scalar_triad": [{"size": 1}]}')
    with pytest.raises(BackendError, match=r"bad.json: bad SIMD bandwidth file: scalar_triad\[0\] \('size_bytes'\)"):
        SimdBandwidth.load(tmp_path / "bad.json")
    (tmp_path / "v9.json").write_text('{"schema": "ma-vector-simd-bandwidth", "version": 9}')
    with pytest.raises(BackendError, match=r"v9\.json: SIMD bandwidth file version 9 is not one this backend reads"):
        SimdBandwidth.load(tmp_path / "v9.json")
    (tmp_path / "v1.json").write_text('{"schema": "ma-vector-simd-bandwidth", "version": 1, "isa": "avx2+fma", '
                                      '"triad": [{"size_bytes": 1024, "bandwidth_gbs": 100}]}')
    assert SimdBandwidth.load(tmp_path / "v1.json").scalar_triad == ()  # a version 1 file: no scalar curve
    (tmp_path / "v2.json").write_text('{"schema": "ma-vector-simd-bandwidth", "version": 2, "isa": "avx2+fma", '
                                      '"triad": [{"size_bytes": 1024, "bandwidth_gbs": 100}], '
                                      '"sparse_dot": [{"size_bytes": 1024, "bandwidth_gbs": 1}]}')
    with pytest.raises(BackendError, match=r"v2\.json: a version 2 SIMD bandwidth file has no sparse_dot"):
        SimdBandwidth.load(tmp_path / "v2.json")
    (tmp_path / "v3.json").write_text('{"schema": "ma-vector-simd-bandwidth", "version": 3, "isa": "avx2+fma", '
                                      '"triad": [{"size_bytes": 1024, "bandwidth_gbs": 100}], '
                                      '"sparse_rows_vectorised": [{"size_bytes": 1024, "bandwidth_gbs": 1}]}')
    with pytest.raises(BackendError, match=r"v3\.json: a version 3 SIMD bandwidth file has no sparse_rows_vect"):
        SimdBandwidth.load(tmp_path / "v3.json")
    (tmp_path / "v3.json").write_text('{"schema": "ma-vector-simd-bandwidth", "version": 3, "isa": "avx2+fma", '
                                      '"triad": [{"size_bytes": 1024, "bandwidth_gbs": 100}], '
                                      '"sparse_dot": [{"size_bytes": 1024, "bandwidth_gbs": 1}]}')
    assert SimdBandwidth.load(tmp_path / "v3.json").sparse_rows_vectorised == ()  # still read: no row curve
    rows = SimdBandwidth("avx2+fma", curve.triad, sparse_rows_vectorised=(SimdPoint(4096, 3.0),))
    assert rows.to_json()["version"] == 4 and SimdBandwidth.from_json(rows.to_json()) == rows
    (tmp_path / "other.json").write_text('{"schema": "ma-machine-profile"}')
    with pytest.raises(BackendError, match=r"other\.json: not a SIMD bandwidth file"):
        SimdBandwidth.load(tmp_path / "other.json")


def machine() -> MachineProfile:
    """Scalar curves: stride 1 at 60 GB/s in the caches, random 20 GB/s at 32 KiB; triad 10 GB/s."""
    return MachineProfile(name="host", host=Host("h", "c", 1),
                          caches=(CacheLevel(1, 32768, 8, 64), CacheLevel(2, 1 << 20, 8, 64)),
                          cpu=CPU(16.0e9, "avx2+fma"), memory=Memory(10e9),
                          multimaps=(MultiMapsPoint("stride", 1024, 60e9, stride=1),
                                     MultiMapsPoint("stride", 1 << 26, 60e9, stride=1),
                                     MultiMapsPoint("random", 1024, 20e9), MultiMapsPoint("random", 1 << 26, 20e9)))


SIMD = SimdBandwidth("avx2+fma", (SimdPoint(1024, 200.0), SimdPoint(1 << 20, 100.0)))


def test_vector_operations_take_the_simd_curve_and_scalar_ones_the_scalar_curves() -> None:
    """By hand: at 32 KiB the SIMD curve is halfway in log(size) between 1 KiB (200) and 1 MiB (100): 150 GB/s.
    A vectorised loop of 1e6 load/stores with full vectors (AVL 4) takes 8e6 bytes / 150 GB/s; scalar, 8e6 bytes
    / 60 GB/s (the stride-1 curve); min is the random curve (20) for both; mixed their means."""
    prof = host_profile(machine(), 1, working_set=32768, simd=SIMD)
    assert prof.vector_bandwidth_gbs == pytest.approx({"min": 20.0, "mixed": 85.0, "max": 150.0})
    assert prof.bandwidth_gbs == {"min": 20.0, "mixed": 40.0, "max": 60.0}
    vector = loop_time(0, 1e6, 2, 4, prof, "max")
    scalar = loop_time(0, 1e6, 0, None, prof, "max")
    assert float(vector.memory) == pytest.approx(8e6 / 150e9)
    assert float(scalar.memory) == pytest.approx(8e6 / 60e9)
    assert float(loop_time(0, 1e6, 2, 2, prof, "mixed").memory) == pytest.approx(2 * 8e6 / 85e9)  # AVL 2 of 4
    assert float(loop_time(0, 1e6, 0, None, prof, "min").memory) == pytest.approx(8e6 / 20e9)
    # in L2 (512 KiB: nine tenths of the way in log size) 200 - 0.9 * 100; beyond the last cache the triad
    # for both; strided vector loops keep the scalar curves
    assert host_profile(machine(), 1, working_set=1 << 19, simd=SIMD).bandwidth(
        "max", vector=True) == pytest.approx(110.0)
    assert host_profile(machine(), 1, working_set=1 << 24, simd=SIMD).bandwidth("max", vector=True) == 10.0
    assert host_profile(machine(), 1, working_set=32768, stride=2, simd=SIMD).vector_bandwidth_gbs is None
    assert host_profile(machine(), 1, working_set=32768).bandwidth("max", vector=True) == 60.0  # no SIMD curve


def test_scalar_unit_stride_loops_take_the_scalar_triad_curve_in_the_caches() -> None:
    """By hand, with a scalar triad curve 90 GB/s at 1 KiB, 70 at 1 MiB: a scalar unit-stride loop at 32 KiB
    (halfway in log size) takes 80 GB/s as its max where the MultiMAPS stride-1 curve says 60; beyond the last
    cache the triad (10); stride 2 and a file without the scalar curve keep the MultiMAPS curve."""
    both = SimdBandwidth("avx2+fma", SIMD.triad, scalar_triad=(SimdPoint(1024, 90.0), SimdPoint(1 << 20, 70.0)))
    prof = host_profile(machine(), 1, working_set=32768, simd=both)
    assert prof.bandwidth_gbs == pytest.approx({"min": 20.0, "mixed": 50.0, "max": 80.0})
    assert prof.vector_bandwidth_gbs == pytest.approx({"min": 20.0, "mixed": 85.0, "max": 150.0})
    assert float(loop_time(0, 1e6, 0, None, prof, "max").memory) == pytest.approx(8e6 / 80e9)
    assert host_profile(machine(), 1, working_set=1 << 24, simd=both).bandwidth("max") == 10.0
    assert host_profile(machine(), 1, working_set=32768, stride=2, simd=both).bandwidth("max") == 60.0
    assert host_profile(machine(), 1, working_set=32768, simd=SIMD).bandwidth("max") == 60.0
    with pytest.raises(BackendError, match="no scalar triad curve"):
        scalar_unit_scenario_bandwidths(machine(), SIMD, 32768)


def test_gathers_by_the_levels_their_hit_rates_say_by_hand() -> None:
    """Reads served by each level cost what the curve measures where random reads are served there: the first
    cache at its smallest point (4 KiB, 16 GB/s: 0.5 ns a read), the second at 8 x the first (256 KiB, 8 GB/s:
    1 ns), memory at its largest point (4 MiB, 2 GB/s: 4 ns). Hit rates h = 0.5, 0.75, 1: half the reads at
    0.5 ns, a quarter at 1, a quarter at 4: 1.5 ns a read."""
    curve = SimdBandwidth("avx2+fma", SIMD.triad, sparse_dot=(SimdPoint(4096, 16.0), SimdPoint(1 << 18, 8.0),
                                                              SimdPoint(1 << 22, 2.0)))
    host = machine()
    assert level_reference_sizes(host, curve.sparse_dot) == [4096, 1 << 18, 1 << 22]
    assert gather_seconds_by_level(host, curve, 1e6, [0.5, 0.75, 1.0], values=True) == pytest.approx(1.5e-3)
    assert gather_seconds_by_level(host, curve, 1e6, [0.0, 0.0, 1.0], values=True) == pytest.approx(4e-3)
    with pytest.raises(BackendError, match=r"not cumulative h_1\.\.h_n"):
        gather_seconds_by_level(host, curve, 1e6, [0.5, 1.0], values=True)
    with pytest.raises(BackendError, match="no gather curve"):
        gather_seconds_by_level(host, curve, 1e6, [0.5, 0.75, 1.0])
