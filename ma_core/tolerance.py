"""Relative tolerances per annotation type: the one syntax of ``MA_TOLERANCE`` and ``ma validate --tolerance``.

``"0.05"`` (every type), ``"flop=0.2,loadstore=0.1"`` (those types; the others 0) or ``"0.01,flop=0.2"`` (a
default and exceptions). A call passes when ``|predicted - measured| <= t * |measured|`` with the ``t`` of its
type (exactly equal when ``t = 0``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import MAError


@dataclass(frozen=True)
class Tolerance:
    """A default relative tolerance and exceptions per annotation type (``flop``, ``loadstore``, ``loop``, ...)."""

    default: float = 0.0
    by_type: Mapping[str, float] = field(default_factory=dict)

    def for_type(self, site_type: str) -> float:
        return float(self.by_type.get(site_type, self.default))

    def text(self) -> str:
        """The spec this tolerance is parsed from (``0.01,flop=0.2``)."""
        parts = [f"{self.default:g}"] if self.default or not self.by_type else []
        parts += [f"{name}={value:g}" for name, value in sorted(self.by_type.items())]
        return ",".join(parts)

    def to_json(self) -> dict[str, Any]:
        """As the trace header writes it (``{"default": 0.0, "by_type": {"flop": 0.2}}``)."""
        return {"default": self.default, "by_type": dict(self.by_type)}


def parse_tolerance(spec: str, *, source: str = "MA_TOLERANCE", error: type[MAError] = MAError) -> Tolerance:
    """``"0.05"``, ``"flop=0.2,loadstore=0.1"`` or ``"0.01,flop=0.2"`` -> a Tolerance; ``error`` (naming
    ``source``, e.g. ``--tolerance``) for a part that is not ``[TYPE=]NUMBER`` with a finite number >= 0."""
    default = 0.0
    by_type: dict[str, float] = {}
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        name, _, number = part.rpartition("=")
        name = name.strip()
        try:
            value = float(number)
        except ValueError:
            raise error(f"{source}={spec!r}: {number.strip()!r} is not a number "
                        "(expected e.g. 0.05 or flop=0.2,loadstore=0.1)") from None
        if value < 0:
            raise error(f"{source}={spec!r}: a tolerance cannot be negative ({number.strip()})")
        if not math.isfinite(value):
            raise error(f"{source}={spec!r}: a tolerance is a finite number, not {number.strip()}")
        if "=" in part and not name.isidentifier():
            raise error(f"{source}={spec!r}: {name!r} is not an annotation type (expected e.g. flop=0.2)")
        if name:
            by_type[name.removeprefix("ma_")] = value
        else:
            default = value
    return Tolerance(default, by_type)


__all__ = ["Tolerance", "parse_tolerance"]
