"""The profile's ``cpython`` section: what the CPython interpreter costs on the machine, measured once by
``ma machine probe`` (:mod:`.probe`, :mod:`.subscripts`, :mod:`.exchange`) and read by the runtime part of a
Python program's prediction (:mod:`.runtime`).

    "cpython": {
      "version": 1,
      "call_overhead_s": 3.7e-07,          seconds per call from Python into compiled code
      "python_flops": 4.4e+09,             flop/s of a vectorised NumPy kernel in cache
      "annotation_s": {"region": .., "loop": .., "mpi": ..},   seconds per call of an annotation site, by kind
      "probe": {...},                      what the call and flop figures were taken from (kept, not read)
      "subscripts": {"seconds": .., ...},  seconds per counted subscript (and the kinds it is the mean of)
      "exchange": {"version": 1, "work": [...], ...}   the two-rank mpi4py exchange with work between messages
    }

Every field is optional (a profile measured before a figure has none; the prediction then says what it does
without it), but ``call_overhead_s`` and ``python_flops`` come together. Profiles written before the section kept
the same figures in ``cpu`` (``call_overhead_s``, ``python_flops``, ``annotation_s``, ``python_probe`` with
``subscripts``) and ``network.python_exchange``: :func:`from_legacy` reads them there, naming those fields in its
errors, and the profile is written back with the section.

This module is the section's type and its reading (pure data: it imports nothing of the machine side);
:class:`backends.machine.profile.MachineProfile` holds it as ``cpython``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ma_core.errors import ProfileError

from ..machine.jsonblock import present

SECTION = "cpython"
SECTION_VERSION = 1
EXCHANGE_VERSION = 1  # of the exchange block, which carries its own (it was measured after the first profiles)
ANNOTATION_KINDS = ("region", "loop", "mpi")
EXCHANGE_CALLS = 3  # comm.Irecv, comm.Send, req.Wait: each a CALL the ccalls counter counts
EXCHANGE_PATTERN = "irecv-send-wait pairs"
# the C latency and the cost of a counted call the exchange's excess is taken net of, as the profile had them
# when it was measured: a what-if on network.latency_s or cpython.call_overhead_s then moves only those parts
EXCHANGE_REFERENCE = ("latency_s", "call_overhead_s")

_POSITIVE = {"type": "number", "exclusiveMinimum": 0}
_POSITIVE_INT = {"type": "integer", "minimum": 1}
_WORK_ROWS = {"type": "array", "items": {"type": "object", "required": ["work_s", "seconds"],
                                         "properties": {"passes": {"type": "integer", "minimum": 0},
                                                        "work_s": {"type": "number", "minimum": 0},
                                                        "seconds": _POSITIVE}}}
ANNOTATION_SCHEMA: dict[str, Any] = {"type": "object", "required": list(ANNOTATION_KINDS),
                                     "properties": dict.fromkeys(ANNOTATION_KINDS, _POSITIVE)}
SUBSCRIPTS_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["seconds"],
    "properties": {"seconds": _POSITIVE, "kinds_s": {"type": "object", "additionalProperties": _POSITIVE},
                   "view_ufunc_s": _POSITIVE, "contiguous_ufunc_s": _POSITIVE}}
EXCHANGE_SCHEMA: dict[str, Any] = {
    "type": ["object", "null"],
    "required": ["version", "work"],
    "properties": {
        "version": {"const": EXCHANGE_VERSION},
        "pattern": {"enum": [EXCHANGE_PATTERN]},
        "ranks": _POSITIVE_INT,
        "bytes": _POSITIVE_INT,
        "calls": {"type": "integer", "minimum": 0},
        "work_buffer_bytes": _POSITIVE_INT,
        "latency_s": {"type": "number", "minimum": 0},
        "call_overhead_s": {"type": "number", "minimum": 0},
        "batch_s": _POSITIVE,
        "statistic": {"enum": ["median", "best"]},
        "work": _WORK_ROWS,
    },
}
PROBE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "call_kernel": {"type": "string"},
        "calls_s": {"type": "object", "additionalProperties": _POSITIVE},
        "dispatches": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}},
        "flops_kernel": {"type": "string"},
        "flops": {"type": "object", "additionalProperties": _POSITIVE},
    },
}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["version"],
    "additionalProperties": False,
    "properties": {
        "version": {"const": SECTION_VERSION},
        "call_overhead_s": _POSITIVE,
        "python_flops": _POSITIVE,
        "annotation_s": ANNOTATION_SCHEMA,
        "probe": PROBE_SCHEMA,
        "subscripts": SUBSCRIPTS_SCHEMA,
        "exchange": EXCHANGE_SCHEMA,
    },
    "dependentRequired": {"call_overhead_s": ["python_flops"], "python_flops": ["call_overhead_s"]},
}


@dataclass(frozen=True)
class Subscripts:
    """The price of a counted subscript (``seconds``, the mean of ``kinds_s``) and what it leaves out: an in-place
    ufunc on a strided view against the same on a contiguous array (kept, not charged)."""

    seconds: float
    kinds_s: Mapping[str, float] = field(default_factory=dict)
    view_ufunc_s: float | None = None
    contiguous_ufunc_s: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)  # how it was measured (plane, repeats, ...)

    def to_json(self) -> dict[str, Any]:
        return {"seconds": self.seconds, "kinds_s": dict(self.kinds_s),
                **present(view_ufunc_s=self.view_ufunc_s, contiguous_ufunc_s=self.contiguous_ufunc_s), **self.extra}


@dataclass(frozen=True)
class WorkPoint:
    """One amount of work between messages: its seconds, and the wall seconds per message with it."""

    work_s: float
    seconds: float
    passes: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {**present(passes=self.passes), "work_s": self.work_s, "seconds": self.seconds}


@dataclass(frozen=True)
class Exchange:
    """The two-rank Python exchange (NPB CG's butterfly in mpi4py, 8 B) with work streaming from memory before
    every message: the curve of wall seconds per message by work, the exchange's counted calls, and the C latency
    and call cost it is referred to (None: the profile's own are taken)."""

    work: tuple[WorkPoint, ...]
    calls: int = EXCHANGE_CALLS
    latency_s: float | None = None
    call_overhead_s: float | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)  # pattern, ranks, bytes, buffer, batch, statistic

    @property
    def curve(self) -> list[tuple[float, float]]:
        """(work seconds, wall seconds per message), sorted by work."""
        return sorted((p.work_s, p.seconds) for p in self.work)

    def to_json(self) -> dict[str, Any]:
        return {"version": EXCHANGE_VERSION, **self.extra, "calls": self.calls,
                **present(latency_s=self.latency_s, call_overhead_s=self.call_overhead_s),
                "work": [p.to_json() for p in self.work]}


@dataclass(frozen=True)
class CPythonTerms:
    """The section, typed: every figure the runtime part of a Python program's prediction reads."""

    call_overhead_s: float | None = None
    python_flops: float | None = None
    annotation_s: Mapping[str, float] | None = None  # by ANNOTATION_KINDS
    subscripts: Subscripts | None = None
    exchange: Exchange | None = None
    probe: Mapping[str, Any] = field(default_factory=dict)  # the call and flop kernels' figures (kept, not read)

    def to_json(self) -> dict[str, Any]:
        return {"version": SECTION_VERSION,
                **present(call_overhead_s=self.call_overhead_s, python_flops=self.python_flops,
                          annotation_s=self.annotation_s, probe=self.probe, subscripts=self.subscripts,
                          exchange=self.exchange)}


def from_json(block: Mapping[str, Any], where: str = "<profile>") -> CPythonTerms:
    """The section of a profile whose JSON Schema validation passed (types and signs checked there): the rules
    the schema cannot say, with ProfileError naming the field."""
    return _terms(block.get("call_overhead_s"), block.get("python_flops"), block.get("annotation_s"),
                  block.get("subscripts"), block.get("exchange"), dict(block.get("probe") or {}), where,
                  {"annotation_s": f"{SECTION}.annotation_s", "subscripts": f"{SECTION}.subscripts",
                   "exchange": f"{SECTION}.exchange"})


LEGACY_FIELDS = ("call_overhead_s", "python_flops", "annotation_s", "python_probe")


def from_legacy(cpu: Mapping[str, Any], network: Mapping[str, Any] | None,
                where: str = "<profile>") -> CPythonTerms | None:
    """The section from where profiles written before it kept the figures (``cpu.call_overhead_s``,
    ``cpu.python_flops``, ``cpu.annotation_s``, ``cpu.python_probe`` and ``network.python_exchange``); None for a
    profile with none of them. Errors name those fields."""
    probe = dict(cpu.get("python_probe") or {})
    exchange = (network or {}).get("python_exchange")
    if not any(name in cpu for name in LEGACY_FIELDS) and exchange is None:
        return None
    subscripts = probe.pop("subscripts", None)
    probe.pop("csr_rows", None)  # a compiled kernel's curve: the machine's cpu block keeps it
    probe.pop("version", None)
    return _terms(cpu.get("call_overhead_s"), cpu.get("python_flops"), cpu.get("annotation_s"), subscripts,
                  exchange, probe, where,
                  {"annotation_s": "cpu.annotation_s", "subscripts": "cpu.python_probe.subscripts",
                   "exchange": "network.python_exchange"})


def _terms(call_overhead_s: Any, python_flops: Any, annotation: Any, subscripts: Any, exchange: Any,
           probe: dict[str, Any], where: str, fields: Mapping[str, str]) -> CPythonTerms:
    if annotation is not None:
        if not isinstance(annotation, Mapping) or set(annotation) != set(ANNOTATION_KINDS):
            raise ProfileError(where, f"expected an object with {', '.join(ANNOTATION_KINDS)}, got {annotation!r}",
                               fields["annotation_s"])
        annotation = {kind: float(annotation[kind]) for kind in ANNOTATION_KINDS}
    return CPythonTerms(
        call_overhead_s=None if call_overhead_s is None else float(call_overhead_s),
        python_flops=None if python_flops is None else float(python_flops), annotation_s=annotation,
        subscripts=None if subscripts is None else _subscripts(subscripts),
        exchange=None if exchange is None else _exchange(exchange, where, fields["exchange"]), probe=probe)


def _subscripts(block: Mapping[str, Any]) -> Subscripts:
    known = ("seconds", "kinds_s", "view_ufunc_s", "contiguous_ufunc_s")
    return Subscripts(float(block["seconds"]), {k: float(v) for k, v in (block.get("kinds_s") or {}).items()},
                      _optional_float(block.get("view_ufunc_s")), _optional_float(block.get("contiguous_ufunc_s")),
                      {k: v for k, v in block.items() if k not in known})


def _exchange(block: Mapping[str, Any], where: str, name: str) -> Exchange:
    points = tuple(WorkPoint(float(row["work_s"]), float(row["seconds"]),
                             None if row.get("passes") is None else int(row["passes"])) for row in block["work"])
    work = sorted(p.work_s for p in points)
    if not points or len(set(work)) != len(work):
        raise ProfileError(where, f"expected distinct work_s >= 0 and positive seconds, got "
                                  f"{[(p.work_s, p.seconds) for p in points]}", f"{name}.work")
    known = ("version", "calls", "work", *EXCHANGE_REFERENCE)
    return Exchange(points, int(block.get("calls", EXCHANGE_CALLS)), _optional_float(block.get("latency_s")),
                    _optional_float(block.get("call_overhead_s")), {k: v for k, v in block.items() if k not in known})


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)
