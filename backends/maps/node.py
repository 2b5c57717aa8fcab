"""The node term of the maps backend: ranks that share a node share its memory bandwidth.

A per-core profile prices every rank's memory at what one core gets alone; a weak-scaling run whose ranks fill
a node then looks flat while it slows down (a CG with a fixed grid per rank: 0.58 s on 1 rank, 1.69 s on 16 of
one server). The profile's multicore block (:mod:`backends.machine.multicore`) measured each core's stride-1
read bandwidth past the last cache with k cores reading at once; r(k) is its ratio to one core alone, read off
the measured core counts log-log, constant past the last (:func:`backends.machine.curves.constant_ends`), with

    k = min(nprocs, ranks per node, cores),

symbolic in the process count like every other term, so a study over nprocs sees the node fill up. Ranks that
share a node share its last cache too: where the signature holds a site's hit rates with the last cache shared by
K ranks (``shared_hit_rates``, ``ma run --cache-share K``), the site's seconds per byte move linearly in log2 k
from one rank's (k = 1) through the measured shares, constant past the last (:meth:`NodeShare.seconds_per_byte`).
Ranks per node default to min(nprocs, cores) (one node); ``--ranks-per-node R`` says how many share one. Past the
cores the ranks time-share them (the backend's time-sharing term, unchanged): the memory is shared by the cores'
worth that run at once, so k stops at the cores.

What r(k) slows is a site's time in main memory. Equation 1 says which share of a site's time that is: t_n / T
at its hit rates (t_i = (h_i - h_{i-1}) c_i). r(k) was measured on a stride-1 stream past the last cache, so a
site whose memory share is that stream's (the profile's :func:`.fallback_rates.assumed_hit_rates`) or more is
slowed by 1/r(k), as the stream was, and one with less in proportion:

    F_k(h) = F(h) / (1 - w + w / r(k)),    w = min(1, (t_n/T)(h) / (t_n/T)(stream)).

(Scaling Equation 1's memory plateau b_n instead moves nothing: F is the time-weighted mean of the plateaus, and
a fitted b_n can be small beside the L1 plateau that a stream's 7 of 8 hits weigh.) A profile without the block
prices memory as before, and the prediction says so where more than one rank may share a node.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import sympy

from ma_post.sympy_expr import as_expr

from ..machine.curves import between_counts, constant_ends
from ..machine.eq1 import Eq1Params
from ..machine.profile import MachineProfile
from .fallback_rates import assumed_hit_rates


@dataclass(frozen=True)
class NodeShare:
    """Equation 1 as the ranks of one node see it: ``memory_scale`` (r(k), 1 without the multicore block) times
    its memory plateau."""

    memory_scale: sympy.Expr  # r(k), 1 without the multicore block
    stream: tuple[float, ...] = ()  # the hit rates of the stream r(k) was measured on
    notes: tuple[str, ...] = ()
    sharing: sympy.Expr = sympy.S.One  # k, the ranks sharing the node (and its last cache)

    @classmethod
    def of(cls, machine: MachineProfile, procs: sympy.Symbol | None, ranks_per_node: int | None,
           cores: int) -> NodeShare:
        """The node of ``machine`` with ``procs`` ranks (None: the model has no process count), ``ranks_per_node``
        of them on one node (None: all, up to the cores), ``cores`` cores (0: not limited)."""
        block = machine.memory.multicore
        if procs is None:  # a model without a process count: the ranks per node given, else one
            per_node: sympy.Expr = sympy.Integer(ranks_per_node or 1)
        else:
            per_node = sympy.Min(procs, ranks_per_node) if ranks_per_node else procs
        k = sympy.Min(per_node, cores) if cores else per_node
        if block is None:
            return cls(sympy.Integer(1), (), sharing=k, notes=() if k == 1 else (
                f"profile {machine.name!r} has no multicore block (memory.multicore; ma machine multicore PROFILE): "
                "each rank's memory is priced at one core's bandwidth, however many share its node",))
        ratios = block.memory_ratio()
        scale = as_expr(constant_ends([(float(n), r) for n, r in ratios], k))
        text = ", ".join(f"{n}: {r:.2f}" for n, r in ratios)
        return cls(scale, assumed_hit_rates(machine), sharing=k, notes=(
                    f"node term: each rank's time in main memory / r(k), k = {k} ranks sharing a node; r, a core's "
                    f"memory bandwidth with k cores at once over alone, measured on {machine.name!r} "
                    f"(memory.multicore): {text}",))

    def seconds_per_byte(self, params: Eq1Params, alone: Sequence[float],
                         shared: Sequence[tuple[float, Sequence[float]]] = ()) -> sympy.Expr:
        """1 / F_k of a site whose hit rates are ``alone`` for one rank and ``shared`` (K, hit rates) with the last
        cache shared by K ranks: without shares 1 / F_k(alone); with them, linear in log2 of k between the shares
        (k = 1 the rank alone), the last share's beyond it (:func:`backends.machine.curves.between_counts`)."""
        if not shared:
            return 1 / self.bandwidth(params, alone)
        points = [(1.0, 1 / self.bandwidth(params, alone)),
                  *((float(share), 1 / self.bandwidth(params, rates)) for share, rates in shared)]
        return between_counts(points, self.sharing)

    def bandwidth(self, params: Eq1Params, hit_rates: Sequence[float]) -> sympy.Expr:
        """F_k(h) in bytes per second for one rank of the node (F(h) itself without the block)."""
        if self.memory_scale == 1 or not self.stream:
            return params.symbolic(hit_rates)
        weight = min(1.0, memory_share(params, hit_rates) / memory_share(params, self.stream))
        if weight <= 0:
            return params.symbolic(hit_rates)
        return as_expr(params.symbolic(hit_rates) / (1 - sympy.Float(weight) + sympy.Float(weight) / self.memory_scale))


def memory_share(params: Eq1Params, hit_rates: Sequence[float]) -> float:
    """Equation 1's share of a point's time in main memory, t_n / T (Equation 3 and 4)."""
    below, times = 0.0, []
    for rate, latency in zip(hit_rates, params.c, strict=True):
        times.append((rate - below) * latency)
        below = rate
    return times[-1] / sum(times) if sum(times) > 0 else 0.0
