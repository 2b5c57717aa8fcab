"""The counter-provider interface: one object per counter source (PAPI, Valgrind tool, tracemalloc).

A provider measures some annotation kinds (``flop``, ``loadstore``, ``heap_memory``, ...). For each kind it
hands out a *reader*: a zero-argument callable returning a running total, so that a region's value is
``reader() - reader()`` taken at exit and at entry. Readers sit on the hot path: make them cheap.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

Reader = Callable[[], int]


@dataclass
class ProviderStatus:
    """What goes into the trace header for one provider."""

    name: str
    available: bool
    version: str | None = None
    reason: str | None = None  # why it is not available, or what it is missing
    events: dict[str, str] = field(default_factory=dict)  # event name -> "ok" or why it is missing

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "available": self.available, "version": self.version,
                "reason": self.reason, "events": dict(self.events)}


class CounterProvider(ABC):
    """One counter source. Subclasses set ``name`` and are registered in ``ma_runtime.counters``."""

    name: ClassVar[str]

    @abstractmethod
    def status(self) -> ProviderStatus:
        """Availability, version and per-event state, for the trace header."""

    @abstractmethod
    def reader(self, kind: str) -> Reader | None:
        """Running-total reader for annotation kind ``kind``, or None when this provider cannot measure it."""

    def source(self, kind: str) -> str:
        """Short description of what is read for ``kind`` (e.g. ``PAPI_DP_OPS+PAPI_SP_OPS``)."""
        return self.name

    def close(self) -> None:  # noqa: B027 (optional: most providers hold nothing to release)
        """Release the counters; called once at the end of the run."""
