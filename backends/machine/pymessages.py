"""The two-rank Python exchange curve of the profile (``network.python_exchange``): what one message costs a
Python MPI program's ranks, one per core, beyond the C ping-pong's latency.

The network block's latency is ``csrc/pingpong.c``'s: C ranks, nothing between messages. A Python program's
ranks pay more per message, in two ways no other profile field measures:

- the mpi4py calls themselves (``comm.Irecv``, ``comm.Send``, ``req.Wait``: argument parsing, buffer
  protocol, a request object), dearer than the NumPy ufunc call that ``cpu.call_overhead_s`` prices;
- the wait for a partner whose work between messages took longer this time: each exchange waits for the later
  of the two ranks, so with work between messages the wall time per message grows beyond the work.

Measured by :mod:`.pyexchange` on 2 ranks (one per core) with NPB CG's butterfly exchange (Irecv, Send, Wait
with partner rank XOR 1, 8 bytes), at a few amounts of work before every message. The work streams from memory
(each pass two NumPy ufunc calls on the next 32 KiB of a buffer four times the last cache, ``--stream``), as a
program's large kernels do: two ranks' memory traffic shares the memory system unevenly, so one rank is late
more often than with work in L1 (where the wall time per message stays within a few us of the work). The
work's own seconds are timed with both ranks working at once and no messages (``work --all``), so the memory
system's sharing is in the work, and the curve's excess over it is the exchange and the waits. ``calls`` is how
many of the exchange's dispatches ``ma run --counters ccalls`` counts (Irecv, Send, Wait), so the maps backend
can take out what it already charges at ``cpu.call_overhead_s``
(:func:`backends.maps.network.python_message_extra`).

Filled by ``ma machine probe`` and, into an existing profile, ``ma machine exchange PROFILE``; optional (older
profiles have none: the backend then says so in its notes), versioned (``PYTHON_EXCHANGE_VERSION``).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ma_core.errors import ProfileError, PythonExchangeError
from ma_core.programs import run_program

from .profile import versioned_block

PYTHON_EXCHANGE_VERSION = 1
FIELD = "network.python_exchange"
PATTERN = "irecv-send-wait pairs"
RANKS = 2
EXCHANGE_CALLS = 3  # comm.Irecv, comm.Send, req.Wait: each a CALL the ccalls counter counts
PASSES = (0, 1, 4, 16, 64, 256, 1024)  # two ufunc calls on 32 KiB from memory each (a few microseconds a pass)
QUICK: dict[str, Any] = {"min_time": 2e-3, "batches": 3, "passes": (0, 4, 64)}  # the test suite's setting
MIN_STREAM_MIB = 64
# the C latency and the cost of a counted call the curve's excess is taken net of, as the profile had them when
# it was measured: a what-if on network.latency_s or cpu.call_overhead_s then moves only those parts
REFERENCE = ("latency_s", "call_overhead_s")


def _run(argv: Sequence[str], expected: int) -> list[tuple[int, float, float]]:
    """Rows (passes, median seconds, best seconds) printed by :mod:`.pyexchange`."""
    done = run_program(argv, PythonExchangeError, "Python exchange probe", timeout=600)
    rows = []
    for line in done.stdout.splitlines():
        passes, median, best = line.split()
        rows.append((int(passes), float(median), float(best)))
    if len(rows) != expected:
        raise PythonExchangeError(f"Python exchange probe printed {len(rows)} of {expected} lines:\n{done.stdout}")
    return rows


def stream_mib(last_cache_bytes: int) -> int:
    """MiB of the work's buffer: four times the last cache, at least :data:`MIN_STREAM_MIB`."""
    return max(MIN_STREAM_MIB, -(-4 * last_cache_bytes // (1 << 20)))


def measure(last_cache_bytes: int, min_time: float = 0.05, batches: int = 9, statistic: str = "median",
            passes: Sequence[int] = PASSES, latency_s: float | None = None,
            call_overhead_s: float | None = None) -> dict[str, Any]:
    """The ``network.python_exchange`` block: per amount of work, the work's seconds with both ranks working
    (the fastest batch, as the oversubscribed curve's) and the wall seconds per message of the exchange on 2
    ranks (the median of ``batches`` batches of at least ``min_time`` s each, or with ``statistic`` "best" the
    fastest); the work streams through a buffer of :func:`stream_mib` of ``last_cache_bytes``. ``latency_s``
    and ``call_overhead_s``: the profile's C latency and call cost, kept as the block's reference
    (:data:`REFERENCE`)."""
    from ma_tools import toolchain

    mpiexec = toolchain.find_program("mpiexec")
    if mpiexec is None:
        raise PythonExchangeError("no mpiexec beside this Python or on PATH: install the 'mpich' wheel")
    amounts = sorted(set(passes))
    child = [sys.executable, "-m", "backends.machine.pyexchange"]
    mib = stream_mib(last_cache_bytes)
    timing = [str(min_time), str(batches), *map(str, amounts), "--stream", str(mib)]
    wall = _run([str(mpiexec), "-n", str(RANKS), *child, "exchange-work", *timing, "--irecv", "--pairs"],
                len(amounts))
    working = [p for p in amounts if p > 0]
    alone = {p: best for p, _, best in _run([str(mpiexec), "-n", str(RANKS), *child, "work", str(min_time),
                                             str(batches), *map(str, working), "--stream", str(mib), "--all"],
                                            len(working))} if working else {}
    return {"version": PYTHON_EXCHANGE_VERSION, "pattern": PATTERN, "ranks": RANKS, "bytes": 8,
            "calls": EXCHANGE_CALLS, "work_buffer_bytes": mib << 20, "batch_s": min_time, "statistic": statistic,
            **{k: v for k, v in zip(REFERENCE, (latency_s, call_overhead_s), strict=True) if v is not None},
            "work": [{"passes": p, "work_s": alone[p] if p else 0.0, "seconds": best if statistic == "best" else med}
                     for p, med, best in wall]}


@dataclass(frozen=True)
class PythonExchange:
    """The block as the maps backend reads it: the curve (work seconds, wall seconds per message) sorted by
    work, the exchange's counted calls, and the C latency and call cost it is referred to (None: the block has
    none; then the profile's own are taken)."""

    curve: list[tuple[float, float]]
    calls: int
    latency_s: float | None = None
    call_overhead_s: float | None = None


def read_curve(block: Mapping[str, Any] | None, where: str = "<profile>") -> PythonExchange | None:
    """The block, checked; None without one; ProfileError naming the field on a malformed one."""
    if block is None:
        return None
    block = versioned_block(block, PYTHON_EXCHANGE_VERSION, FIELD, where)
    calls = block.get("calls", EXCHANGE_CALLS)
    if not isinstance(calls, int) or isinstance(calls, bool) or calls < 0:
        raise ProfileError(where, f"expected an integer >= 0, got {calls!r}", f"{FIELD}.calls")
    reference = []
    for name in REFERENCE:
        value = block.get(name)
        if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0):
            raise ProfileError(where, f"expected a number >= 0, got {value!r}", f"{FIELD}.{name}")
        reference.append(None if value is None else float(value))
    try:
        points = sorted((float(row["work_s"]), float(row["seconds"])) for row in block["work"])
    except (KeyError, TypeError, ValueError):
        raise ProfileError(where, "expected a list of rows with work_s and seconds (numbers)",
                           f"{FIELD}.work") from None
    if not points or any(w < 0 or s <= 0 for w, s in points) or len({w for w, _ in points}) != len(points):
        raise ProfileError(where, f"expected distinct work_s >= 0 and positive seconds, got {points}",
                           f"{FIELD}.work")
    return PythonExchange(points, calls, *reference)
