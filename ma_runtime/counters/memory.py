"""Heap-memory measurement: tracemalloc (opt-in: tracing every allocation slows Python down) or glibc's mallinfo2.

A ``heap_memory`` region measures the net bytes allocated inside it and still alive at its end.

- ``tracemalloc``: what Python traces, NumPy arrays included (NumPy reports its data buffers to it).
- ``mallinfo``: the C heap in use (glibc ``mallinfo2``: ``uordblks + hblkhd``), as libma measures it: NumPy's
  buffers with malloc's chunk header (16 bytes a block), not the small objects of Python's own allocator. It
  costs one call per read and nothing between reads, so it is what ``MA_COUNTERS=valgrind`` brings along:
  tracemalloc would do its bookkeeping inside every allocation of the program, which the Valgrind tool would
  count in the program's flop and loadstore regions. glibc hands blocks under about 1 KiB out of a per-thread
  cache it counts as in use: such a block that reuses a freed one measures 0.
"""

from __future__ import annotations

import ctypes
import sys
import tracemalloc

from .base import CounterProvider, ProviderStatus, Reader


def _current_bytes() -> int:
    return tracemalloc.get_traced_memory()[0]


class TracemallocProvider(CounterProvider):
    name = "tracemalloc"

    def __init__(self) -> None:
        self._started_here = not tracemalloc.is_tracing()
        if self._started_here:
            tracemalloc.start()

    def status(self) -> ProviderStatus:
        return ProviderStatus(self.name, True, version=f"python {sys.version.split()[0]}",
                              events={"traced_memory": "ok"})

    def reader(self, kind: str) -> Reader | None:
        return _current_bytes if kind == "heap_memory" else None

    def source(self, kind: str) -> str:
        return "tracemalloc current traced bytes"

    def close(self) -> None:
        if self._started_here and tracemalloc.is_tracing():
            tracemalloc.stop()


class _MallInfo2(ctypes.Structure):  # struct mallinfo2 of glibc's <malloc.h> (2.33 and later)
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                     "fsmblks", "uordblks", "fordblks", "keepcost")]


class MallinfoProvider(CounterProvider):
    """The C heap in use, from glibc's ``mallinfo2`` (unavailable elsewhere: the header says why)."""

    name = "mallinfo"

    def __init__(self) -> None:
        self._problem: str | None = None
        self._call = None
        try:
            libc = ctypes.CDLL(None)
            call = libc.mallinfo2
        except (OSError, AttributeError):
            self._problem = "glibc's mallinfo2 is not available in this process (glibc 2.33 or later)"
            return
        call.restype = _MallInfo2
        call.argtypes = []
        self._call = call

    def _in_use(self) -> int:
        info = self._call()  # type: ignore[misc]
        return int(info.uordblks + info.hblkhd)

    def status(self) -> ProviderStatus:
        if self._call is None:
            return ProviderStatus(self.name, False, reason=self._problem)
        import platform

        return ProviderStatus(self.name, True, version=" ".join(platform.libc_ver()),
                              events={"in_use_bytes": "ok"})

    def reader(self, kind: str) -> Reader | None:
        return self._in_use if kind == "heap_memory" and self._call is not None else None

    def source(self, kind: str) -> str:
        return "mallinfo2 uordblks+hblkhd (heap bytes in use)"
