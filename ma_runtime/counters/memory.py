"""Heap-memory measurement through tracemalloc (opt-in: tracing every allocation slows Python down).

A ``heap_memory`` region measures the net bytes allocated inside it and still alive at its end, NumPy
arrays included (NumPy reports its data buffers to tracemalloc).
"""

from __future__ import annotations

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
