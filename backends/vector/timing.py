"""The vector paper's Figure 4: a loop's time from its vector or scalar work, symbolic in the model's inputs.

    Tv = Tvc + Tvm,  Tvc = VFLOPS / vector rate,  Tvm = (VLOADS + VSTORES) * 8 * AVL_max / (BW * 1e9 * AVL)
    Ts = Tsc + Tsm,  Tsc = SFLOPS / scalar rate,  Tsm = (SLOADS + SSTORES) * 8 / (BW * 1e9)

Loads and stores are counted in elements (8-byte words), as the model's ``loadstore`` is; the AVL_max/AVL
factor is the paper's penalty for vectors shorter than the registers. The paper prints ``10e9``; it means
GB/s, 1e9. The MV score picks the formula (vectorised: Tv, with the profile's vector bandwidth where it has
one) and the rate (multistreamed: the multi rate).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from ma_post.sympy_expr import as_expr

from .profile import VectorProfile


@dataclass(frozen=True)
class LoopTime:
    compute: sympy.Expr
    memory: sympy.Expr

    @property
    def total(self) -> sympy.Expr:
        return self.compute + self.memory


def loop_time(flops: sympy.Expr | float, loadstores: sympy.Expr | float, mv: int, avl: sympy.Expr | float | None,
              profile: VectorProfile, scenario: str) -> LoopTime:
    """Seconds of a loop doing ``flops`` and ``loadstores`` (elements) with MV score ``mv``."""
    vectorised, multi = mv >= 2, mv % 2 == 1
    bandwidth = sympy.Float(profile.bandwidth(scenario, vector=vectorised) * 1e9)
    words = as_expr(loadstores) * profile.word_bytes
    if vectorised:
        rate = profile.vector_flops_multi if multi else profile.vector_flops
        length = as_expr(avl if avl is not None else profile.avl_max)
        penalty = sympy.Integer(profile.avl_max) / sympy.Min(length, profile.avl_max)
        return LoopTime(as_expr(flops) / sympy.Float(rate), words * penalty / bandwidth)
    rate = profile.scalar_flops_multi if multi else profile.scalar_flops
    return LoopTime(as_expr(flops) / sympy.Float(rate), words / bandwidth)
