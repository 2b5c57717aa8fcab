"""MARS, the modeling-assertion runtime: settings, counters, MPI bridge, variables, anomalies, trace output.

One ``Runtime`` per process, created by the first annotation that runs (never by ``import ma``). Each thread
gets a ``ThreadState`` (threadstate.py) holding its site tree and its chain of open annotations.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from ma_core.expr import parse_expression
from ma_core.launchers import launcher_rank_size
from ma_core.trace_format import COMPLETE, GIVEN_HITS_KEY, PEERS_KEY, RUNNING, TERMINATED

from . import COMPILED, merge, peers, trace
from .config import Settings
from .counters import MEASURABLE_KINDS, open_providers
from .sites import NodeFactory, caller, is_unicode_text
from .threadstate import ThreadState
from .tree import Node, Stats, values_differ

Number = int | float
PRODUCER = "ma_runtime 0.1.0" + (" (compiled)" if COMPILED else "")


class VariableRecord:
    """Entry of the trace's variable table: one per (name, declaring scope)."""

    __slots__ = ("expr", "kind", "last", "name", "scope", "stats")

    def __init__(self, name: str, kind: str, expr: str | None, scope: str) -> None:
        self.name, self.kind, self.expr, self.scope = name, kind, expr, scope
        self.stats = Stats()
        self.last: Number = 0

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "expr": self.expr, "scope": self.scope,
                "defs": self.stats.n, "value": self.last, "min": self.stats.min, "max": self.stats.max}


class Anomaly:
    __slots__ = ("count", "file", "kind", "line", "message", "path")

    def __init__(self, kind: str, path: str, message: str, file: str | None, line: int | None) -> None:
        self.kind, self.path, self.message, self.file, self.line = kind, path, message, file, line
        self.count = 0

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "path": self.path, "message": self.message, "count": self.count,
                "file": self.file, "line": self.line}


class Runtime:
    """Process-wide part of MARS: settings, counters, MPI bridge, variable table, anomalies, output."""

    def __init__(self) -> None:
        self.settings = Settings.from_environment()
        self.enabled = True
        self.start_time = time.time()
        self.command = list(sys.orig_argv) if hasattr(sys, "orig_argv") else [sys.executable, *sys.argv]
        self.lock = threading.RLock()
        self.threads: list[ThreadState] = []
        self.global_env: dict[str, Number] = {}
        self.variables: dict[tuple[str, str], VariableRecord] = {}
        self.anomalies: dict[tuple[str, str], Anomaly] = {}
        self.flush_interval_ns = int(self.settings.flush_seconds * 1e9) if self.settings.flush_seconds > 0 else 0
        self.flush_deadline = (time.perf_counter_ns() + self.flush_interval_ns
                               if self.flush_interval_ns else 1 << 62)
        self.rank, self.size = _launcher_rank_size()
        self.finished = False
        self.pending_final: dict[str, Any] | None = None  # the final document, kept for the merge at exit
        self.providers = open_providers(self.settings.counters)
        self.readers: dict[str, Callable[[], int] | None] = {}
        self.measures: dict[str, dict[str, str] | None] = {}
        for kind in MEASURABLE_KINDS:
            self.readers[kind], self.measures[kind] = self._pick_reader(kind)
        self.new_node = NodeFactory(self.settings, self.readers)
        self.new_node.site_probe = sitecounts_probe(self.providers)
        _fence_the_runtime(self.providers)
        self.pmpi, self.mpi_reason = _open_pmpi()
        self.mpi_live = False
        # One writer at a time: threads that reach their flush deadline together would otherwise write the
        # same temporary file; a periodic flush that finds it taken leaves the write to the thread holding it.
        # Re-entrant: the SIGTERM handler's final write may interrupt this thread's own write (it ends the process).
        self.write_lock = threading.RLock()
        self.write_problem: str | None = None  # the first failed periodic write, said once
        atexit.register(self.finish, COMPLETE)
        _install_signal_handler(self)
        if self.settings.run_id is not None:
            # Under ma run, a first file at once: a rank whose file still says "running" when it has ended never
            # made its final write (it died, or left with _exit before MPI_Finalize): ma run stops the job.
            self.flush()

    def _pick_reader(self, kind: str) -> tuple[Callable[[], int] | None, dict[str, str] | None]:
        for provider in self.providers:
            reader = provider.reader(kind)
            if reader is not None:
                return reader, {"provider": provider.name, "source": provider.source(kind)}
        return None, None

    def mpi_counters(self, mpi_type: str) -> tuple[memoryview, int] | None:
        """(view, i) with the running calls and bytes of ``mpi_type`` at view[i], view[i+1]; None while
        MPI is not running or not measured."""
        if self.pmpi is None:
            return None
        if not self.mpi_live:
            self.mpi_live = _mpi_initialized()  # once MPI runs, stop asking
            if not self.mpi_live:
                return None
        return self.pmpi.counters(mpi_type)

    # --- threads and variables ---------------------------------------------------------------
    def thread_state(self) -> ThreadState:
        with self.lock:
            thread = threading.current_thread()
            state = ThreadState(self, self.new_node, len(self.threads), thread.name, dict(self.global_env))
            self.threads.append(state)
            return state

    def define_global(self, name: str, value: Number) -> None:
        """A declaration outside any scope is visible in every thread."""
        with self.lock:
            self.global_env[name] = value
            for state in self.threads:
                state.env[name] = value
                state.version += 1

    def declare(self, state: ThreadState, type_: str, name: str, expr_text: str | None,
                value: Number | None) -> Number:
        """ma.variable / ma.assign: evaluate, bind in the current scope, record node and table entry."""
        if not isinstance(name, str) or not name.isidentifier():
            raise _annotation_error(f"variable name must be an identifier, not {name!r}")
        if expr_text is None:
            if not _is_number(value):
                raise _annotation_error(f"ma.variable({name!r}, ...): value must be a number, not {value!r}")
            evaluated: Number = value  # type: ignore[assignment]
        else:
            if isinstance(expr_text, str) and not is_unicode_text(expr_text):
                file, line = caller()
                raise _annotation_error(f"{file}:{line}: ma.assign({name!r}, ...): the expression "
                                        f"{expr_text[:80]!r} is not valid Unicode text (it holds a lone surrogate)")
            expression = parse_expression(expr_text)
            evaluated = expression.evaluate(state.env_for(expression.symbols))
            if value is not None and not _is_number(value):
                raise _annotation_error(f"ma.assign({name!r}, ...): value must be a number, not {value!r}")
        scope_frame = state.scope_frame()
        scope = scope_frame.node.path if scope_frame is not None and scope_frame.node is not None else ""
        if state.enabled:
            node = state.child(type_, name, expr_text)
            node.calls += 1
            if expr_text is None:
                node.record_input(evaluated)
            else:
                node.record(evaluated, value)
                if value is not None:
                    node.note_value(value, evaluated)
            with self.lock:
                record = self.variables.get((name, scope))
                if record is None:
                    kind = "input" if expr_text is None else "derived"
                    record = self.variables[(name, scope)] = VariableRecord(name, kind, expr_text, scope)
                elif _changed(record.last, evaluated):
                    self._redeclared(node, record, evaluated)
                record.stats.add(evaluated)
                record.last = evaluated
        state.define(name, evaluated)
        return evaluated

    def _redeclared(self, node: Node, record: VariableRecord, value: Number) -> None:
        """Both values and both places (the site keeps the first declaration's file and line). Called under
        the lock, which is re-entrant."""
        file, line = caller()
        self.anomaly("redeclared", node, f"variable {record.name!r} declared again with value {value!r} at "
                                         f"{file}:{line}; it was {record.last!r} (first declared at "
                                         f"{node.file}:{node.line})")

    # --- nodes, anomalies --------------------------------------------------------------------
    def anomaly(self, kind: str, node: Node | None, message: str) -> None:
        path = node.path if node is not None else ""
        with self.lock:
            entry = self.anomalies.get((kind, path))
            if entry is None:
                file, line = (node.file, node.line) if node is not None else (None, None)
                entry = self.anomalies[(kind, path)] = Anomaly(kind, path, message, file, line)
            entry.count += 1

    def set_enabled(self, enabled: bool) -> None:
        with self.lock:
            self.enabled = enabled
            for state in self.threads:
                state.enabled = enabled

    # --- output ----------------------------------------------------------------------------
    def refresh_rank(self) -> None:
        mpi = sys.modules.get("mpi4py.MPI")
        if mpi is None:
            return
        try:
            if mpi.Is_initialized() and not mpi.Is_finalized():
                self.rank, self.size = mpi.COMM_WORLD.Get_rank(), mpi.COMM_WORLD.Get_size()
        except Exception:  # MPI in a state where it cannot answer: keep what the launcher told us
            pass

    def _mpi_unused(self) -> str | None:
        if self.pmpi is None or self.mpi_live or _mpi_initialized():
            return None
        return "MPI was never initialised in this process: its assertions are unmeasured"

    def flush(self, wait: bool = False) -> None:
        """Periodic write, from the annotation exit path when the flush deadline passed (and ``ma.flush()``,
        which ``wait``s for a write in progress). A write that fails (the directory gone, read-only or full)
        never stops the program: it is said once on stderr and kept as an anomaly for the next write that
        succeeds, and the next flush tries again."""
        if not self.write_lock.acquire(blocking=wait):
            return  # another thread is writing this very moment
        try:
            for state in self.threads:
                state.flush_deadline = 1 << 62  # no re-entry while writing
            try:
                self._write(RUNNING)
            except (OSError, RecursionError) as error:  # (RecursionError: the program's own stack stands deep)
                self._write_failed(error)
        finally:
            self.flush_deadline = time.perf_counter_ns() + self.flush_interval_ns
            for state in self.threads:
                state.flush_deadline = self.flush_deadline
            self.write_lock.release()

    def _write_failed(self, error: Exception) -> None:
        if self.write_problem is None:
            self.write_problem = f"cannot write the trace into {self.settings.trace_dir}: {error}"
            print(f"ma: rank {self.rank}: {self.write_problem}; the program goes on, and later writes will try "
                  "again", file=sys.stderr, flush=True)
        self.anomaly("trace_write", None, self.write_problem)

    def finish(self, status: str, reason: str | None = None) -> None:
        """Final write: close what is still open, then write the trace. Runs once."""
        if self.finished:
            return
        self.finished = True
        now_wall, now_cpu = time.perf_counter_ns(), time.process_time_ns()
        for state in self.threads:
            while state.top is not None:
                frame = state.top
                self.anomaly("unbalanced", frame.node, f"{frame.TYPE} {frame.id!r} was still open at exit"
                             + (f" ({status}: {reason})" if reason else ""))
                frame.finish(None, now_wall, now_cpu, unbalanced=True)
        if status == COMPLETE and merge.mpi_world() is not None and merge.layout() != "per-rank":
            self.refresh_rank()  # the exit hook of import ma reduces it with the other ranks' (merge.py)
            self.pending_final = self.snapshot(status, reason, final=True)
        else:
            try:
                self.write(status, reason, final=True)
            except (OSError, RecursionError) as error:  # said, not raised: a traceback would hide the reason
                print(f"ma: rank {self.rank}: cannot write the final trace into {self.settings.trace_dir}: {error}",
                      file=sys.stderr, flush=True)
        for provider in self.providers:
            provider.close()

    def write(self, status: str, reason: str | None = None, final: bool = False) -> None:
        with self.write_lock:
            self._write(status, reason, final)

    def _write(self, status: str, reason: str | None = None, final: bool = False) -> None:
        self.refresh_rank()
        document = self.snapshot(status, reason, final)
        trace.write_atomic(self.settings.trace_dir, self.rank, document)

    def snapshot(self, status: str, reason: str | None, final: bool) -> dict[str, Any]:
        with self.lock:
            header = {
                "language": "python", "producer": PRODUCER, "rank": self.rank, "size": self.size,
                "host": socket.gethostname(), "pid": os.getpid(), "run_id": self.settings.run_id,
                "command": self.command, "start_time": self.start_time,
                "end_time": time.time() if final else None, "status": status, "exit_reason": reason,
                "tolerance": {"default": self.settings.tolerance, "by_type": dict(self.settings.tolerance_by_type)},
                "counters": {"providers": [p.status().to_json() for p in self.providers],
                             "measures": dict(self.measures)},
                "mpi": {"profiling": self.pmpi is not None,
                        "library": str(self.pmpi.path) if self.pmpi is not None else None,
                        "reason": self.mpi_reason or self._mpi_unused()},
            }
            document = {
                "format": trace.FORMAT, "version": trace.VERSION, "header": header,
                "variables": [v.to_json() for v in self.variables.values()],
                "threads": [{"thread": s.index, "name": s.name, "root": s.root.to_json()} for s in self.threads],
                "anomalies": [a.to_json() for a in self.anomalies.values()],
                "mpi_profile": self.pmpi.profile() if self.pmpi is not None else None,
                **_peer_checks(),
            }
            _site_counts(self, document["threads"])
            vector_loops = _vector_loops()
            if vector_loops:
                document["vector_loops"] = vector_loops
            document.update(_given_hits())
            return document


def sitecounts_probe(providers: list[Any]) -> Callable[[Node], None] | None:
    """The node hook that wraps flop/loadstore readers, when the Valgrind tool simulates caches (sitecounts.py)."""
    for provider in providers:
        if provider.name == "valgrind" and provider.reader("flop") is not None and provider.cache_read() is not None:
            from .sitecounts import cache_probe_factory

            return cache_probe_factory(provider.cache_read, lambda: getattr(_local, "state", None))
    return None


def _fence_the_runtime(providers: list[Any]) -> None:
    """Under the Valgrind tool, the plain-Python runtime brackets its work with the tool's fence (fence.py; the
    compiled runtime always does, inline)."""
    for provider in providers:
        if provider.name == "valgrind":
            requests = provider.fence()
            if requests is not None:
                from . import fence

                fence.activate(*requests)


def _site_counts(runtime: Runtime, threads: list[dict[str, Any]]) -> None:
    """Each site's cache counts and calls into compiled code, as node fields (sitecounts.py), when measured."""
    ccalls = next((p for p in runtime.providers if p.name == "ccalls"), None)
    if ccalls is None and runtime.new_node.site_probe is None:
        return
    from .sitecounts import annotate

    own = ccalls.counts() if ccalls is not None else None  # type: ignore[attr-defined]  # (a CCallsProvider)
    subscripts = ccalls.subscript_counts() if ccalls is not None else None  # type: ignore[attr-defined]
    for state, thread in zip(runtime.threads, threads, strict=True):
        annotate(state.root, thread["root"], own, subscripts)


def _vector_loops() -> list[dict[str, Any]]:
    """The records of ``ma.vec_loop`` (ma_runtime.vector), when the program used it."""
    vector = sys.modules.get("ma_runtime.vector")
    return vector.records_json() if vector is not None else []


def _given_hits() -> dict[str, Any]:
    """The trace's ``given_hit_rates`` list, present only when some ``ma.loadstore`` stated ``hits``."""
    given = sys.modules.get("ma_runtime.givenhits")
    records = given.records_json() if given is not None else []
    return {GIVEN_HITS_KEY: records} if records else {}


def _peer_checks() -> dict[str, Any]:
    """The trace's ``peers`` list, present only when some assertion named its partner (``peer=``)."""
    checks = peers.records()
    return {PEERS_KEY: [c.to_json() for c in checks]} if checks else {}


def _changed(before: Number, now: Number) -> bool:
    """A declaration's value differs from the last one (NaN again is no change)."""
    return not (before == now or (before != before and now != now))


def _is_number(value: object) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)) or _is_numpy_number(value)


def _is_numpy_number(value: object) -> bool:
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, (numpy.integer, numpy.floating))


def _annotation_error(message: str) -> Exception:
    from ma_core.errors import AnnotationError

    return AnnotationError(message)


def _launcher_rank_size() -> tuple[int, int]:
    """Rank and size from the launcher's environment, before (or without) MPI initialisation."""
    return launcher_rank_size(os.environ) or (0, 1)


def _open_pmpi() -> tuple[Any, str | None]:
    from . import bootstrap, pmpi

    library = pmpi.loaded_library()
    if library is not None:
        return library, None
    if bootstrap.mpi_profiling_problem:
        return None, bootstrap.mpi_profiling_problem
    if "mpi4py.MPI" not in sys.modules:
        return None, "MPI is not in use in this process (or the PMPI library was not loaded before it)"
    return None, ("the PMPI library was not loaded before MPI: run under `ma run`, or import ma before "
                  "mpi4py.MPI (after `ma tools build`)")


def _mpi_initialized() -> bool:
    mpi = sys.modules.get("mpi4py.MPI")
    return mpi is not None and bool(mpi.Is_initialized())


def _install_signal_handler(runtime: Runtime) -> None:
    """On SIGTERM (what launchers send when a job is killed) write the trace, then die as asked."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return  # the program has its own handler; leave it alone

    def on_term(signum: int, frame: object) -> None:
        runtime.finish(TERMINATED, "SIGTERM")
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    signal.signal(signal.SIGTERM, on_term)


# --- the process-wide runtime and the per-thread state -------------------------------------------
_runtime: Runtime | None = None
_start_lock = threading.Lock()
_local = threading.local()


def runtime() -> Runtime:
    global _runtime
    if _runtime is None:
        with _start_lock:
            if _runtime is None:
                _runtime = Runtime()
    return _runtime


def thread_state() -> ThreadState:
    """This thread's state, creating the runtime on the first annotation of the process."""
    try:
        return _local.state  # type: ignore[no-any-return]
    except AttributeError:
        state = _local.state = runtime().thread_state()
        return state


def current_runtime() -> Runtime | None:
    return _runtime


__all__ = ["Runtime", "ThreadState", "current_runtime", "runtime", "thread_state", "values_differ"]
