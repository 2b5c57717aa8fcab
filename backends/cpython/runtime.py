"""The runtime part of a Python program's prediction: what the CPython interpreter costs at each site, beside the
compute, memory and communication a backend prices.

A Python program pays the interpreter at every call into compiled code, whatever the data size: argument
parsing, NumPy's dispatch, the statements between the calls; at every subscript of an array; and at every
annotated site it enters. Per site, per rank (the profile's ``cpython`` section, :mod:`.section`):

- calls:       ``call_overhead_s`` x the calls into compiled code per execution of the site (measured by
               ``ma run --counters ccalls``, ``Site.c_calls``, or a signature file's ``c_calls``; the children's
               taken out, :mod:`.tracedata`) x its executions; without any measured calls, one call per execution
               of every flop, loadstore and MPI site (not of a region nested in a flop or loadstore region: the
               same kernel's), and the prediction says so;
- subscripts:  the price of a subscript (``subscripts.seconds``) x the subscripts per execution (measured alike,
               ``Site.subscripts``, or a signature file's) x the executions;
- annotations: ``annotation_s`` of the site's kind (region, loop, MPI) x the site's own calls (the ``with
               ma...`` block the program enters, a loop's once per entry).

Beside the sites' seconds it gives a Python program's compute rate (``python_flops``: its flops run in NumPy's
kernels, far below the FMA peak) and what one of its messages costs beyond the C ping-pong's latency
(:meth:`PythonRuntime.message_extra`, on the two-rank mpi4py exchange curve ``exchange``).

A backend adds this part only where a trace's language includes Python (:func:`applies`): a C or Fortran trace
has none, whatever the options.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import sympy

from ma_core.errors import BackendError

from ..machine.curves import wall_per_message
from .exchange import FIELD as EXCHANGE_FIELD
from .section import ANNOTATION_KINDS, CPythonTerms
from .tracedata import DECLARATIONS, measured_c_calls, measured_subscripts

if TYPE_CHECKING:
    import argparse

    from ma_post import ModelBuilder, TraceSet
    from ma_post.traceset import Site

    from ..machine.profile import NetworkProfile

LANGUAGE = "python"


def applies(ts: TraceSet) -> bool:
    """Whether a trace's program runs in the CPython interpreter (its header's language includes Python)."""
    return LANGUAGE in ts.language.split("+")


@dataclass(frozen=True)
class Overrides:
    """Figures given instead of the profile's (``ma predict``'s options; None: the profile's, so a what-if on them
    takes effect), and whether a message is priced on the exchange curve."""

    call_overhead_s: float | None = None
    python_flops: float | None = None
    annotation_s: Mapping[str, float] | None = None
    subscript_s: float | None = None
    exchange: bool = True

    def __post_init__(self) -> None:
        for name in ("call_overhead_s", "subscript_s"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise BackendError(f"maps backend: {name} must be >= 0, got {value}")
        if self.python_flops is not None and self.python_flops <= 0:
            raise BackendError(f"maps backend: python_flops must be > 0, got {self.python_flops}")
        if self.annotation_s is not None and (set(self.annotation_s) != set(ANNOTATION_KINDS)
                                              or any(v < 0 for v in self.annotation_s.values())):
            raise BackendError(f"maps backend: annotation_s must give seconds >= 0 for each of "
                               f"{', '.join(ANNOTATION_KINDS)}, got {dict(self.annotation_s)}")

    @classmethod
    def from_options(cls, options: argparse.Namespace) -> Overrides:
        """The overrides of :func:`add_arguments`'s options (one annotation cost for every kind of site)."""
        figures = {name: getattr(options, dest, None) for dest, (_, _, name, _) in OPTIONS.items()}
        every = figures.pop("annotation_s")
        return cls(**figures, annotation_s=None if every is None else dict.fromkeys(ANNOTATION_KINDS, every),
                   exchange=getattr(options, "python_exchange", True))


# ma predict's options for the runtime part: dest -> (flag, metavar, Overrides field, what)
OPTIONS = {
    "call_overhead": ("--call-overhead", "SECONDS", "call_overhead_s",
                      "seconds per call from Python into compiled code (default: the profile's "
                      "cpython.call_overhead_s, else 0)"),
    "subscript_cost": ("--subscript-cost", "SECONDS", "subscript_s",
                       "seconds per subscript (default: the profile's cpython.subscripts, else 0)"),
    "python_flops": ("--python-flops", "FLOP/S", "python_flops",
                     "compute rate of the sites (default: the profile's cpython.python_flops, else the peak)"),
    "annotation_cost": ("--annotation-cost", "SECONDS", "annotation_s",
                        "seconds per call of any annotation site (default: the profile's cpython.annotation_s by "
                        "kind, else 0)"),
}


def add_arguments(parser: argparse._ActionsContainer, prefix: str) -> None:
    """The runtime part's options of a Python program, each help beginning with ``prefix`` (the backend's)."""
    for dest, (flag, metavar, _, what) in OPTIONS.items():
        parser.add_argument(flag, dest=dest, type=float, default=None, metavar=metavar,
                            help=f"{prefix}a Python program's runtime part: {what}")
    parser.add_argument("--no-python-exchange", dest="python_exchange", action="store_false", default=True,
                        help=f"{prefix}price a Python program's messages at the C ping-pong's latency only, not with "
                             "the profile's two-rank mpi4py exchange (cpython.exchange)")


@dataclass(frozen=True)
class Counts:
    """Calls into compiled code and subscripts per execution of a site, from a signature file (they win over the
    trace's own)."""

    c_calls: Mapping[str, float] = field(default_factory=dict)
    subscripts: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Charge:
    """Seconds of the interpreter at one site, per rank, under its subroutine."""

    path: str
    subroutine: str
    seconds: sympy.Expr


@dataclass
class Charges:
    """The runtime part's seconds at every site that has some, what it says about them, and the sites charged one
    call per execution for want of measured calls."""

    sites: list[Charge] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    assumed_calls: list[str] = field(default_factory=list)


class PythonRuntime:
    """The runtime part priced with a profile's CPython terms (None: a profile measured before them) and the
    overrides."""

    def __init__(self, terms: CPythonTerms | None, machine_name: str, overrides: Overrides = Overrides(),
                 counts: Counts = Counts()) -> None:
        self.terms = terms or CPythonTerms()
        self.machine_name = machine_name
        self.overrides = overrides
        self.counts = counts

    @property
    def call_overhead_s(self) -> float:
        """Seconds per call into compiled code: the override, else the profile's, else 0."""
        given = self.overrides.call_overhead_s
        return given if given is not None else (self.terms.call_overhead_s or 0.0)

    @property
    def python_flops(self) -> float | None:
        """Flop/s of the program's sites (NumPy's kernels): the override, else the profile's; None: neither."""
        given = self.overrides.python_flops
        return given if given is not None else self.terms.python_flops

    @property
    def annotation_s(self) -> Mapping[str, float] | None:
        """Seconds per call of an annotation site by kind: the override, else the profile's (None: neither)."""
        return self.overrides.annotation_s if self.overrides.annotation_s is not None else self.terms.annotation_s

    def charges(self, model: ModelBuilder) -> Charges:
        """The interpreter's seconds per rank at every site: calls, subscripts, annotations."""
        out = Charges()
        self._calls(model, out)
        self._subscripts(model, out)
        annotation = self.annotation_s
        if annotation is None:
            out.notes.append(f"profile {self.machine_name!r} has no cpython.annotation_s: the annotated sites' own "
                             "cost not counted (ma machine probe measures it)")
        elif any(annotation.values()):
            self._annotations(model, annotation, out)
        if out.assumed_calls:
            out.notes.append(f"no measured calls into compiled code (ma run --counters ccalls): "
                             f"{len(out.assumed_calls)} flop/loadstore/MPI site(s) charged one call per execution")
        return out

    def _calls(self, model: ModelBuilder, out: Charges) -> None:
        """call_overhead_s x calls per execution x executions, per site; measured (or signature) calls where
        there are any, else one call per execution of every flop, loadstore and MPI site (not of a region
        nested in a flop or loadstore region: that is the same kernel)."""
        overhead = self.call_overhead_s
        if not overhead:
            return
        ts = model.ts
        per_execution = {**measured_c_calls(ts), **self.counts.c_calls}
        fallback = not per_execution
        types = {site.path: site.type for site in ts.walk()}
        for site in ts.walk():
            if site.type in DECLARATIONS:
                continue
            calls = per_execution.get(site.path)
            kernel = site.type in ("flop", "loadstore") or site.type.startswith("mpi_")
            nested = types.get(site.path.rpartition("/")[0]) in ("flop", "loadstore")  # the same kernel's calls
            if calls is None and fallback and kernel and not nested:
                calls = 1.0
                out.assumed_calls.append(site.path)
            if calls:
                _charge(ts, site, sympy.Float(overhead) * sympy.Float(calls) * model.executions(site), out)

    def _subscripts(self, model: ModelBuilder, out: Charges) -> None:
        """The price of a subscript x the subscripts per execution (measured, or a signature's; the children's
        taken out as for the calls) x the site's executions."""
        ts = model.ts
        per_execution = {**measured_subscripts(ts), **self.counts.subscripts}
        if not per_execution:
            return
        given = self.overrides.subscript_s
        price = given if given is not None else (self.terms.subscripts.seconds if self.terms.subscripts else None)
        if price is None:
            out.notes.append(f"profile {self.machine_name!r} has no cpython.subscripts (ma machine subscripts "
                             "PROFILE measures it): the counted subscripts charged nothing")
            return
        if not price:
            return
        for site in ts.walk():
            counted = per_execution.get(site.path)
            if site.type in DECLARATIONS or not counted:
                continue
            _charge(ts, site, sympy.Float(price) * sympy.Float(counted) * model.executions(site), out)
        out.notes.append(f"subscripts (ma run --counters ccalls) at {price * 1e9:.0f} ns each (cpython.subscripts), "
                         "in the runtime part")

    @staticmethod
    def _annotations(model: ModelBuilder, annotation_s: Mapping[str, float], out: Charges) -> None:
        """The cost of its kind x the calls of every annotation site (not a declaration's: ``ma.variable`` runs
        once): an annotated program's own statements, not its kernels."""
        ts = model.ts
        for site in ts.walk():
            if site.type in DECLARATIONS:
                continue
            kind = "loop" if site.type == "loop" else "mpi" if site.type.startswith("mpi_") else "region"
            _charge(ts, site, sympy.Float(annotation_s[kind]) * model.entries(site), out)

    def message_extra(self, network: NetworkProfile, work: sympy.Expr, procs: sympy.Expr, cores: int,
                      charged_wait: sympy.Expr | None = None) -> tuple[sympy.Expr, list[str]]:
        """What a message of the program costs beyond L and the calls charged at its sites, at ``work`` seconds
        of work per message (:func:`message_extra` on the exchange curve), with notes; with more ranks than cores
        only its zero-work part, the mpi4py calls' (the oversubscribed curve has the wait then); 0, with a note,
        for a profile without the curve or with the curve turned off. L and the call cost taken out are the
        block's reference (the profile's when measured), so a what-if on either moves a message by its change.
        ``charged_wait``: what the backend already charges a message for a later partner up to one rank per core
        (the C ranks' synchronised exchange), which the Python curve holds too and is taken out of it."""
        if not self.overrides.exchange:
            return sympy.Integer(0), []
        found = self.terms.exchange
        if found is None:
            return sympy.Integer(0), [f"profile {self.machine_name!r} has no {EXCHANGE_FIELD}: a Python program's "
                                      "messages priced at the C ping-pong's latency (ma machine exchange PROFILE "
                                      "measures the curve)"]
        latency = found.latency_s if found.latency_s is not None else network.latency_s
        overhead = found.call_overhead_s if found.call_overhead_s is not None else self.call_overhead_s
        extra = message_extra(found.curve, found.calls, latency, overhead, work, charged_wait)
        notes = [f"a Python program's messages: the two-rank mpi4py exchange's time per message at this program's "
                 f"work per message beyond L and {found.calls} calls ({EXCHANGE_FIELD})"]
        if not cores:
            return extra, notes
        alone = message_extra(found.curve, found.calls, latency, overhead, sympy.Integer(0))
        return sympy.Piecewise((extra, procs <= cores), (alone, True)), notes


def message_extra(curve: list[tuple[float, float]], calls: int, latency_s: float, call_overhead_s: float,
                  work: sympy.Expr, charged_wait: sympy.Expr | None = None) -> sympy.Expr:
    """Seconds one message of a Python program costs beyond what the model charges elsewhere, at ``work``
    seconds of work per message: the two-rank Python exchange's wall time per message at that work
    (``cpython.exchange``, :func:`backends.machine.curves.wall_per_message`) less the work, the C latency L,
    the exchange's ``calls`` counted calls at ``call_overhead_s`` (the runtime part charges those at the
    program's MPI sites) and ``charged_wait`` (the wait for a later partner the backend charges, if any), at
    least 0: max(0, y(w) - w - L - calls c - wait)."""
    from ma_post.sympy_expr import as_expr

    w = as_expr(work)
    charged = sympy.Float(latency_s + calls * call_overhead_s) + (charged_wait if charged_wait is not None else 0)
    # unevaluated: SymPy's search for a simpler Max of a whole program's work costs seconds and finds none
    return sympy.Max(0, wall_per_message(curve, w) - w - charged, evaluate=False)


def _subroutine_of(ts: TraceSet, site: Site) -> str:
    return next((a.path for a in reversed(ts.ancestors(site)) if a.type == "subroutine"), "")


def _charge(ts: TraceSet, site: Site, seconds: sympy.Expr, out: Charges) -> None:
    """``seconds`` of the interpreter at ``site``, under its own subroutine (a subroutine site's statements are
    its own)."""
    out.sites.append(Charge(site.path, site.path if site.type == "subroutine" else _subroutine_of(ts, site),
                            seconds))
