"""The two-rank Python exchange curve of the profile (``cpython.exchange``): what one message costs a
Python MPI program's ranks, one per core, beyond the C ping-pong's latency.

The network block's latency is ``csrc/pingpong.c``'s: C ranks, nothing between messages. A Python program's
ranks pay more per message, in two ways no other profile field measures:

- the mpi4py calls themselves (``comm.Irecv``, ``comm.Send``, ``req.Wait``: argument parsing, buffer
  protocol, a request object), dearer than the NumPy ufunc call that ``cpython.call_overhead_s`` prices;
- the wait for a partner whose work between messages took longer this time: each exchange waits for the later
  of the two ranks, so with work between messages the wall time per message grows beyond the work.

Measured by :mod:`.pyexchange` on 2 ranks (one per core) with NPB CG's butterfly exchange (Irecv, Send, Wait
with partner rank XOR 1, 8 bytes), at a few amounts of work before every message. The work streams from memory
(each pass two NumPy ufunc calls on the next 32 KiB of a buffer four times the last cache, ``--stream``), as a
program's large kernels do: two ranks' memory traffic shares the memory system unevenly, so one rank is late
more often than with work in L1 (where the wall time per message stays within a few us of the work). The
work's own seconds are timed with both ranks working at once and no messages (``work --all``), so the memory
system's sharing is in the work, and the curve's excess over it is the exchange and the waits. ``calls`` is how
many of the exchange's dispatches ``ma run --counters ccalls`` counts (Irecv, Send, Wait), so the runtime part
can take out what it already charges at ``cpython.call_overhead_s`` (:func:`.runtime.message_extra`).

Filled by ``ma machine probe`` and, into an existing profile, ``ma machine exchange PROFILE``; optional (older
profiles have none: the prediction then says so in its notes), versioned (:data:`.section.EXCHANGE_VERSION`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from ma_core.errors import PythonExchangeError
from ma_core.programs import run_program

from .section import EXCHANGE_CALLS, EXCHANGE_PATTERN, EXCHANGE_REFERENCE, EXCHANGE_VERSION

FIELD = "cpython.exchange"
RANKS = 2
PASSES = (0, 1, 4, 16, 64, 256, 1024)  # two ufunc calls on 32 KiB from memory each (a few microseconds a pass)
QUICK: dict[str, Any] = {"min_time": 2e-3, "batches": 3, "passes": (0, 4, 64)}  # the test suite's setting
MIN_STREAM_MIB = 64


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
    """The ``cpython.exchange`` block: per amount of work, the work's seconds with both ranks working
    (the fastest batch, as the oversubscribed curve's) and the wall seconds per message of the exchange on 2
    ranks (the median of ``batches`` batches of at least ``min_time`` s each, or with ``statistic`` "best" the
    fastest); the work streams through a buffer of :func:`stream_mib` of ``last_cache_bytes``. ``latency_s``
    and ``call_overhead_s``: the profile's C latency and call cost, kept as the block's reference
    (:data:`.section.EXCHANGE_REFERENCE`)."""
    from ma_tools import toolchain

    mpiexec = toolchain.find_program("mpiexec")
    if mpiexec is None:
        raise PythonExchangeError("no mpiexec beside this Python or on PATH: install the 'mpich' wheel")
    amounts = sorted(set(passes))
    child = [sys.executable, "-m", "backends.cpython.pyexchange"]
    mib = stream_mib(last_cache_bytes)
    timing = [str(min_time), str(batches), *map(str, amounts), "--stream", str(mib)]
    wall = _run([str(mpiexec), "-n", str(RANKS), *child, "exchange-work", *timing, "--irecv", "--pairs"],
                len(amounts))
    working = [p for p in amounts if p > 0]
    alone = {p: best for p, _, best in _run([str(mpiexec), "-n", str(RANKS), *child, "work", str(min_time),
                                             str(batches), *map(str, working), "--stream", str(mib), "--all"],
                                            len(working))} if working else {}
    return {"version": EXCHANGE_VERSION, "pattern": EXCHANGE_PATTERN, "ranks": RANKS, "bytes": 8,
            "calls": EXCHANGE_CALLS, "work_buffer_bytes": mib << 20, "batch_s": min_time, "statistic": statistic,
            **{k: v for k, v in zip(EXCHANGE_REFERENCE, (latency_s, call_overhead_s), strict=True) if v is not None},
            "work": [{"passes": p, "work_s": alone[p] if p else 0.0, "seconds": best if statistic == "best" else med}
                     for p, med, best in wall]}
