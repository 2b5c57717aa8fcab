"""The ``maps`` backend: the PMaC convolution of an application signature with a machine profile.

Per annotation site, per rank (perc_framework.txt Section 2; convolution.txt Eq. 1-2; ga_bandwidth.txt
Section 4):

- memory:        loads/stores x 8 B / F(h), F the profile's fitted Equation 1 at the site's cumulative hit
                 rates h_1..h_n (its signature; assumed rates where it has none, and the prediction says so);
- compute:       flops / the profile's peak;
- communication: per MPI site, the Hockney or collective-algorithm cost of :mod:`.network`;
- per call:      ``call_overhead_s`` x the site's calls, charged to compute (the Python interpreter's fixed
                 cost of one annotated region, measured once, see docs/maps-backend.md).

Compute and memory of a block (the sibling sites under one parent: a flop site and the loadstore site of the
same loop body) are added (``overlap="sum"``) or overlapped (``overlap="max"``: the block costs
max(compute, memory), the memory-bound rule of Eq. 2). Everything stays a SymPy expression of the model's
inputs that ``parameters`` leaves unbound.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import sympy

from ma.errors import BackendError
from ma_post.sympy_expr import as_expr

from ..base import Backend, Prediction, SitePrediction
from . import network
from .eq1 import bandwidth_expr
from .signature import assumed_hit_rates, check_hit_rates

if TYPE_CHECKING:
    import argparse

    from ma_post import ModelBuilder, TraceSet
    from ma_post.models import Term

    from ..machine.profile import MachineProfile

WORD_BYTES = 8
OVERLAPS = ("sum", "max")


@dataclass(frozen=True)
class MapsPrediction(Prediction):
    """A :class:`Prediction` with what the maps backend knows besides: each site's subroutine, the hit rates
    each loadstore site was convolved with, and which of them were assumed."""

    subroutines: Mapping[str, str] = field(default_factory=dict)  # site path -> innermost subroutine ("" = none)
    hit_rates: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    assumed: tuple[str, ...] = ()  # loadstore sites without a signature

    def by_subroutine(self) -> dict[str, SitePrediction]:
        """Parts summed over the sites of each subroutine (innermost enclosing one)."""
        out: dict[str, SitePrediction] = {}
        for site in self.sites:
            name = self.subroutines.get(site.path, "")
            old = out.get(name)
            out[name] = site if old is None else SitePrediction(
                name, old.compute + site.compute, old.memory + site.memory, old.communication + site.communication)
        return {name: SitePrediction(name, s.compute, s.memory, s.communication) for name, s in out.items()}

    def within(self, path: str) -> sympy.Expr:
        """Seconds per rank of the sites at or below site path ``path`` (any region: a loop, a subroutine)."""
        inside = [s.total for s in self.sites if s.path == path or s.path.startswith(path + "/")]
        if not inside:
            raise BackendError(f"no predicted site lies at or below {path!r}")
        return sympy.Add(*inside)

    def subroutine_total(self, name: str) -> sympy.Expr:
        """Seconds per rank of every site inside subroutine path ``name`` (its nested subroutines included)."""
        def within(path: str) -> bool:
            owner = self.subroutines.get(path, "")
            return owner == name or owner.startswith(name + "/")

        inside = [s.total for s in self.sites if within(s.path)]
        if not inside:
            raise BackendError(f"no predicted site lies in subroutine {name!r}")
        return sympy.Add(*inside)


class MapsBackend(Backend):
    NAME = "maps"
    DESCRIPTION = "PMaC convolution: hit rates x fitted bandwidth (Eq. 1), flops at peak, Hockney/collective MPI"

    def __init__(self, *, overlap: str = "sum", procs: str = "nprocs",
                 signatures: Mapping[str, Sequence[float]] | None = None,
                 assumed_hits: Sequence[float] | None = None, call_overhead_s: float = 0.0) -> None:
        if overlap not in OVERLAPS:
            raise BackendError(f"maps backend: overlap must be one of {', '.join(OVERLAPS)}, got {overlap!r}")
        if call_overhead_s < 0:
            raise BackendError(f"maps backend: call_overhead_s must be >= 0, got {call_overhead_s}")
        self.overlap = overlap
        self.procs = sympy.Symbol(procs)
        self.signatures = dict(signatures or {})
        self.assumed_hits = None if assumed_hits is None else tuple(assumed_hits)
        self.call_overhead_s = call_overhead_s

    @classmethod
    def add_arguments(cls, parser: argparse._ActionsContainer) -> None:
        parser.add_argument("--overlap", choices=OVERLAPS, default="sum",
                            help="maps: compute and memory of a block added (sum) or overlapped (max)")
        parser.add_argument("--signatures", metavar="FILE",
                            help="maps: hit rates per loadstore site (ma-signature JSON)")
        parser.add_argument("--assumed-hits", metavar="H1,..,HN",
                            help="maps: hit rates for sites without any (default: a stride-1 stream from memory)")
        parser.add_argument("--call-overhead", type=float, default=None, metavar="SECONDS",
                            help="maps: seconds per annotated call (default: the profile's cpu.call_overhead_s, "
                                 "else 0)")
        parser.add_argument("--procs", default="nprocs", help="maps: the input that holds the process count")

    @classmethod
    def from_options(cls, options: argparse.Namespace, traces: TraceSet, machine: MachineProfile) -> MapsBackend:
        from .signature import load_signatures

        assumed = None
        text = getattr(options, "assumed_hits", None)
        if text:
            try:
                assumed = [float(h) for h in text.split(",")]
            except ValueError:
                raise BackendError(f"--assumed-hits {text!r}: expected comma-separated numbers") from None
        overhead = getattr(options, "call_overhead", None)
        if overhead is None:
            overhead = float(machine.cpu.get("call_overhead_s", 0.0))
        signatures = getattr(options, "signatures", None)
        return cls(overlap=getattr(options, "overlap", "sum"), procs=getattr(options, "procs", "nprocs"),
                   signatures=load_signatures(signatures, machine.levels) if signatures else None,
                   assumed_hits=assumed, call_overhead_s=overhead)

    def predict(self, model: ModelBuilder, machine: MachineProfile,
                parameters: Mapping[str, float] | None = None) -> MapsPrediction:
        if machine.bandwidth_fit is None:
            raise BackendError(f"maps backend: profile {machine.name!r} has no bandwidth_fit (run `ma machine fit`)")
        params = machine.bandwidth_fit.params()
        levels = machine.levels
        for path, rates in self.signatures.items():
            check_hit_rates(rates, levels, f"signature of site {path!r}")
        assumed_row = tuple(self.assumed_hits) if self.assumed_hits is not None else assumed_hit_rates(machine)
        check_hit_rates(assumed_row, levels, "assumed hit rates")
        parts: dict[str, dict[str, sympy.Expr]] = {}
        subroutines: dict[str, str] = {}
        used: dict[str, tuple[float, ...]] = {}
        assumed: list[str] = []
        notes: list[str] = []

        def add(term: Term, part: str, seconds: sympy.Expr) -> None:
            path = term.site.path
            subroutines[path] = term.subroutine
            site_parts = parts.setdefault(path, {})
            site_parts[part] = site_parts.get(part, sympy.Integer(0)) + seconds

        peak = sympy.Float(machine.peak_flops)
        overhead = sympy.Float(self.call_overhead_s)
        for term in model.model("flops", inline=True).terms:
            add(term, "compute", term.expr / peak + overhead * term.multiplier)
        bandwidth_cache: dict[tuple[float, ...], sympy.Expr] = {}
        for term in model.model("loadstore", inline=True).terms:
            path = term.site.path
            row = self.signatures.get(path) or model_hit_rates(model, term)
            if row is None:
                row = assumed_row
                assumed.append(path)
            row = tuple(float(h) for h in row)
            used[path] = row
            if row not in bandwidth_cache:
                bandwidth_cache[row] = bandwidth_expr(params, row) * sympy.Float(1e9)
            add(term, "memory", term.expr * WORD_BYTES / bandwidth_cache[row] + overhead * term.multiplier)
        self._communication(model, machine, add, notes)
        if assumed:
            notes.append(f"{len(assumed)} loadstore site(s) have no hit rates and used the assumed "
                         f"{_row_text(assumed_row)}: {', '.join(assumed)}")
        bound = {sympy.Symbol(k): v for k, v in (parameters or {}).items()}
        zero = sympy.Integer(0)
        sites = [SitePrediction(path, *(as_expr(p.get(name, zero)).subs(bound)
                                        for name in ("compute", "memory", "communication")))
                 for path, p in parts.items()]
        if self.overlap == "max":
            sites = overlap_blocks(sites)
        return MapsPrediction(self.NAME, machine.name, tuple(sites), dict(parameters or {}), tuple(notes),
                              subroutines=subroutines, hit_rates=used, assumed=tuple(assumed))

    def _communication(self, model: ModelBuilder, machine: MachineProfile, add: object, notes: list[str]) -> None:
        if machine.network is None:
            notes.append(f"profile {machine.name!r} has no network measurements: communication left at 0")
            return
        counts = {t.site.path: t for t in model.model("mpi_count", inline=True).terms}
        volumes = {t.site.path: t.expr for t in model.model("mpi_bytes", inline=True).terms}
        latency, bandwidth = machine.network.latency_s, machine.network.bandwidth_bytes_per_s
        for path, term in counts.items():
            seconds = network.site_seconds(term.site.type, term.expr, volumes.get(path, sympy.Integer(0)),
                                           self.procs, latency, bandwidth)
            add(term, "communication", seconds)  # type: ignore[operator]


def model_hit_rates(model: ModelBuilder, term: Term) -> tuple[float, ...] | None:
    """Hit rates the trace measured at this loadstore site (``ma run --counters valgrind --cache``), if any."""
    rates = getattr(term.site, "hit_rates", None)
    if rates is None:
        return None
    return tuple(float(h) for h in rates)


def overlap_blocks(sites: Sequence[SitePrediction]) -> list[SitePrediction]:
    """max(compute, memory) per block of sibling sites: memory stays, compute keeps only what sticks out.

    The block's compute C is spread over its sites in proportion, scaled to max(C - M, 0) / C, so the parts
    still add up to the block's time (M + max(C - M, 0) = max(C, M))."""
    blocks: dict[str, list[int]] = {}
    for i, site in enumerate(sites):
        blocks.setdefault(site.path.rpartition("/")[0], []).append(i)
    out = list(sites)
    for members in blocks.values():
        compute = sympy.Add(*(sites[i].compute for i in members))
        memory = sympy.Add(*(sites[i].memory for i in members))
        if compute == 0 or memory == 0:
            continue
        scale = sympy.Max(compute - memory, 0) / compute
        for i in members:
            s = sites[i]
            out[i] = SitePrediction(s.path, s.compute * scale, s.memory, s.communication)
    return out


def _row_text(row: Sequence[float]) -> str:
    return "h = (" + ", ".join(f"{h:.4g}" for h in row) + ")"
