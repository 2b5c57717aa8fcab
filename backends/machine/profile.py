"""The machine profile: the hub type on the machine side (perc_framework.txt Section 2.1, "machine profiles").

A versioned JSON document (schema in :mod:`.schema`, fields explained in ``docs/machine-profile.md``) with
the cache hierarchy, the MultiMAPS surface and its simulated hit rates, the fitted bandwidth function,
the peak flop rate, the triad bandwidth, the MPI latency and bandwidth, and what the CPython interpreter costs
(:mod:`backends.cpython.section`). :func:`from_json` is the one gate: it validates the document against the schema
and the rules a schema cannot say, raising :class:`ma_core.errors.ProfileError` naming the file and the field, and
returns a :class:`MachineProfile` of frozen blocks that nothing reads or checks again. Bandwidths are bytes per
second in the typed blocks (the document's ``*_gbs`` fields are GB/s: converted at this boundary, both ways).

A change of a profile is a new one: ``dataclasses.replace`` on the typed blocks (a what-if,
:mod:`.whatif`), or a measured block put into the document (:func:`with_block`), which passes the gate again.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ma_core.errors import ProfileError
from ma_core.inputs import read_regular_file

from ..cpython import section as cpython_section
from ..cpython.section import CPythonTerms
from . import multicore
from .eq1 import Eq1Params
from .jsonblock import present
from .levels import level_names, unconstrained_levels
from .multicore import Multicore
from .schema import PROFILE_SCHEMA, READABLE_VERSIONS, SCHEMA_NAME, SCHEMA_VERSION

GB = 1e9  # the document's GB/s fields, in the typed profile's bytes per second
VECTOR_STREAMS_VERSION = 1
VECTOR_STREAMS_FIELD = "memory.vector_streams"
CSR_ROWS_FIELD = "cpu.csr_rows"


def _gbs(values: Sequence[float]) -> tuple[float, ...]:
    return tuple(float(v) * GB for v in values)


def _to_gbs(values: Sequence[float]) -> list[float]:
    return [v / GB for v in values]


def _unknown(block: Mapping[str, Any], known: Sequence[str]) -> dict[str, Any]:
    """The fields of ``block`` this SDK does not read, kept to be written back as they were."""
    return {k: copy.deepcopy(v) for k, v in block.items() if k not in known}


@dataclass(frozen=True)
class Host:
    """Where and when the profile was measured; ``cpus`` is what more ranks than cores time-share."""

    hostname: str = ""
    cpu_model: str = ""
    cpus: int = 1
    measured_at: str = ""
    kernel: str | None = None
    pinned_cpu: int | None = None  # the core MultiMAPS ran on
    quick: bool = False
    probe_seconds: float | None = None
    notes: str = ""
    estimate_s: float | None = None  # the probe's estimate of its time, said before it started (plan.py)
    phase_seconds: Mapping[str, float] = field(default_factory=dict)  # measured, by part of the probe
    extra: Mapping[str, Any] = field(default_factory=dict)

    FIELDS = ("hostname", "cpu_model", "cpus", "kernel", "pinned_cpu", "quick", "measured_at", "notes",
              "probe_seconds", "estimate_s", "phase_seconds")

    def to_json(self) -> dict[str, Any]:
        return {"hostname": self.hostname, "cpu_model": self.cpu_model, "cpus": self.cpus,
                **present(kernel=self.kernel), "pinned_cpu": self.pinned_cpu, "quick": self.quick,
                "measured_at": self.measured_at, "notes": self.notes,
                **present(probe_seconds=self.probe_seconds, estimate_s=self.estimate_s,
                          phase_seconds=dict(self.phase_seconds)), **self.extra}


@dataclass(frozen=True)
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

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass(frozen=True)
class CsrRows:
    """SciPy's compiled CSR product on a matrix in L1 (a chain of dependent adds per row): seconds per entry by
    entries per row, what the maps backend prices a kernel stated as a CSR row loop on."""

    entries_per_row: tuple[float, ...]
    seconds_per_entry: tuple[float, ...]

    @property
    def points(self) -> list[tuple[float, float]]:
        """(entries per row, seconds per entry), sorted by row length."""
        return sorted(zip(self.entries_per_row, self.seconds_per_entry, strict=True))

    def to_json(self) -> dict[str, Any]:
        return {"entries_per_row": list(self.entries_per_row), "seconds_per_entry": list(self.seconds_per_entry)}


@dataclass(frozen=True)
class CPU:
    """One core's double-precision peak (FMA chains in registers) and the kernel it was reached with."""

    peak_flops: float
    isa: str | None = None
    by_isa: Mapping[str, float] = field(default_factory=dict)
    clock_hz: float | None = None
    csr_rows: CsrRows | None = None
    # seconds per term of a compiled dot product's dependent add chain on L1 data (backends/machine/chains.py)
    add_chain_s: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"peak_flops": self.peak_flops, **present(isa=self.isa, by_isa=self.by_isa, clock_hz=self.clock_hz,
                                                         csr_rows=self.csr_rows, add_chain_s=self.add_chain_s),
                **self.extra}


@dataclass(frozen=True)
class StreamPoint:
    """One working set of the vector stream curve: bytes per second of ``a = b + c`` with the host's SIMD."""

    size_bytes: int
    bandwidth_bytes_per_s: float
    samples_bytes_per_s: tuple[float, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"size_bytes": self.size_bytes, "bandwidth_gbs": self.bandwidth_bytes_per_s / GB,
                **present(samples_gbs=_to_gbs(self.samples_bytes_per_s))}


@dataclass(frozen=True)
class VectorStreams:
    """The vector stream curve (:mod:`.vectorstreams`): MultiMAPS's stride-1 read done with vector loads."""

    points: tuple[StreamPoint, ...]
    isa: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)  # kernel, bytes_per_element, statistic

    def to_json(self) -> dict[str, Any]:
        return {"version": VECTOR_STREAMS_VERSION, **present(isa=self.isa), **self.extra,
                "points": [p.to_json() for p in self.points]}


@dataclass(frozen=True)
class Memory:
    triad_bytes_per_s: float  # STREAM triad, 24 bytes per element, best run
    triad_bytes: int | None = None
    vector_streams: VectorStreams | None = None
    multicore: Multicore | None = None  # k cores reading at once (multicore.py)
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"triad_gbs": self.triad_bytes_per_s / GB,
                **present(triad_bytes=self.triad_bytes, vector_streams=self.vector_streams,
                          multicore=self.multicore), **self.extra}


@dataclass(frozen=True)
class Message:
    """A ping-pong row: one-way seconds of a message of ``bytes`` bytes."""

    bytes: int
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {"bytes": self.bytes, "seconds": self.seconds}


WorkPoint = cpython_section.WorkPoint  # a row of a work curve: work seconds, wall seconds per message


@dataclass(frozen=True)
class Oversubscribed:
    """The exchange on more ranks than cores (:func:`.probe.measure_oversubscribed`), with (version 2) its work
    curve: the wall seconds per message with work before each."""

    ranks: int
    cores: int
    latency_s: float
    bandwidth_bytes_per_s: float
    version: int = 2
    pingpong: tuple[Message, ...] = ()
    work: tuple[WorkPoint, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)  # pattern, batch_s

    @property
    def ranks_per_core(self) -> float:
        return self.ranks / self.cores

    @property
    def work_curve(self) -> list[tuple[float, float]]:
        """(work seconds, wall seconds per message), sorted by work; [] without the curve."""
        return sorted((p.work_s, p.seconds) for p in self.work)

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, **self.extra, "ranks": self.ranks, "cores": self.cores,
                "latency_s": self.latency_s, "bandwidth_bytes_per_s": self.bandwidth_bytes_per_s,
                **present(pingpong=self.pingpong, work=self.work)}


@dataclass(frozen=True)
class SynchronisedCurve:
    """The synchronised exchange on ``ranks`` ranks, one per core: per amount of work streamed from memory before
    each message, the work's seconds with every rank working at once and the wall seconds per message."""

    ranks: int
    work: tuple[WorkPoint, ...]
    stream_mib: int | None = None

    @property
    def curve(self) -> list[tuple[float, float]]:
        """(work seconds, wall seconds per message), sorted by work."""
        return sorted((p.work_s, p.seconds) for p in self.work)

    def to_json(self) -> dict[str, Any]:
        return {"ranks": self.ranks, **present(stream_mib=self.stream_mib), "work": [p.to_json() for p in self.work]}


@dataclass(frozen=True)
class Synchronised:
    """The exchange with work between messages on one rank per core (:func:`.probe.measure_synchronised`): each
    message waits for the later of its partners, which no ping-pong sees. One curve per rank count measured (2
    and the node's ``cores``), sorted by ranks."""

    cores: int
    curves: tuple[SynchronisedCurve, ...]
    version: int = 1
    extra: Mapping[str, Any] = field(default_factory=dict)  # pattern, batch_s

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, **self.extra, "cores": self.cores,
                "curves": [c.to_json() for c in self.curves]}


@dataclass(frozen=True)
class NetworkProfile:
    """The MPI ping-pong (and the exchange on more ranks than cores) of one MPI installation: ``mpi`` names it as
    :attr:`ma_tools.mpis.MpiInstall.name` does ("mpich-4.0.2"); None in a block written before it was recorded."""

    latency_s: float
    bandwidth_bytes_per_s: float
    ranks: int = 2
    launcher: str = "mpiexec"
    pingpong: tuple[Message, ...] = ()
    oversubscribed: Oversubscribed | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    mpi: str | None = None
    synchronised: Synchronised | None = None

    def message_seconds(self, nbytes: float) -> float:
        """The latency/bandwidth model of one message (perc_framework.txt: the L/B model)."""
        return self.latency_s + nbytes / self.bandwidth_bytes_per_s

    def to_json(self) -> dict[str, Any]:
        return {"latency_s": self.latency_s, "bandwidth_bytes_per_s": self.bandwidth_bytes_per_s,
                "ranks": self.ranks, "launcher": self.launcher, **present(mpi=self.mpi),
                "pingpong": [m.to_json() for m in self.pingpong],
                "oversubscribed": self.oversubscribed.to_json() if self.oversubscribed else None,
                **present(synchronised=self.synchronised), **self.extra}


@dataclass(frozen=True)
class MultiMapsPoint:
    """One MultiMAPS measurement: ``pattern`` "stride" (with ``stride`` in 8-byte words) or "random"."""

    pattern: str
    size_bytes: int
    bandwidth_bytes_per_s: float
    stride: int | None = None
    samples_bytes_per_s: tuple[float, ...] = ()
    hit_rates: tuple[float, ...] | None = None  # cumulative h_1..h_n, the last (main memory) 1

    @property
    def curve(self) -> str:
        return f"stride {self.stride}" if self.pattern == "stride" else self.pattern

    def to_json(self) -> dict[str, Any]:
        return {"pattern": self.pattern, "size_bytes": self.size_bytes,
                "bandwidth_gbs": self.bandwidth_bytes_per_s / GB, **present(stride=self.stride),
                "samples_gbs": _to_gbs(self.samples_bytes_per_s),
                "hit_rates": None if self.hit_rates is None else list(self.hit_rates)}


@dataclass(frozen=True)
class MultiMapsSettings:
    """How the MultiMAPS points were timed."""

    min_time_s: float | None = None
    samples: int | None = None
    statistic: str | None = None
    unreached_levels: tuple[str, ...] = ()  # levels no working set reached ("memory": RAM too short for 2 x LLC)
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"word_bytes": 8, **present(min_time_s=self.min_time_s, samples=self.samples, statistic=self.statistic,
                                           unreached_levels=list(self.unreached_levels)), **self.extra}


@dataclass(frozen=True)
class BandwidthFit:
    """Equation 1 fitted to this machine (:class:`.eq1.Eq1Params`, F in bytes per second) and how well it fits."""

    params: Eq1Params
    model: str = "tikir-sc07-eq1"
    avg_abs_rel_error: float | None = None
    std_abs_rel_error: float | None = None
    per_curve: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    ga: Mapping[str, Any] = field(default_factory=dict)
    # levels ("L1".., "memory") whose plateau and latency no fitted point constrains (levels.py)
    unconstrained_levels: tuple[str, ...] = ()

    def error_table(self) -> dict[str, Any]:
        """Table-4 rows (:class:`.gafit.ErrorSummary`): the fitted points together (``fitted``), then each curve
        (the random curve is not fitted: its row is the interpolation check)."""
        from .gafit import ErrorSummary

        curves = {k: ErrorSummary(int(v["points"]), v["avg_abs_rel_error"], v["std_abs_rel_error"],
                                  v["max_abs_rel_error"]) for k, v in self.per_curve.items()}
        worst = max((s.max_abs_rel_error for k, s in curves.items() if k != "random"), default=0.0)
        return {"fitted": ErrorSummary(int(self.ga.get("fitted_points", 0)), self.avg_abs_rel_error or 0.0,
                                       self.std_abs_rel_error or 0.0, worst), **curves}

    def bandwidth(self, hit_rates: Sequence[float] | Sequence[Sequence[float]]) -> Any:
        """Predicted bytes per second at cumulative hit rates h_1..h_n (one row or a table of rows)."""
        return self.params.bandwidth(hit_rates)

    def to_json(self) -> dict[str, Any]:
        p = self.params
        return {"latencies": list(p.c), "plateaus_gbs": _to_gbs(p.b), "penalty_f": list(p.f),
                "penalty_x": list(p.x), "model": self.model,
                "avg_abs_rel_error": self.avg_abs_rel_error, "std_abs_rel_error": self.std_abs_rel_error,
                "per_curve": copy.deepcopy(dict(self.per_curve)), "ga": copy.deepcopy(dict(self.ga)),
                "unconstrained_levels": list(self.unconstrained_levels)}


@dataclass(frozen=True)
class MachineProfile:
    name: str
    host: Host
    caches: tuple[CacheLevel, ...]
    cpu: CPU
    memory: Memory
    multimaps: tuple[MultiMapsPoint, ...] = ()
    multimaps_settings: MultiMapsSettings = field(default_factory=MultiMapsSettings)
    network: NetworkProfile | None = None  # the default block (the MPI the probe ran with)
    bandwidth_fit: BandwidthFit | None = None
    cpython: CPythonTerms | None = None  # what the CPython interpreter costs here (backends.cpython)
    networks: Mapping[str, NetworkProfile] = field(default_factory=dict)  # every further MPI's block, by its name

    @property
    def levels(self) -> int:
        """Levels of the memory hierarchy in Equation 1: the caches and main memory."""
        return len(self.caches) + 1

    @property
    def peak_flops(self) -> float:
        return self.cpu.peak_flops

    @property
    def triad_bytes_per_s(self) -> float:
        return self.memory.triad_bytes_per_s

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "schema": SCHEMA_NAME, "version": SCHEMA_VERSION, "name": self.name, "host": self.host.to_json(),
            "caches": [c.to_json() for c in self.caches], "cpu": self.cpu.to_json(), "memory": self.memory.to_json(),
            "network": self.network.to_json() if self.network else None,
            "multimaps": {**self.multimaps_settings.to_json(), "points": [p.to_json() for p in self.multimaps]},
            "bandwidth_fit": self.bandwidth_fit.to_json() if self.bandwidth_fit else None,
        }
        networks = {name: block.to_json() for name, block in self.networks.items()}
        return {**doc, **present(cpython=self.cpython, networks=networks)}

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write atomically (a reader never sees half a profile)."""
        target = Path(path)
        temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(self.to_json(), indent=1) + "\n")
        os.replace(temporary, target)
        return target


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
    if doc.get("version") not in READABLE_VERSIONS:
        raise ProfileError(path, f"schema version {doc.get('version')!r} is not supported (this SDK reads versions "
                                 f"{', '.join(map(str, READABLE_VERSIONS))})", "version")
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
    _check_networks(doc, path)
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
        names = level_names(len(caches))
        for i, name in enumerate(fit.get("unconstrained_levels") or ()):
            if name not in names:
                raise ProfileError(path, f"expected one of {', '.join(names)}, got {name!r}",
                                   f"bandwidth_fit.unconstrained_levels[{i}]")
    legacy = [f"cpu.{name}" for name in cpython_section.LEGACY_FIELDS if name in doc["cpu"]]
    legacy += ["network.python_exchange"] if (doc.get("network") or {}).get("python_exchange") is not None else []
    if cpython_section.SECTION in doc and legacy:
        raise ProfileError(path, f"the CPython terms are in the {cpython_section.SECTION} section: a profile has them "
                                 "there or, written before it, in cpu and network, not in both", legacy[0])
    if "csr_rows" in doc["cpu"] and "csr_rows" in (doc["cpu"].get("python_probe") or {}):
        raise ProfileError(path, "the CSR curve is given twice (cpu.csr_rows and, written before it, "
                                 "cpu.python_probe.csr_rows)", CSR_ROWS_FIELD)


def _check_networks(doc: Mapping[str, Any], path: str) -> None:
    """Version 1 knows no MPI names; every further block is its own MPI's, and no MPI has two blocks."""
    default = doc.get("network") or {}
    networks = doc.get("networks") or {}
    for where, block in [("network", default), *((f"networks.{name}", b) for name, b in networks.items())]:
        _check_synchronised(block.get("synchronised"), path, f"{where}.synchronised")
    if doc["version"] == 1:
        if "mpi" in default:
            raise ProfileError(path, "a version-1 profile does not name the MPI of its network block (version 2 "
                                     "does)", "network.mpi")
        if networks:
            raise ProfileError(path, "a version-1 profile has one network block (version 2 has one per MPI)",
                               "networks")
    for name, block in networks.items():
        if block.get("mpi", name) != name:
            raise ProfileError(path, f"the block of MPI {name!r} says it was measured with {block['mpi']!r}",
                               f"networks.{name}.mpi")
        if name == default.get("mpi"):
            raise ProfileError(path, f"MPI {name!r} has two network blocks (network and networks.{name}): keep one",
                               f"networks.{name}")


def _check_synchronised(block: Mapping[str, Any] | None, path: str, where: str) -> None:
    """One curve per rank count, each of at most one rank per core."""
    if not block:
        return
    seen: set[int] = set()
    for i, curve in enumerate(block["curves"]):
        if curve["ranks"] in seen:
            raise ProfileError(path, f"a second curve of {curve['ranks']} ranks", f"{where}.curves[{i}].ranks")
        if curve["ranks"] > block["cores"]:
            raise ProfileError(path, f"{curve['ranks']} ranks on {block['cores']} cores: the synchronised exchange "
                                     "is measured with one rank per core", f"{where}.curves[{i}].ranks")
        seen.add(curve["ranks"])


def from_json(doc: Mapping[str, Any], path: str = "<profile>") -> MachineProfile:
    """The typed profile of a parsed document, validated (ProfileError naming ``path`` and the field)."""
    validate(doc, path)
    mm = doc["multimaps"]
    network = doc.get("network")
    fit = doc.get("bandwidth_fit")
    cpython = (cpython_section.from_json(doc[cpython_section.SECTION], path) if cpython_section.SECTION in doc
               else cpython_section.from_legacy(doc["cpu"], network, path))
    points = tuple(_point(p) for p in mm["points"])
    return MachineProfile(
        name=doc["name"], host=_host(doc["host"]), caches=tuple(CacheLevel(**c) for c in doc["caches"]),
        cpu=_cpu(doc["cpu"], path), memory=_memory(doc["memory"], path, len(doc["caches"])),
        multimaps=points,
        multimaps_settings=MultiMapsSettings(mm.get("min_time_s"), mm.get("samples"), mm.get("statistic"),
                                             tuple(mm.get("unreached_levels") or ()),
                                             _unknown(mm, ("points", "word_bytes", "min_time_s", "samples",
                                                           "statistic", "unreached_levels"))),
        network=_network(network) if network else None, bandwidth_fit=_fit(fit, points, len(doc["caches"])) if fit
        else None, cpython=cpython,
        networks={name: _network({**block, "mpi": name}) for name, block in (doc.get("networks") or {}).items()})


def _host(block: Mapping[str, Any]) -> Host:
    return Host(hostname=block["hostname"], cpu_model=block["cpu_model"], cpus=int(block["cpus"]),
                measured_at=block["measured_at"], kernel=block.get("kernel"), pinned_cpu=block.get("pinned_cpu"),
                quick=bool(block.get("quick", False)), probe_seconds=block.get("probe_seconds"),
                notes=block.get("notes", ""), estimate_s=block.get("estimate_s"),
                phase_seconds={k: float(v) for k, v in (block.get("phase_seconds") or {}).items()},
                extra=_unknown(block, Host.FIELDS))


def _cpu(block: Mapping[str, Any], where: str) -> CPU:
    legacy = (block.get("python_probe") or {}).get("csr_rows")
    curve = block.get("csr_rows", legacy)
    field_name = CSR_ROWS_FIELD if "csr_rows" in block else "cpu.python_probe.csr_rows"
    known = ("peak_flops", "isa", "by_isa", "clock_hz", "csr_rows", "add_chain_s", *cpython_section.LEGACY_FIELDS)
    return CPU(peak_flops=float(block["peak_flops"]), isa=block.get("isa"),
               by_isa={k: float(v) for k, v in (block.get("by_isa") or {}).items()},
               clock_hz=None if block.get("clock_hz") is None else float(block["clock_hz"]),
               csr_rows=None if curve is None else _csr_rows(curve, where, field_name),
               add_chain_s=None if block.get("add_chain_s") is None else float(block["add_chain_s"]),
               extra=_unknown(block, known))


def _csr_rows(curve: Mapping[str, Any], where: str, field_name: str) -> CsrRows:
    lengths = tuple(float(k) for k in curve["entries_per_row"])
    seconds = tuple(float(s) for s in curve["seconds_per_entry"])
    if len(lengths) != len(seconds):
        raise ProfileError(where, "expected entries_per_row and seconds_per_entry, two lists of numbers of one "
                                  "length", field_name)
    if not lengths or any(k < 1 for k in lengths) or len(set(lengths)) != len(lengths):
        raise ProfileError(where, f"expected distinct row lengths >= 1 and positive seconds, got "
                                  f"{sorted(zip(lengths, seconds, strict=True))}", field_name)
    return CsrRows(lengths, seconds)


def _memory(block: Mapping[str, Any], where: str, caches: int) -> Memory:
    streams = block.get("vector_streams")
    cores = block.get("multicore")
    return Memory(triad_bytes_per_s=float(block["triad_gbs"]) * GB, triad_bytes=block.get("triad_bytes"),
                  vector_streams=None if streams is None else _vector_streams(streams, where),
                  multicore=None if cores is None else multicore.from_json(cores, level_names(caches),
                                                                           where),
                  extra=_unknown(block, ("triad_gbs", "triad_bytes", "vector_streams", "multicore")))


def _vector_streams(block: Mapping[str, Any], where: str) -> VectorStreams:
    rows = block["points"]
    if not rows:
        raise ProfileError(where, "expected a non-empty list of points", f"{VECTOR_STREAMS_FIELD}.points")
    points = tuple(StreamPoint(int(row["size_bytes"]), float(row["bandwidth_gbs"]) * GB,
                               _gbs(row.get("samples_gbs") or ())) for row in rows)
    return VectorStreams(points, block.get("isa"), _unknown(block, ("version", "isa", "points")))


def _network(block: Mapping[str, Any]) -> NetworkProfile:
    over = block.get("oversubscribed")
    mpi = block.get("mpi")
    return NetworkProfile(
        mpi=None if mpi is None else str(mpi),
        latency_s=float(block["latency_s"]), bandwidth_bytes_per_s=float(block["bandwidth_bytes_per_s"]),
        ranks=int(block.get("ranks", 2)), launcher=str(block.get("launcher", "mpiexec")),
        pingpong=tuple(Message(int(r["bytes"]), float(r["seconds"])) for r in block.get("pingpong") or ()),
        oversubscribed=_oversubscribed(over) if over else None,
        synchronised=_synchronised(block["synchronised"]) if block.get("synchronised") else None,
        extra=_unknown(block, ("latency_s", "bandwidth_bytes_per_s", "ranks", "launcher", "mpi", "pingpong",
                               "oversubscribed", "synchronised", "python_exchange")))


def _oversubscribed(block: Mapping[str, Any]) -> Oversubscribed:
    return Oversubscribed(
        ranks=int(block["ranks"]), cores=int(block["cores"]), latency_s=float(block["latency_s"]),
        bandwidth_bytes_per_s=float(block["bandwidth_bytes_per_s"]), version=int(block["version"]),
        pingpong=tuple(Message(int(r["bytes"]), float(r["seconds"])) for r in block.get("pingpong") or ()),
        work=_work_points(block.get("work") or ()),
        extra=_unknown(block, ("version", "ranks", "cores", "latency_s", "bandwidth_bytes_per_s", "pingpong",
                               "work")))


def _work_points(rows: Sequence[Mapping[str, Any]]) -> tuple[WorkPoint, ...]:
    return tuple(WorkPoint(float(r["work_s"]), float(r["seconds"]),
                           None if r.get("passes") is None else int(r["passes"])) for r in rows)


def _synchronised(block: Mapping[str, Any]) -> Synchronised:
    curves = sorted((SynchronisedCurve(int(c["ranks"]), _work_points(c["work"]),
                                       None if c.get("stream_mib") is None else int(c["stream_mib"]))
                     for c in block["curves"]), key=lambda c: c.ranks)
    return Synchronised(cores=int(block["cores"]), curves=tuple(curves), version=int(block["version"]),
                        extra=_unknown(block, ("version", "cores", "curves")))


def _point(block: Mapping[str, Any]) -> MultiMapsPoint:
    rates = block.get("hit_rates")
    return MultiMapsPoint(block["pattern"], int(block["size_bytes"]), float(block["bandwidth_gbs"]) * GB,
                          block.get("stride"), _gbs(block.get("samples_gbs") or ()),
                          None if rates is None else tuple(float(h) for h in rates))


def _fit(block: Mapping[str, Any], points: Sequence[MultiMapsPoint], caches: int) -> BandwidthFit:
    """The fit; a document written before the fit flagged its unconstrained levels gets them from its points."""
    params = Eq1Params(tuple(float(v) for v in block["latencies"]), _gbs(block["plateaus_gbs"]),
                       tuple(float(v) for v in block["penalty_f"]), tuple(float(v) for v in block["penalty_x"]))
    flagged = block.get("unconstrained_levels")
    return BandwidthFit(params, block.get("model", "tikir-sc07-eq1"), block.get("avg_abs_rel_error"),
                        block.get("std_abs_rel_error"), copy.deepcopy(block.get("per_curve") or {}),
                        copy.deepcopy(block.get("ga") or {}),
                        unconstrained_levels(points, caches) if flagged is None else tuple(flagged))


def with_block(profile: MachineProfile, where: str, block: Any) -> MachineProfile:
    """``profile`` with the document's field at dotted path ``where`` (e.g. ``memory.vector_streams``) set to
    ``block``, a measured block as the probe writes it, validated with the rest (ProfileError naming the field)."""
    doc = profile.to_json()
    *parents, last = where.split(".")
    node = doc
    for name in parents:  # a block of a section the profile has not got yet starts the section
        node = node.setdefault(name, {"version": cpython_section.SECTION_VERSION}
                               if node is doc and name == cpython_section.SECTION else {})
    node[last] = block
    return from_json(doc, f"<{profile.name}>")


def with_network(profile: MachineProfile, block: Mapping[str, Any], mpi: str, default: bool = False) -> MachineProfile:
    """``profile`` with ``block`` (as :func:`.probe.measure_network` returns it) as the network block of the MPI
    named ``mpi``: the default block where the profile has none, it is that MPI's or ``default`` says so (the
    block it replaces is dropped, and that MPI's block in ``networks`` with it), else ``networks[mpi]``."""
    doc = profile.to_json()
    measured = {**block, "mpi": mpi}
    if default or profile.network is None or profile.network.mpi == mpi:
        doc["network"] = measured
        (doc.get("networks") or {}).pop(mpi, None)
    else:
        doc.setdefault("networks", {})[mpi] = measured
    return from_json(doc, f"<{profile.name}>")


def network_for(profile: MachineProfile, mpi: str | None) -> tuple[MachineProfile, str | None]:
    """``profile`` with its default network block the one measured with the MPI named ``mpi`` (the MPI a run used),
    and a note where the choice is not plain; ProfileError where the profile has no block for that MPI and its
    default block names another (a message is never priced with another MPI's figures unsaid)."""
    default = profile.network
    names = [name for name in ([default.mpi] if default and default.mpi else []) + list(profile.networks)]
    if default is None and not profile.networks:
        return profile, None  # no network measured at all: the backend says so
    if mpi is None:
        if not profile.networks:
            return profile, None
        measured = f"measured with {default.mpi}" if default and default.mpi else "its MPI not named"
        return profile, (f"the run does not say which MPI it ran on: its messages are priced with the default network "
                         f"block ({measured}); --mpi NAME picks another of {', '.join(names)}")
    if default is not None and default.mpi == mpi:
        return profile, None
    if mpi in profile.networks:
        return replace(profile, network=profile.networks[mpi]), f"messages priced with the network block of {mpi}"
    if default is not None and default.mpi is None:
        return profile, (f"the profile's network block does not say which MPI it was measured with; it prices this "
                         f"run's messages on {mpi} (ma machine network PROFILE --mpicc PATH measures {mpi}'s own)")
    raise ProfileError(profile.name, f"no network block for {mpi}, the MPI the run used (the profile has "
                                     f"{', '.join(names)}): measure it with ma machine network PROFILE --mpicc "
                                     "PATH-OF-ITS-MPICC, or name the block to use with --mpi NAME", "networks")


def load(path: str | os.PathLike[str]) -> MachineProfile:
    """Read and validate a profile file; ProfileError names the file and, where it applies, the field."""
    name = os.fspath(path)
    try:
        text = read_regular_file(Path(name)).decode("utf-8")
    except OSError as exc:
        raise ProfileError(name, f"cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ProfileError(name, f"not UTF-8 text: {exc}") from None
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
