"""Vector machine profiles: the Cray X1E's (the vector paper's numbers) and this host's (from a MachineProfile).

The paper's Figure 4 needs, per machine: the vector and scalar flop rates ("clocks") with and without
multistreaming, the longest vector (AVL_max) and the memory bandwidth of each scenario (min: random access,
max: STREAM, mixed: between). On a SIMD host the vector unit is one core's SIMD lanes, multistreaming is
using every core, and scalar code runs one lane.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ma_core.errors import BackendError

if TYPE_CHECKING:
    from backends.machine.profile import MachineProfile

    from .simd import SimdBandwidth

SCENARIOS = ("min", "mixed", "max")


@dataclass(frozen=True)
class VectorProfile:
    """Rates in flop/s, bandwidths in GB/s (per vector unit: per SSP on the X1E, per core here)."""

    name: str
    vector_flops: float          # one vector unit, not multistreamed (X1E: 4.5 GHz)
    vector_flops_multi: float    # multistreamed (X1E MSP: 18 GHz)
    scalar_flops: float          # one scalar unit (X1E: 0.565 GHz)
    scalar_flops_multi: float    # multistreamed scalar (X1E: 2.26 GHz)
    avl_max: int                 # lanes of a full vector (X1E: 64 doubles; AVX2: 4)
    bandwidth_gbs: dict[str, float]  # scenario -> GB/s (scalar memory references; all of them when no vector one)
    clock_hz: float | None = None
    word_bytes: int = 8
    vector_bandwidth_gbs: dict[str, float] | None = None  # scenario -> GB/s of vector memory references
    # scenario -> flops per 8-byte word that the loop measuring the bandwidth did itself (timing.py; None: unknown, 0)
    kernel_flops_per_word: dict[str, float] | None = None
    vector_kernel_flops_per_word: dict[str, float] | None = None

    def bandwidth(self, scenario: str, vector: bool = False) -> float:
        """GB/s of the scenario for scalar memory references, or vector ones where the profile has their own."""
        table = self.vector_bandwidth_gbs if vector and self.vector_bandwidth_gbs else self.bandwidth_gbs
        if scenario not in table:
            raise BackendError(f"vector profile {self.name!r}: unknown bandwidth scenario {scenario!r}; "
                               f"expected one of {', '.join(table)}")
        return table[scenario]

    def kernel_flops(self, scenario: str, vector: bool = False) -> float:
        """Flops per word done by the loop whose bandwidth the scenario uses (0 when the profile does not say)."""
        table = (self.vector_kernel_flops_per_word if vector and self.vector_bandwidth_gbs
                 else self.kernel_flops_per_word)
        return float((table or {}).get(scenario, 0.0))


# The vector paper, section 5.4 and Figure 4: 4.5/18 GHz vector, 0.565/2.26 GHz scalar, 64-element vector
# registers, 2.5 (RandomAccess) / 5.5 / 8.5 (STREAM) GB/s per SSP.
CRAY_X1E = VectorProfile("cray-x1e", 4.5e9, 18e9, 0.565e9, 2.26e9, 64,
                         {"min": 2.5, "mixed": 5.5, "max": 8.5}, clock_hz=1.13e9)


def simd_lanes(isa: str) -> int:
    """Doubles per vector of ``isa``, the name of the machine probe's flop kernel that reached the peak
    (``cpu.isa``, one of :data:`backends.machine.kernels.FLOP_KERNELS`)."""
    from ..machine.kernels import FLOP_KERNELS

    lanes = {name: width for name, _, width in FLOP_KERNELS}
    if isa not in lanes:
        raise BackendError(f"machine profile field cpu.isa: {isa!r} is not a flop kernel of the probe; "
                           f"expected one of {', '.join(lanes)}")
    return lanes[isa]


def host_profile(machine: MachineProfile, cores: int | None = None, working_set: float | None = None,
                 stride: int = 1, simd: SimdBandwidth | None = None) -> VectorProfile:
    """This host as a vector machine, from its measured MachineProfile, for a loop touching ``working_set``
    bytes at ``stride`` words (None: main memory).

    Vector rate: the measured one-core peak (its fastest SIMD kernel); scalar rate: that over the lanes (the
    same FMA units, one lane used); multistreamed: times the cores. Bandwidths: the MultiMAPS curves and the
    triad at the loop's working set (:func:`.bandwidth.scenario_bandwidths`); with the SIMD file (``simd``) and
    unit stride, vector memory references have their own (:func:`.bandwidth.vector_scenario_bandwidths`), and
    scalar ones the scalar triad curve where the file has it (:func:`.bandwidth.scalar_unit_scenario_bandwidths`).
    """
    from .bandwidth import (
        kernel_flops_per_word,
        memory_level,
        scalar_unit_scenario_bandwidths,
        scenario_bandwidths,
        vector_scenario_bandwidths,
    )

    lanes = simd_lanes(machine.cpu.isa or "")
    ncores = cores or machine.host.cpus
    peak = machine.peak_flops
    unit = simd is not None and stride == 1
    scalar_triad = unit and simd is not None and bool(simd.scalar_triad)
    scalar = (scalar_unit_scenario_bandwidths(machine, simd, working_set) if scalar_triad and simd
              else scenario_bandwidths(machine, working_set, stride))
    in_memory = working_set is None or memory_level(machine, working_set) > len(machine.caches)
    return VectorProfile(f"{machine.name}-vector", peak, peak * ncores, peak / lanes, peak / lanes * ncores, lanes,
                         scalar, clock_hz=machine.cpu.clock_hz,
                         vector_bandwidth_gbs=vector_scenario_bandwidths(machine, simd, working_set)
                         if unit and simd else None,
                         kernel_flops_per_word=kernel_flops_per_word(triad=scalar_triad or (in_memory and stride == 1)),
                         vector_kernel_flops_per_word=kernel_flops_per_word(triad=True) if unit and simd else None)
