"""Communication time per MPI site: Hockney's model (latency L, bandwidth B; perc_framework.txt Section 2.3)
for point-to-point messages, and the usual algorithm of each collective (Thakur, Rabenseifner and Gropp,
"Optimization of collective communication operations in MPICH", IJHPCA 2005) on p ranks.

Every cost has the form ``a(p) * n * L + b(p) * bytes / B`` with ``n`` the site's messages (calls x count)
and ``bytes`` their volume (n x bytes per message m), so per site::

    point-to-point send, isend, sendrecv     n L + bytes/B          (a = b = 1)
    recv, irecv                              0                      (the message is charged at its sender)
    bcast, reduce   (binomial tree)          ceil(log2 p) (n L + bytes/B)
    allreduce       (recursive doubling)     ceil(log2 p) (n L + bytes/B)
    gather, scatter (binomial tree)          ceil(log2 p) n L + (p-1) bytes/B
    allgather       (recursive doubling)     ceil(log2 p) n L + (p-1) bytes/B
    alltoall        (pairwise exchange)      (p-1) (n L + bytes/B)
    barrier         (dissemination)          ceil(log2 p) n L

With more ranks than cores, a message also waits for its partner to be given a core: L and 1/B then come
from the probe's exchange on more ranks than cores (``network.oversubscribed``, :func:`link`), and where the
probe measured that exchange with work between messages (its ``work`` curve), L is the wait read off the curve
at the program's work per message (:func:`work_wait`).

Where every rank has a core, a message of a program with work between messages also waits for the later of its
partners: their work takes a little more or less time each step, and a bulk-synchronous step lasts as long as the
slowest rank's. The probe measured that on one rank per core (``network.synchronised``: the exchange with work
streamed from memory before every message, on 2 ranks and on all the node's cores); the wait per message is the
curve's wall time beyond the work and L at the program's work per message (:func:`synchronised_wait`).

A Python program's message costs more than the C ping-pong's L: the mpi4py calls and, with work between
messages, the wait for a late partner; the runtime part reads that off the profile's two-rank Python exchange
(:meth:`backends.cpython.runtime.PythonRuntime.message_extra`) and the backend adds it to L.

Reduction arithmetic, contention and the rendezvous protocol of long messages are not modelled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import sympy
from sympy.codegen.cfunctions import log2

from ma_post.sympy_expr import as_expr

from ..machine.curves import between_counts, wall_per_message

if TYPE_CHECKING:
    from ..machine.profile import NetworkProfile, Oversubscribed, SynchronisedCurve


def factors(site_type: str, procs: sympy.Expr) -> tuple[sympy.Expr, sympy.Expr]:
    """(a, b): how many latencies per message and how many times its bytes a collective on ``procs`` ranks costs."""
    rounds = sympy.ceiling(log2(procs))
    others = procs - 1
    one, zero = sympy.Integer(1), sympy.Integer(0)
    table: dict[str, tuple[sympy.Expr, sympy.Expr]] = {
        "mpi_send": (one, one), "mpi_isend": (one, one), "mpi_sendrecv": (one, one),
        "mpi_recv": (zero, zero), "mpi_irecv": (zero, zero),
        "mpi_bcast": (rounds, rounds), "mpi_reduce": (rounds, rounds), "mpi_allreduce": (rounds, rounds),
        "mpi_gather": (rounds, others), "mpi_scatter": (rounds, others), "mpi_allgather": (rounds, others),
        "mpi_alltoall": (others, others), "mpi_barrier": (rounds, zero),
    }
    if site_type not in table:
        raise ValueError(f"no communication model for site type {site_type!r}")
    return table[site_type]


def site_seconds(site_type: str, messages: sympy.Expr, volume: sympy.Expr, procs: sympy.Expr,
                 latency_s: sympy.Expr | float, bandwidth_bytes_per_s: sympy.Expr | float) -> sympy.Expr:
    """Seconds per rank of one MPI site with ``messages`` messages of ``volume`` bytes in all."""
    a, b = factors(site_type, procs)
    return a * messages * as_expr(latency_s) + b * volume / as_expr(bandwidth_bytes_per_s)


def link(network: NetworkProfile, procs: sympy.Expr, cores: int) -> tuple[sympy.Expr, sympy.Expr]:
    """(L, B) of a message on ``procs`` ranks sharing ``cores`` cores.

    Up to one rank per core: the two-rank ping-pong's. Beyond, each of L and 1/B moves from the two-rank
    figure towards the oversubscribed exchange's (measured on R ranks over C cores, ranks per core r = R/C)
    in proportion to the ranks beyond one per core, ``e = max(0, procs/cores - 1) / (r - 1)``: with the
    scheduler's round robin, a rank whose partner has no core waits for the ranks ahead of it on that core,
    as many as the ranks per core beyond one. e = 1 at the probe's own ratio; beyond it the line is
    extrapolated. Without the oversubscribed figure (or ``cores`` 0), the two-rank L and B everywhere."""
    latency, inverse = sympy.Float(network.latency_s), sympy.Float(1 / network.bandwidth_bytes_per_s)
    over = network.oversubscribed
    if not over or not cores:
        return latency, 1 / inverse
    excess = _excess(over, procs, cores)
    extra_latency = max(0.0, over.latency_s - network.latency_s)
    extra_inverse = max(0.0, 1 / over.bandwidth_bytes_per_s - 1 / network.bandwidth_bytes_per_s)
    return latency + sympy.Float(extra_latency) * excess, 1 / (inverse + sympy.Float(extra_inverse) * excess)


def work_wait(network: NetworkProfile, procs: sympy.Expr, cores: int, work: sympy.Expr) -> sympy.Expr | None:
    """The latency of a message on ``procs`` ranks over ``cores`` cores when each rank does ``work`` seconds
    (on a core of its own) between messages; None without a work curve (then :func:`link`'s L holds).

    At the probe's ranks per core r, the curve's wall time per message y(w) is the time-shared work r w plus
    the wait; the work is stretched by the backend's time-sharing factor already, so the wait charged here is
    y(w) - r w beyond the two-rank L (at least 0), scaled like :func:`link`'s by the ranks per core beyond one:
    L + e max(0, y(w) - r w - L). At r and e = 1 the rank's time per message is then exactly y(w)."""
    over = network.oversubscribed
    if over is None or not over.work or not cores:
        return None
    curve = over.work_curve
    latency = sympy.Float(network.latency_s)
    per_core = sympy.Float(over.ranks_per_core)
    beyond = wall_per_message(curve, work) - per_core * as_expr(work) - latency
    # unevaluated: SymPy's search for a simpler Max of a whole program's work costs seconds and finds none
    return latency + _excess(over, procs, cores) * sympy.Max(0, beyond, evaluate=False)


def _excess(over: Oversubscribed, procs: sympy.Expr, cores: int) -> sympy.Expr:
    """e = max(0, procs/cores - 1) / (r - 1): the ranks per core beyond one, 1 at the probe's ratio r."""
    return sympy.Max(0, procs / cores - 1) / sympy.Float(over.ranks_per_core - 1)


def synchronised_wait(network: NetworkProfile, procs: sympy.Expr, cores: int, work: sympy.Expr) -> sympy.Expr | None:
    """The wait per message for the later partner when each of ``procs`` ranks, one per core, does ``work`` seconds
    of work between messages; None without the profile's ``network.synchronised`` block.

    On a curve of k ranks, y_k(w) is the wall time per message and the work w was timed with all k ranks working
    at once, so y_k(w) - w - L (at least 0) is the wait beyond the ping-pong's latency. Between the measured rank
    counts (2 and the node's cores) the wait moves with log2 of the ranks sharing the node, k = min(procs, cores)
    (the later of k partners is later the more there are), constant beyond the ends; one rank has no partner to
    wait for. Past the cores the oversubscribed exchange prices the wait (:func:`work_wait`)."""
    block = network.synchronised
    if block is None or not block.curves:
        return None
    latency = sympy.Float(network.latency_s)
    waits = [(float(curve.ranks), _wait_on(curve, work, latency)) for curve in block.curves]
    wait = between_counts(waits, sympy.Min(procs, cores) if cores else procs)
    # one rank alone (no partner) waits for nobody
    return sympy.Min(1, sympy.Max(0, procs - 1)) * wait


def _wait_on(curve: SynchronisedCurve, work: sympy.Expr, latency: sympy.Expr) -> sympy.Expr:
    beyond = wall_per_message(curve.curve, work) - as_expr(work) - latency
    # unevaluated: SymPy's search for a simpler Max of a whole program's work costs seconds and finds none
    return sympy.Max(0, beyond, evaluate=False)
