"""Flop time net of the flops the bandwidth's own probe did (``overlap="net"``, the maps backend's default).

F(h) is the rate of MultiMAPS's read loop (``backends/machine/csrc/multimaps.c``): every 8-byte word it loads
it adds into one of eight independent sums, so the seconds a kernel's words take at F(h) already hold one flop
per word (:data:`PROBE_FLOPS_PER_WORD`, the same figure the vector backend's net flop time takes for that
loop). Eq. 1's sum (compute + memory) counts those flops twice: a kernel that does one flop per word it moves
would be charged its flops at the compute rate on top of a memory time that measured them. Net, a kernel's
compute is only the flops beyond its words', at the compute rate:

    compute(kernel) = max(flops/rate - PROBE_FLOPS_PER_WORD x words/rate, 0)

per kernel (a flop site with the loadstore sites nested in it, or around it: :func:`kernel_of`), so the
spare words of a memory-bound kernel do not hide another kernel's flops. The runtime part is not flop time and
is a part of its own; a flop site without words of its own (no loadstore site in its kernel, e.g. a kernel
whose memory is the measured traffic of :mod:`.traffic`, which prices lines beyond L1 only) keeps its flops.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace

import sympy

from ..base import SitePrediction
from ..machine.kernels import KERNEL_FLOPS_PER_WORD

KERNEL_TYPES = ("flop", "loadstore")
PROBE_FLOPS_PER_WORD = KERNEL_FLOPS_PER_WORD["stride"]  # multimaps.c's read loop: one add per word loaded


def kernel_of(types: Mapping[str, str], path: str) -> str:
    """The kernel a flop or loadstore site belongs to: its outermost enclosing site in an unbroken chain of flop
    and loadstore regions (itself when its parent is neither). ``types``: site path -> site type."""
    kernel = path
    parent = path.rpartition("/")[0]
    while parent and types.get(parent) in KERNEL_TYPES:
        kernel, parent = parent, parent.rpartition("/")[0]
    return kernel


def net_of_probe_flops(sites: Sequence[SitePrediction], types: Mapping[str, str],
                       probe_seconds: Mapping[str, sympy.Expr]) -> list[SitePrediction]:
    """Each kernel's flop time less ``probe_seconds`` (per loadstore site: its words' probe flops at the compute
    rate), floored at 0. A kernel's flop time C (its compute) is scaled to max(C - P, 0) / C on each of its
    sites, P the probe seconds of its loadstore sites."""
    kernels: dict[str, list[int]] = {}
    for i, site in enumerate(sites):
        if types.get(site.path) in KERNEL_TYPES:
            kernels.setdefault(kernel_of(types, site.path), []).append(i)
    zero = sympy.Integer(0)
    return shrink_compute(sites, kernels.values(),
                          lambda members: sympy.Add(*(probe_seconds.get(sites[i].path, zero) for i in members)))


def shrink_compute(sites: Sequence[SitePrediction], groups: Iterable[Sequence[int]],
                   hidden: Callable[[Sequence[int]], sympy.Expr]) -> list[SitePrediction]:
    """Per group of sites (indices into ``sites``), their compute C scaled to max(C - H, 0) / C on each site,
    H = ``hidden(group)``: the time C shares with something already priced (the group's memory for the
    max-overlap rule, the bandwidth probe's flops for net). The other parts stay; they still add up to the
    group's time."""
    out = list(sites)
    for members in groups:
        compute = sympy.Add(*(sites[i].compute for i in members))
        taken = hidden(members)
        if compute == 0 or taken == 0:
            continue
        scale = sympy.Max(compute - taken, 0) / compute
        for i in members:
            out[i] = replace(sites[i], compute=sites[i].compute * scale)
    return out
