"""The vector backend's SIMD bandwidth curve (backends/vector/simd.py): its AVX2 kernels measured on this host,
the file kept beside a machine profile, and the Figure 4 mapping on a host: vector memory operations of a
vectorised unit-stride loop at the SIMD curve, scalar ones at the machine profile's scalar curves."""

from __future__ import annotations

import pytest

from backends.machine.profile import CacheLevel, MachineProfile, MultiMapsPoint
from backends.vector import host_profile, loop_time
from backends.vector import simd as simd_curve
from backends.vector.simd import SimdBandwidth, SimdPoint
from ma.errors import BackendError


def test_the_avx2_kernels_measure_this_host() -> None:
    """A quick run of both kernels at three working sets: sizes rounded to whole unrolled iterations, the
    best of the samples kept, the curve saved and read back."""
    kernels = simd_curve.SimdKernels()
    if not kernels.supported:
        pytest.skip("this CPU has no AVX2+FMA")
    measured = simd_curve.measure([4096, 200_000, 3_000_000], min_time=2e-4, samples=3, kernels=kernels)
    assert [p.size_bytes for p in measured.triad] == [3840, 199_680, 2_999_808]  # 3 arrays x 16-word blocks
    assert [p.size_bytes for p in measured.read] == [4096, 199_936, 2_999_808]  # 32-word blocks
    for point in (*measured.triad, *measured.read):
        assert len(point.samples_gbs) == 3 and point.bandwidth_gbs == pytest.approx(max(point.samples_gbs), 1e-3)
        assert 0 < point.bandwidth_gbs < 10_000
    assert measured.isa == "avx2+fma" and measured.settings["statistic"] == "best"


def test_the_curve_file_beside_a_profile(tmp_path) -> None:
    curve = SimdBandwidth("avx2+fma", (SimdPoint(1024, 100.0, (99.0, 100.0)),), (SimdPoint(1024, 80.0),),
                          "2026-11-24T16:00:00Z")
    profile = tmp_path / "host.json"
    assert simd_curve.sidecar_path(profile) == tmp_path / "host.simd.json"
    assert simd_curve.for_profile(profile) is None
    curve.save(simd_curve.sidecar_path(profile))
    assert simd_curve.for_profile(profile) == curve
    (tmp_path / "bad.json").write_text('{"schema": "ma-vector-simd-bandwidth", "isa": "x", "triad": [{"size": 1}]}')
    with pytest.raises(BackendError, match=r"bad.json: bad SIMD bandwidth file \('size_bytes'\)"):
        SimdBandwidth.load(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text('{"schema": "ma-machine-profile"}')
    with pytest.raises(BackendError, match=r"other\.json: not a SIMD bandwidth file"):
        SimdBandwidth.load(tmp_path / "other.json")


def machine() -> MachineProfile:
    """Scalar curves: stride 1 at 60 GB/s in the caches, random 20 GB/s at 32 KiB; triad 10 GB/s."""
    return MachineProfile(name="host", host={"hostname": "h", "cpu_model": "c", "cpus": 1, "measured_at": ""},
                          caches=[CacheLevel(1, 32768, 8, 64), CacheLevel(2, 1 << 20, 8, 64)],
                          cpu={"peak_flops": 16.0e9, "isa": "avx2+fma"}, memory={"triad_gbs": 10.0},
                          multimaps=[MultiMapsPoint("stride", 1024, 60.0, stride=1),
                                     MultiMapsPoint("stride", 1 << 26, 60.0, stride=1),
                                     MultiMapsPoint("random", 1024, 20.0), MultiMapsPoint("random", 1 << 26, 20.0)])


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
