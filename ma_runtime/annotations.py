"""The annotation objects behind ``ma.loop``, ``ma.flop``, ``ma.mpi_send``, ...

Each is a context manager: ``__enter__`` finds (or creates) its node below the innermost open annotation,
evaluates the expression (cached while no variable changes), and starts its measurement; ``__exit__`` takes
the measurement and folds it into the node. Both run on every call of annotated code, so they are written
for speed: slotted objects, one thread-local lookup, no allocation beyond the object itself.
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Callable, Iterable, Iterator
from time import perf_counter_ns, process_time_ns
from types import TracebackType
from typing import Any, TypeVar, Union

from ma.errors import AnnotationError

from .mars import _local, thread_state
from .tree import Node, close_enough

Number = Union[int, float]
T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

MPI_TYPES = ("mpi_send", "mpi_isend", "mpi_recv", "mpi_irecv", "mpi_sendrecv", "mpi_bcast", "mpi_reduce",
             "mpi_allreduce", "mpi_gather", "mpi_scatter", "mpi_allgather", "mpi_alltoall", "mpi_barrier")


class Region:
    """Common part of every annotation: site lookup, prediction, stack, timing, folding."""

    TYPE = "region"
    ASSERTS = True  # False for subroutines: they structure the tree but assert nothing

    __slots__ = ("id", "expr", "value", "node", "state", "undo", "pred", "t0", "c0")

    def __init__(self, id: str, expr: str | None = None, value: Number | None = None) -> None:
        self.id = id
        self.expr = expr
        self.value = value
        self.undo: list[tuple[str, Any]] | None = None

    def __enter__(self) -> Any:
        try:
            state = _local.state
        except AttributeError:
            state = thread_state()
        if not state.enabled:
            self.node = None
            return self
        node = state.current.children.get(self.id)
        if node is None or node.type is not self.TYPE or node.expr_text is not self.expr:
            node = state.child(self.TYPE, self.id, self.expr)
        if self.ASSERTS:
            pred = node.cache_value if node.cache_version == state.version else state.predict(node)
            if self.value is not None:
                node.note_value(self.value, pred)
            self.pred = pred
        self.node = node
        self.state = state
        state.stack.append(self)
        state.current = node
        if node.track_cpu:
            self.c0 = process_time_ns()
        self.t0 = perf_counter_ns()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        t1 = perf_counter_ns()
        node = self.node
        if node is not None:
            self.finish(exc_type, t1, process_time_ns() if node.track_cpu else 0)
        return False

    def finish(self, exc_type: type[BaseException] | None, t1: int, c1: int, unbalanced: bool = False) -> None:
        """Close this annotation: pop it, restore the scope, fold time and measurement into the node."""
        state, node = self.state, self.node
        stack = state.stack
        if stack and stack[-1] is self:
            stack.pop()
        elif self in stack:
            state.close_above(self)
            stack.pop()
        else:
            return  # already closed (an enclosing annotation ended first, or the runtime finished)
        self.node = None
        state.current = node.parent  # type: ignore[union-attr]
        if self.undo:
            state.undo(self.undo)
        node.calls += 1  # type: ignore[union-attr]
        node.wall_ns += t1 - self.t0  # type: ignore[union-attr]
        if node.track_cpu:  # type: ignore[union-attr]
            node.cpu_ns += c1 - self.c0  # type: ignore[union-attr]
        if exc_type is not None or unbalanced:
            if exc_type is not None:
                state.runtime.anomaly("exception", node, f"{exc_type.__name__} raised inside {self.TYPE} "
                                      f"{self.id!r}; its measurement is discarded")
            if self.ASSERTS:
                self.discard(node)  # type: ignore[arg-type]
        elif self.ASSERTS:
            self.complete(node)  # type: ignore[arg-type]
        if t1 > state.flush_deadline:
            state.runtime.flush()

    def complete(self, node: Node) -> None:
        """Fold this call's measurement into ``node``; subclasses measure."""
        node.record(self.pred, None)

    def discard(self, node: Node) -> None:
        """The call ended abnormally: count its prediction, call it unmeasured."""
        node.record(self.pred, None)


class loop(Region):
    """Trip-count assertion: ``with ma.loop("cgit", "cgitmax") as lp: for i in lp.range(n): ...``."""

    TYPE = "loop"
    __slots__ = ("n",)

    def __init__(self, id: str, expr: str, value: Number | None = None) -> None:
        self.id = id
        self.expr = expr
        self.value = value
        self.undo = None
        self.n: int | None = None

    def range(self, *args: int) -> Iterator[int]:
        """``range(*args)`` that counts the iterations actually started (a ``break`` stops the count)."""
        self.n = 0
        for i in builtins.range(*args):
            self.n += 1
            yield i

    def iter(self, iterable: Iterable[T]) -> Iterator[T]:
        """Iterate ``iterable``, counting the iterations actually started."""
        self.n = 0
        for item in iterable:
            self.n += 1
            yield item

    def end(self, n: int) -> None:
        """Measured trip count, as the paper's ``ma_loop_end(id, n)``."""
        if isinstance(n, bool) or not isinstance(n, int) and not hasattr(n, "__index__"):
            raise AnnotationError(f"loop {self.id!r}: end() takes the number of iterations, not {n!r}")
        self.n = int(n)

    # enter and exit are Region's, specialised and inlined: a loop annotation may run millions of times.
    def __enter__(self) -> loop:
        try:
            state = _local.state
        except AttributeError:
            state = thread_state()
        if not state.enabled:
            self.node = None
            return self
        node = state.current.children.get(self.id)
        if node is None or node.type != "loop" or node.expr_text is not self.expr:  # noqa: F632
            node = state.child("loop", self.id, self.expr)
        pred = self.pred = node.cache_value if node.cache_version == state.version else state.predict(node)
        if self.value is not None:
            node.note_value(self.value, pred)
        self.node = node
        self.state = state
        state.stack.append(self)
        state.current = node
        if node.track_cpu:
            self.c0 = process_time_ns()
        self.t0 = perf_counter_ns()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        t1 = perf_counter_ns()
        node = self.node
        if node is None:
            return False
        state = self.state
        stack = state.stack
        n = self.n
        if (exc_type is not None or stack[-1] is not self or self.undo or node.track_cpu or n is None
                or t1 > state.flush_deadline or node.p_n == 0):
            self.finish(exc_type, t1, process_time_ns() if node.track_cpu else 0)
            return False
        # The common case: innermost annotation, measured, nothing to restore; Node.record inlined.
        stack.pop()
        self.node = None
        state.current = node.parent
        node.calls += 1
        node.wall_ns += t1 - self.t0
        pred = self.pred
        if pred < node.p_min:
            node.p_min = pred
        elif pred > node.p_max:
            node.p_max = pred
        node.p_n += 1
        node.p_sum += pred
        if node.m_n == 0:
            node.m_min = node.m_max = n
        elif n < node.m_min:
            node.m_min = n
        elif n > node.m_max:
            node.m_max = n
        node.m_n += 1
        node.m_sum += n
        if pred == n or node.tolerance and close_enough(pred, n, node.tolerance):
            node.passed += 1
        else:
            node.failed += 1
            if node.first_fail is None:
                node.first_fail = {"call": node.calls, "predicted": pred, "measured": n}
        return False

    def complete(self, node: Node) -> None:
        node.record(self.pred, self.n)


class subroutine(Region):
    """A level of the site tree; usable as ``with ma.subroutine("conj_grad"):`` and as a decorator."""

    TYPE = "subroutine"
    ASSERTS = False
    __slots__ = ()

    def __init__(self, id: str) -> None:
        self.id = id
        self.expr = None
        self.value = None
        self.undo = None

    def __call__(self, func: F) -> F:
        site = self.id

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with subroutine(site):
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


class CounterRegion(Region):
    """A region measured by a counter provider (flop, loadstore, heap/stack memory)."""

    __slots__ = ("reader", "m0")

    def __enter__(self) -> Any:
        Region.__enter__(self)
        reader = self.reader = self.state.runtime.readers[self.TYPE] if self.node is not None else None
        if reader is not None:
            self.m0 = reader()  # last, so that the SDK's own work stays outside the counted region
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        if self.node is None:
            return False
        reader = self.reader
        m1 = reader() if reader is not None else 0  # first, for the same reason
        t1 = perf_counter_ns()
        self.m0 = None if reader is None else m1 - self.m0
        self.finish(exc_type, t1, process_time_ns() if self.node.track_cpu else 0)
        return False

    def complete(self, node: Node) -> None:
        node.record(self.pred, self.m0)


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
    """Message-size (bytes) and message-count assertion, measured by the PMPI library."""

    __slots__ = ("TYPE", "count", "reader", "calls0", "bytes0", "pcount")

    def __init__(self, type_: str, id: str, expr: str, value: Number | None = None,
                 count: str | int = 1) -> None:
        self.TYPE = type_  # type: ignore[misc]
        self.id = id
        self.expr = expr
        self.value = value
        self.undo = None
        if isinstance(count, bool) or not isinstance(count, (str, int)):
            raise AnnotationError(f"{type_} {id!r}: count must be an int or an expression, not {count!r}")
        self.count = str(count)

    def __enter__(self) -> Any:
        try:
            state = _local.state
        except AttributeError:
            state = thread_state()
        if not state.enabled:
            self.node = None
            return self
        node = state.current.children.get(self.id)
        if node is None or node.type != self.TYPE or node.expr_text != self.expr or node.count_text != self.count:
            node = state.child(self.TYPE, self.id, self.expr, self.count)
        self.pred = node.cache_value if node.cache_version == state.version else state.predict(node)
        self.pcount = node.cache_count
        if self.value is not None:
            node.note_value(self.value, self.pred)
        self.node, self.state = node, state
        state.stack.append(self)
        state.current = node
        reader = self.reader = state.runtime.mpi_reader(self.TYPE)
        if node.track_cpu:
            self.c0 = process_time_ns()
        self.t0 = perf_counter_ns()
        if reader is not None:
            self.calls0, self.bytes0 = reader()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> bool:
        if self.node is None:
            return False
        if self.reader is not None:
            calls, nbytes = self.reader()
            self.calls0, self.bytes0 = calls - self.calls0, nbytes - self.bytes0
        self.finish(exc_type, perf_counter_ns(), process_time_ns() if self.node.track_cpu else 0)
        return False

    def complete(self, node: Node) -> None:
        if self.reader is None:
            node.record_mpi(self.pred, self.pcount, None, 0)
        else:
            node.record_mpi(self.pred, self.pcount, self.calls0, self.bytes0)

    def discard(self, node: Node) -> None:
        node.record_mpi(self.pred, self.pcount, None, 0)
