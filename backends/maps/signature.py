"""Application signatures: cumulative hit rates per loadstore site (MetaSim's output in PMaC).

Sources, first found wins: the ``signatures`` given to the backend (a signature file, see
:func:`load_signatures`), the hit rates the trace measured at the site, else the assumed rates of
:func:`assumed_hit_rates`.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Sequence
from pathlib import Path

from ma.errors import BackendError

from ..machine.profile import MachineProfile

SIGNATURE_FORMAT = "ma-signature"


def check_hit_rates(rates: Sequence[float], levels: int, what: str) -> None:
    """Cumulative h_1..h_n in [0, 1], non-decreasing, ending at 1 (main memory); BackendError naming ``what``."""
    if len(rates) != levels:
        raise BackendError(f"{what}: expected {levels} cumulative hit rates (one per cache, then memory), "
                           f"got {len(rates)}")
    try:
        values = [float(h) for h in rates]
    except (TypeError, ValueError):
        raise BackendError(f"{what}: hit rates must be numbers, got {list(rates)!r}") from None
    if any(not 0.0 <= h <= 1.0 for h in values):
        raise BackendError(f"{what}: hit rates must lie in [0, 1], got {values}")
    if any(b < a - 1e-12 for a, b in itertools.pairwise(values)) or abs(values[-1] - 1.0) > 1e-9:
        raise BackendError(f"{what}: hit rates must be cumulative (non-decreasing) and end at 1, got {values}")


def assumed_hit_rates(machine: MachineProfile) -> tuple[float, ...]:
    """A stride-1 stream from main memory: the profile's simulated hit rates of its largest stride-1 MultiMAPS
    point, or, without those, one miss per L1 line at every level (h_i = 1 - 8/line_1 below memory)."""
    stride1 = [p for p in machine.multimaps if p.pattern == "stride" and p.stride == 1 and p.hit_rates]
    if stride1:
        largest = max(stride1, key=lambda p: p.size_bytes)
        return tuple(float(h) for h in largest.hit_rates or ())
    first = 1.0 - 8.0 / machine.caches[0].line_bytes if machine.caches else 0.0
    return tuple([first] * len(machine.caches) + [1.0])


def load_signatures(path: str | os.PathLike[str], levels: int) -> dict[str, tuple[float, ...]]:
    """A signature file: ``{"format": "ma-signature", "sites": {"<site path>": [h1, ..., hn], ...}}``."""
    name = os.fspath(path)
    try:
        doc = json.loads(Path(name).read_text())
    except OSError as exc:
        raise BackendError(f"{name}: cannot read: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise BackendError(f"{name}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    if not isinstance(doc, dict) or doc.get("format") != SIGNATURE_FORMAT or not isinstance(doc.get("sites"), dict):
        raise BackendError(f"{name}: expected {{\"format\": \"{SIGNATURE_FORMAT}\", \"sites\": {{path: [h1..hn]}}}}")
    out = {}
    for site, rates in doc["sites"].items():
        if not isinstance(rates, list):
            raise BackendError(f"{name}: field 'sites.{site}': expected a list of {levels} hit rates")
        check_hit_rates(rates, levels, f"{name}: field 'sites.{site}'")
        out[site] = tuple(float(h) for h in rates)
    return out
