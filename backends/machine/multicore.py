"""The multicore MultiMAPS block of a profile (``memory.multicore``): what each core gets when k cores read at once.

PMaC measured MultiMAPS on every core of a node at once (perc_framework.txt, Figure 3: "the performance hit in
memory bandwidth when all processors are contending for the same memory bus"), because ranks that share a
node share its memory bandwidth and its last cache, which a one-core profile cannot see. The probe
(:mod:`.multicore_probe`) runs the stride-1 read and the triad with k = 1, 2, 4, ... cores at once, one pinned
process per core, each on its own arrays, started together; a run's points are per-core working sets chosen
by where the k working sets together live (``level``): a private cache, the shared last cache (each core's
share of it, half full), and main memory (together past twice the last cache). Bandwidths are per core: the
bytes one core moved over the slowest core's time (every core is counted as busy until the last finishes).

The document's block::

    {"version": 1, "min_time_s": 0.01, "samples": 5, "statistic": "median",
     "runs": [{"cores": 1, "cpus": [0],
               "points": [{"size_bytes": 262144, "level": "L2", "read_gbs": 40.1, "triad_gbs": 30.2,
                           "read_samples_gbs": [...], "triad_samples_gbs": [...]}, ...]}, ...]}

:meth:`Multicore.memory_ratio` is what the maps backend's node term (:mod:`backends.maps.node`) reads: a core's
memory read bandwidth with k cores reading over its bandwidth alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ma_core.errors import ProfileError

from .jsonblock import present

GB = 1e9
VERSION = 1
FIELD = "memory.multicore"
MEMORY = "memory"

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["version", "runs"],
    "properties": {
        "version": {"const": VERSION},
        "min_time_s": {"type": "number", "exclusiveMinimum": 0},
        "samples": {"type": "integer", "minimum": 1},
        "statistic": {"enum": ["median", "best"]},
        "runs": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["cores", "cpus", "points"],
                "properties": {
                    "cores": {"type": "integer", "minimum": 1},
                    "cpus": {"type": "array", "items": {"type": "integer", "minimum": 0}},
                    "points": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "required": ["size_bytes", "level", "read_gbs", "triad_gbs"],
                            "properties": {
                                "size_bytes": {"type": "integer", "minimum": 1},
                                "level": {"type": "string"},
                                "read_gbs": {"type": "number", "exclusiveMinimum": 0},
                                "triad_gbs": {"type": "number", "exclusiveMinimum": 0},
                                "read_samples_gbs": {"type": "array", "items": {"type": "number"}},
                                "triad_samples_gbs": {"type": "array", "items": {"type": "number"}},
                            },
                        },
                    },
                },
            },
        },
    },
}


@dataclass(frozen=True)
class CorePoint:
    """One per-core working set of a run: each core's stride-1 read and triad bandwidth, bytes per second."""

    size_bytes: int
    level: str  # where the working sets of all the run's cores together live: "L1".., or "memory"
    read_bytes_per_s: float
    triad_bytes_per_s: float
    read_samples_bytes_per_s: tuple[float, ...] = ()
    triad_samples_bytes_per_s: tuple[float, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"size_bytes": self.size_bytes, "level": self.level, "read_gbs": self.read_bytes_per_s / GB,
                "triad_gbs": self.triad_bytes_per_s / GB,
                **present(read_samples_gbs=[v / GB for v in self.read_samples_bytes_per_s],
                          triad_samples_gbs=[v / GB for v in self.triad_samples_bytes_per_s])}


@dataclass(frozen=True)
class CoreRun:
    """The points measured with ``cores`` cores at once, pinned to ``cpus``."""

    cores: int
    cpus: tuple[int, ...]
    points: tuple[CorePoint, ...]

    @property
    def memory(self) -> CorePoint:
        """The run's point in main memory (validation made sure there is one): the largest there."""
        return max((p for p in self.points if p.level == MEMORY), key=lambda p: p.size_bytes)

    def to_json(self) -> dict[str, Any]:
        return {"cores": self.cores, "cpus": list(self.cpus), "points": [p.to_json() for p in self.points]}


@dataclass(frozen=True)
class Multicore:
    runs: tuple[CoreRun, ...]
    min_time_s: float | None = None
    samples: int | None = None
    statistic: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def memory_read(self) -> list[tuple[int, float]]:
        """(cores at once, each core's memory read bandwidth), by cores."""
        return sorted((run.cores, run.memory.read_bytes_per_s) for run in self.runs)

    def memory_ratio(self) -> list[tuple[int, float]]:
        """(k, a core's memory read bandwidth with k cores reading / with one): 1 at k = 1, below where they
        contend."""
        alone = dict(self.memory_read())[1]
        return [(k, bandwidth / alone) for k, bandwidth in self.memory_read()]

    def to_json(self) -> dict[str, Any]:
        return {"version": VERSION, **present(min_time_s=self.min_time_s, samples=self.samples,
                                              statistic=self.statistic), **self.extra,
                "runs": [run.to_json() for run in self.runs]}


def from_json(block: Mapping[str, Any], levels: Sequence[str], where: str) -> Multicore:
    """The typed block (the schema checked its shape); ProfileError naming ``where`` and the field for what the
    schema cannot say: a run with one core, distinct core counts, cpus that match them, known levels, a point in
    memory per run."""
    runs = []
    for i, row in enumerate(block["runs"]):
        at = f"{FIELD}.runs[{i}]"
        if len(row["cpus"]) != row["cores"] or len(set(row["cpus"])) != row["cores"]:
            raise ProfileError(where, f"expected {row['cores']} distinct cpus (one per core of the run), got "
                                      f"{row['cpus']}", f"{at}.cpus")
        points = []
        for j, point in enumerate(row["points"]):
            if point["level"] not in levels:
                raise ProfileError(where, f"expected one of {', '.join(levels)}, got {point['level']!r}",
                                   f"{at}.points[{j}].level")
            points.append(CorePoint(int(point["size_bytes"]), point["level"], float(point["read_gbs"]) * GB,
                                    float(point["triad_gbs"]) * GB,
                                    tuple(float(v) * GB for v in point.get("read_samples_gbs") or ()),
                                    tuple(float(v) * GB for v in point.get("triad_samples_gbs") or ())))
        if not any(p.level == MEMORY for p in points):
            raise ProfileError(where, "a run needs a point in memory (its cores' working sets together past twice "
                                      "the last cache)", f"{at}.points")
        runs.append(CoreRun(int(row["cores"]), tuple(int(c) for c in row["cpus"]), tuple(points)))
    counts = [run.cores for run in runs]
    if len(set(counts)) != len(counts) or 1 not in counts:
        raise ProfileError(where, f"expected distinct core counts including 1 (the reference), got {counts}",
                           f"{FIELD}.runs")
    return Multicore(tuple(sorted(runs, key=lambda r: r.cores)), block.get("min_time_s"), block.get("samples"),
                     block.get("statistic"),
                     {k: v for k, v in block.items() if k not in ("version", "runs", "min_time_s", "samples",
                                                                  "statistic")})
