"""The ``vector`` backend: the vector paper's X1E time model (Figure 4) for SIMD hosts and the X1E itself.

Each site's flops and loads/stores (the symbolic model) are timed by :func:`timing.loop_time` with the site's
MV score and AVL: from ``loops`` (site path -> :class:`VectorLoop`; a loop applies to the sites under it),
e.g. the trace's ``ma.vec_loop`` records (:func:`loops_from_trace`), or MV 0 (scalar) where nothing is
known. ``scenario`` picks the bandwidth (min, mixed, max); :meth:`VectorBackend.predict_scenarios` gives all
three. ``flop_time`` picks how flop time joins memory time (:mod:`.timing`: net of the flops the bandwidth's
own loop did, the default; Figure 4's sum; or their max), per loop: an annotated loop's flop and load/store
sites are timed together. The profile is the host's, from the MachineProfile given to ``predict`` (and, for
vectorised loops, the SIMD bandwidth curve ``simd`` when given: :mod:`.simd`), unless ``profile`` is set (e.g.
:data:`profile.CRAY_X1E`). A loop without a working set is placed by its asserted vector load/stores x 8 bytes
(each element touched once), so trace records, which carry no working set, still pick a level.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ma_core.errors import BackendError, MAError
from ma_core.trace_format import VEC_LOOP_GATHER_KEYS, VECTOR_LOOPS_KEY

from ..base import Backend, Prediction, SitePrediction
from .gathers import TracedCache, check_levels, cumulative, separate, traced_cache
from .profile import CRAY_X1E, SCENARIOS, VectorProfile, host_profile
from .simd import SimdBandwidth, for_profile
from .timing import FLOP_TIMES, LoopTime, loop_time, sparse_loop_time

if TYPE_CHECKING:
    import argparse

    import sympy

    from ma_post import ModelBuilder, TraceSet

    from ..machine.profile import MachineProfile

__all__ = ["CRAY_X1E", "FLOP_TIMES", "SCENARIOS", "LoopTime", "SimdBandwidth", "VectorBackend", "VectorLoop",
           "VectorProfile", "host_profile", "loop_time", "loops_from_trace"]


@dataclass(frozen=True)
class VectorLoop:
    """What is asserted about a loop: its MV score, and as expression texts in the model's variables (derived
    ones included: they are resolved through the model's definitions) or numbers, its AVL, vector load/stores
    and flops (per call) and the bytes it touches (its working set: where on the measured bandwidth curves it
    sits). A sparse row loop may assert its ``gathers`` (entries per call: each a value and an index streamed and
    a read of an array of ``gathered_bytes``), timed on the SIMD file's sparse-dot curve
    (:func:`timing.sparse_loop_time`; a vectorised loop's on the vectorised sparse-row curve where the file has it):
    where ``gather_hit_rates`` (the reads' cumulative h_1..h_n and 1.0, e.g. simulated for the index pattern) or,
    else, the signature run's cache counts (``traced_cache``, the gathers separated from the streams:
    :mod:`.gathers`) say they are served, else at the array's size (random indices).
    ``where`` is the annotation's FILE:LINE, for messages."""

    mv: int
    avl: str | float | None = None
    vloadstore: str | float | None = None
    vflops: str | float | None = None
    working_set: str | float | None = None
    stride: int = 1
    where: str = ""
    gathers: str | float | None = None
    gathered_bytes: str | float | None = None
    gather_hit_rates: tuple[float, ...] | None = None
    traced_cache: TracedCache | None = None

    def resolved(self, model: ModelBuilder, path: str = "") -> dict[str, sympy.Expr]:
        """The loop's expressions in the model's inputs only (derived variables replaced by their definitions
        visible at the site ``path``), by name; those not given are left out."""
        from ma_post import to_sympy
        from ma_post.sympy_expr import as_expr

        out = {}
        for name in ("avl", "vloadstore", "vflops", "working_set", "gathers", "gathered_bytes"):
            value = getattr(self, name)
            if value is None:
                continue
            try:
                expr = to_sympy(value) if isinstance(value, str) else as_expr(value)
            except MAError as exc:
                raise BackendError(f"{self.where or 'vector loop'}: {name} {value!r}: {exc}") from None
            out[name] = model.resolve(expr, path)
        return out


def loops_from_trace(ts: TraceSet) -> dict[str, VectorLoop]:
    """The ``ma.vec_loop`` records of a loaded run (rank files or merged trace; lowest rank first) as site
    path -> VectorLoop, with the gathers a record states and, where the run simulated caches (``ma run --counters
    valgrind --cache PROFILE``), the cache counts of the load/store sites under it (:func:`.gathers.traced_cache`,
    over every rank's calls)."""
    loops: dict[str, VectorLoop] = {}
    sums: dict[str, list[float]] = {}  # path -> the gathers and load/stores predicted over all calls and ranks
    for section in ts.optional(VECTOR_LOOPS_KEY):
        for index, record in enumerate(section.entries):
            where = f"{record['file']}:{record.get('line')}" if isinstance(record, dict) and record.get("file") else ""
            try:
                expr = record["expr"]
                gathers = (record.get("gathers") or {"expr": dict.fromkeys(VEC_LOOP_GATHER_KEYS)})["expr"]
                count, size = (_text(gathers[key]) for key in VEC_LOOP_GATHER_KEYS)
                loops.setdefault(str(record["path"]), VectorLoop(
                    int(record["mv"]), str(expr["avl"]), str(expr["vloadstore"]), str(expr["vflops"]), where=where,
                    gathers=count, gathered_bytes=size))
                if record.get("gathers") and record["gathers"].get("predicted_sum"):
                    total = sums.setdefault(str(record["path"]), [0.0, 0.0])
                    total[0] += float(record["gathers"]["predicted_sum"]["gathers"])
                    total[1] += float(record["predicted_sum"]["vloadstore"])
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                at = f" (ma.vec_loop at {where})" if where else ""
                raise BackendError(f"{section.source}: rank {section.rank}: vector_loops[{index}]{at}: bad record "
                                   f"({exc!s}); expected the layout of docs/vector-backend.md") from None
    for path, (gathers, loadstores) in sums.items():
        cache = traced_cache(ts, path, gathers, loadstores) if gathers > 0 else None
        if cache is not None:
            loops[path] = replace(loops[path], traced_cache=cache)
    return loops


def _text(value: object) -> str | None:
    return None if value is None else str(value)


class VectorBackend(Backend):
    NAME = "vector"
    DESCRIPTION = "vector paper (Cray X1E) Tv/Ts model: vector/scalar rates by MV score, bandwidth scaled by AVL"

    def __init__(self, loops: Mapping[str, VectorLoop] | None = None, scenario: str = "mixed",
                 profile: VectorProfile | None = None, simd: SimdBandwidth | None = None,
                 flop_time: str = "net") -> None:
        if scenario not in SCENARIOS:
            raise BackendError(f"unknown bandwidth scenario {scenario!r}: expected one of {', '.join(SCENARIOS)}")
        if flop_time not in FLOP_TIMES:
            raise BackendError(f"unknown flop time form {flop_time!r}: expected one of {', '.join(FLOP_TIMES)}")
        self.flop_time = flop_time
        self.loops = dict(loops or {})
        self.scenario = scenario
        self.profile = profile
        self.simd = simd

    @classmethod
    def add_arguments(cls, parser: argparse._ActionsContainer) -> None:
        parser.add_argument("--scenario", choices=SCENARIOS, default="mixed",
                            help="vector: the bandwidth scenario of the main prediction (all three are printed)")
        parser.add_argument("--vector-profile", choices=("host", "x1e"), default="host",
                            help="vector: the host's rates from the machine profile, or the Cray X1E's")
        parser.add_argument("--simd-bandwidth", default=None, metavar="FILE",
                            help="vector: the host's SIMD bandwidth curve (default: PROFILE.simd.json beside "
                                 "--machine, when there is one)")
        parser.add_argument("--flop-time", choices=FLOP_TIMES, default="net",
                            help="vector: flop time beyond the flops the bandwidth's own loop did (net), added as "
                                 "in the paper's Figure 4 (sum), or overlapped with memory time (max)")

    @classmethod
    def from_options(cls, options: argparse.Namespace, traces: TraceSet, machine: MachineProfile) -> VectorBackend:
        """Loops from the run's ``ma.vec_loop`` records; ``--scenario``, ``--vector-profile``, ``--simd-bandwidth``,
        ``--flop-time``."""
        profile = CRAY_X1E if getattr(options, "vector_profile", "host") == "x1e" else None
        path = getattr(options, "simd_bandwidth", None)
        simd = SimdBandwidth.load(path) if path else for_profile(getattr(options, "machine", None))
        return cls(loops_from_trace(traces), getattr(options, "scenario", "mixed"), profile, simd,
                   getattr(options, "flop_time", "net"))

    def variants(self, model: ModelBuilder, machine: MachineProfile,
                 parameters: Mapping[str, float] | None = None) -> dict[str, Prediction]:
        """The prediction under each bandwidth scenario (min, mixed, max)."""
        return {f"scenario {name}": prediction
                for name, prediction in self.predict_scenarios(model, machine, parameters).items()}

    def loop_of(self, path: str) -> tuple[str, VectorLoop]:
        """The innermost asserted loop enclosing the site ``path`` and its path (MV 0 when none)."""
        best: tuple[str, VectorLoop] | None = None
        for prefix, loop in self.loops.items():
            if (path == prefix or path.startswith(prefix + "/") or not prefix) and (
                    best is None or len(prefix) > len(best[0])):
                best = (prefix, loop)
        return best or ("", VectorLoop(0))

    def predict(self, model: ModelBuilder, machine: MachineProfile,
                parameters: Mapping[str, float] | None = None) -> Prediction:
        import sympy

        from ma_post.sympy_expr import as_expr

        bound = {sympy.Symbol(k): v for k, v in (parameters or {}).items()}
        flops = dict((site.path, expr) for site, expr in model.model("flops", inline=True).by_site())
        words = dict((site.path, expr) for site, expr in model.model("loadstore", inline=True).by_site())
        profiles: dict[tuple[float | None, int], VectorProfile] = {}
        notes: list[str] = []
        # a loop's sites (an annotated loop's flop and load/store sites are apart) are timed together: the flop
        # time net of the bandwidth loop's flops, or overlapped, is the loop's, shared by its sites' flops
        loops: dict[str, tuple[VectorLoop, dict[str, sympy.Expr], VectorProfile, list[str]]] = {}
        for path in sorted(set(flops) | set(words)):
            prefix, loop = self.loop_of(path)
            if prefix in loops:
                loops[prefix][3].append(path)
                continue
            exprs = loop.resolved(model, prefix)
            working_set = self._working_set(self._bytes(exprs), bound, loop, notes)
            key = (working_set, loop.stride)
            if key not in profiles:
                profiles[key] = self.profile or host_profile(machine, working_set=working_set, stride=loop.stride,
                                                             simd=self.simd)
            loops[prefix if prefix else path] = (loop, exprs, profiles[key], [path])
        sites: list[SitePrediction] = []
        for loop, exprs, profile, paths in loops.values():
            zero = sympy.Integer(0)
            site_flops = [as_expr(flops.get(path, zero)) for path in paths]
            all_flops, all_words = sum(site_flops, zero), sum((as_expr(words.get(p, zero)) for p in paths), zero)
            gathers = "gathers" in exprs
            total = (sparse_loop_time(all_flops, all_words, exprs["gathers"],
                                      self._entry_seconds(machine, loop, exprs, bound, notes), loop.mv,
                                      exprs.get("avl"),
                                      profile, self.scenario, self.flop_time) if gathers else
                     loop_time(all_flops, all_words, loop.mv, exprs.get("avl"), profile, self.scenario, self.flop_time))
            for path, site_flop in zip(paths, site_flops, strict=True):
                site_words = as_expr(words.get(path, zero))
                memory = (zero if site_words == 0 else total.memory * site_words / all_words) if gathers else \
                    loop_time(0, site_words, loop.mv, exprs.get("avl"), profile, self.scenario).memory
                compute = zero if site_flop == 0 else total.compute * site_flop / all_flops
                sites.append(SitePrediction(path, as_expr(compute).subs(bound), as_expr(memory).subs(bound), zero))
        sites.sort(key=lambda site: site.path)
        bandwidths = sorted({p.bandwidth(self.scenario, vector) for p in profiles.values() for vector in (False, True)})
        name = next(iter(profiles.values())).name if profiles else (self.profile.name if self.profile else
                                                                     f"{machine.name}-vector")
        notes.insert(0, f"vector profile {name!r}, bandwidth scenario {self.scenario!r} "
                        f"({', '.join(f'{b:.4g}' for b in bandwidths)} GB/s), flop time {self.flop_time!r}; "
                        "communication is not modelled")
        return Prediction(self.NAME, name, tuple(sites), dict(parameters or {}), tuple(dict.fromkeys(notes)))

    def _entry_seconds(self, machine: MachineProfile, loop: VectorLoop, exprs: Mapping[str, sympy.Expr],
                       bound: Mapping[sympy.Symbol, float], notes: list[str]) -> float:
        """Seconds per asserted gather (sparse-row entry) on the SIMD file's sparse-row curve for the loop's build
        (:func:`.bandwidth.sparse_row_curve`): by level where hit rates are given or traced, else at the gathered
        array's size; ``notes`` say which."""
        from .bandwidth import gather_seconds, gather_seconds_by_level, sparse_row_curve

        where = loop.where or "a vector loop"
        if self.simd is None:
            raise BackendError(f"{where}: its gathers are timed on the SIMD bandwidth file's sparse-dot curve: give "
                               "one (--simd-bandwidth, or PROFILE.simd.json beside the machine profile)")
        name, curve = sparse_row_curve(self.simd, loop.mv >= 2)
        if loop.mv >= 2 and name != "sparse_rows_vectorised":
            notes.append(f"{where}: a vectorised sparse row loop on the sparse-dot curve (a scalar loop's): the SIMD "
                         "file has no sparse_rows_vectorised curve (a file older than version 4: measure it again)")
        rates, source = self.gather_hit_rates(machine, loop)
        if rates is not None:
            notes.append(f"{where}: gathers on the {name} curve by level at hit rates {cumulative(rates)} ({source})")
            return gather_seconds_by_level(machine, self.simd, 1.0, rates, curve=curve)
        size = exprs["gathered_bytes"].subs(bound) if "gathered_bytes" in exprs else None
        if size is None or not size.is_number:
            raise BackendError(f"{where}: gathers without hit rates need gathered_bytes, a number at the "
                               f"given parameters (got {size})")
        notes.append(f"{where}: gathers on the {name} curve at the gathered array's {float(size):.4g} bytes (random "
                     "indices assumed: no hit rates given or traced; a signature run, ma run --counters valgrind "
                     "--cache PROFILE, measures them)")
        return gather_seconds(self.simd, 1.0, float(size), curve=curve)

    @staticmethod
    def gather_hit_rates(machine: MachineProfile, loop: VectorLoop) -> tuple[tuple[float, ...] | None, str]:
        """The gathered reads' hit rates and where they come from: given, or the signature run's, separated."""
        if loop.gather_hit_rates is not None:
            return tuple(loop.gather_hit_rates), "given"
        if loop.traced_cache is None:
            return None, ""
        check_levels(loop.traced_cache, len(machine.caches), machine.name)
        rates = separate(loop.traced_cache, machine.caches[0].line_bytes)
        return rates, (f"the signature run's simulated caches at {', '.join(loop.traced_cache.sites)}, the streams' "
                       "lines separated")

    @staticmethod
    def _bytes(exprs: Mapping[str, sympy.Expr]) -> sympy.Expr | None:
        """The loop's working set; without one, its asserted vector load/stores x the word (each element once)."""
        if "working_set" in exprs:
            return exprs["working_set"]
        return exprs["vloadstore"] * 8 if "vloadstore" in exprs else None

    @staticmethod
    def _working_set(expr: sympy.Expr | None, bound: Mapping[sympy.Symbol, float], loop: VectorLoop,
                     notes: list[str]) -> float | None:
        """The loop's working set in bytes at the given parameters; None (main memory) when it has none or it
        stays symbolic (the measured curves are numbers, not functions of the inputs)."""
        if expr is None:
            return None
        value = expr.subs(bound)
        if not value.is_number:
            notes.append(f"{loop.where or 'a vector loop'}: working set {expr} is not a number at the given "
                         "parameters: its bandwidth is main memory's")
            return None
        return float(value)

    def predict_scenarios(self, model: ModelBuilder, machine: MachineProfile,
                          parameters: Mapping[str, float] | None = None) -> dict[str, Prediction]:
        """One prediction per bandwidth scenario (min, mixed, max)."""
        return {s: VectorBackend(self.loops, s, self.profile, self.simd, self.flop_time).predict(model, machine,
                                                                                                parameters)
                for s in SCENARIOS}
