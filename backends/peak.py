"""The ``peak`` backend: the naive convolution by measured peak rates, a baseline for the real models.

Per site: flops at the core's measured peak, loads/stores (8-byte words) at the STREAM triad bandwidth,
and every message at the ping-pong latency plus its bytes at the ping-pong bandwidth. It is what the PMaC
papers compare against (convolution.txt Section 8: "peak ratings provide little useful insight"): a
prediction that ignores where the data sits in the memory hierarchy, so the ``maps`` backend has a floor to
beat.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from .base import Backend, Prediction, SitePrediction

if TYPE_CHECKING:
    from ma_post import ModelBuilder

    from .machine.profile import MachineProfile

WORD_BYTES = 8


class PeakBackend(Backend):
    NAME = "peak"
    DESCRIPTION = "flops at peak, loads/stores at triad bandwidth, messages at ping-pong latency/bandwidth"

    def predict(self, model: ModelBuilder, machine: MachineProfile,
                parameters: Mapping[str, float] | None = None) -> Prediction:
        import sympy

        from ma_post.sympy_expr import as_expr

        bound = {sympy.Symbol(k): v for k, v in (parameters or {}).items()}
        parts: dict[str, dict[str, sympy.Expr]] = {}
        subroutines: dict[str, str] = {}

        def add(quantity: str, part: str, scale: float | sympy.Expr) -> None:
            for term in model.model(quantity, inline=True).terms:
                subroutines[term.site.path] = term.subroutine
                site_parts = parts.setdefault(term.site.path, {})
                site_parts[part] = site_parts.get(part, sympy.Integer(0)) + term.expr * scale

        notes = []
        add("flops", "compute", sympy.Float(1.0 / machine.peak_flops))
        add("loadstore", "memory", sympy.Float(WORD_BYTES / machine.triad_bytes_per_s))
        if machine.network is not None:
            add("mpi_count", "communication", sympy.Float(machine.network.latency_s))
            add("mpi_bytes", "communication", sympy.Float(1.0 / machine.network.bandwidth_bytes_per_s))
        else:
            notes.append(f"profile {machine.name!r} has no network measurements: communication left at 0")
        zero = sympy.Integer(0)
        sites = tuple(SitePrediction(path, *(as_expr(p.get(name, zero)).subs(bound)
                                             for name in ("compute", "memory", "communication")))
                      for path, p in parts.items())
        return Prediction(self.NAME, machine.name, sites, dict(parameters or {}), tuple(notes), subroutines)
