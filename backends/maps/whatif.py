"""What-if studies: a machine profile with one field scaled or set (``network.bandwidth=*2``).

A field is a dotted path into the profile's JSON document (``docs/machine-profile.md``), with ``[i]`` for one
element of a list; a list without an index is changed element by element. Short names for the usual studies:

    network.bandwidth -> network.bandwidth_bytes_per_s     network.latency -> network.latency_s
    cpu.peak          -> cpu.peak_flops                     memory.bandwidth -> bandwidth_fit.plateaus_gbs
    cpu.call_overhead -> cpu.call_overhead_s                cpu.python        -> cpu.python_flops
    cpu.subscript     -> cpu.python_probe.subscripts.seconds

The value is ``*F`` (multiply), ``/F`` (divide) or a number (set). The changed document is validated again,
so a what-if cannot produce a profile ``ma machine show`` would refuse.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

from ma_core.errors import BackendError

from ..machine import profile as profiles
from ..machine.profile import MachineProfile

ALIASES = {"network.bandwidth": "network.bandwidth_bytes_per_s", "network.latency": "network.latency_s",
           "cpu.peak": "cpu.peak_flops", "memory.bandwidth": "bandwidth_fit.plateaus_gbs",
           "cpu.call_overhead": "cpu.call_overhead_s", "cpu.python": "cpu.python_flops",
           "cpu.subscript": "cpu.python_probe.subscripts.seconds"}
_PART = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[(\d+)\])?$")


@dataclass(frozen=True)
class WhatIf:
    field: str  # the full dotted path
    operator: str  # "*", "/" or "="
    value: float
    text: str  # as the user wrote it

    def apply(self, number: float) -> float:
        if self.operator == "*":
            return number * self.value
        if self.operator == "/":
            return number / self.value
        return self.value


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
    return WhatIf(ALIASES.get(name, name), operator, value, text)


def apply(machine: MachineProfile, change: WhatIf) -> MachineProfile:
    """A copy of ``machine`` with ``change`` made and the name marked (``host what-if network.latency_s=/2``)."""
    doc = copy.deepcopy(machine.to_json())  # to_json shares the profile's own dicts: change a copy
    parts = change.field.split(".")
    node: Any = doc
    for depth, part in enumerate(parts):
        match = _PART.match(part)
        if match is None or not isinstance(node, dict) or match.group(1) not in node:
            raise BackendError(f"--what-if {change.text!r}: profile {machine.name!r} has no field "
                               f"{'.'.join(parts[:depth + 1])!r}")
        key, index = match.group(1), match.group(2)
        last = depth == len(parts) - 1
        if index is not None:
            items = node[key]
            if not isinstance(items, list) or int(index) >= len(items):
                raise BackendError(f"--what-if {change.text!r}: {'.'.join(parts[:depth + 1])!r} is out of range")
            if last:
                items[int(index)] = _changed(items[int(index)], change)
            node = items[int(index)]
        elif last:
            node[key] = _changed(node[key], change)
        else:
            node = node[key]
    doc["name"] = f"{machine.name} what-if {change.text}"
    return profiles.from_json(doc, f"<{doc['name']}>")


def _changed(value: Any, change: WhatIf) -> Any:
    if isinstance(value, list) and all(isinstance(v, (int, float)) for v in value):
        return [change.apply(float(v)) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return change.apply(float(value))
    raise BackendError(f"--what-if {change.text!r}: field {change.field!r} is not a number or a list of numbers")
