"""The probe's plan (backends/machine/plan.py): sizes spaced by the hierarchy, past twice the last cache whatever
its size, an estimate inside the time budget (trimmed in order where needed, said), a host short of memory said
so; and the cheaper similar sweep of the hit-rate simulation."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from backends.machine import hierarchy, hitrates, plan, probe
from backends.machine.profile import CacheLevel
from ma_cli.main import main

L1, L2 = CacheLevel(1, 48 << 10, 12, 64), CacheLevel(2, 2 << 20, 16, 64)
SERVER = (L1, L2, CacheLevel(3, 300 << 20, 20, 64))  # the 16-core Xeon of the issue: a 300 MiB L3
HERE = (CacheLevel(1, 32 << 10, 8, 64), CacheLevel(2, 512 << 10, 8, 64), CacheLevel(3, 32 << 20, 16, 64))


@pytest.fixture(autouse=True)
def roomy_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """The plans of a 300 MiB cache whatever the memory of the host running the tests (its own: the last test)."""
    monkeypatch.setattr(plan, "available_memory", lambda: 64 << 30)


def test_a_300_mib_last_cache_is_probed_past_twice_its_size_within_the_budget() -> None:
    full = probe.plan_for(SERVER, probe.ProbeSettings())
    assert max(full.sizes) > 2 * SERVER[-1].size_bytes and full.estimate_s <= plan.FULL_BUDGET_S
    quick = probe.plan_for(SERVER, probe.ProbeSettings.quick())
    assert max(quick.sizes) > 2 * SERVER[-1].size_bytes and quick.estimate_s <= plan.QUICK_BUDGET_S
    # the quick plan gave things up to fit 30 s, and says what
    assert quick.trimmed and "past the last cache" in quick.trimmed[0]
    # past the cache: sampled strides, one with a line or more per load (the memory plateau's points)
    beyond = {p.stride for p in full.points if p.size_bytes > SERVER[-1].size_bytes and p.stride}
    assert 1 in beyond and max(beyond) >= 16 and len(beyond) < len(probe.STRIDES)


def test_the_cache_override_plan_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["machine", "probe", "--cache", "L3=300M:20:64", "--plan"]) == 0
    out = capsys.readouterr().out
    match = re.search(r"\.\. ([\d.]+) (MiB|GiB) \(([\d.]+) x the last cache\); estimated (\d+) s \(budget 180 s", out)
    assert match, out
    assert float(match.group(3)) > 2 and int(match.group(4)) <= 180
    assert re.search(r"stride 16 +\d+ sizes, [\d.]+ KiB \.\. [\d.]+ GiB", out)  # to past 600 MiB


@pytest.mark.parametrize("caches", [HERE, SERVER, (CacheLevel(1, 32 << 10, 8, 64), CacheLevel(2, 1 << 30, 16, 64))])
def test_the_quick_plan_passes_twice_the_last_cache(caches: tuple[CacheLevel, ...]) -> None:
    quick = probe.plan_for(caches, probe.ProbeSettings.quick())
    assert max(quick.sizes) > 2 * caches[-1].size_bytes
    # and both curves the fit needs past it: a stride-1 stream and one a line or more apart
    past = {p.stride for p in quick.points if p.size_bytes > 2 * caches[-1].size_bytes}
    assert {1, 16} <= past


def test_sizes_follow_the_hierarchy_not_its_bytes() -> None:
    """Each level gets its octaves' share of sizes: a 300 MiB L3 adds sizes for its octaves, not per byte."""
    here, server = probe.plan_for(HERE, probe.ProbeSettings()), probe.plan_for(SERVER, probe.ProbeSettings())
    for caches, result in ((HERE, here), (SERVER, server)):
        low = 1024
        for cache in caches:
            inside = [s for s in result.sizes if low < s <= cache.size_bytes]
            assert len(inside) >= 4, (cache, inside)
            low = cache.size_bytes
    assert len(server.sizes) < 2 * len(here.sizes)


def test_a_small_budget_trims_in_order_but_keeps_the_memory_points() -> None:
    full = probe.plan_for(SERVER, probe.ProbeSettings())
    tight = probe.plan_for(SERVER, replace(probe.ProbeSettings(), budget_s=60))
    assert tight.estimate_s < full.estimate_s and max(tight.sizes) > 2 * SERVER[-1].size_bytes
    assert tight.trimmed[:1] == ("sizes past the last cache up to 3 x it",)
    hopeless = probe.plan_for(SERVER, replace(probe.ProbeSettings(), budget_s=1))
    assert max(hopeless.sizes) > 2 * SERVER[-1].size_bytes
    assert any("over the 1 s budget even trimmed" in w for w in hopeless.warnings)


def _full_plan(free_bytes: int) -> plan.ProbePlan:
    return plan.make_plan(SERVER, quick=False, strides=probe.STRIDES, samples=9, min_time=1e-3, min_size=1024,
                          min_loads=64, random=True, vector_sizes=24, population=100, generations=5, mpi=False,
                          free_bytes=free_bytes)


def test_a_host_short_of_memory_says_main_memory_is_not_reached() -> None:
    short = _full_plan(1 << 30)
    assert short.unreached == ("memory",) and "main memory is not measured" in short.warnings[0]
    assert not _full_plan(64 << 30).unreached


def test_long_passes_get_fewer_samples_and_the_random_curve_is_capped() -> None:
    full = probe.plan_for(SERVER, probe.ProbeSettings())
    small = next(p for p in full.points if p.size_bytes == 1024 and p.stride == 1)
    big = next(p for p in full.points if p.size_bytes == max(full.sizes) and p.stride == 1)
    assert small.samples == 9 and big.samples == plan.FEW_SAMPLES
    randoms = [p for p in full.points if p.pattern == "random"]
    assert randoms[0].accesses == randoms[0].size_bytes // 8  # a small set: one load per word
    assert randoms[-1].size_bytes > SERVER[-1].size_bytes  # one size past the cache, its loads capped
    assert 2 * SERVER[-1].size_bytes // 64 < randoms[-1].accesses < randoms[-1].size_bytes // 8


def test_the_similar_sweep_gives_the_same_hit_rates_cheaper() -> None:
    virtual = [replace(c, indexing="virtual", prefetch="adjacent" if c.level == 2 else "none") for c in HERE]
    for size, stride in ((80 << 20, 1), (80 << 20, 16), (40 << 20, 4), (24 << 20, 8)):
        caches, shorter, scale = hitrates.similar_sweep(virtual, size)
        assert scale > 1 and shorter == size // scale and caches[-1].size_bytes == HERE[-1].size_bytes // scale
        assert hitrates.stride_hit_rates(virtual, size, stride, similar=True) == \
            hitrates.stride_hit_rates(virtual, size, stride)
    physical = [replace(c, indexing="physical") for c in virtual]
    assert hitrates.stride_hit_rates(physical, 24 << 20, 8, similar=True) == pytest.approx(
        hitrates.stride_hit_rates(physical, 24 << 20, 8), abs=0.03)
    # a sweep not far larger than L2 is simulated as it is
    assert hitrates.similar_sweep(virtual, 2 << 20)[2] == 1


def test_this_hosts_plans_fit_their_budgets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.undo()
    caches = hierarchy.from_sysfs()
    assert probe.plan_for(caches, probe.ProbeSettings()).estimate_s <= plan.FULL_BUDGET_S
    assert probe.plan_for(caches, probe.ProbeSettings.quick()).estimate_s <= plan.QUICK_BUDGET_S
