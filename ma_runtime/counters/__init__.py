"""Counter providers (PAPI, the Valgrind tool, tracemalloc) behind one interface (see base.py).

``MA_COUNTERS`` names the providers to use, comma-separated: ``auto`` (the Valgrind tool when the program
runs under it, else PAPI where its events exist, else none), ``papi``, ``valgrind``, ``tracemalloc``, ``mallinfo``,
``ccalls`` (calls from Python into compiled code per site, counters/ccalls.py), ``none``. For each kind the
first provider that can measure it wins. Timers are not providers: wall and CPU time are always recorded.
``valgrind`` brings ``mallinfo`` along for the heap (glibc's count of the C heap: memory.py) unless the spec names a
heap provider itself.
"""

from __future__ import annotations

import importlib
import os

from ma_core.errors import CounterError

from .base import CounterProvider, ProviderStatus, Reader

MEASURABLE_KINDS = ("flop", "loadstore", "heap_memory", "stack_memory")

# name -> "module:Class", imported only when asked for.
PROVIDERS = {
    "papi": "ma_runtime.counters.papi:PapiProvider",
    "valgrind": "ma_runtime.counters.valgrind:ValgrindProvider",
    "tracemalloc": "ma_runtime.counters.memory:TracemallocProvider",
    "mallinfo": "ma_runtime.counters.memory:MallinfoProvider",  # the C heap (what libma measures)
    "ccalls": "ma_runtime.counters.ccalls:CCallsProvider",  # calls into compiled code per site (no kind)
}

__all__ = ["MEASURABLE_KINDS", "PROVIDERS", "CounterProvider", "ProviderStatus", "Reader", "open_providers",
           "parse_spec"]


def parse_spec(spec: str) -> list[str]:
    names = [n.strip().lower() for n in spec.split(",") if n.strip()]
    for name in names:
        if name not in PROVIDERS and name not in ("auto", "none"):
            known = ", ".join(["auto", "none", *PROVIDERS])
            raise CounterError(f"MA_COUNTERS: unknown counter provider {name!r} (expected one of {known})")
    return names


def _create(name: str) -> CounterProvider:
    module_name, _, class_name = PROVIDERS[name].partition(":")
    provider_class = getattr(importlib.import_module(module_name), class_name)
    return provider_class()


def open_providers(spec: str) -> list[CounterProvider]:
    """Providers named by ``spec``; ``auto`` keeps PAPI only when it has working events."""
    providers: list[CounterProvider] = []
    names = parse_spec(spec)
    for name in names:
        if name == "none":
            continue
        if name == "auto":
            providers.extend(_auto())
        else:
            providers.append(_create(name))
    if "valgrind" in names and not {"tracemalloc", "mallinfo"} & set(names):  # the tool counts no heap
        providers.append(_create("mallinfo"))
    return providers


def _auto() -> list[CounterProvider]:
    """The tool when ``ma run --counters valgrind`` started us under it; PAPI otherwise (where it has no
    events it measures nothing, and the header says why)."""
    if os.environ.get("MA_VALGRIND_TOOL_DIR"):
        valgrind = _create("valgrind")
        if valgrind.status().available:
            return [valgrind]
    return [_create("papi")]
