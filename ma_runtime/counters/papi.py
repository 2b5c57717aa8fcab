"""Hardware counters through PAPI (python-papi). Where the host has no PMU, says why and measures nothing.

Default events: flop = PAPI_DP_OPS + PAPI_SP_OPS (else PAPI_FP_OPS), loadstore = PAPI_LD_INS + PAPI_SR_INS
(else PAPI_LST_INS). ``MA_PAPI_EVENTS="flop=PAPI_FP_OPS;loadstore=PAPI_LST_INS"`` picks others, presets or
native names, ``+`` summing several.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from ma_core.errors import CounterError

from .base import CounterProvider, ProviderStatus, Reader

DEFAULT_EVENTS: dict[str, list[list[str]]] = {
    # kind -> alternatives, each a list of events summed; the first alternative that can be added wins.
    "flop": [["PAPI_DP_OPS", "PAPI_SP_OPS"], ["PAPI_FP_OPS"]],
    "loadstore": [["PAPI_LD_INS", "PAPI_SR_INS"], ["PAPI_LST_INS"]],
}


def parse_event_spec(spec: str) -> dict[str, list[list[str]]]:
    chosen: dict[str, list[list[str]]] = {}
    for part in (p.strip() for p in spec.split(";")):
        if not part:
            continue
        kind, sep, events = part.partition("=")
        names = [e.strip() for e in events.split("+") if e.strip()]
        if not sep or kind.strip() not in DEFAULT_EVENTS or not names:
            raise CounterError(f"MA_PAPI_EVENTS={spec!r}: expected entries like 'flop=PAPI_FP_OPS' or "
                               f"'loadstore=PAPI_LD_INS+PAPI_SR_INS' separated by ';' (kinds: flop, loadstore)")
        chosen[kind.strip()] = [names]
    return chosen


class PapiProvider(CounterProvider):
    name = "papi"

    def __init__(self) -> None:
        self._papi: Any = None
        self._eventset: Any = None
        self._version: str | None = None
        self._reason: str | None = None
        self._events: dict[str, str] = {}
        self._slots: dict[str, list[int]] = {}  # kind -> indices into the eventset's values
        self._order: list[str] = []  # events of the eventset, in the order read() returns them
        wanted = dict(DEFAULT_EVENTS)
        wanted.update(parse_event_spec(os.environ.get("MA_PAPI_EVENTS", "")))
        self._setup(wanted)

    def _setup(self, wanted: dict[str, list[list[str]]]) -> None:
        try:
            from pypapi import exceptions, papi_low
        except ImportError:
            self._reason = "python-papi is not installed (pip install python-papi)"
            return
        self._papi = papi_low
        try:
            papi_low.library_init()
        except exceptions.PapiError as exc:
            self._reason = f"PAPI_library_init failed: {exc}"
            return
        version = papi_low.PAPI_VER_CURRENT
        self._version = f"{(version >> 24) & 0xff}.{(version >> 16) & 0xff}.{(version >> 8) & 0xff}"
        for kind, alternatives in wanted.items():
            for events in alternatives:
                if all(self._can_count(event, exceptions) for event in events):
                    self._slots[kind] = list(range(len(self._order), len(self._order) + len(events)))
                    self._order.extend(events)
                    break
        if not self._order:
            components = self._component_problems()
            self._reason = "no PAPI event can be counted on this host" + (f" ({components})" if components else "")
            return
        try:
            self._eventset = papi_low.create_eventset()
            for event in self._order:
                papi_low.add_named_event(self._eventset, event)
            papi_low.start(self._eventset)
        except exceptions.PapiError as exc:
            self._reason = f"PAPI cannot count {'+'.join(self._order)} together: {exc}"
            self._slots.clear()
            self._eventset = None

    def _can_count(self, event: str, exceptions: Any) -> bool:
        """Add ``event`` alone to a scratch eventset: the only test that tells whether the host counts it."""
        if event in self._events:
            return self._events[event] == "ok"
        scratch = self._papi.create_eventset()
        try:
            self._papi.add_named_event(scratch, event)
            self._events[event] = "ok"
        except exceptions.PapiError as exc:
            self._events[event] = f"missing: {exc}"
        finally:
            self._papi.cleanup_eventset(scratch)
            self._papi.destroy_eventset(scratch)
        return self._events[event] == "ok"

    def _component_problems(self) -> str:
        problems = []
        for index in range(self._papi.num_components()):
            info = self._papi.get_component_info(index)
            if info.disabled:
                reason = info.disabled_reason
                reason = reason.decode() if isinstance(reason, bytes) else str(reason)
                problems.append(f"component {info.name} disabled: {reason}")
        return "; ".join(problems)

    def status(self) -> ProviderStatus:
        return ProviderStatus(self.name, bool(self._slots), self._version, self._reason, dict(self._events))

    def reader(self, kind: str) -> Reader | None:
        slots = self._slots.get(kind)
        if slots is None or self._eventset is None:
            return None
        read, eventset = self._papi.read, self._eventset
        if len(slots) == 1:
            index = slots[0]
            return lambda: int(read(eventset)[index])
        return lambda: int(sum(read(eventset)[i] for i in slots))

    def source(self, kind: str) -> str:
        return "+".join(self._order[i] for i in self._slots.get(kind, [])) or self.name

    def close(self) -> None:
        if self._eventset is not None:
            with contextlib.suppress(Exception):  # already stopped or library shut down: nothing to release
                self._papi.stop(self._eventset)
            self._eventset = None
