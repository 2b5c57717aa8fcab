"""The machine profile: the hub type on the machine side (perc_framework.txt Section 2.1, "machine profiles").

A versioned JSON document (schema in :mod:`.schema`, fields explained in ``docs/machine-profile.md``) with
the cache hierarchy, the MultiMAPS surface and its simulated hit rates, the fitted bandwidth function,
the peak flop rate, the triad bandwidth and the MPI latency and bandwidth. :func:`load` validates and
raises :class:`ma.errors.ProfileError` naming the file and the field.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ma_core.errors import ProfileError

from .schema import PROFILE_SCHEMA, SCHEMA_NAME, SCHEMA_VERSION


@dataclass
class CacheLevel:
    level: int
    size_bytes: int
    ways: int
    line_bytes: int
    source: str = "sysfs"
    replacement: str = "LRU"  # the policy the hit-rate simulation gives this level (LRU, RR, FIFO, MRU)
    # the level's hardware prefetcher in the hit-rate simulation (none, next_line, adjacent, stride; see hitrates)
    prefetch: str = "none"
    prefetch_degree: int = 1  # lines fetched per trigger
    prefetch_distance: int = 1  # how far ahead the first of them lies (lines, or strides for "stride")
    indexing: str = "virtual"  # "physical": the simulation puts each 4 KiB page in a random frame (page colours)

    @property
    def sets(self) -> int:
        return self.size_bytes // (self.ways * self.line_bytes)


@dataclass
class MultiMapsPoint:
    """One MultiMAPS measurement: ``pattern`` "stride" (with ``stride`` in 8-byte words) or "random"."""

    pattern: str
    size_bytes: int
    bandwidth_gbs: float
    stride: int | None = None
    samples_gbs: list[float] = field(default_factory=list)
    hit_rates: list[float] | None = None  # cumulative h_1..h_n, the last (main memory) 1

    @property
    def curve(self) -> str:
        return f"stride {self.stride}" if self.pattern == "stride" else self.pattern


@dataclass
class NetworkProfile:
    latency_s: float
    bandwidth_bytes_per_s: float
    ranks: int = 2
    launcher: str = "mpiexec"
    pingpong: list[dict[str, float]] = field(default_factory=list)
    # the exchange on more ranks than cores (probe.measure_oversubscribed); optional, versioned
    oversubscribed: dict[str, Any] | None = None
    # the two-rank Python exchange with work between messages (pymessages.measure); optional, versioned
    python_exchange: dict[str, Any] | None = None

    def message_seconds(self, nbytes: float) -> float:
        """The latency/bandwidth model of one message (perc_framework.txt: the L/B model)."""
        return self.latency_s + nbytes / self.bandwidth_bytes_per_s


@dataclass
class BandwidthFit:
    """Equation 1's parameters (:class:`.gafit.Eq1Params`) for this machine and how well they fit."""

    latencies: list[float]
    plateaus_gbs: list[float]
    penalty_f: list[float]
    penalty_x: list[float]
    model: str = "tikir-sc07-eq1"
    avg_abs_rel_error: float | None = None
    std_abs_rel_error: float | None = None
    per_curve: dict[str, dict[str, float]] = field(default_factory=dict)
    ga: dict[str, Any] = field(default_factory=dict)

    def params(self) -> Any:
        from .gafit import Eq1Params

        return Eq1Params(tuple(self.latencies), tuple(self.plateaus_gbs), tuple(self.penalty_f),
                         tuple(self.penalty_x))

    def error_table(self) -> dict[str, Any]:
        """Table-4 rows (:class:`.gafit.ErrorSummary`): the fitted points together (``fitted``), then each curve
        (the random curve is not fitted: its row is the interpolation check)."""
        from .gafit import ErrorSummary

        curves = {k: ErrorSummary(int(v["points"]), v["avg_abs_rel_error"], v["std_abs_rel_error"],
                                  v["max_abs_rel_error"]) for k, v in self.per_curve.items()}
        worst = max((s.max_abs_rel_error for k, s in curves.items() if k != "random"), default=0.0)
        return {"fitted": ErrorSummary(int(self.ga.get("fitted_points", 0)), self.avg_abs_rel_error or 0.0,
                                       self.std_abs_rel_error or 0.0, worst), **curves}

    def bandwidth_gbs(self, hit_rates: Sequence[float] | Sequence[Sequence[float]]) -> Any:
        """Predicted bandwidth (GB/s) at cumulative hit rates h_1..h_n (one row or a table of rows)."""
        return self.params().bandwidth(hit_rates)


@dataclass
class MachineProfile:
    name: str
    host: dict[str, Any]
    caches: list[CacheLevel]
    cpu: dict[str, Any]
    memory: dict[str, Any]
    multimaps: list[MultiMapsPoint] = field(default_factory=list)
    multimaps_settings: dict[str, Any] = field(default_factory=dict)
    network: NetworkProfile | None = None
    bandwidth_fit: BandwidthFit | None = None

    @property
    def levels(self) -> int:
        """Levels of the memory hierarchy in Equation 1: the caches and main memory."""
        return len(self.caches) + 1

    @property
    def peak_flops(self) -> float:
        return float(self.cpu["peak_flops"])

    @property
    def triad_gbs(self) -> float:
        return float(self.memory["triad_gbs"])

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "schema": SCHEMA_NAME, "version": SCHEMA_VERSION, "name": self.name, "host": self.host,
            "caches": [asdict(c) for c in self.caches], "cpu": self.cpu, "memory": self.memory,
            "network": asdict(self.network) if self.network else None,
            "multimaps": {"word_bytes": 8, **self.multimaps_settings,
                          "points": [_point_json(p) for p in self.multimaps]},
            "bandwidth_fit": asdict(self.bandwidth_fit) if self.bandwidth_fit else None,
        }
        return doc

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write atomically (a reader never sees half a profile)."""
        target = Path(path)
        temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(self.to_json(), indent=1) + "\n")
        os.replace(temporary, target)
        return target


def versioned_block(block: Any, version: int, field: str, where: str = "<profile>") -> Mapping[str, Any]:
    """An optional profile block that carries its own ``version`` (a measurement added after the schema's):
    the block, checked to be an object of the version this SDK reads; ProfileError naming the field otherwise."""
    if not isinstance(block, Mapping):
        raise ProfileError(where, f"expected an object, got {type(block).__name__}", field)
    if block.get("version") != version:
        raise ProfileError(where, f"version {block.get('version')!r} is not supported (this SDK reads version "
                                  f"{version})", f"{field}.version")
    return block


def _point_json(p: MultiMapsPoint) -> dict[str, Any]:
    doc = asdict(p)
    if p.stride is None:
        del doc["stride"]
    return doc


def _field_path(parts: Sequence[str | int]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def validate(doc: Any, path: str = "<profile>") -> None:
    """Check a parsed document against the schema and the rules JSON Schema cannot say; ProfileError."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    if not isinstance(doc, Mapping):
        raise ProfileError(path, f"expected a JSON object, got {type(doc).__name__}")
    if doc.get("schema") != SCHEMA_NAME:
        raise ProfileError(path, f"not a machine profile (expected \"schema\": \"{SCHEMA_NAME}\")", "schema")
    if doc.get("version") != SCHEMA_VERSION:
        raise ProfileError(path, f"schema version {doc.get('version')!r} is not supported (this SDK reads version "
                                 f"{SCHEMA_VERSION})", "version")
    error = best_match(Draft202012Validator(PROFILE_SCHEMA).iter_errors(doc))
    if error is None:
        _check_consistency(doc, path)
        return
    where = list(error.absolute_path)
    if error.validator == "required":  # name the missing field itself, not the object that lacks it
        missing = [name for name in error.validator_value if name not in error.instance]
        raise ProfileError(path, "required field is missing", _field_path([*where, missing[0]]))
    raise ProfileError(path, error.message, _field_path(where))


def _check_consistency(doc: Mapping[str, Any], path: str) -> None:
    caches = doc["caches"]
    for i, cache in enumerate(caches):
        if cache["level"] != i + 1:
            raise ProfileError(path, f"expected level {i + 1} (levels are listed from 1 up)", f"caches[{i}].level")
        if cache["size_bytes"] % (cache["ways"] * cache["line_bytes"]):
            raise ProfileError(path, "size is not a whole number of sets (ways x line_bytes)",
                               f"caches[{i}].size_bytes")
    levels = len(caches) + 1
    for i, point in enumerate(doc["multimaps"]["points"]):
        where = f"multimaps.points[{i}]"
        if point["pattern"] == "stride" and "stride" not in point:
            raise ProfileError(path, "a stride point needs its stride", f"{where}.stride")
        rates = point.get("hit_rates")
        if rates is None:
            continue
        if len(rates) != levels:
            raise ProfileError(path, f"expected {levels} cumulative hit rates (one per cache and memory), got "
                                     f"{len(rates)}", f"{where}.hit_rates")
        if any(b < a - 1e-12 for a, b in itertools.pairwise(rates)) or abs(rates[-1] - 1.0) > 1e-9:
            raise ProfileError(path, "hit rates must be cumulative (non-decreasing) and end at 1 (main memory)",
                               f"{where}.hit_rates")
    fit = doc.get("bandwidth_fit")
    if fit:
        for name in ("latencies", "plateaus_gbs"):
            if len(fit[name]) != levels:
                raise ProfileError(path, f"expected {levels} values (one per cache and memory), got {len(fit[name])}",
                                   f"bandwidth_fit.{name}")
        if len(fit["penalty_f"]) != len(fit["penalty_x"]) or len(fit["penalty_f"]) >= levels:
            raise ProfileError(path, f"penalty_f and penalty_x must have the same length, below {levels}",
                               "bandwidth_fit.penalty_f")


def from_json(doc: Mapping[str, Any], path: str = "<profile>") -> MachineProfile:
    validate(doc, path)
    mm = doc["multimaps"]
    network = doc.get("network")
    fit = doc.get("bandwidth_fit")
    return MachineProfile(
        name=doc["name"], host=dict(doc["host"]), caches=[CacheLevel(**c) for c in doc["caches"]],
        cpu=dict(doc["cpu"]), memory=dict(doc["memory"]),
        multimaps=[MultiMapsPoint(**p) for p in mm["points"]],
        multimaps_settings={k: v for k, v in mm.items() if k not in ("points", "word_bytes")},
        network=NetworkProfile(**network) if network else None,
        bandwidth_fit=BandwidthFit(**fit) if fit else None)


def load(path: str | os.PathLike[str]) -> MachineProfile:
    """Read and validate a profile file; ProfileError names the file and, where it applies, the field."""
    name = os.fspath(path)
    try:
        text = Path(name).read_text()
    except OSError as exc:
        raise ProfileError(name, f"cannot read: {exc.strerror or exc}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProfileError(name, f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    return from_json(doc, name)


def shipped_profiles() -> dict[str, Path]:
    """Example profiles that ship with the SDK (``backends/profiles/NAME.json``), by name. A file named
    ``NAME.KIND.json`` beside one is a backend's companion data (the vector backend's ``NAME.simd.json``)."""
    directory = Path(__file__).resolve().parent.parent / "profiles"
    return {p.stem: p for p in sorted(directory.glob("*.json")) if "." not in p.stem}
