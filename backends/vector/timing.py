"""The vector paper's Figure 4: a loop's time from its vector or scalar work, symbolic in the model's inputs.

    Tv = Tvc + Tvm,  Tvc = VFLOPS / vector rate,  Tvm = (VLOADS + VSTORES) * 8 * AVL_max / (BW * 1e9 * AVL)
    Ts = Tsc + Tsm,  Tsc = SFLOPS / scalar rate,  Tsm = (SLOADS + SSTORES) * 8 / (BW * 1e9)

Loads and stores are counted in elements (8-byte words), as the model's ``loadstore`` is; the AVL_max/AVL
factor is the paper's penalty for vectors shorter than the registers. The paper prints ``10e9``; it means
GB/s, 1e9. The MV score picks the formula (vectorised: Tv, with the profile's vector bandwidth where it has
one) and the rate (multistreamed: the multi rate).

**Flop time inside the bandwidth** (``flop_time``). On a measured host the bandwidth of a scenario is the rate
of a benchmark loop that does flops of its own: the triads one FMA (2 flops) per 3 words, the random-access
loop one add per 12 bytes counted (2/3 per word), the strided loop one add per word
(:data:`backends.machine.kernels.KERNEL_FLOPS_PER_WORD`). Its measured time already holds the time of those flops,
so Figure 4's sum counts them twice: predicting the triad from the triad's own bandwidth gives memory time plus a
flop time the measurement already contains. ``"net"`` (the default) adds only the flops beyond the bandwidth kernel's,
``max(FLOPS - f * LS, 0) / rate`` for a kernel with f flops per word; a profile that does not know its kernels'
flops (the X1E's quoted figures: f = 0) gives the paper's numbers exactly. ``"sum"`` is Figure 4 as printed
(Tvc + Tvm), ``"max"`` the overlap form max(Tc, Tm) (as the maps backend's ``--overlap max``).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from ma_core.errors import BackendError
from ma_post.sympy_expr import as_expr

from .profile import VectorProfile

FLOP_TIMES = ("net", "sum", "max")


@dataclass(frozen=True)
class LoopTime:
    compute: sympy.Expr
    memory: sympy.Expr

    @property
    def total(self) -> sympy.Expr:
        return self.compute + self.memory


def loop_time(flops: sympy.Expr | float, loadstores: sympy.Expr | float, mv: int, avl: sympy.Expr | float | None,
              profile: VectorProfile, scenario: str, flop_time: str = "net") -> LoopTime:
    """Seconds of a loop doing ``flops`` and ``loadstores`` (elements) with MV score ``mv``; ``flop_time``
    net, sum or max (the module's docstring). ``compute`` is the flop time not under the memory time."""
    if flop_time not in FLOP_TIMES:
        raise BackendError(f"unknown flop time form {flop_time!r}: expected one of {', '.join(FLOP_TIMES)}")
    vectorised, multi = mv >= 2, mv % 2 == 1
    bandwidth = sympy.Float(profile.bandwidth(scenario, vector=vectorised) * 1e9)
    words = as_expr(loadstores) * profile.word_bytes
    memory = words / bandwidth
    if vectorised:
        rate = profile.vector_flops_multi if multi else profile.vector_flops
        length = as_expr(avl if avl is not None else profile.avl_max)
        memory = memory * sympy.Integer(profile.avl_max) / sympy.Min(length, profile.avl_max)
    else:
        rate = profile.scalar_flops_multi if multi else profile.scalar_flops
    inside = profile.kernel_flops(scenario, vector=vectorised) if flop_time == "net" else 0.0
    if inside:
        return LoopTime(sympy.Max(as_expr(flops) - sympy.Float(inside) * as_expr(loadstores), 0) / sympy.Float(rate),
                        memory)
    compute = as_expr(flops) / sympy.Float(rate)
    return LoopTime(sympy.Max(compute - memory, 0) if flop_time == "max" else compute, memory)


# what the sparse-dot curve's loop does per entry (simd_bandwidth.c's ma_sparse_dot): a value and an index streamed,
# one gathered read, one FMA
SPARSE_ENTRY_WORDS, SPARSE_ENTRY_FLOPS = 3, 2


def sparse_loop_time(flops: sympy.Expr | float, loadstores: sympy.Expr | float, entries: sympy.Expr | float,
                     entry_seconds: float, mv: int, avl: sympy.Expr | float | None, profile: VectorProfile,
                     scenario: str, flop_time: str = "net") -> LoopTime:
    """An extension of Figure 4 for a sparse row loop: its ``entries`` (each a value and an index streamed and a
    gathered read, with one FMA) cost ``entry_seconds`` each, the sparse-dot curve's figure for them
    (:func:`.bandwidth.gather_seconds` or :func:`.bandwidth.gather_seconds_by_level` with ``values``), added as
    memory time (a sparse row's streams and gathers sum, they do not overlap); the rest of its words and flops by
    :func:`loop_time`."""
    count = as_expr(entries)
    rest = loop_time(sympy.Max(as_expr(flops) - SPARSE_ENTRY_FLOPS * count, 0),
                     sympy.Max(as_expr(loadstores) - SPARSE_ENTRY_WORDS * count, 0), mv, avl, profile, scenario,
                     flop_time)
    return LoopTime(rest.compute, rest.memory + count * sympy.Float(entry_seconds))
