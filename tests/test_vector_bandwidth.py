"""The vector backend's bandwidth scenarios read off a measured machine profile at a loop's working set
(backends/vector/bandwidth.py), on the profile the SDK ships (measured on this project's host)."""

from __future__ import annotations

import pytest

from backends.machine.profile import GB, MachineProfile, load, shipped_profiles
from backends.vector import host_profile
from backends.vector.bandwidth import curve_at, memory_level, scenario_bandwidths
from backends.vector.simd import SimdPoint
from ma_core.errors import BackendError


@pytest.fixture(scope="module")
def host() -> MachineProfile:
    return load(shipped_profiles()["amd-epyc-zen4-kvm"])


def curve(host: MachineProfile, pattern: str, stride: int | None = None) -> dict[int, float]:
    return {p.size_bytes: p.bandwidth_bytes_per_s / GB for p in host.multimaps
            if p.pattern == pattern and p.stride == stride}


def test_curve_interpolates_in_log_size_and_keeps_its_ends(host: MachineProfile) -> None:
    points = [SimdPoint(p.size_bytes, p.bandwidth_bytes_per_s / GB) for p in host.multimaps if p.pattern == "random"]
    sizes = sorted(p.size_bytes for p in points)
    by_size = curve(host, "random")
    assert curve_at(points, sizes[5]) == by_size[sizes[5]]
    middle = curve_at(points, (sizes[20] * sizes[21]) ** 0.5)  # halfway in log(size)
    assert middle == pytest.approx((by_size[sizes[20]] + by_size[sizes[21]]) / 2)
    assert curve_at(points, sizes[0] / 10) == by_size[sizes[0]]
    assert curve_at(points, sizes[-1] * 10) == by_size[sizes[-1]]


def test_working_set_levels(host: MachineProfile) -> None:
    l1, l2, l3 = (c.size_bytes for c in host.caches)
    assert [memory_level(host, s) for s in (l1 // 2, l1, l1 + 1, l2, l3 - 1, l3 * 3)] == [1, 1, 2, 2, 3, 4]


def test_scenarios_follow_the_measured_curves(host: MachineProfile) -> None:
    sizes = sorted(curve(host, "stride", 1))
    in_l1 = next(s for s in sizes if s <= host.caches[0].size_bytes // 2)
    l1 = scenario_bandwidths(host, in_l1)
    assert l1["max"] == curve(host, "stride", 1)[in_l1] and l1["min"] == curve(host, "random")[in_l1]
    assert l1["mixed"] == pytest.approx((l1["min"] + l1["max"]) / 2)
    memory = scenario_bandwidths(host, 3 * host.caches[-1].size_bytes)
    triad = host.triad_bytes_per_s / GB
    assert memory["max"] == triad  # unit stride beyond the last cache: STREAM's figure
    assert memory["min"] < l1["min"]  # random access from memory is slower than from L1
    assert scenario_bandwidths(host) == {"min": curve(host, "random")[sizes[-1]],
                                         "mixed": pytest.approx((curve(host, "random")[sizes[-1]] + triad) / 2),
                                         "max": triad}
    strided = scenario_bandwidths(host, sizes[-1], stride=3)  # nearest measured stride: 4
    assert strided["max"] == curve(host, "stride", 4)[sizes[-1]] < triad
    assert host_profile(host, 1, working_set=in_l1).bandwidth_gbs == l1
    with pytest.raises(BackendError, match="working set must be a positive"):
        scenario_bandwidths(host, 0)
    with pytest.raises(BackendError, match="stride must be a positive"):
        scenario_bandwidths(host, 1024, stride=0)
