"""Memory time of a kernel without a ``loadstore`` expression, from the traffic its signature run measured.

A NumPy kernel's loads and stores cannot honestly be stated as instruction counts (``vlen`` doubles per
access, temporaries, the interpreter's own accesses), but the cache simulation of the signature run
(``ma run --counters valgrind --cache PROFILE``) sees every access: per flop site, the line accesses and
which level served each. An access served beyond L1 brings one line into L1; the backend prices those lines:

    seconds per flop = sum over levels k >= 2 of  l_k x line bytes / F(s_k)

l_k the lines level k (main memory last) served per flop on the signature run, s_k the cumulative hit rates of
a stride-1 stream of 8-byte words from level k (1 - 8/line below k, 1 from k on), F the profile's fitted
Equation 1: the bytes per second MultiMAPS measured streaming from that level, in which every byte of each
line is used. Times the model's flops, so the term scales with the class like the compute term. L1 hits are
left out: the compute rate (``cpython.python_flops``, a ufunc in cache) already includes them, and most of the
interpreter's own accesses are among them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..machine.profile import MachineProfile

WORD_BYTES = 8


def stream_rows(machine: MachineProfile) -> list[tuple[float, ...]]:
    """Cumulative hit rates of a stride-1 stream of 8-byte words served by level 2, 3, ..., main memory."""
    levels = machine.levels
    caches = machine.caches
    rows = []
    for k in range(1, levels):
        row, best = [], 0.0
        for j in range(levels):
            h = 1.0 if j >= k else 1.0 - WORD_BYTES / caches[j].line_bytes
            best = max(best, h)
            row.append(best)
        rows.append(tuple(row))
    return rows


def stream_bandwidths(machine: MachineProfile) -> list[float]:
    """Bytes per second of a stride-1 stream from level 2, 3, ..., main memory: F at :func:`stream_rows`."""
    if machine.bandwidth_fit is None:
        return []
    params = machine.bandwidth_fit.params
    return [float(params.symbolic(row)) for row in stream_rows(machine)]


def seconds_per_flop(lines_per_flop: Sequence[float], line_bytes: int, bandwidths: Sequence[float]) -> float:
    """Seconds per flop of the lines served beyond L1 (``lines_per_flop``: L1 first, memory last), each
    ``line_bytes`` at its level's stream bandwidth (``bandwidths``: level 2 first, memory last)."""
    if len(lines_per_flop) != len(bandwidths) + 1:
        raise ValueError(f"{len(lines_per_flop)} levels of lines per flop for {len(bandwidths) + 1} levels")
    return sum(lines * line_bytes / bandwidth for lines, bandwidth in zip(lines_per_flop[1:], bandwidths,
                                                                        strict=True))


def block_of(types: Mapping[str, str], path: str) -> str:
    """The block a site belongs to: its nearest enclosing site that is not a flop or loadstore region (so a
    loadstore region nested in a flop region, or around one, shares the flop's block). ``types``: site path ->
    site type."""
    parent = path.rpartition("/")[0]
    while parent and types.get(parent) in ("flop", "loadstore"):
        parent = parent.rpartition("/")[0]
    return parent


def kernels_without_loadstore(types: Mapping[str, str], loadstore_paths: Sequence[str]) -> set[str]:
    """The flop sites whose memory only measured traffic can price: no loadstore site shares their block (the
    enclosing non-kernel region: :func:`block_of`) and no flop site encloses them (the
    outer kernel's traffic takes in theirs)."""
    priced = {block_of(types, path) for path in loadstore_paths}
    return {path for path, kind in types.items() if kind == "flop" and block_of(types, path) not in priced
            and types.get(path.rpartition("/")[0]) != "flop"}
