# cython: infer_types=True
"""The annotation objects behind ``ma.loop``, ``ma.flop``, ``ma.mpi_send``, ...

``ma.flop(...)`` and the others are the ``*_call`` functions at the end: each hands out the object of one
call, the site's own from its previous call when nothing else holds it. Each object is a context manager.
``__enter__`` finds (or creates) its node below the innermost open annotation,
evaluates the expression (cached while no variable changes) and starts the measurement; ``__exit__`` takes
the measurement and folds it into the node. Both are shared by every kind and switch on ``kind`` for what
it measures: a counter is read last on entry and first on exit, so that it encloses as little of the
SDK's own work as possible. They run on every call of annotated code: compiled by Cython where available
(annotations.pxd), slotted plain Python otherwise (one compiled copy, not a hand-written C one beside it:
docs/performance.md has the measurement behind that).

What a call costs in situ is mostly code fetched again: between two annotations the kernels evict it from
the caches, so every line of machine code a call runs is a miss. Hence one function per entry and exit,
no call out of this module on the common path, C integers throughout (``infer_types`` above keeps the
locals C integers: an int object on this path costs more than the rest), and the repeat tests of
tree.Node inlined here.
"""

from __future__ import annotations

from builtins import range as _range
from collections.abc import Callable, Iterable, Iterator
from operator import length_hint as _length_hint
from threading import get_ident, main_thread
from time import perf_counter_ns, process_time_ns
from types import TracebackType
from typing import Any, Literal, TypeVar

from ma_core.errors import AnnotationError

from . import fence as _fence
from . import tree as _tree
from .decorate import in_subroutine
from .mars import thread_state
from .peers import check_limit, with_peer
from .sites import OpenAnnotation
from .threadstate import ThreadState
from .tree import Node

try:
    import cython  # compiling, ``cython.compiled`` is a constant: the branch not taken is not compiled
except ImportError:  # plain Python without Cython installed
    from types import SimpleNamespace

    cython = SimpleNamespace(compiled=False)

Number = int | float
T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


# Compiled, the clock, the thread id and the iterator's length hint are read straight from C (names that
# annotations.pxd declares and this file never binds), with no Python call and no int object. The clock is
# the same CLOCK_MONOTONIC as perf_counter_ns (on Linux), which the rest of the runtime uses.

# The main thread's state, found without a thread-local lookup (which costs more than the rest of a call).
_MAIN_THREAD = main_thread().ident
_main_state: ThreadState | None = None


def on_main_thread() -> bool:
    if cython.compiled:
        return ma_thread_ident() == _MAIN_THREAD  # type: ignore[name-defined]  # noqa: F821
    return get_ident() == _MAIN_THREAD


def current_state() -> ThreadState:
    global _main_state
    if on_main_thread():
        if _main_state is None:
            _main_state = thread_state()
        return _main_state
    return thread_state()


def now() -> int:
    """The annotation clock (ns, CLOCK_MONOTONIC), a C integer when compiled."""
    if cython.compiled:
        return ma_monotonic_ns()  # type: ignore[name-defined]  # noqa: F821
    return perf_counter_ns()


def sdk_enter() -> None:
    """The program calls into the runtime: under the Valgrind tool, counting stops here (fence.py)."""
    if cython.compiled:
        MA_VG_SDK_ENTER()  # type: ignore[name-defined]  # noqa: F821
    else:
        _fence.enter()


def sdk_leave() -> None:
    """Back to the program: counting goes on from here."""
    if cython.compiled:
        MA_VG_SDK_LEAVE()  # type: ignore[name-defined]  # noqa: F821
    else:
        _fence.leave()


def enter_runtime() -> None:
    """``sdk_enter`` for the runtime's Python code outside this module (api.py)."""
    sdk_enter()


def leave_runtime() -> None:
    sdk_leave()


def trips_left(items: Iterator[Any]) -> int:
    """How many items the range iterator handed out by ``loop.range`` has left."""
    if cython.compiled:
        return ma_length_hint(items, 0)  # type: ignore[name-defined]  # noqa: F821
    return _length_hint(items)


def child_of(state: ThreadState, id: str) -> Node | None:
    """The node below the current one under ``id``, if any (typed here, so no call leaves this module)."""
    if cython.compiled:  # children holds nodes only: no type test
        return cython.cast(Node, state.current.children.get(id))  # type: ignore[no-any-return]
    return state.current.children.get(id)  # type: ignore[no-any-return]


# What a kind measures, switched on in __enter__/__exit__ (one function each, not a method per kind: in
# situ, each function entered is code to fetch again after the kernels between annotations evicted it).
_PLAIN, _SUBROUTINE, _LOOP, _COUNTER, _MPI = 0, 1, 2, 3, 4
# loop.n before the loop reports: not reported, or counted from the range iterator handed out.
_NOT_REPORTED, _FROM_RANGE = -1, -2
_MAX_TRIPS = 2**63 - 1  # the largest trip count end() takes
# What the node's previous call folded and its verdict (tree.py), for the repeat tests below.
_LAST_PREDICTED, _LAST_COUNTED, _LAST_MPI, _LAST_MPI_MEASURED = (
    _tree._LAST_PREDICTED, _tree._LAST_COUNTED, _tree._LAST_MPI, _tree._LAST_MPI_MEASURED)
_NO_VERDICT, _PASS = _tree._NO_VERDICT, _tree._PASS


class Region:
    """Common part of every annotation: site lookup, prediction, stack, timing, folding.

    Every kind has the same fields (annotations.pxd), so that one __enter__ and one __exit__ serve them all.
    """

    TYPE = "region"

    __slots__ = ("bytes0", "c0", "calls0", "count", "expr", "id", "items", "kind", "length", "m0", "measured", "n",
                 "node", "outer", "reader", "state", "t0", "undo", "value")
    # The fields' C types are in annotations.pxd; these declarations are for readers and mypy.
    id: str
    expr: str | None
    value: Number | None
    count: Any
    node: Node | None
    state: ThreadState
    outer: OpenAnnotation | None
    undo: list[tuple[str, Any]] | None
    t0: int
    c0: int
    kind: int
    n: int
    length: int
    items: Any
    reader: Callable[[], Any] | None
    m0: Any
    measured: bool
    calls0: int
    bytes0: int

    def __init__(self, id: str, expr: str | None = None, value: Number | None = None) -> None:
        init(self, _PLAIN, id, expr, value, None)

    def __enter__(self) -> Any:
        sdk_enter()  # the runtime's work is not the program's (fence.py)
        try:
            # Anything but the common path is a call (new_site, refresh, cpu_now, counter_start, ...), so that
            # the code of the common path stays a few contiguous cache lines.
            state = current_state()
            if not state.enabled:
                self.node = None
                return self
            node = child_of(state, self.id)
            # The site of this call is the node of this class, id, expression (and count); a mismatch on any
            # of them takes the slow path, which creates the node or reports the changed expression.
            if (node is None or node.owner is not type(self) or node.expr_text is not self.expr
                    or node.count_raw is not self.count):
                node = new_site(self, state)
            if node.expression is not None and (node.cache_version != state.version or self.value is not None):
                refresh(self, state, node)
            if node.region is None:
                node.region = self  # kept for the site's next call (make)
            self.node = node
            self.state = state
            self.outer = state.top
            state.top = self
            state.current = node
            if node.track_cpu:
                self.c0 = cpu_now()
            kind = self.kind
            if kind == _MPI:
                mpi_start(self, node)
            self.t0 = now()
            if kind == _COUNTER:  # last: the counter encloses as little of this code as possible
                counter_start(self, node)
            return self
        finally:
            sdk_leave()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> Literal[False]:
        sdk_enter()
        try:
            node = self.node
            if node is None:
                return False
            kind = self.kind
            if kind == _COUNTER:  # first, for the same reason
                counter_stop(self)
            elif kind == _MPI:
                mpi_stop(self, node)
            t1 = now()
            state = self.state
            if (exc_type is None and state.top is self and self.undo is None and not node.track_cpu
                    and t1 <= state.flush_deadline):
                # The common case: the innermost annotation ends normally with nothing to restore.
                state.top = self.outer
                self.outer = None
                self.node = None
                state.current = node.parent  # type: ignore[assignment]  # (a node that closes has a parent)
                node.calls += 1
                node.wall_ns += t1 - self.t0
                complete(self, node)
            else:
                self.finish(exc_type, t1, cpu_now() if node.track_cpu else 0)
            return False
        finally:
            sdk_leave()

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
        state.current = node.parent  # type: ignore[union-attr, assignment]
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
            discard(self, node)  # type: ignore[arg-type]
        else:
            complete(self, node)  # type: ignore[arg-type]
        if t1 > state.flush_deadline:
            state.runtime.flush()


def init(region: Region, kind: int, id: str, expr: str | None, value: Number | None, count: Any) -> None:
    """What every kind's constructor sets (each kind has its own signature, as the paper's API has)."""
    region.kind = kind
    region.id = id
    region.expr = expr
    region.value = value
    region.count = count
    region.undo = None


# --- the calls out of __enter__ and __exit__ ------------------------------------------------------------
def new_site(region: Region, state: ThreadState) -> Node:
    """The node of a call whose site differs from the one found: created, or the first one (reported)."""
    node = state.child(region.TYPE, region.id, region.expr, region.count)
    node.owner = type(region)
    return node


def refresh(region: Region, state: ThreadState, node: Node) -> None:
    """Re-evaluate the prediction after a variable changed; note a value the program passed."""
    # The prediction stays in the node (cache_value) until this call ends: a node is open once at a
    # time, and only its own entry re-evaluates it.
    if node.cache_version != state.version:
        state.predict(node)
    if region.value is not None:
        node.note_value(region.value, node.cache_value)


def cpu_now() -> int:
    """Process CPU time (ns), for the sites that track it (subroutines by default, MA_CPU_TIME)."""
    return process_time_ns()


def counter_start(region: Region, node: Node) -> None:
    reader = region.reader = node.reader
    if reader is not None:
        region.m0 = reader()


def counter_stop(region: Region) -> None:
    reader = region.reader
    if reader is not None:
        region.m0 = reader() - region.m0


# --- what a kind measures and folds ----------------------------------------------------------------
def mpi_start(region: Region, node: Node) -> None:
    """Note the PMPI library's totals of this kind of call (straight from its memory when compiled)."""
    if node.counters is None:  # MPI not running yet (or not measured): ask again, keep it once there
        counters = region.state.runtime.mpi_counters(region.TYPE)
        if counters is not None:
            node.counters, node.group = counters
            if cython.compiled:
                node.totals = ma_view_data(node.counters)  # type: ignore[attr-defined, name-defined]  # noqa: F821
    region.measured = node.counters is not None
    if region.measured:
        region.calls0 = mpi_total(node, 0)
        region.bytes0 = mpi_total(node, 1)


def mpi_stop(region: Region, node: Node) -> None:
    if region.measured:
        region.calls0 = mpi_total(node, 0) - region.calls0
        region.bytes0 = mpi_total(node, 1) - region.bytes0


def mpi_total(node: Node, offset: int) -> int:
    """The running calls (offset 0) or bytes (1) of the node's kind of MPI call."""
    if cython.compiled:
        return node.totals[node.group + offset]  # type: ignore[attr-defined, no-any-return]
    return node.counters[node.group + offset]  # type: ignore[no-any-return]


def complete(region: Region, node: Node) -> None:
    """Fold this call's prediction and measurement into ``node``.

    A call that repeats the previous one (same prediction object, same measured integers) only counts a
    pending repeat here: the tests are Node.record*'s first ones, inlined, so that the common call does
    not leave this module. Anything else goes to the node.
    """
    kind = region.kind
    if kind == _SUBROUTINE:
        return  # a subroutine asserts nothing: its calls and time are all it records
    value = node.cache_value if node.expression is not None else None
    if kind == _LOOP:
        n = region.n
        if n == _FROM_RANGE:
            n = region.length - trips_left(region.items)
        if n < 0:
            node.record(value, None)
        elif (node.last_kind == _LAST_COUNTED and value is node.last_predicted and n == node.last_a
                and node.verdict != _NO_VERDICT):
            node.pending += 1
            count_verdict(node)
        else:
            node.record_count(value, n)
    elif kind == _MPI:  # (an MPI site always has an expression: value is a number)
        if region.measured:
            if (node.last_kind == _LAST_MPI_MEASURED and value is node.last_predicted
                    and node.cache_count is node.last_count and region.calls0 == node.last_a
                    and region.bytes0 == node.last_b and node.verdict != _NO_VERDICT):
                node.pending += 1
                count_verdict(node)
            else:
                node.record_mpi(value, node.cache_count, True, region.calls0, region.bytes0)  # type: ignore[arg-type]
        elif (node.last_kind == _LAST_MPI and value is node.last_predicted
                and node.cache_count is node.last_count and node.last_a == 0 and node.last_b == 0):
            node.pending += 1
            node.unmeasured += 1
        else:
            node.record_mpi(value, node.cache_count, False, 0, 0)  # type: ignore[arg-type]
    elif kind == _COUNTER and region.reader is not None:
        node.record(value, region.m0)
    elif node.last_kind == _LAST_PREDICTED and value is node.last_predicted:
        node.pending += 1
        node.unmeasured += 1
    else:
        node.record(value, None)


def count_verdict(node: Node) -> None:
    """A repeat of a call with a verdict: count that verdict again."""
    if node.verdict == _PASS:
        node.passed += 1
    else:
        node.failed += 1


def discard(region: Region, node: Node) -> None:
    """The call ended abnormally: count its prediction, call it unmeasured."""
    kind = region.kind
    if kind == _SUBROUTINE:
        return
    value = node.cache_value if node.expression is not None else None
    if kind == _MPI:
        node.record_mpi(value, node.cache_count, False, 0, 0)  # type: ignore[arg-type]
    else:
        node.record(value, None)


class _Counting:
    """Iterator that counts, on its loop annotation, the iterations actually started."""

    __slots__ = ("items", "loop")

    def __init__(self, loop: loop, items: Iterator[Any]) -> None:
        self.loop = loop
        self.items = items
        loop.n = 0

    def __iter__(self) -> _Counting:
        return self

    def __next__(self) -> Any:
        item = next(self.items)  # StopIteration ends the loop before it is counted (the program's own work)
        sdk_enter()
        self.loop.n += 1
        sdk_leave()
        return item


class loop(Region):
    """Trip-count assertion: ``with ma.loop("cgit", "cgitmax") as lp: for i in lp.range(n): ...``."""

    TYPE = "loop"
    __slots__ = ()

    def __init__(self, id: str, expr: str, value: Number | None = None) -> None:
        init(self, _LOOP, id, expr, value, None)
        self.n = _NOT_REPORTED

    def range(self, *args: int) -> Iterator[int]:
        """``range(*args)``, counting the iterations actually started (a ``break`` stops the count).

        The plain range iterator is handed out, so iterating costs nothing extra: at the end, the
        iterations started are its length minus what it has left.
        """
        sdk_enter()
        try:
            values = _range(*args)
            self.length = len(values)
            self.items = iter(values)
            self.n = _FROM_RANGE
            return self.items  # type: ignore[no-any-return]
        finally:
            sdk_leave()

    def iter(self, iterable: Iterable[T]) -> Iterator[T]:
        """Iterate ``iterable``, counting the iterations actually started."""
        return _Counting(self, iter(iterable))

    def end(self, n: int) -> None:
        """Measured trip count, as the paper's ``ma_loop_end(id, n)``."""
        sdk_enter()
        try:
            self.count_trips(n)
        finally:
            sdk_leave()

    def count_trips(self, n: int) -> None:
        """``end`` inside the fence: check and keep the trip count."""
        if type(n) is not int:
            if isinstance(n, bool) or not hasattr(n, "__index__"):
                raise AnnotationError(f"loop {self.id!r}: end() takes the number of iterations, not {n!r}")
            n = int(n)
        if n < 0:
            raise AnnotationError(f"loop {self.id!r}: end() takes the number of iterations, not {n}")
        if n > _MAX_TRIPS:  # the compiled runtime counts in 64 bits: both modes refuse the same counts
            node = self.node
            where = f" ({node.path} at {node.file}:{node.line})" if node is not None and node.file else ""
            raise AnnotationError(f"loop {self.id!r}{where}: end() got an integer of {n.bit_length()} bits; a trip "
                                  f"count is at most 2^63 - 1 ({_MAX_TRIPS})")
        self.n = n


class subroutine(Region):
    """A level of the site tree; usable as ``with ma.subroutine("conj_grad"):`` and as a decorator."""

    TYPE = "subroutine"
    __slots__ = ()

    def __init__(self, id: str) -> None:
        init(self, _SUBROUTINE, id, None, None, None)

    def __call__(self, func: F) -> F:
        return in_subroutine(subroutine, self.id, func)


class CounterRegion(Region):
    """A region measured by a counter provider (flop, loadstore, heap/stack memory)."""

    __slots__ = ()

    def __init__(self, id: str, expr: str, value: Number | None = None) -> None:
        init(self, _COUNTER, id, expr, value, None)


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

    __slots__ = ()

    def __init__(self, id: str, expr: str, value: Number | None = None, count: str | int = 1) -> None:
        init(self, _MPI, id, expr, value, count)


# One class per MPI annotation type: the node's owner, and what ``mpi_send_call`` & co. make.
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


# --- what ``ma.loop``, ``ma.flop``, ``ma.mpi_send``, ... are bound to (ma/__init__.py) --------------------
# A site keeps the object of its last call and hands it out again when nothing else holds it: an object made
# and dropped at every call costs more in situ (allocator, tp_new, dealloc: code and data fetched again)
# than the rest of the call's entry. One still held (a kept ``as lp``, one made and not entered yet) is left
# alone, and the call gets a new one. Compiled only: plain Python makes a new object every time.
def reused(cls: type, id: str) -> Region | None:
    """The object the site ``id`` below the current node kept, if nothing else holds it.

    ``__enter__`` still looks its node up: an object may be entered below another annotation than the one
    open when it was made.
    """
    if cython.compiled:
        node = child_of(current_state(), id)
        if (node is not None and node.region is not None
                and ma_sole_reference(cython.cast(cython.p_void, node.region))  # type: ignore[name-defined]  # noqa: F821
                and type(node.region) is cls):
            return cython.cast(Region, node.region)  # type: ignore[no-any-return]
    return None


def new_region(cls: type) -> Region:
    """A new object of ``cls`` (typed here, so that ``make`` sets its fields in C, not by attribute)."""
    return cls.__new__(cls)  # type: ignore[no-any-return, call-overload]


def make(cls: type, kind: int, id: str, expr: str, value: Number | None, count: Any) -> Region:
    """The annotation object of one call: the site's own when free, else a new one."""
    sdk_enter()  # (nothing here raises: no try)
    region = reused(cls, id)
    if region is None:
        region = new_region(cls)
    init(region, kind, id, expr, value, count)
    region.n = _NOT_REPORTED  # (loops read it)
    sdk_leave()
    return region


def loop_call(id: str, expr: str, value: Number | None = None) -> loop:
    """``ma.loop(...)``: the annotation object of one call (a :class:`loop`)."""
    return make(loop, _LOOP, id, expr, value, None)  # type: ignore[return-value]


# Partner assertions (peer=): peers.with_peer checks the first MA_PEER_CHECKS calls of a site; the later calls
# are told apart here, in compiled code, as CG and SP make them in their inner loops.
_peer_calls: dict = {}  # (parent node, class, id, peer expression) -> calls checked so far
_peer_limit = -1  # MA_PEER_CHECKS once read (0: every call)


def partnered(region: Region, peer: str | None) -> Any:
    """``region`` itself, or wrapped to check its partner (ma_runtime/peers.py)."""
    global _peer_limit
    if peer is None:
        return region
    sdk_enter()
    try:
        if type(peer) is not str:
            return with_peer(region, peer)  # raises the AnnotationError
        if _peer_limit < 0:
            _peer_limit = check_limit()
        if _peer_limit:
            # A site whose checks of this expression are done says so itself: the common call makes no key (an
            # id(), a tuple and its hash are lines of code and data fetched again in situ).
            state = current_state()
            node = child_of(state, region.id)
            site = node if node is not None and node.owner is type(region) else None
            if site is not None and site.peers_done is peer:
                return region
            key = (id(state.current), type(region), region.id, peer)
            done = _peer_calls.get(key, 0)
            if done >= _peer_limit:
                if site is not None:
                    site.peers_done = peer
                return region
            _peer_calls[key] = done + 1
        return with_peer(region, peer)
    finally:
        sdk_leave()


def flop_call(id: str, expr: str, value: Number | None = None) -> flop:
    """``ma.flop(...)``: the annotation object of one call (a :class:`flop`)."""
    return make(flop, _COUNTER, id, expr, value, None)  # type: ignore[return-value]


def loadstore_call(id: str, expr: str, value: Number | None = None, *, hits: Any = None) -> loadstore:
    """``ma.loadstore(...)``: the annotation object of one call (a :class:`loadstore`; with ``hits``, the site's
    stated cumulative hit rates, wrapped to record them: ma_runtime/givenhits.py)."""
    region = make(loadstore, _COUNTER, id, expr, value, None)
    if hits is None:
        return region  # type: ignore[return-value]
    from .givenhits import with_hits

    return with_hits(region, hits)  # type: ignore[return-value]


def heap_memory_call(id: str, expr: str, value: Number | None = None) -> heap_memory:
    """``ma.heap_memory(...)``: the annotation object of one call (a :class:`heap_memory`)."""
    return make(heap_memory, _COUNTER, id, expr, value, None)  # type: ignore[return-value]


def stack_memory_call(id: str, expr: str, value: Number | None = None) -> stack_memory:
    """``ma.stack_memory(...)``: the annotation object of one call (a :class:`stack_memory`)."""
    return make(stack_memory, _COUNTER, id, expr, value, None)  # type: ignore[return-value]


def mpi_send_call(id: str, expr: str, value: Number | None = None, count: str | int = 1,
                  *, peer: str | None = None) -> mpi_send:
    """``ma.mpi_send(...)``: the annotation object of one call (a :class:`mpi_send`; with ``peer``, wrapped
    to check each call's partner, see ma_runtime/peers.py)."""
    return partnered(make(mpi_send, _MPI, id, expr, value, count), peer)  # type: ignore[return-value]


def mpi_isend_call(id: str, expr: str, value: Number | None = None, count: str | int = 1,
                   *, peer: str | None = None) -> mpi_isend:
    """``ma.mpi_isend(...)``: the annotation object of one call (a :class:`mpi_isend`; with ``peer``, wrapped
    to check each call's partner, see ma_runtime/peers.py)."""
    return partnered(make(mpi_isend, _MPI, id, expr, value, count), peer)  # type: ignore[return-value]


def mpi_recv_call(id: str, expr: str, value: Number | None = None, count: str | int = 1,
                  *, peer: str | None = None) -> mpi_recv:
    """``ma.mpi_recv(...)``: the annotation object of one call (a :class:`mpi_recv`; with ``peer``, wrapped
    to check each call's partner, see ma_runtime/peers.py)."""
    return partnered(make(mpi_recv, _MPI, id, expr, value, count), peer)  # type: ignore[return-value]


def mpi_irecv_call(id: str, expr: str, value: Number | None = None, count: str | int = 1,
                   *, peer: str | None = None) -> mpi_irecv:
    """``ma.mpi_irecv(...)``: the annotation object of one call (a :class:`mpi_irecv`; with ``peer``, wrapped
    to check each call's partner, see ma_runtime/peers.py)."""
    return partnered(make(mpi_irecv, _MPI, id, expr, value, count), peer)  # type: ignore[return-value]


def mpi_sendrecv_call(id: str, expr: str, value: Number | None = None, count: str | int = 1,
                      *, peer: str | None = None) -> mpi_sendrecv:
    """``ma.mpi_sendrecv(...)``: the annotation object of one call (a :class:`mpi_sendrecv`; with ``peer``, wrapped
    to check each call's partner, see ma_runtime/peers.py)."""
    return partnered(make(mpi_sendrecv, _MPI, id, expr, value, count), peer)  # type: ignore[return-value]


def mpi_bcast_call(id: str, expr: str, value: Number | None = None, count: str | int = 1,
                   *, peer: str | None = None) -> mpi_bcast:
    """``ma.mpi_bcast(...)``: the annotation object of one call (a :class:`mpi_bcast`; with ``peer``, wrapped
    to check each call's partner, see ma_runtime/peers.py)."""
    return partnered(make(mpi_bcast, _MPI, id, expr, value, count), peer)  # type: ignore[return-value]


def mpi_reduce_call(id: str, expr: str, value: Number | None = None, count: str | int = 1,
                    *, peer: str | None = None) -> mpi_reduce:
    """``ma.mpi_reduce(...)``: the annotation object of one call (a :class:`mpi_reduce`; with ``peer``, wrapped
    to check each call's partner, see ma_runtime/peers.py)."""
    return partnered(make(mpi_reduce, _MPI, id, expr, value, count), peer)  # type: ignore[return-value]


def mpi_allreduce_call(id: str, expr: str, value: Number | None = None, count: str | int = 1,
                       *, peer: str | None = None) -> mpi_allreduce:
    """``ma.mpi_allreduce(...)``: the annotation object of one call (a :class:`mpi_allreduce`; with ``peer``, wrapped
    to check each call's partner, see ma_runtime/peers.py)."""
    return partnered(make(mpi_allreduce, _MPI, id, expr, value, count), peer)  # type: ignore[return-value]


def mpi_gather_call(id: str, expr: str, value: Number | None = None, count: str | int = 1,
                    *, peer: str | None = None) -> mpi_gather:
    """``ma.mpi_gather(...)``: the annotation object of one call (a :class:`mpi_gather`; with ``peer``, wrapped
    to check each call's partner, see ma_runtime/peers.py)."""
    return partnered(make(mpi_gather, _MPI, id, expr, value, count), peer)  # type: ignore[return-value]


def mpi_scatter_call(id: str, expr: str, value: Number | None = None, count: str | int = 1,
                     *, peer: str | None = None) -> mpi_scatter:
    """``ma.mpi_scatter(...)``: the annotation object of one call (a :class:`mpi_scatter`; with ``peer``, wrapped
    to check each call's partner, see ma_runtime/peers.py)."""
    return partnered(make(mpi_scatter, _MPI, id, expr, value, count), peer)  # type: ignore[return-value]


def mpi_allgather_call(id: str, expr: str, value: Number | None = None, count: str | int = 1,
                       *, peer: str | None = None) -> mpi_allgather:
    """``ma.mpi_allgather(...)``: the annotation object of one call (a :class:`mpi_allgather`; with ``peer``, wrapped
    to check each call's partner, see ma_runtime/peers.py)."""
    return partnered(make(mpi_allgather, _MPI, id, expr, value, count), peer)  # type: ignore[return-value]


def mpi_alltoall_call(id: str, expr: str, value: Number | None = None, count: str | int = 1,
                      *, peer: str | None = None) -> mpi_alltoall:
    """``ma.mpi_alltoall(...)``: the annotation object of one call (a :class:`mpi_alltoall`; with ``peer``, wrapped
    to check each call's partner, see ma_runtime/peers.py)."""
    return partnered(make(mpi_alltoall, _MPI, id, expr, value, count), peer)  # type: ignore[return-value]


def mpi_barrier_call(id: str, expr: str, value: Number | None = None, count: str | int = 1,
                     *, peer: str | None = None) -> mpi_barrier:
    """``ma.mpi_barrier(...)``: the annotation object of one call (a :class:`mpi_barrier`; with ``peer``, wrapped
    to check each call's partner, see ma_runtime/peers.py)."""
    return partnered(make(mpi_barrier, _MPI, id, expr, value, count), peer)  # type: ignore[return-value]
