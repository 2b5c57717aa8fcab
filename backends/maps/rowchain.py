"""A CSR row loop priced as the machine runs it: its rows' add chains in cache, and the time its words take
beyond an L1 hit.

SciPy's sparse product (``_sparsetools.csr_matvec``) runs, per row, ``sum += a[k] * x[col[k]]``: every entry's
add waits for the previous one, and an out-of-order core overlaps the chains of neighbouring rows as far as its
window reaches. Neither of Eq. 1's rates bounds that loop: NumPy's flop rate is a vectorised ufunc's, and F(h)'s
probe adds its words into eight independent sums. The machine probe measures the loop itself on a matrix in
L1, by entries per row (``cpu.python_probe.csr_rows``, :func:`backends.machine.cputerms.measure_csr_rows`):
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

import math
from collections.abc import Mapping, Sequence

import sympy

from ma_post.sympy_expr import as_expr

from ..base import SitePrediction

ENTRY_FLOPS = 2  # a multiply and an add per entry, inside the chain time


def seconds_per_entry(curve: Sequence[tuple[float, float]], per_row: sympy.Expr | float) -> sympy.Expr:
    """The curve ((entries per row, seconds per entry), sorted by row length) at ``per_row``: linear in log-log
    between neighbouring points (s_i (k / k_i)^b_i), its first value below the first and last above the last."""
    k = as_expr(per_row)
    (k0, s0), rest = curve[0], list(curve[1:])
    pieces: list[tuple[sympy.Expr, sympy.Basic]] = [(sympy.Float(s0), k <= sympy.Float(k0))]
    for k1, s1 in rest:
        slope = math.log(s1 / s0) / math.log(k1 / k0)
        pieces.append((sympy.Float(s0) * (k / sympy.Float(k0)) ** sympy.Float(slope), k <= sympy.Float(k1)))
        k0, s0 = k1, s1
    pieces.append((sympy.Float(s0), sympy.true))
    return sympy.Piecewise(*pieces)


def chain_seconds(entries: sympy.Expr, rows: sympy.Expr, curve: Sequence[tuple[float, float]]) -> sympy.Expr:
    """Seconds of ``entries`` entries over ``rows`` rows at the curve's rate for their row length."""
    return as_expr(entries) * seconds_per_entry(curve, as_expr(entries) / as_expr(rows))


def price_row_loops(sites: Sequence[SitePrediction], kernels: Mapping[str, Sequence[str]],
                    chains: Mapping[str, tuple[sympy.Expr, sympy.Expr, sympy.Expr]],
                    interpreter: Mapping[str, sympy.Expr]) -> list[SitePrediction]:
    """Each stated kernel's time made max(chain, M_1) + max(M - M_1, 0) + its flops beyond the entries'.

    ``kernels``: kernel path -> the paths of its sites; ``chains``: kernel path -> (chain seconds, the seconds
    of its entries' flops at the compute rate, M_1 its words' seconds as L1 hits). Memory M stays on the sites;
    the kernel's flop time C (compute less the interpreter term) becomes the rest: the time above less M, spread
    over its sites in proportion to C (all on its first site when C is 0)."""
    out = list(sites)
    index = {s.path: i for i, s in enumerate(sites)}
    zero = sympy.Integer(0)
    for kernel, (chain, entry_flops, in_l1) in chains.items():
        members = [index[p] for p in kernels.get(kernel, ()) if p in index]
        if not members:
            continue
        own = [interpreter.get(sites[i].path, zero) for i in members]
        flop_time = [sites[i].compute - calls for i, calls in zip(members, own, strict=True)]
        total = sympy.Add(*flop_time)
        memory = sympy.Add(*(sites[i].memory for i in members))
        loop = sympy.Max(chain, in_l1) + sympy.Max(memory - in_l1, 0)
        priced = loop - memory + sympy.Max(total - entry_flops, 0)
        shares = [f / total for f in flop_time] if total != 0 else [sympy.Integer(int(j == 0))
                                                                  for j in range(len(members))]
        for i, calls, share in zip(members, own, shares, strict=True):
            s = sites[i]
            out[i] = SitePrediction(s.path, calls + priced * share, s.memory, s.communication)
    return out
