"""Heap-memory measurement through tracemalloc (opt-in: tracing every allocation slows Python down).

A ``heap_memory`` region measures the net bytes allocated inside it and still alive at its end, NumPy
arrays included (NumPy reports its data buffers to tracemalloc).

Under the Valgrind counter (``MA_COUNTERS=valgrind``, which measures flops and loads/stores, not the heap) the
provider comes along *lazily*: tracemalloc starts at the first read, i.e. at the first ``heap_memory`` region,
so a program without heap assertions runs (and counts its loads and stores) as before. Blocks allocated before
it started are not traced, and freeing them does not lower the count: a region still measures what it
allocated and kept.
"""

from __future__ import annotations

import sys
import tracemalloc

from .base import CounterProvider, ProviderStatus, Reader


def _current_bytes() -> int:
    return tracemalloc.get_traced_memory()[0]


class TracemallocProvider(CounterProvider):
    name = "tracemalloc"

    def __init__(self, *, lazy: bool = False) -> None:
        self._lazy = lazy
        self._started_here = False
        if not lazy:
            self._start()

    def _start(self) -> None:
        self._started_here = not tracemalloc.is_tracing()
        if self._started_here:
            tracemalloc.start()

    def status(self) -> ProviderStatus:
        started = "" if not self._lazy else " (started at the first heap_memory region)"
        return ProviderStatus(self.name, True, version=f"python {sys.version.split()[0]}{started}",
                              events={"traced_memory": "ok"})

    def reader(self, kind: str) -> Reader | None:
        if kind != "heap_memory":
            return None
        return self._first_read if self._lazy else _current_bytes

    def _first_read(self) -> int:
        if not tracemalloc.is_tracing():
            self._start()
        return _current_bytes()

    def source(self, kind: str) -> str:
        return "tracemalloc current traced bytes"

    def close(self) -> None:
        if self._started_here and tracemalloc.is_tracing():
            tracemalloc.stop()
