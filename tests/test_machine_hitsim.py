"""The hit-rate simulation (csrc/hitsim.c through backends.machine.hitrates): equal to pycachesim without
prefetchers, and the prefetchers' known effects on regular walks (next-line, adjacent-line, stride), with a random
walk left as it was."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from test_machine_profile import sample_profile

from backends.machine import hierarchy, hitrates, profile
from backends.machine.profile import CacheLevel
from ma_core.errors import ProfileError

L1 = CacheLevel(1, 4096, 4, 64)
L2 = CacheLevel(2, 65536, 8, 64)
SMALL = [L1, L2]
PAGE = 4096


@pytest.mark.parametrize("caches", [SMALL, [L1, replace(L2, line_bytes=128)],
                                    [replace(L1, ways=2), replace(L2, size_bytes=3 * 16384, ways=3)]],
                         ids=["lru", "128-byte L2 lines", "3-way, 768 sets"])
def test_without_prefetchers_it_equals_pycachesim(caches: list[CacheLevel]) -> None:
    rng = np.random.default_rng(3)
    streams = [list(range(0, size, 8 * stride)) for size in (2048, 6144, 40000, 200000) for stride in (1, 3, 8, 16)]
    streams.append([int(a) for a in 8 * rng.integers(0, 20000, 30000)])  # random, about 2.4 x L2
    for stream in streams:
        assert hitrates.simulate(caches, stream) == hitrates.pycachesim_hit_rates(caches, stream)
    # the walk generators make the same streams as the reference's
    assert hitrates.stride_hit_rates(caches, 200000, 3) == hitrates.pycachesim_hit_rates(
        caches, hitrates.stride_stream(200000, 3))
    index = rng.integers(0, 20000, 20000, dtype=np.uint32)
    assert hitrates.random_hit_rates(caches, 160000, index) == hitrates.pycachesim_hit_rates(
        caches, hitrates.random_stream(index).tolist())


def with_prefetch(level: CacheLevel, kind: str, degree: int = 1, distance: int = 1) -> CacheLevel:
    return replace(level, prefetch=kind, prefetch_degree=degree, prefetch_distance=distance)


def test_next_line_prefetch_hides_every_miss_but_the_first_of_a_page() -> None:
    caches = [with_prefetch(L1, "next_line"), L2]
    size = 1 << 20  # 16 x L2: every pass comes from memory
    assert hitrates.stride_hit_rates(SMALL, size, 1)[0] == pytest.approx(7 / 8)
    h1, h2, h3 = hitrates.stride_hit_rates(caches, size, 1)
    # a tagged next-line prefetcher stays one line ahead, and stops at the page's end: of a page's 512 loads only
    # the first misses L1; that line misses L2 as well (L2 holds no part of a 1 MiB cyclic walk)
    assert h1 == pytest.approx(1 - 1 / 512) and h2 == pytest.approx(h1) and h3 == 1.0


def test_adjacent_line_prefetch_pairs_lines() -> None:
    caches = [L1, with_prefetch(L2, "adjacent")]
    size = 1 << 20
    # a line per load: the pair's second line was fetched with the first -> half the loads hit L2
    assert hitrates.stride_hit_rates(caches, size, 8) == pytest.approx([0.0, 0.5, 1.0])
    # every other line: the fetched partner is never used
    assert hitrates.stride_hit_rates(caches, size, 16) == pytest.approx([0.0, 0.0, 1.0])
    # the same as 128-byte L2 lines for these walks
    pairs = [L1, replace(L2, line_bytes=128)]
    for stride in (1, 2, 4, 8, 16, 64):
        assert hitrates.stride_hit_rates(caches, size, stride) == hitrates.stride_hit_rates(pairs, size, stride)


def test_stride_prefetch_learns_strides_within_a_page() -> None:
    caches = [with_prefetch(L1, "stride"), L2]
    size = 1 << 20
    # 128-byte stride, 32 loads a page: the first access opens the page's stream, the second gives the stride,
    # the third confirms it and fetches the fourth's line, and so on to the page's end -> 3 misses a page
    assert hitrates.stride_hit_rates(caches, size, 16)[0] == pytest.approx(29 / 32)
    # 4 KiB stride: one load a page, nothing to learn from
    assert hitrates.stride_hit_rates(caches, size, 512)[0] == 0.0
    # sub-line strides step by lines: unit stride misses the first two lines of a page (2 of 512 loads)
    assert hitrates.stride_hit_rates(caches, size, 1)[0] == pytest.approx(1 - 2 / 512)
    # two strides ahead (degree 2, distance 2): the confirming access fetches the fifth and sixth loads' lines,
    # the fourth load misses too -> 4 misses a page
    deep = [with_prefetch(L1, "stride", 2, 2), L2]
    assert hitrates.stride_hit_rates(deep, size, 16)[0] == pytest.approx(28 / 32)


def test_a_random_walk_is_left_alone_by_the_stride_prefetcher() -> None:
    words = 16 * 65536 // 8
    stream = [int(a) for a in 8 * np.random.default_rng(1).integers(0, words, 50000)]
    simulator = hitrates.Simulator([with_prefetch(L1, "stride"), with_prefetch(L2, "stride")])
    simulator.stream(stream)
    simulator.reset_stats()
    simulator.stream(stream)
    loads, _, prefetches = simulator.counts()
    assert loads == len(stream)
    assert sum(prefetches) < 0.001 * loads  # successive accesses to one page with one repeated distance are rare
    assert simulator.hit_rates() == pytest.approx(hitrates.simulate(SMALL, stream), abs=0.001)
    # while the same prefetcher hides most misses of a strided walk of the same array
    assert (hitrates.stride_hit_rates([with_prefetch(L1, "stride"), L2], 8 * words, 4)[0]
            > hitrates.stride_hit_rates(SMALL, 8 * words, 4)[0] + 0.4)


def test_physical_indexing_scatters_pages_over_the_page_colours() -> None:
    l2 = CacheLevel(2, 1 << 20, 8, 64)  # 2048 sets: 32 page colours of 8 pages each
    physical = [replace(L1, indexing="physical"), replace(l2, indexing="physical")]
    # L1's sets span one page: indexed the same either way
    for size in (2048, 3072, 8192):
        assert hitrates.stride_hit_rates(physical, size, 1)[0] == hitrates.stride_hit_rates([L1, l2], size, 1)[0]
    # 3/4 of L2 as contiguous frames fills every colour to 6 of 8 pages: all hits; at random frames some colours
    # get more than 8 of the 192 pages, and those pages miss (LRU, cyclic)
    assert hitrates.stride_hit_rates([L1, l2], 3 << 18, 8)[1] == 1.0
    assert 0.5 < hitrates.stride_hit_rates(physical, 3 << 18, 8)[1] < 0.99
    # a quarter of L2, 64 pages in 32 colours: none gets more than 8 (at random, one in a hundred placements would)
    assert hitrates.stride_hit_rates(physical, 1 << 18, 8)[1] == 1.0
    with pytest.raises(ProfileError, match="indexing to virtual"):
        hitrates.pycachesim_hit_rates(physical, [0, 64])


def test_prefetches_do_not_count_as_loads() -> None:
    simulator = hitrates.Simulator([with_prefetch(L1, "next_line", degree=4), L2])
    simulator.stride(PAGE * 4, 8)
    loads, hits, prefetches = simulator.counts()
    assert loads == 4 * PAGE // 8 and prefetches[0] > 0 and hits[0] + hits[1] <= loads


def test_prefetcher_overrides_and_schema(tmp_path: Path) -> None:
    caches = hierarchy.apply_overrides(SMALL, {2: "64K:8:64:LRU:stride/2/3:physical", 1: "4K:4:64:LRU:adjacent"})
    assert (caches[1].prefetch, caches[1].prefetch_degree, caches[1].prefetch_distance) == ("stride", 2, 3)
    assert caches[1].indexing == "physical" and caches[0].indexing == "virtual"
    assert (caches[0].prefetch, caches[0].prefetch_degree) == ("adjacent", 1)
    kept = hierarchy.apply_overrides(caches, {2: "128K"})
    assert kept[1].prefetch == "stride" and kept[1].size_bytes == 131072
    with pytest.raises(ProfileError, match=r"L2=64K:8:64:LRU:ghost.*expected a prefetcher"):
        hierarchy.apply_overrides(SMALL, {2: "64K:8:64:LRU:ghost"})
    with pytest.raises(ProfileError, match="at least 1"):
        hierarchy.apply_overrides(SMALL, {2: "64K:8:64:LRU:stride/0"})
    doc = sample_profile().to_json()
    doc["caches"][1]["prefetch"] = "magic"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ProfileError, match=r"field 'caches\[1\]\.prefetch'"):
        profile.load(path)


def test_fit_with_another_hierarchy_simulates_the_hit_rates_again(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from ma_cli.main import main

    path = sample_profile().save(tmp_path / "p.json")
    before = {(p.curve, p.size_bytes): p.hit_rates for p in profile.load(path).multimaps}
    assert before[("stride 8", 262144)] == (0.0, 0.0, 1.0)  # 4 x L2, a line per load: misses everywhere
    out = tmp_path / "q.json"
    assert main(["machine", "fit", str(path), "-o", str(out), "--cache", "L2=64K:8:64:LRU:adjacent:physical",
                 "--population", "50", "--generations", "3"]) == 0
    refit = profile.load(out)
    assert (refit.caches[1].prefetch, refit.caches[1].indexing, refit.caches[1].source) == (
        "adjacent", "physical", "override")
    after = {(p.curve, p.size_bytes): p.hit_rates for p in refit.multimaps}
    assert after[("stride 8", 262144)] == pytest.approx([0.0, 0.5, 1.0])  # pairs of lines from memory
    assert after[("stride 1", 2048)] == before[("stride 1", 2048)] == (1.0, 1.0, 1.0)
    assert refit.bandwidth_fit is not None and refit.bandwidth_fit.ga["population"] == 50
    assert main(["machine", "show", str(out)]) == 0
    assert "adjacent prefetch" in capsys.readouterr().out
