"""The ``vector`` backend: the vector paper's X1E time model (Figure 4) for SIMD hosts and the X1E itself.

Each site's flops and loads/stores (the symbolic model) are timed by :func:`timing.loop_time` with the site's
MV score and AVL: from ``loops`` (site path -> :class:`VectorLoop`; a loop applies to the sites under it),
e.g. the trace's ``ma.vec_loop`` records (:func:`loops_from_trace`), or MV 0 (scalar) where nothing is
known. ``scenario`` picks the bandwidth (min, mixed, max); :meth:`VectorBackend.predict_scenarios` gives all
three. The profile is the host's, from the MachineProfile given to ``predict``, unless ``profile`` is set
(e.g. :data:`profile.CRAY_X1E`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ma.errors import BackendError
from ma.trace_format import VECTOR_LOOPS_KEY

from ..base import Backend, Prediction, SitePrediction
from .profile import CRAY_X1E, SCENARIOS, VectorProfile, host_profile
from .timing import LoopTime, loop_time

if TYPE_CHECKING:
    import argparse

    from ma_post import ModelBuilder, TraceSet

    from ..machine.profile import MachineProfile

__all__ = ["CRAY_X1E", "SCENARIOS", "LoopTime", "VectorBackend", "VectorLoop", "VectorProfile", "host_profile",
           "loop_time", "loops_from_trace"]


@dataclass(frozen=True)
class VectorLoop:
    """What is asserted about a loop: its MV score and AVL (an expression text in the model's inputs, or a number)."""

    mv: int
    avl: str | float | None = None


def loops_from_trace(ts: TraceSet) -> dict[str, VectorLoop]:
    """The ``ma.vec_loop`` records of a loaded run (rank files or merged trace; lowest rank first) as site
    path -> VectorLoop."""
    loops: dict[str, VectorLoop] = {}
    for section in ts.optional(VECTOR_LOOPS_KEY):
        for record in section.entries:
            try:
                loops.setdefault(str(record["path"]), VectorLoop(int(record["mv"]), str(record["expr"]["avl"])))
            except (KeyError, TypeError, ValueError) as exc:
                raise BackendError(f"{section.source}: rank {section.rank}: bad vector_loops record ({exc!s}); "
                                   "expected the layout of docs/vector-backend.md") from None
    return loops


class VectorBackend(Backend):
    NAME = "vector"
    DESCRIPTION = "vector paper (Cray X1E) Tv/Ts model: vector/scalar rates by MV score, bandwidth scaled by AVL"

    def __init__(self, loops: Mapping[str, VectorLoop] | None = None, scenario: str = "mixed",
                 profile: VectorProfile | None = None) -> None:
        if scenario not in SCENARIOS:
            raise BackendError(f"unknown bandwidth scenario {scenario!r}: expected one of {', '.join(SCENARIOS)}")
        self.loops = dict(loops or {})
        self.scenario = scenario
        self.profile = profile

    @classmethod
    def add_arguments(cls, parser: argparse._ActionsContainer) -> None:
        parser.add_argument("--scenario", choices=SCENARIOS, default="mixed",
                            help="vector: the bandwidth scenario of the main prediction (all three are printed)")
        parser.add_argument("--vector-profile", choices=("host", "x1e"), default="host",
                            help="vector: the host's rates from the machine profile, or the Cray X1E's")

    @classmethod
    def from_options(cls, options: argparse.Namespace, traces: TraceSet, machine: MachineProfile) -> VectorBackend:
        """Loops from the run's ``ma.vec_loop`` records; ``--scenario`` and ``--vector-profile``."""
        profile = CRAY_X1E if getattr(options, "vector_profile", "host") == "x1e" else None
        return cls(loops_from_trace(traces), getattr(options, "scenario", "mixed"), profile)

    def variants(self, model: ModelBuilder, machine: MachineProfile,
                 parameters: Mapping[str, float] | None = None) -> dict[str, Prediction]:
        """The prediction under each bandwidth scenario (min, mixed, max)."""
        return {f"scenario {name}": prediction
                for name, prediction in self.predict_scenarios(model, machine, parameters).items()}

    def loop_of(self, path: str) -> VectorLoop:
        """The innermost asserted loop enclosing the site ``path`` (MV 0 when none)."""
        best: tuple[int, VectorLoop] | None = None
        for prefix, loop in self.loops.items():
            if (path == prefix or path.startswith(prefix + "/") or not prefix) and (
                    best is None or len(prefix) > best[0]):
                best = (len(prefix), loop)
        return best[1] if best else VectorLoop(0)

    def predict(self, model: ModelBuilder, machine: MachineProfile,
                parameters: Mapping[str, float] | None = None) -> Prediction:
        import sympy

        from ma_post import to_sympy
        from ma_post.sympy_expr import as_expr

        profile = self.profile or host_profile(machine)
        bound = {sympy.Symbol(k): v for k, v in (parameters or {}).items()}
        flops = dict((site.path, expr) for site, expr in model.model("flops", inline=True).by_site())
        words = dict((site.path, expr) for site, expr in model.model("loadstore", inline=True).by_site())
        sites = []
        for path in sorted(set(flops) | set(words)):
            loop = self.loop_of(path)
            avl = to_sympy(loop.avl) if isinstance(loop.avl, str) else loop.avl
            time = loop_time(flops.get(path, sympy.Integer(0)), words.get(path, sympy.Integer(0)), loop.mv, avl,
                             profile, self.scenario)
            sites.append(SitePrediction(path, as_expr(time.compute).subs(bound),
                                        as_expr(time.memory).subs(bound), sympy.Integer(0)))
        notes = (f"vector profile {profile.name!r}, bandwidth scenario {self.scenario!r} "
                 f"({profile.bandwidth(self.scenario)} GB/s); communication is not modelled",)
        return Prediction(self.NAME, profile.name, tuple(sites), dict(parameters or {}), notes)

    def predict_scenarios(self, model: ModelBuilder, machine: MachineProfile,
                          parameters: Mapping[str, float] | None = None) -> dict[str, Prediction]:
        """One prediction per bandwidth scenario (min, mixed, max)."""
        return {s: VectorBackend(self.loops, s, self.profile).predict(model, machine, parameters) for s in SCENARIOS}
