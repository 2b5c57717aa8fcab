"""The bandwidth at which the traffic term (:mod:`.traffic`) prices a kernel's lines from each level.

A Python program's kernels are NumPy's (and SciPy's) compiled loops, which move whole arrays with the host's
SIMD loads and stores; MultiMAPS, and so Equation 1, reads with scalar loads, whose stride-1 plateaus from
L1 to L3 are the load issue rate rather than what each level delivers. So a Python program's lines served by
level k are priced at the profile's vector stream curve for level k (``memory.vector_streams``, the median of
its points in the level's clean range: :func:`backends.machine.vectorstreams.level_bandwidths`):

    seconds per flop = sum over levels k >= 2 of  l_k x line bytes / V_k

``streams="eq1"`` keeps the paper's form, F(s_k) of Equation 1 (:func:`.traffic.stream_bandwidths`), which is
also what a C program's sites get (a portable ``-O2`` build of a loop is not known to be vectorised) and what a
profile without the curve falls back to, level by level, with a note in the prediction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ma_core.errors import BackendError

from ..machine.vectorstreams import FIELD, level_bandwidths
from .traffic import stream_bandwidths

if TYPE_CHECKING:
    from ..machine.profile import MachineProfile

STREAMS = ("vector", "eq1")


def line_bandwidths(machine: MachineProfile, python: bool, streams: str = "vector") -> tuple[list[float], list[str]]:
    """Bytes per second of a stream from level 2, 3, ..., main memory, and notes on what was used where the
    vector curve could not be (``python``: the program is a Python one; ``streams``: "vector" or "eq1")."""
    if streams not in STREAMS:
        raise BackendError(f"maps backend: streams must be one of {', '.join(STREAMS)}, got {streams!r}")
    scalar = stream_bandwidths(machine)
    if streams == "eq1" or not python or not scalar:
        return scalar, []
    streams_block = machine.memory.vector_streams
    if streams_block is None:
        return scalar, [f"profile {machine.name!r} has no {FIELD} (ma machine streams PROFILE measures it): the "
                        "lines of the Python kernels priced at Equation 1's scalar-load stream"]
    vector = level_bandwidths(streams_block.points, machine.caches)[1:]
    names = [f"L{c.level}" for c in machine.caches[1:]] + ["memory"]
    missing = [name for name, value in zip(names, vector, strict=True) if value is None]
    notes = [f"{FIELD} of {machine.name!r} has no point inside {', '.join(missing)}: those lines priced at "
             "Equation 1's scalar-load stream"] if missing else []
    return [s if v is None else v for s, v in zip(scalar, vector, strict=True)], notes
