"""Partner assertions: ``ma.mpi_send(id, bytes, peer="mod(rank+1, nprocs)")``.

An MPI assertion may name the rank its calls talk to (the destination or source of a point-to-point call,
the root of a rooted collective) as an expression of the variables in scope; ``rank`` is this process's
rank in MPI_COMM_WORLD and ``iter`` the iteration (from 0) of the innermost enclosing ``ma.loop`` that counts
them (``lp.range``, ``lp.iter``), unless the program declared its own. ``iter`` spares declaring a loop index
as a variable, which would make every annotation in the loop evaluate its expression again.

The PMPI library keeps the partner of each group's recent calls (``ma_pmpi_group_peers``); at the end of the
region every call it made is compared with the expression's value and counted as a peer PASS or FAIL. The
first failing call is kept with both ranks (the expected and the actual partner).

A region with ``peer=`` is wrapped by :class:`PeerCheck` around the usual annotation object, so the common
path of every other assertion is unchanged; only the first MA_PEER_CHECKS (64) calls of each site are
checked (counted by ``annotations.partnered``, in compiled code). The checks are written into the trace
as its ``peers`` list (docs/trace-format.md), one entry per site and thread.
"""

from __future__ import annotations

import os
import threading
from types import TracebackType
from typing import Any, Literal

from ma_core.errors import AnnotationError
from ma_core.expr import parse_expression
from ma_core.trace_format import PEER_KEYS

from .threadstate import current_iteration


class PeerRecord:
    """The peer verdicts of one site on one thread."""

    __slots__ = ("cache", "error", "expr", "expression", "failed", "first_fail", "node", "passed", "symbols", "thread",
                 "unmeasured")

    def __init__(self, node: Any, expr: str, thread: int) -> None:
        self.node = node
        self.expr = expr
        self.expression = parse_expression(expr)
        self.symbols = tuple(sorted(self.expression.symbols))
        self.cache: dict[tuple[Any, ...], Any] = {}  # the expression's value by the values of its symbols
        self.error = ""
        self.thread = thread
        self.passed = 0
        self.failed = 0
        self.unmeasured = 0
        self.first_fail: dict[str, int] | None = None

    def expected(self, env: dict[str, Any], implicit: dict[str, int]) -> Any:
        """The asserted partner in ``env`` and the ``implicit`` names (``rank``, ``iter``) the program did not
        declare itself, or None (see ``error``)."""
        key = (tuple(map(env.get, self.symbols)), *implicit.values())
        value = self.cache.get(key)
        if value is None:
            try:
                value = self.expression.evaluate({**implicit, **env})
            except Exception as exc:
                self.error = str(exc)
                return None
            if len(self.cache) < 4096:
                self.cache[key] = value
        return value

    def to_json(self) -> dict[str, Any]:
        values = (self.node.path, self.node.type, self.thread, self.expr, self.passed, self.failed, self.unmeasured,
                  self.first_fail)
        return dict(zip(PEER_KEYS, values, strict=True))


_records: dict[tuple[int, int], PeerRecord] = {}  # (id(node), thread index) -> record; nodes live as long
_lock = threading.Lock()


def records() -> list[PeerRecord]:
    """Every site's peer record so far (for the trace writer)."""
    with _lock:
        return list(_records.values())


def _record_for(node: Any, expr: str, thread: int) -> PeerRecord:
    key = (id(node), thread)
    record = _records.get(key)
    if record is None:
        with _lock:
            record = _records.setdefault(key, PeerRecord(node, expr, thread))
    return record


class PeerCheck:
    """Context manager around an MPI annotation object that also checks the partner of every call."""

    __slots__ = ("calls0", "expr", "region")

    def __init__(self, region: Any, expr: str) -> None:
        parse_expression(expr)  # a syntax error shows at the annotation, not at its end
        self.region = region
        self.expr = expr
        self.calls0 = -1

    def _calls(self) -> int:
        region = self.region
        node = region.node
        if node is None or not region.measured or node.counters is None:
            return -1
        return int(node.counters[node.group])

    def __enter__(self) -> Any:
        entered = self.region.__enter__()
        self.calls0 = self._calls()
        return entered

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> Literal[False]:
        calls1 = self._calls()
        region = self.region
        node, state = region.node, region.state if region.node is not None else None
        outer = region.outer if node is not None else None
        result = region.__exit__(exc_type, exc, tb)
        if node is None or state is None or exc_type is not None:
            return result
        self._check(node, state, calls1, outer)
        return result

    def _check(self, node: Any, state: Any, calls1: int, outer: Any) -> None:
        record = _record_for(node, self.expr, state.index)
        runtime = state.runtime
        if self.calls0 < 0 or calls1 < 0 or runtime.pmpi is None:
            record.unmeasured += 1
            return
        implicit = {"rank": runtime.rank}
        if "iter" in record.symbols:
            iteration = current_iteration(outer)
            if iteration is not None:
                implicit["iter"] = iteration
        expected = record.expected(state.env, implicit)
        if expected is None:
            runtime.anomaly("evaluation", node, f"peer expression {self.expr!r}: {record.error}")
            record.unmeasured += 1
            return
        peers = runtime.pmpi.recent_peers(node.group // 2, self.calls0, calls1)
        if peers is None:  # more calls than the library remembers
            record.unmeasured += 1
            return
        if not peers:
            return  # no call made (e.g. a count of 0): nothing to judge
        wrong = [p for p in peers if p != expected]
        if not wrong:
            record.passed += 1
            return
        record.failed += 1
        if record.first_fail is None:
            record.first_fail = {"call": node.calls, "rank": runtime.rank, "expected": _as_int(expected),
                                 "actual": wrong[0]}


def _as_int(value: Any) -> Any:
    return int(value) if float(value).is_integer() else value


def check_limit() -> int:
    """MA_PEER_CHECKS: how many calls of each site are checked (default 64; 0: every call). A partner pattern
    is fixed by the code, and a check (an evaluation and a lookup) would otherwise cost every call of a
    communication-bound loop its share; annotations.partnered counts the calls."""
    text = os.environ.get("MA_PEER_CHECKS", "").strip()
    if not text:
        return DEFAULT_CHECKS
    if not text.isdigit():
        raise AnnotationError(f"MA_PEER_CHECKS={text!r}: expected a whole number of calls (0: every call)")
    return int(text)


DEFAULT_CHECKS = 64


def with_peer(region: Any, peer: str | None) -> Any:
    """``region`` wrapped to check its partners (``region`` itself when ``peer`` is None)."""
    if peer is None:
        return region
    if not isinstance(peer, str):
        raise AnnotationError(f"{region.TYPE} {region.id!r}: peer must be an expression (str), got {peer!r}")
    return PeerCheck(region, peer)
