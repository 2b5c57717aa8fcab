"""The cache hierarchy of a core, read from sysfs (what ``lscpu -C`` shows), with overrides."""

from __future__ import annotations

import platform
import re
from collections.abc import Mapping
from pathlib import Path

from ma_core.errors import ProfileError

from .profile import CacheLevel

SYSFS_CACHE = Path("/sys/devices/system/cpu/cpu{cpu}/cache")
REPLACEMENT_POLICIES = ("LRU", "RR", "FIFO", "MRU")
PREFETCH_KINDS = ("none", "next_line", "adjacent", "stride")  # hitrates.py / csrc/hitsim.c explain them
INDEXING = ("virtual", "physical")
_SIZE = re.compile(r"^\s*(\d+)\s*([KMG]?)i?B?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """``32K``, ``1024KiB``, ``32M``, ``65536`` -> bytes."""
    match = _SIZE.match(text)
    if not match:
        raise ValueError(f"not a size: {text!r} (expected e.g. 32K, 1M, 65536)")
    return int(match.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[match.group(2).upper()]


def from_sysfs(cpu: int = 0, root: Path | None = None, arch: str | None = None) -> list[CacheLevel]:
    """Data and unified caches of ``cpu``, innermost first; ProfileError when sysfs has none.

    How the hit-rate simulation models them (what sysfs cannot say; ``docs/machine-profile.md`` gives the fits
    that chose it): every level LRU and physically indexed (the OS puts pages in frames at random, so an array's
    pages fill the page colours of L2 and L3 unevenly and some sets overflow before the array reaches the
    cache's size); on x86-64 (``arch``, default this machine's) L2 has the adjacent-line prefetcher that Intel
    and AMD cores have (a miss fetches the other line of its 128-byte pair).
    """
    pairs = (arch or platform.machine()).lower() in ("x86_64", "amd64")
    base = root or Path(str(SYSFS_CACHE).format(cpu=cpu))
    levels: dict[int, CacheLevel] = {}
    for index in sorted(base.glob("index*")):
        def read(name: str, index: Path = index) -> str:
            return (index / name).read_text().strip()

        try:
            if read("type") not in ("Data", "Unified"):
                continue
            level = int(read("level"))
            levels[level] = CacheLevel(level=level, size_bytes=parse_size(read("size")),
                                       ways=int(read("ways_of_associativity")),
                                       line_bytes=int(read("coherency_line_size")), source="sysfs",
                                       replacement="LRU", indexing="physical",
                                       prefetch="adjacent" if pairs and level == 2 else "none")
        except (OSError, ValueError) as exc:
            raise ProfileError(str(index), f"cannot read the cache description: {exc}") from None
    if not levels:
        raise ProfileError(str(base), "no data caches described here: give the hierarchy with --cache")
    return [levels[k] for k in sorted(levels)]


def apply_overrides(caches: list[CacheLevel], overrides: Mapping[int, str]) -> list[CacheLevel]:
    """``{2: "512K:8:64:LRU:adjacent:physical"}`` replaces level 2 with 512 KiB, 8 ways, 64-byte lines, LRU
    replacement, the adjacent-line prefetcher and physical indexing in the hit-rate simulation. Everything after
    the size is optional (the level's values, else 8, 64, LRU, no prefetcher, virtual); the options after the
    policy are a prefetcher ``KIND[/DEGREE[/DISTANCE]]`` (e.g. ``stride/2``) and ``physical`` or ``virtual``."""
    by_level = {c.level: c for c in caches}
    for level, spec in overrides.items():
        parts = spec.split(":")
        old = by_level.get(level) or CacheLevel(level, 1, 8, 64)
        try:
            size = parse_size(parts[0])
            ways = int(parts[1]) if len(parts) > 1 else old.ways
            line = int(parts[2]) if len(parts) > 2 else old.line_bytes
            policy = parts[3].upper() if len(parts) > 3 else old.replacement
            if policy not in REPLACEMENT_POLICIES:
                raise ValueError(f"replacement policy must be one of {', '.join(REPLACEMENT_POLICIES)}")
            prefetch = (old.prefetch, old.prefetch_degree, old.prefetch_distance)
            indexing = old.indexing
            for option in parts[4:]:
                if option.lower() in INDEXING:
                    indexing = option.lower()
                else:
                    prefetch = _prefetch(option)
        except ValueError as exc:
            raise ProfileError("--cache", f"L{level}={spec}: {exc} (expected "
                                          "SIZE[:WAYS[:LINE[:POLICY[:PREFETCH[/DEGREE[/DISTANCE]]][:INDEXING]]]])"
                               ) from None
        by_level[level] = CacheLevel(level, size, ways, line, source="override", replacement=policy,
                                     prefetch=prefetch[0], prefetch_degree=prefetch[1], prefetch_distance=prefetch[2],
                                     indexing=indexing)
    ordered = [by_level[k] for k in sorted(by_level)]
    if [c.level for c in ordered] != list(range(1, len(ordered) + 1)):
        raise ProfileError("--cache", f"cache levels must run 1..n without gaps, got {[c.level for c in ordered]}")
    return ordered


def _prefetch(text: str) -> tuple[str, int, int]:
    """``stride/2/1`` -> ("stride", 2, 1): the kind, then lines per trigger and how far ahead (both default 1)."""
    kind, *numbers = text.split("/")
    if kind.lower() not in PREFETCH_KINDS or len(numbers) > 2:
        raise ValueError(f"{text!r}: expected a prefetcher ({', '.join(PREFETCH_KINDS)}, optionally "
                         f"/DEGREE[/DISTANCE]) or an indexing ({', '.join(INDEXING)})")
    values = [int(n) for n in numbers] + [1] * (2 - len(numbers))
    if min(values) < 1:
        raise ValueError("prefetch degree and distance must be at least 1")
    return kind.lower(), values[0], values[1]


def shared_last_level(level: CacheLevel, share: int) -> CacheLevel:
    """``level`` as one of ``share`` ranks that share it sees it: the same ways and lines, a ``share``-th of the
    sets (whole sets, at least one). ProfileError when the share is below 1 or above the level's sets."""
    from dataclasses import replace

    if share < 1 or share > level.sets:
        raise ProfileError("--cache-share", f"L{level.level} shared by {share}: expected 1 to {level.sets} ranks "
                                            f"sharing a level of {level.sets} sets")
    return replace(level, size_bytes=level.sets // share * level.ways * level.line_bytes)
