"""What-if studies: a machine profile with one field scaled or set (``network.bandwidth=*2``).

A field is a dotted path into the profile, named as in its JSON document (``docs/machine-profile.md``), with ``[i]``
for one element of a list; a list without an index is changed element by element. Short names for the usual
studies:

    network.bandwidth -> network.bandwidth_bytes_per_s     network.latency -> network.latency_s
    cpu.peak          -> cpu.peak_flops                     memory.bandwidth -> bandwidth_fit.plateaus_gbs
    cpu.call_overhead -> cpython.call_overhead_s            cpu.python        -> cpython.python_flops
    cpu.subscript     -> cpython.subscripts.seconds

The names of the CPython terms in profiles written before the ``cpython`` section (``cpu.call_overhead_s``,
``cpu.python_flops``, ``cpu.annotation_s``, ``cpu.python_probe.subscripts``, ``network.python_exchange``) name
the same fields. The value is ``*F`` (multiply), ``/F`` (divide) or a number (set; a ``*_gbs`` field's in GB/s, as
the document writes it). The change is made on the typed profile (:mod:`.profile`), which then passes the
profile's validation again, so a what-if cannot produce a profile ``ma machine show`` would refuse.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ma_core.errors import BackendError

from . import profile as profiles
from .profile import GB, MachineProfile

ALIASES = {"network.bandwidth": "network.bandwidth_bytes_per_s", "network.latency": "network.latency_s",
           "cpu.peak": "cpu.peak_flops", "memory.bandwidth": "bandwidth_fit.plateaus_gbs",
           "cpu.call_overhead": "cpython.call_overhead_s", "cpu.python": "cpython.python_flops",
           "cpu.subscript": "cpython.subscripts.seconds"}
# where profiles written before the cpython section kept its fields (a prefix of the path)
LEGACY = {"cpu.call_overhead_s": "cpython.call_overhead_s", "cpu.python_flops": "cpython.python_flops",
          "cpu.annotation_s": "cpython.annotation_s", "cpu.python_probe.subscripts": "cpython.subscripts",
          "cpu.python_probe.csr_rows": "cpu.csr_rows", "network.python_exchange": "cpython.exchange"}
# the document's fields held under other names in the typed profile, and the unit a set value is given in
TYPED = {"bandwidth_fit.latencies": ("bandwidth_fit.params.c", 1.0),
         "bandwidth_fit.plateaus_gbs": ("bandwidth_fit.params.b", GB),
         "bandwidth_fit.penalty_f": ("bandwidth_fit.params.f", 1.0),
         "bandwidth_fit.penalty_x": ("bandwidth_fit.params.x", 1.0)}
_PART = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[(\d+)\])?$")


@dataclass(frozen=True)
class WhatIf:
    field: str  # the full dotted path
    operator: str  # "*", "/" or "="
    value: float
    text: str  # as the user wrote it

    def apply(self, number: float, unit: float = 1.0) -> float:
        """The changed value of ``number``; ``unit``: what a set value is multiplied by (GB for a GB/s field)."""
        if self.operator == "*":
            return number * self.value
        if self.operator == "/":
            return number / self.value
        return self.value * unit


def parse(text: str) -> WhatIf:
    """``FIELD=*F``, ``FIELD=/F`` or ``FIELD=V``; BackendError saying what was expected."""
    name, sep, rhs = text.partition("=")
    name, rhs = name.strip(), rhs.strip()
    operator = rhs[:1] if rhs[:1] in ("*", "/") else "="
    number = rhs[1:] if operator != "=" else rhs
    try:
        value = float(number)
    except ValueError:
        value = float("nan")
    if not sep or not name or not value == value or value <= 0:
        raise BackendError(f"--what-if {text!r}: expected FIELD=*FACTOR, FIELD=/FACTOR or FIELD=VALUE with a "
                           "positive number (e.g. network.bandwidth=*2)")
    field = ALIASES.get(name, name)
    for old, new in LEGACY.items():
        if field == old or field.startswith(old + "."):
            field = new + field[len(old):]
    return WhatIf(field, operator, value, text)


def apply(machine: MachineProfile, change: WhatIf) -> MachineProfile:
    """A copy of ``machine`` with ``change`` made and the name marked (``host what-if network.latency_s=/2``),
    validated like a profile read from a file."""
    field, unit = change.field, 1.0  # the document's names; the typed profile's where they differ
    if field.startswith("multimaps.points"):  # the points apart from their settings
        field = "multimaps" + field[len("multimaps.points"):]
    elif field.startswith("multimaps."):
        field = "multimaps_settings" + field[len("multimaps"):]
    for name, (typed, given_in) in TYPED.items():
        if field == name or field.startswith(name + "["):
            field, unit = typed + field[len(name):], given_in
    changed = _change(machine, field.split("."), 0, change, unit)
    marked = dataclasses.replace(changed, name=f"{machine.name} what-if {change.text}")
    return profiles.from_json(marked.to_json(), f"<{marked.name}>")


def _attribute(name: str) -> tuple[str, float]:
    """The typed profile's attribute for a document field and the unit of a set value: a ``*_gbs`` field is held
    in bytes per second (``*_bytes_per_s``), set in GB/s."""
    if name.endswith("_gbs"):
        return name[: -len("_gbs")] + "_bytes_per_s", GB
    return name, 1.0


def _change(node: Any, parts: list[str], depth: int, change: WhatIf, unit: float = 1.0) -> Any:
    """``node`` with the field at ``parts[depth:]`` changed (a new object at every level; nothing is modified)."""
    if depth == len(parts):
        return _changed(node, change, unit)
    match = _PART.match(parts[depth])
    where = ".".join(parts[:depth + 1])
    if match is None:
        raise _no_field(change, where)
    name, index = match.group(1), match.group(2)
    attribute, held_in = _attribute(name)
    unit = held_in if held_in != 1.0 else unit
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        names = {f.name for f in dataclasses.fields(node)}
        extra = getattr(node, "extra", None)
        if attribute in names and getattr(node, attribute) is not None:
            child = getattr(node, attribute)
            return dataclasses.replace(node, **{attribute: _indexed(child, index, parts, depth, change, unit)})
        if isinstance(extra, Mapping) and name in extra:
            return dataclasses.replace(node, extra={**extra, name: _indexed(extra[name], index, parts, depth,
                                                                            change, unit)})
    elif isinstance(node, Mapping) and name in node:
        return {**node, name: _indexed(node[name], index, parts, depth, change, unit)}
    raise _no_field(change, where)


def _no_field(change: WhatIf, where: str) -> BackendError:
    return BackendError(f"--what-if {change.text!r}: the profile has no field {where!r}")


def _indexed(child: Any, index: str | None, parts: list[str], depth: int, change: WhatIf, unit: float) -> Any:
    if index is None:
        return _change(child, parts, depth + 1, change, unit)
    if not isinstance(child, (list, tuple)) or int(index) >= len(child):
        raise BackendError(f"--what-if {change.text!r}: {'.'.join(parts[:depth + 1])!r} is out of range")
    items = list(child)
    items[int(index)] = _change(items[int(index)], parts, depth + 1, change, unit)
    return type(child)(items)


def _changed(value: Any, change: WhatIf, unit: float) -> Any:
    if isinstance(value, (list, tuple)) and all(_is_number(v) for v in value):
        return type(value)(_number(v, change, unit) for v in value)
    if _is_number(value):
        return _number(value, change, unit)
    raise BackendError(f"--what-if {change.text!r}: field {change.field!r} is not a number or a list of numbers")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _number(value: float, change: WhatIf, unit: float) -> float | int:
    """The changed number; a whole field (a size, a count) stays whole where the change leaves it whole."""
    result = change.apply(float(value), unit)
    return int(result) if isinstance(value, int) and float(result).is_integer() else result
