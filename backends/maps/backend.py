"""The ``maps`` backend: the PMaC convolution of an application signature with a machine profile.

Per annotation site, per rank, four parts (perc_framework.txt Section 2; convolution.txt Eq. 1-2; ga_bandwidth.txt
Section 4):

- memory:        loads/stores x 8 B / F(h), F the profile's fitted Equation 1 at the site's cumulative hit
                 rates h_1..h_n (its signature; assumed rates where it has none, and the prediction says so);
                 a flop site without a loadstore expression in its block: the cache lines its signature run
                 saw served beyond L1 per flop x the model's flops, at a stream's bandwidth from each level
                 (:mod:`.traffic`; the profile's vector stream curve for a Python program's, :mod:`.streams`;
                 the prediction's ``measured_traffic`` and notes name those sites);
- node:          with the profile's multicore block, a site's time in main memory (Equation 1's share) / r(k),
                 a core's memory bandwidth with the k = min(nprocs, ranks per node, cores) ranks of its node
                 reading at once over alone (:mod:`.node`);
- compute:       flops / the compute rate: the FMA peak for a compiled program, the NumPy rate of the runtime
                 part (``cpython.python_flops``) for a Python one;
- communication: per MPI site, the Hockney or collective-algorithm cost of :mod:`.network`, with up to one
                 rank per core each message's wait for a later partner (``network.synchronised``); a Python
                 program's messages also what the runtime part says one costs beyond L and that wait
                 (:meth:`backends.cpython.runtime.PythonRuntime.message_extra`);
- runtime:       the CPython interpreter's seconds at the site (calls into compiled code, subscripts, annotated
                 sites: :mod:`backends.cpython.runtime`), only where the trace's language includes Python; a C
                 or Fortran program's is 0;
- row loops:     a kernel a signature states as a CSR row loop (``csr_rows``) costs its rows' add chains on the
                 profile's CSR curve (in L1) plus its memory time beyond L1 hits (:mod:`.rowchain`), with the net
                 and auto forms; one it states as a single dependent sum (``add_chains``: a compiled dot product)
                 the same with its terms at the profile's add chain (``cpu.add_chain_s``).

Compute and memory of a kernel are added with its flop time net of the one flop per word that F(h)'s probe
did (``overlap="net"``: :mod:`.nettime`), added as printed (``overlap="sum"``, Eq. 1's sum), or
a block's (the flop and loadstore sites of one loop body, a loadstore region nested in a flop region with it)
overlapped (``overlap="max"``: the block costs max(compute, memory), the memory-bound rule of Eq. 2); the
runtime part is never overlapped. ``overlap="auto"`` (the default) is net where flops are priced at the FMA peak
(a rate with no memory access in it) and sum where they are priced at the NumPy rate (a ufunc's rate on L1 data,
which holds its own loads and stores as F(h) holds its adds: :func:`combination`). Everything stays a SymPy
expression of the model's inputs that ``parameters`` leaves unbound.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import sympy

from ma_core.errors import BackendError
from ma_post.sympy_expr import as_expr

from ..base import PARTS, Backend, Prediction, SitePrediction
from ..cpython import runtime as cpython
from ..signature import Signatures, check_hit_rates, site_hit_rates, site_lines_per_flop
from . import network
from .fallback_rates import assumed_hit_rates, given_hit_rates
from .nettime import KERNEL_TYPES, PROBE_FLOPS_PER_WORD, kernel_of, net_of_probe_flops, shrink_compute
from .node import NodeShare
from .rowchain import ENTRY_FLOPS, chain_seconds, price_row_loops
from .streams import STREAMS, line_bandwidths
from .traffic import block_of, kernels_without_loadstore, seconds_per_flop

if TYPE_CHECKING:
    import argparse

    from ma_post import ModelBuilder, TraceSet

    from ..machine.profile import MachineProfile

WORD_BYTES = 8
OVERLAPS = ("auto", "net", "sum", "max")


@dataclass(frozen=True)
class MapsPrediction(Prediction):
    """A :class:`Prediction` with what the maps backend knows besides: the hit rates each loadstore site was
    convolved with, and which of them were assumed."""

    hit_rates: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    assumed: tuple[str, ...] = ()  # loadstore sites without a signature
    stated: tuple[str, ...] = ()  # loadstore sites at the hit rates their annotation states (hits=), not measured
    assumed_calls: tuple[str, ...] = ()  # sites charged one call per execution for want of measured calls
    measured_traffic: Mapping[str, float] = field(default_factory=dict)  # flop site -> memory seconds per flop
    # latencies a rank's messages pay (a n over the MPI sites) and its work (compute + memory + runtime, one core's)
    # per one
    messages: sympy.Expr = field(default_factory=lambda: sympy.Integer(0))
    work_per_message: sympy.Expr = field(default_factory=lambda: sympy.Integer(0))
    # per kind of a signature's figures (backends.signature.KINDS), the sites of this run it gave them for
    signature_coverage: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def report_fields(self) -> dict[str, Any]:
        return {"assumed_hit_rates": list(self.assumed), "stated_hit_rates": list(self.stated),
                "signature_sites": {kind: list(paths) for kind, paths in self.signature_coverage.items()}}

class MapsBackend(Backend):
    NAME = "maps"
    DESCRIPTION = ("PMaC convolution: hit rates x fitted bandwidth (Eq. 1), flops at the core's rate, calls into "
                   "compiled code, Hockney/collective MPI")

    def __init__(self, *, overlap: str = "auto", procs: str = "nprocs",
                 signatures: Mapping[str, Sequence[float]] | Signatures | None = None,
                 assumed_hits: Sequence[float] | None = None, call_overhead_s: float | None = None,
                 python_flops: float | None = None, cores: int | None = None,
                 annotation_s: Mapping[str, float] | None = None, streams: str = "vector",
                 python_exchange: bool = True, subscript_s: float | None = None,
                 ranks_per_node: int | None = None) -> None:
        """``call_overhead_s``, ``python_flops``, ``annotation_s``, ``subscript_s`` and ``python_exchange`` set the
        runtime part of a Python program (:class:`backends.cpython.runtime.Overrides`: None takes the profile's
        figure, so a what-if on it takes effect; ``python_exchange`` False prices its messages at L only); a
        compiled program has no runtime part and they do not apply to it.
        ``cores``: the cores the ranks share (None: the profile's ``host.cpus``; 0: no time-sharing).
        ``streams``: the bandwidth of a Python kernel's lines from each level (:mod:`.streams`).
        ``ranks_per_node``: the ranks that share a node's memory (None: min(nprocs, cores); :mod:`.node`)."""
        if overlap not in OVERLAPS:
            raise BackendError(f"maps backend: overlap must be one of {', '.join(OVERLAPS)}, got {overlap!r}")
        if cores is not None and cores < 0:
            raise BackendError(f"maps backend: cores must be >= 0, got {cores}")
        if ranks_per_node is not None and ranks_per_node < 1:
            raise BackendError(f"maps backend: ranks per node must be >= 1, got {ranks_per_node}")
        self.ranks_per_node = ranks_per_node
        self.runtime_overrides = cpython.Overrides(call_overhead_s, python_flops,
                                                   None if annotation_s is None else dict(annotation_s), subscript_s,
                                                   python_exchange)
        if streams not in STREAMS:
            raise BackendError(f"maps backend: streams must be one of {', '.join(STREAMS)}, got {streams!r}")
        self.overlap = overlap
        self.streams = streams
        self.procs = sympy.Symbol(procs)
        given = signatures if isinstance(signatures, Signatures) else Signatures(
            {path: tuple(rates) for path, rates in (signatures or {}).items()})
        self.signature = given
        self.signatures = {k: tuple(v) for k, v in given.hit_rates.items()}
        self.signature_counts = cpython.Counts(dict(given.c_calls), dict(given.subscripts))
        self.signature_lines = {k: tuple(v) for k, v in given.lines_per_flop.items()}
        self.signature_rows = dict(given.csr_rows)
        self.signature_chains = dict(given.add_chains)
        self.assumed_hits = None if assumed_hits is None else tuple(assumed_hits)
        self.cores = cores

    @classmethod
    def add_arguments(cls, parser: argparse._ActionsContainer) -> None:
        parser.add_argument("--overlap", choices=OVERLAPS, default="auto",
                            help="maps: compute and memory added with the flop time net of the flops F(h)'s probe "
                                 "did, one per word (net), added as in Eq. 1 (sum), or overlapped (max); auto: net "
                                 "for flops at the FMA peak, sum for flops at the NumPy rate")
        parser.add_argument("--signatures", metavar="FILE",
                            help="maps: hit rates and calls per execution per site (ma-signature JSON)")
        parser.add_argument("--assumed-hits", metavar="H1,..,HN",
                            help="maps: hit rates for sites without any (default: a stride-1 stream from memory)")
        cpython.add_arguments(parser, "maps: ")
        parser.add_argument("--streams", choices=STREAMS, default="vector",
                            help="maps: a Python kernel's lines beyond L1 at the profile's vector stream curve "
                                 "(memory.vector_streams; vector) or at Equation 1's scalar-load stream (eq1)")
        parser.add_argument("--procs", default="nprocs", help="maps: the input that holds the process count")
        parser.add_argument("--cores", type=int, default=None,
                            help="maps: cores the ranks share; more ranks than cores time-share them (default: the "
                                 "profile's host.cpus; 0: never)")
        parser.add_argument("--ranks-per-node", type=int, default=None, metavar="R",
                            help="maps: ranks sharing a node's memory bandwidth, priced by the profile's multicore "
                                 "block (default: min(nprocs, cores))")

    @classmethod
    def from_options(cls, options: argparse.Namespace, traces: TraceSet, machine: MachineProfile) -> MapsBackend:
        from ..signature import load_signature_file

        assumed = None
        text = getattr(options, "assumed_hits", None)
        if text:
            try:
                assumed = [float(h) for h in text.split(",")]
            except ValueError:
                raise BackendError(f"--assumed-hits {text!r}: expected comma-separated numbers") from None
        signatures = getattr(options, "signatures", None)
        runtime = cpython.Overrides.from_options(options)
        return cls(overlap=getattr(options, "overlap", "auto"), procs=getattr(options, "procs", "nprocs"),
                   signatures=load_signature_file(signatures, machine.levels) if signatures else None,
                   assumed_hits=assumed, call_overhead_s=runtime.call_overhead_s, python_flops=runtime.python_flops,
                   cores=getattr(options, "cores", None), annotation_s=runtime.annotation_s,
                   streams=getattr(options, "streams", "vector"), python_exchange=runtime.exchange,
                   subscript_s=runtime.subscript_s, ranks_per_node=getattr(options, "ranks_per_node", None))

    def runtime(self, model: ModelBuilder, machine: MachineProfile) -> cpython.PythonRuntime | None:
        """The runtime part of the traced program: the CPython interpreter's where its language includes Python
        (priced with the profile's ``cpython`` section and this backend's overrides), none for a compiled one."""
        if not cpython.applies(model.ts):
            return None
        return cpython.PythonRuntime(machine.cpython, machine.name, self.runtime_overrides, self.signature_counts)

    def compute_rate(self, runtime: cpython.PythonRuntime | None, machine: MachineProfile) -> tuple[float, str]:
        """Flop/s of the program's sites and what it is: a Python program's flops run in NumPy/SciPy kernels
        (the runtime part's ``python_flops``), a compiled program's at the FMA peak."""
        rate = runtime.python_flops if runtime is not None else None
        if rate:
            return rate, "python_flops"
        return machine.peak_flops, "peak_flops"

    def predict(self, model: ModelBuilder, machine: MachineProfile,
                parameters: Mapping[str, float] | None = None) -> MapsPrediction:
        if machine.bandwidth_fit is None:
            raise BackendError(f"maps backend: profile {machine.name!r} has no bandwidth_fit (run `ma machine fit`)")
        params = machine.bandwidth_fit.params
        levels = machine.levels
        for path, rates in self.signatures.items():
            check_hit_rates(rates, levels, f"signature of site {path!r}")
        for path, shared_rows in self.signature.shared_hit_rates.items():
            for share, rates in shared_rows:
                check_hit_rates(rates, levels, f"signature of site {path!r}, the last cache shared by {share:g}")
        assumed_row = tuple(self.assumed_hits) if self.assumed_hits is not None else assumed_hit_rates(machine)
        check_hit_rates(assumed_row, levels, "assumed hit rates")
        parts: dict[str, dict[str, sympy.Expr]] = {}
        subroutines: dict[str, str] = {}
        used: dict[str, tuple[float, ...]] = {}
        assumed: list[str] = []
        notes: list[str] = []

        def add(path: str, subroutine: str, part: str, seconds: sympy.Expr) -> None:
            subroutines[path] = subroutine
            site_parts = parts.setdefault(path, {})
            site_parts[part] = site_parts.get(part, sympy.Integer(0)) + seconds

        runtime = self.runtime(model, machine)
        rate, rate_name = self.compute_rate(runtime, machine)
        if rate_name == "peak_flops" and runtime is not None:
            notes.append(f"profile {machine.name!r} has no cpython.python_flops: a Python program's flops priced at "
                         "the FMA peak")
        flop_rate = sympy.Float(rate)
        for term in model.model("flops", inline=True).terms:
            add(term.site.path, term.subroutine, "compute", term.expr / flop_rate)
        node = NodeShare.of(machine, self.procs if self.procs.name in model.ts.variable_names() else None,
                            self.ranks_per_node, self._cores(machine))
        notes += node.notes
        per_byte_cache: dict[tuple[float, ...], sympy.Expr] = {}
        words: dict[str, sympy.Expr] = {}
        given, stated, on_share = given_hit_rates(model.ts), [], []
        for term in model.model("loadstore", inline=True).terms:
            path = term.site.path
            row = self.signatures.get(path)
            if row is None and (row := site_hit_rates(term.site)) is not None and len(row) != levels:
                raise BackendError(f"hit rates of site {path!r}: the trace's cache simulation had {len(row) - 1} "
                                   f"level(s), profile {machine.name!r} has {levels - 1} (measure them on its "
                                   "hierarchy: ma run --counters valgrind --cache PROFILE)")
            if row is None and path in given:
                row = given[path]
                check_hit_rates(row, levels, f"hits of ma.loadstore at site {path!r} (profile {machine.name!r})")
                stated.append(path)
            if row is None:
                row = assumed_row
                assumed.append(path)
            row = tuple(float(h) for h in row)
            used[path] = row
            words[path] = term.expr
            shared = self.signature.shared_hit_rates.get(path, ()) if path in self.signatures else ()
            if shared:
                on_share.append(path)
                per_byte = node.seconds_per_byte(params, row, shared)
            else:
                if row not in per_byte_cache:
                    per_byte_cache[row] = node.seconds_per_byte(params, row)
                per_byte = per_byte_cache[row]
            add(path, term.subroutine, "memory", term.expr * WORD_BYTES * per_byte)
        traffic = self._measured_traffic(model, machine, add)
        if traffic:
            notes += line_bandwidths(machine, runtime is not None, self.streams)[1]
            notes.append(f"{len(traffic)} flop site(s) without a loadstore expression: memory from the cache lines "
                         f"their signature run saw served beyond L1 per flop: {', '.join(traffic)}")
        charges = runtime.charges(model) if runtime is not None else cpython.Charges()
        for charge in charges.sites:
            add(charge.path, charge.subroutine, "runtime", charge.seconds)
        work = sympy.Add(*(p.get(name, sympy.Integer(0)) for p in parts.values()
                           for name in ("compute", "memory", "runtime")))
        messages = self._communication(model, machine, add, notes, work, runtime)
        if assumed:
            notes.append(f"{len(assumed)} loadstore site(s) have no hit rates and used the assumed "
                         f"{_row_text(assumed_row)}: {', '.join(assumed)}")
        if on_share:
            notes.append(f"{len(on_share)} loadstore site(s) priced on their share of the last cache, k = "
                         f"{node.sharing} ranks sharing it, between the signature's hit rates of one rank alone and "
                         f"with the last cache shared (shared_hit_rates): {', '.join(on_share)}")
        if stated:
            notes.append(f"{len(stated)} loadstore site(s) used the hit rates their annotation states (ma.loadstore "
                         f"hits=), assumed, not measured: {', '.join(stated)}")
        coverage = self.signature.coverage(site.path for site in model.ts.walk())
        notes += self._signature_notes(model, coverage)
        notes += charges.notes
        if runtime is None and self.runtime_overrides != cpython.Overrides():
            notes.append(f"the trace's program is in {model.ts.language!r}, not Python: the runtime part's options "
                         "(call, subscript and annotation costs, NumPy rate, Python exchange) do not apply")
        share = self._time_share(model, machine, notes)
        bound = {sympy.Symbol(k): sympy.Integer(int(v)) if float(v).is_integer() else v  # exact, as in evaluate
                 for k, v in (parameters or {}).items()}
        zero = sympy.Integer(0)
        sites = [SitePrediction(path, *(as_expr(p.get(name, zero) * (share if name != "communication" else 1))
                                        .subs(bound) for name in PARTS))
                 for path, p in parts.items()]
        overlap = combination(self.overlap, rate_name)
        types = {s.path: s.type for s in model.ts.walk()}
        row_loops: set[str] = set()
        if (self.signature_rows or self.signature_chains) and self.overlap in ("auto", "net"):
            sites, row_loops = self._row_loops(model, machine, sites, flop_rate, share, bound, notes, words)
        if overlap == "max":
            sites = overlap_blocks(sites, model)
        elif overlap == "net":
            probe = {path: as_expr(w * sympy.Float(PROBE_FLOPS_PER_WORD) / flop_rate * share).subs(bound)
                     for path, w in words.items() if kernel_of(types, path) not in row_loops}
            sites = net_of_probe_flops(sites, types, probe)
        return MapsPrediction(self.NAME, machine.name, tuple(sites), dict(parameters or {}), tuple(notes),
                              subroutines=subroutines, hit_rates=used, assumed=tuple(assumed), stated=tuple(stated),
                              assumed_calls=tuple(charges.assumed_calls), measured_traffic=traffic,
                              signature_coverage={k: tuple(v) for k, v in coverage.items()},
                              messages=as_expr(messages).subs(bound),
                              work_per_message=as_expr(work / sympy.Max(messages, 1)).subs(bound))

    def _measured_traffic(self, model: ModelBuilder, machine: MachineProfile,
                          add: Callable[[str, str, str, sympy.Expr], None]) -> dict[str, float]:
        """Memory of the flop sites no loadstore expression prices (:mod:`.traffic`): the model's flops x the
        seconds per flop of the lines the signature (a file's ``lines_per_flop``, else the trace's cache
        simulation) saw served beyond L1. Returns site path -> seconds per flop, for the sites that had it."""
        flop_terms = model.model("flops", inline=True).terms
        loadstore = [t.site.path for t in model.model("loadstore", inline=True).terms]
        types = {site.path: site.type for site in model.ts.walk()}
        bandwidths = line_bandwidths(machine, cpython.applies(model.ts), self.streams)[0]
        unpriced = kernels_without_loadstore(types, loadstore)
        out: dict[str, float] = {}
        for term in flop_terms:
            path = term.site.path
            if path not in unpriced or not bandwidths:
                continue
            lines = self.signature_lines.get(path) or site_lines_per_flop(term.site)
            if lines is None:
                continue
            if len(lines) != machine.levels:
                raise BackendError(f"lines per flop of site {path!r}: {len(lines)} levels, profile "
                                   f"{machine.name!r} has {machine.levels}")
            out[path] = seconds_per_flop(lines, machine.caches[0].line_bytes, bandwidths)
            add(path, term.subroutine, "memory", term.expr * sympy.Float(out[path]))
        return out

    def _row_loops(self, model: ModelBuilder, machine: MachineProfile, sites: list[SitePrediction],
                   flop_rate: sympy.Expr, share: sympy.Expr,
                   bound: Mapping[sympy.Symbol, object], notes: list[str], words: Mapping[str, sympy.Expr]
                   ) -> tuple[list[SitePrediction], set[str]]:
        """The kernels the signature states as CSR row loops or add chains, priced by :mod:`.rowchain`; returns the
        sites and the kernels' paths (none of a kind without its figure in the profile, which the notes then say:
        the CSR curve, the add chain)."""
        from ma_post import to_sympy

        curve = machine.cpu.csr_rows.points if machine.cpu.csr_rows is not None else None
        if curve is None and self.signature_rows:
            notes.append(f"profile {machine.name!r} has no cpu.csr_rows (ma machine probe measures it): "
                         "the kernels stated as CSR row loops are priced like any other")
        chain_s = machine.cpu.add_chain_s
        if chain_s is None and self.signature_chains:
            notes.append(f"profile {machine.name!r} has no cpu.add_chain_s (ma machine probe measures it): "
                         "the kernels stated as add chains are priced like any other")
        # per stated site: its terms per execution and, for a CSR row loop, its rows (None: one sum)
        stated: dict[str, tuple[str, str | None]] = {}
        if curve is not None:
            stated.update(self.signature_rows)
        if chain_s is not None:
            stated.update({path: (terms, None) for path, terms in self.signature_chains.items()})
        found = {s.path: s for s in model.ts.walk()}
        types = {path: s.type for path, s in found.items()}
        kernels: dict[str, list[str]] = {}
        for s in sites:
            if types.get(s.path) in KERNEL_TYPES:
                kernels.setdefault(kernel_of(types, s.path), []).append(s.path)
        chains: dict[str, tuple[sympy.Expr, sympy.Expr, sympy.Expr]] = {}
        assert machine.bandwidth_fit is not None  # predict() checked
        l1_hit = machine.bandwidth_fit.params.symbolic([1.0] * machine.levels)
        for path, (entries_text, rows_text) in stated.items():
            site = found.get(path)
            if site is None:  # a signature serves every run of its class, whatever sites this one has
                continue
            if types[path] not in KERNEL_TYPES:
                raise BackendError(f"signature of site {path!r}: it states a row loop or an add chain, but the site "
                                   f"is a {types[path]} region, not a flop or loadstore kernel")
            entries = model.resolve(to_sympy(entries_text), path)
            executions = model.executions(site)
            # the chains' seconds (each term's two flops and its words' L1 cost inside): a CSR row loop's on the
            # CSR curve at its row length, a single sum's at the add chain
            if rows_text is not None and curve is not None:
                per_execution = chain_seconds(entries, model.resolve(to_sympy(rows_text), path), curve)
            else:
                assert chain_s is not None  # only stated above with the profile's add chain
                per_execution = entries * sympy.Float(chain_s)
            chain = per_execution * executions * share
            entry_flops = ENTRY_FLOPS * entries * executions / flop_rate * share
            kernel = kernel_of(types, path)
            kernel_words = sympy.Add(*(w for p, w in words.items() if p in kernels.get(kernel, ())))
            in_l1 = kernel_words * WORD_BYTES / l1_hit * share
            chains[kernel] = (as_expr(chain).subs(bound), as_expr(entry_flops).subs(bound), as_expr(in_l1).subs(bound))
        if chains:
            notes.append(f"{len(chains)} kernel(s) stated as CSR row loops or add chains: their add chains (on "
                         f"cpu.csr_rows, at cpu.add_chain_s) plus their memory beyond L1 hits: {', '.join(chains)}")
        return price_row_loops(sites, kernels, chains), set(chains)

    def _signature_notes(self, model: ModelBuilder, coverage: Mapping[str, Sequence[str]]) -> list[str]:
        """What the signature covered of this run, and a note naming its sites this run does not have: a signature
        serves every run of its class (a 1-rank run has no MPI sites), but a misspelt path would otherwise go
        unsaid."""
        if not self.signature.paths:
            return []
        covered = ", ".join(f"{kind.replace('_', ' ')} at {len(paths)} site(s)" for kind, paths in coverage.items()
                            if paths)
        notes = [f"signature file: {covered or 'no site of this run'}"]
        unknown = sorted(self.signature.paths - {site.path for site in model.ts.walk()})
        if unknown:
            notes.append(f"signature file: {len(unknown)} site(s) not in this run, their figures unused (expected "
                         f"for sites that run only at other process counts; else check the paths): "
                         f"{', '.join(unknown)}")
        return notes

    def _cores(self, machine: MachineProfile) -> int:
        """The cores the ranks share: ``--cores``, else the profile's ``host.cpus`` (0: no time-sharing)."""
        return self.cores if self.cores is not None else machine.host.cpus

    def _time_share(self, model: ModelBuilder, machine: MachineProfile, notes: list[str]) -> sympy.Expr:
        """max(1, nprocs / cores): with more ranks than cores, each rank has the cores part of the time (compute,
        memory and runtime stretch alike; a message's wait for a partner not scheduled is the network's:
        :func:`.network.link`)."""
        cores = self._cores(machine)
        if not cores or self.procs.name not in model.ts.variable_names():
            return sympy.Integer(1)
        notes.append(f"with more ranks than the {cores} cores of {machine.name!r}, they time-share them: "
                     f"compute, memory and runtime x max(1, {self.procs}/{cores})")
        return sympy.Max(1, self.procs / cores)

    def _communication(self, model: ModelBuilder, machine: MachineProfile,
                       add: Callable[[str, str, str, sympy.Expr], None], notes: list[str], work: sympy.Expr,
                       runtime: cpython.PythonRuntime | None) -> sympy.Expr:
        """Per MPI site, :func:`.network.site_seconds`. ``work``: a rank's compute, memory and runtime seconds
        (one core's, before time-sharing); over the latencies its messages pay (a n summed over the sites), it is
        the work per message at which the oversubscribed exchange's work curve gives the wait, and a Python
        program's message its cost beyond L (the runtime part's)."""
        if machine.network is None:
            notes.append(f"profile {machine.name!r} has no network measurements: communication left at 0")
            return sympy.Integer(0)
        counts = {t.site.path: t for t in model.model("mpi_count", inline=True).terms}
        volumes = {t.site.path: t.expr for t in model.model("mpi_bytes", inline=True).terms}
        latency, bandwidth = network.link(machine.network, self.procs, self._cores(machine))
        if machine.network.oversubscribed and self._cores(machine):
            notes.append(f"with more ranks than the {self._cores(machine)} cores, messages are priced towards the "
                         "oversubscribed exchange (network.oversubscribed)")
        messages = sympy.Add(*(network.factors(t.site.type, self.procs)[0] * t.expr for t in counts.values()))
        per_message = work / sympy.Max(messages, 1)
        cores = self._cores(machine)
        wait = network.work_wait(machine.network, self.procs, cores, per_message)
        if wait is not None:
            latency = wait
            notes.append("the wait per message read off the oversubscribed exchange's work curve at this "
                         "program's work per message (network.oversubscribed.work)")
        late = network.synchronised_wait(machine.network, self.procs, cores, per_message)
        if late is not None:
            two_rank = sympy.Float(machine.network.latency_s)
            latency = (sympy.Piecewise((two_rank + late, self.procs <= cores), (latency, True)) if cores
                       else two_rank + late)
            notes.append("up to one rank per core, each message also waits for the later partner, read off the "
                         "synchronised exchange at this program's work per message (network.synchronised)")
        else:
            late = sympy.Integer(0)
            if counts:  # a program that sends nothing waits for no partner
                notes.append(f"profile {machine.name!r} has no synchronised exchange (network.synchronised; ma machine "
                             "network PROFILE measures it): a message's wait for a later partner on its own core is "
                             "not priced")
        if runtime is not None:
            extra, said = runtime.message_extra(machine.network, per_message, self.procs, cores, late)
            latency, notes[len(notes):] = latency + extra, said
        for path, term in counts.items():
            seconds = network.site_seconds(term.site.type, term.expr, volumes.get(path, sympy.Integer(0)),
                                           self.procs, latency, bandwidth)
            add(path, term.subroutine, "communication", seconds)
        return messages


def combination(overlap: str, rate_name: str) -> str:
    """The form ``overlap`` stands for with flops priced at ``rate_name``: "auto" is net at the FMA peak (pure
    flop time, so only F(h)'s probe holds the flops it did) and sum at the NumPy rate (measured on L1 data, it
    holds its kernel's loads and stores as F(h) holds its adds, and net would take out one side only)."""
    if overlap != "auto":
        return overlap
    return "net" if rate_name == "peak_flops" else "sum"


def overlap_blocks(sites: Sequence[SitePrediction], model: ModelBuilder | None = None) -> list[SitePrediction]:
    """max(compute, memory) per block (:func:`block_of`): memory stays, compute keeps only what sticks out.

    The block's compute C (flop time; the runtime part is a part of its own, which no memory traffic hides) is
    spread over its sites in proportion, scaled to max(C - M, 0) / C, so the parts still add up to the block's
    time."""
    types = {s.path: s.type for s in model.ts.walk()} if model is not None else {}
    blocks: dict[str, list[int]] = {}
    for i, site in enumerate(sites):
        blocks.setdefault(block_of(types, site.path), []).append(i)
    return shrink_compute(sites, blocks.values(), lambda members: sympy.Add(*(sites[i].memory for i in members)))


def _row_text(row: Sequence[float]) -> str:
    return "h = (" + ", ".join(f"{h:.4g}" for h in row) + ")"
