"""The annotation objects behind ``ma.loop``, ``ma.flop``, ``ma.mpi_send``, ...

Each is a context manager. ``__enter__`` finds (or creates) its node below the innermost open annotation,
evaluates the expression (cached while no variable changes) and starts the measurement; ``__exit__`` takes
the measurement and folds it into the node. Both are shared by every kind: a kind only says how it
measures, through ``start`` (last thing on entry) and ``stop`` (first thing on exit), so that counter
reads enclose as little of the SDK's own work as possible. They run on every call of annotated code:
compiled by Cython where available (annotations.pxd), slotted plain Python otherwise.
"""

from __future__ import annotations

import functools
from builtins import range as _range
from collections.abc import Callable, Iterable, Iterator
from importlib.machinery import EXTENSION_SUFFIXES
from operator import length_hint as _length_hint
from threading import get_ident, main_thread
from time import perf_counter_ns, process_time_ns
from types import TracebackType
from typing import Any, TypeVar, Union

from ma.errors import AnnotationError

from .mars import thread_state
from .threadstate import ThreadState
from .tree import Node

Number = Union[int, float]
T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

MPI_TYPES = ("mpi_send", "mpi_isend", "mpi_recv", "mpi_irecv", "mpi_sendrecv", "mpi_bcast", "mpi_reduce",
             "mpi_allreduce", "mpi_gather", "mpi_scatter", "mpi_allgather", "mpi_alltoall", "mpi_barrier")

# Compiled, the clock, the thread id and the iterator's length hint are read straight from C (names that
# annotations.pxd declares and this file never binds): where a call takes a few hundred instructions, the
# Python-level calls and the int objects they return would be a third of them. The clock is the same
# CLOCK_MONOTONIC as perf_counter_ns (on Linux), which the rest of the runtime uses.
_COMPILED = __file__.endswith(tuple(EXTENSION_SUFFIXES))

# The main thread's state, found without a thread-local lookup (which costs more than the rest of a call).
_MAIN_THREAD = main_thread().ident
_main_state: ThreadState | None = None


def current_state() -> ThreadState:
    global _main_state
    if _COMPILED:
        main = ma_thread_ident() == _MAIN_THREAD  # noqa: F821
    else:
        main = get_ident() == _MAIN_THREAD
    if main:
        if _main_state is None:
            _main_state = thread_state()
        return _main_state
    return thread_state()


def predicted(node: Node) -> Any:
    """The prediction of the call ending at ``node`` (evaluated when it started), None without expression."""
    return node.cache_value if node.expression is not None else None


class Region:
    """Common part of every annotation: site lookup, prediction, stack, timing, folding."""

    TYPE = "region"

    __slots__ = ("id", "expr", "value", "count", "node", "state", "outer", "undo", "t0", "c0")

    def __init__(self, id: str, expr: str | None = None, value: Number | None = None) -> None:
        self.id = id
        self.expr = expr
        self.value = value
        self.count = None
        self.undo: list[tuple[str, Any]] | None = None

    def __enter__(self) -> Any:
        state = current_state()
        if not state.enabled:
            self.node = None
            return self
        node = state.lookup(self.id)
        # The site of this call is the node of this class, id, expression (and count); a mismatch on any
        # of them takes the slow path, which creates the node or reports the changed expression.
        if (node is None or node.owner is not type(self) or node.expr_text is not self.expr
                or node.count_raw is not self.count):
            node = state.child(self.TYPE, self.id, self.expr, self.count)
            node.owner = type(self)
        if node.expression is not None:
            # The prediction stays in the node (cache_value) until this call ends: a node is open once at a
            # time, and only its own entry re-evaluates it. Not holding it here spares a write to that number
            # object, which in a long region has left the cache.
            if node.cache_version != state.version:
                state.predict(node)
            if self.value is not None:
                node.note_value(self.value, node.cache_value)
        self.node = node
        self.state = state
        self.outer = state.top
        state.top = self
        state.current = node
        if node.track_cpu:
            self.c0 = process_time_ns()
        if _COMPILED:  # (statements, not a conditional expression: that would make an int object)
            self.t0 = ma_monotonic_ns()  # noqa: F821
        else:
            self.t0 = perf_counter_ns()
        self.start(node)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        node = self.node
        if node is None:
            return False
        self.stop(node)
        if _COMPILED:
            self.close(exc_type, ma_monotonic_ns())  # noqa: F821
        else:
            self.close(exc_type, perf_counter_ns())
        return False

    def close(self, exc_type: type[BaseException] | None, t1: int) -> None:
        node, state = self.node, self.state
        if (exc_type is None and state.top is self and self.undo is None and not node.track_cpu
                and t1 <= state.flush_deadline):
            # The common case: the innermost annotation ends normally with nothing to restore.
            state.top = self.outer
            self.outer = None
            self.node = None
            state.current = node.parent
            node.calls += 1
            node.wall_ns += t1 - self.t0
            self.complete(node)
        else:
            self.finish(exc_type, t1, process_time_ns() if node.track_cpu else 0)

    def finish(self, exc_type: type[BaseException] | None, t1: int, c1: int, unbalanced: bool = False) -> None:
        """Close this annotation in any situation: pop it (and what is open above it), restore the scope,
        fold time and measurement into the node, flush when due."""
        state, node = self.state, self.node
        if node is None:
            return  # already closed (an enclosing annotation ended first, or the runtime finished)
        if state.top is not self:
            state.close_above(self)
        state.top = self.outer
        self.outer = None
        self.node = None
        state.current = node.parent  # type: ignore[union-attr]
        if self.undo:
            state.undo(self.undo)
        node.calls += 1  # type: ignore[union-attr]
        node.wall_ns += t1 - self.t0  # type: ignore[union-attr]
        if node.track_cpu:  # type: ignore[union-attr]
            node.cpu_ns += c1 - self.c0  # type: ignore[union-attr]
        if exc_type is not None:
            state.runtime.anomaly("exception", node, f"{exc_type.__name__} raised inside {self.TYPE} "
                                  f"{self.id!r}; its measurement is discarded")
        if exc_type is not None or unbalanced:
            self.discard(node)  # type: ignore[arg-type]
        else:
            self.complete(node)  # type: ignore[arg-type]
        if t1 > state.flush_deadline:
            state.runtime.flush()

    # --- what a kind of annotation measures ------------------------------------------------------
    def start(self, node: Node) -> None:
        """Begin the measurement (the last thing __enter__ does)."""

    def stop(self, node: Node) -> None:
        """End the measurement (the first thing __exit__ does)."""

    def complete(self, node: Node) -> None:
        """Fold this call's prediction and measurement into ``node``."""
        node.record(predicted(node), None)

    def discard(self, node: Node) -> None:
        """The call ended abnormally: count its prediction, call it unmeasured."""
        node.record(predicted(node), None)


class _Counting:
    """Iterator that counts, on its loop annotation, the iterations actually started."""

    __slots__ = ("loop", "items")

    def __init__(self, loop: loop, items: Iterator[Any]) -> None:
        self.loop = loop
        self.items = items
        loop.n = 0

    def __iter__(self) -> _Counting:
        return self

    def __next__(self) -> Any:
        item = next(self.items)  # StopIteration ends the loop before it is counted
        self.loop.n += 1
        return item


_NOT_REPORTED, _FROM_RANGE = -1, -2


class loop(Region):
    """Trip-count assertion: ``with ma.loop("cgit", "cgitmax") as lp: for i in lp.range(n): ...``."""

    TYPE = "loop"
    __slots__ = ("n", "items", "length")

    def __init__(self, id: str, expr: str, value: Number | None = None) -> None:
        self.id = id
        self.expr = expr
        self.value = value
        self.count = None
        self.undo = None
        self.n = _NOT_REPORTED

    def range(self, *args: int) -> Iterator[int]:
        """``range(*args)``, counting the iterations actually started (a ``break`` stops the count).

        The plain range iterator is handed out, so iterating costs nothing extra: at the end, the
        iterations started are its length minus what it has left.
        """
        values = _range(*args)
        self.length = len(values)
        self.items = iter(values)
        self.n = _FROM_RANGE
        return self.items  # type: ignore[no-any-return]

    def iter(self, iterable: Iterable[T]) -> Iterator[T]:
        """Iterate ``iterable``, counting the iterations actually started."""
        return _Counting(self, iter(iterable))

    def end(self, n: int) -> None:
        """Measured trip count, as the paper's ``ma_loop_end(id, n)``."""
        if type(n) is not int:
            if isinstance(n, bool) or not hasattr(n, "__index__"):
                raise AnnotationError(f"loop {self.id!r}: end() takes the number of iterations, not {n!r}")
            n = int(n)
        if n < 0:
            raise AnnotationError(f"loop {self.id!r}: end() takes the number of iterations, not {n}")
        self.n = n

    def complete(self, node: Node) -> None:
        n = self.n
        if n == _FROM_RANGE:
            if _COMPILED:
                n = self.length - ma_length_hint(self.items, 0)  # noqa: F821
            else:
                n = self.length - _length_hint(self.items)
        if n >= 0:
            node.record_count(predicted(node), n)
        else:
            node.record(predicted(node), None)


class subroutine(Region):
    """A level of the site tree; usable as ``with ma.subroutine("conj_grad"):`` and as a decorator."""

    TYPE = "subroutine"
    __slots__ = ()

    def __init__(self, id: str) -> None:
        self.id = id
        self.expr = None
        self.value = None
        self.count = None
        self.undo = None

    def __call__(self, func: F) -> F:
        site = self.id

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with subroutine(site):
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    def complete(self, node: Node) -> None:
        """A subroutine asserts nothing: its calls and time are all it records."""

    def discard(self, node: Node) -> None:
        """Nothing to discard."""


class CounterRegion(Region):
    """A region measured by a counter provider (flop, loadstore, heap/stack memory)."""

    __slots__ = ("reader", "m0")

    def start(self, node: Node) -> None:
        reader = self.reader = node.reader
        if reader is not None:
            self.m0 = reader()

    def stop(self, node: Node) -> None:
        reader = self.reader
        if reader is not None:
            self.m0 = reader() - self.m0

    def complete(self, node: Node) -> None:
        node.record(predicted(node), self.m0 if self.reader is not None else None)


class flop(CounterRegion):
    """Floating-point operations: PAPI, or the Valgrind tool, measures them where the host allows."""

    TYPE = "flop"
    __slots__ = ()


class loadstore(CounterRegion):
    """Load and store operations."""

    TYPE = "loadstore"
    __slots__ = ()


class heap_memory(CounterRegion):
    """Net heap bytes allocated inside the region (measured with MA_COUNTERS=tracemalloc)."""

    TYPE = "heap_memory"
    __slots__ = ()


class stack_memory(CounterRegion):
    """Stack bytes: asserted and modelled; no Python provider measures them."""

    TYPE = "stack_memory"
    __slots__ = ()


class MpiRegion(Region):
    """Message-size (bytes) and message-count assertion, measured by the PMPI library.

    ``with ma.mpi_send(id, bytes_expr, value=None, count=1):`` asserts that the code inside makes
    ``count`` calls of that kind (an int or an expression) of ``bytes_expr`` bytes each.
    """

    __slots__ = ("measured", "calls0", "bytes0")

    def __init__(self, id: str, expr: str, value: Number | None = None, count: str | int = 1) -> None:
        self.id = id
        self.expr = expr
        self.value = value
        self.count = count
        self.undo = None

    def start(self, node: Node) -> None:
        if node.counters is None:  # MPI not running yet (or not measured): ask again, keep it once there
            counters = self.state.runtime.mpi_counters(self.TYPE)
            if counters is not None:
                node.counters, node.group = counters
        self.measured = node.counters is not None
        if self.measured:
            # Straight from the PMPI library's memory (a typed view when compiled: no object is made).
            self.calls0 = node.counters[node.group]
            self.bytes0 = node.counters[node.group + 1]

    def stop(self, node: Node) -> None:
        if self.measured:
            self.calls0 = node.counters[node.group] - self.calls0
            self.bytes0 = node.counters[node.group + 1] - self.bytes0

    def complete(self, node: Node) -> None:
        if self.measured:
            node.record_mpi(predicted(node), node.cache_count, True, self.calls0, self.bytes0)
        else:
            node.record_mpi(predicted(node), node.cache_count, False, 0, 0)

    def discard(self, node: Node) -> None:
        node.record_mpi(predicted(node), node.cache_count, False, 0, 0)


# One class per MPI annotation type, so that ``ma.mpi_send(...)`` is a plain construction.
class mpi_send(MpiRegion):
    TYPE = "mpi_send"
    __slots__ = ()


class mpi_isend(MpiRegion):
    TYPE = "mpi_isend"
    __slots__ = ()


class mpi_recv(MpiRegion):
    TYPE = "mpi_recv"
    __slots__ = ()


class mpi_irecv(MpiRegion):
    TYPE = "mpi_irecv"
    __slots__ = ()


class mpi_sendrecv(MpiRegion):
    TYPE = "mpi_sendrecv"
    __slots__ = ()


class mpi_bcast(MpiRegion):
    TYPE = "mpi_bcast"
    __slots__ = ()


class mpi_reduce(MpiRegion):
    TYPE = "mpi_reduce"
    __slots__ = ()


class mpi_allreduce(MpiRegion):
    TYPE = "mpi_allreduce"
    __slots__ = ()


class mpi_gather(MpiRegion):
    TYPE = "mpi_gather"
    __slots__ = ()


class mpi_scatter(MpiRegion):
    TYPE = "mpi_scatter"
    __slots__ = ()


class mpi_allgather(MpiRegion):
    TYPE = "mpi_allgather"
    __slots__ = ()


class mpi_alltoall(MpiRegion):
    TYPE = "mpi_alltoall"
    __slots__ = ()


class mpi_barrier(MpiRegion):
    TYPE = "mpi_barrier"
    __slots__ = ()
