"""A CSR row loop priced as the machine runs it: its rows' add chains in cache, and the time its words take
beyond an L1 hit.

SciPy's sparse product (``_sparsetools.csr_matvec``) runs, per row, ``sum += a[k] * x[col[k]]``: every entry's
add waits for the previous one, and an out-of-order core overlaps the chains of neighbouring rows as far as its
window reaches. Neither of Eq. 1's rates bounds that loop: NumPy's flop rate is a vectorised ufunc's, and F(h)'s
probe adds its words into eight independent sums. The machine probe measures the loop itself on a matrix in
L1, by entries per row (``cpu.csr_rows``, :func:`backends.machine.csrrows.measure_csr_rows`):
short rows run at the loads' issue rate, long ones at the add latency. A kernel stated as a row loop (a signature
file's ``csr_rows``: entries and rows per execution, expressions in the model's variables) costs

    max(chain, M_1) + max(M - M_1, 0) + (flops beyond 2 per entry) / rate,  chain = entries x s(entries / rows)

s the curve at the kernel's entries per row (linear in log-log between measured row lengths, the end values
beyond them); M its loadstore sites' memory time at F(h), as for any kernel, and M_1 the same words at F of
every word an L1 hit (Eq. 1's L1 plateau). The curve's time holds each entry's two flops and its words' L1
cost, so the in-L1 loop costs the longer of its chains and its loads; what the words cost beyond an L1 hit,
served from farther out, adds to it (a row's add waits for its entry's load), the rule by which :mod:`.traffic`
adds lines beyond L1 to an in-cache rate. Symbolic in the model's inputs (a ``Piecewise`` of powers of
entries / rows).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import sympy

from ma_post.sympy_expr import as_expr

from ..base import SitePrediction
from ..machine.curves import constant_ends

ENTRY_FLOPS = 2  # a multiply and an add per entry, inside the chain time


def chain_seconds(entries: sympy.Expr, rows: sympy.Expr, curve: Sequence[tuple[float, float]]) -> sympy.Expr:
    """Seconds of ``entries`` entries over ``rows`` rows at the curve's rate for their row length."""
    return as_expr(entries) * constant_ends(curve, as_expr(entries) / as_expr(rows))


def price_row_loops(sites: Sequence[SitePrediction], kernels: Mapping[str, Sequence[str]],
                    chains: Mapping[str, tuple[sympy.Expr, sympy.Expr, sympy.Expr]]) -> list[SitePrediction]:
    """Each stated kernel's time made max(chain, M_1) + max(M - M_1, 0) + its flops beyond the entries'.

    ``kernels``: kernel path -> the paths of its sites; ``chains``: kernel path -> (chain seconds, the seconds
    of its entries' flops at the compute rate, M_1 its words' seconds as L1 hits). Memory M stays on the sites;
    the kernel's flop time C (its compute) becomes the rest: the time above less M, spread over its sites in
    proportion to C (all on its first site when C is 0)."""
    out = list(sites)
    index = {s.path: i for i, s in enumerate(sites)}
    for kernel, (chain, entry_flops, in_l1) in chains.items():
        members = [index[p] for p in kernels.get(kernel, ()) if p in index]
        if not members:
            continue
        flop_time = [sites[i].compute for i in members]
        total = sympy.Add(*flop_time)
        memory = sympy.Add(*(sites[i].memory for i in members))
        loop = sympy.Max(chain, in_l1) + sympy.Max(memory - in_l1, 0)
        priced = loop - memory + sympy.Max(total - entry_flops, 0)
        shares = [f / total for f in flop_time] if total != 0 else [sympy.Integer(int(j == 0))
                                                                  for j in range(len(members))]
        for i, share in zip(members, shares, strict=True):
            out[i] = replace(sites[i], compute=priced * share)
    return out
