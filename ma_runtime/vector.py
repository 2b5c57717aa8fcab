"""``ma.vec_loop``: the vector paper's ``ma_vec_loop_start/stop`` (Alam & Vetter, Cray X1E, section 5.1).

    with ma.vec_loop("tzetar", "(size^2)*(size-1)*26", "(size^2)*(size-1)*16", "(size-1)/(floor(size/64)+1)", 3):
        ...

asserts a loop's vector load/stores, vector flops and average vector length (AVL, in lanes) as expressions,
and its MV score (0: neither vectorised nor multithreaded, 1: multithreaded, 2: vectorised, 3: both, the
paper's mflag/vflag pair). It is a pure-Python annotation kind (the compiled hot path, the
Cython regions, is untouched): it adds no node to the site tree, so annotating an existing loop keeps
its sites' paths; it keeps one record per (enclosing site path, id) that the runtime writes into the
trace's ``vector_loops`` array. A sparse loop may also state its indexed loads (keyword-only ``gathers``, the
count of indexed reads per call, and ``gathered_bytes``, the size of the array they read), which the vector
backend times on the measured gather curves; they go into the record's ``gathers`` object (null without).
Under the ``valgrind`` counter the record also holds the measured vector metrics of the maflops tool
(vector/scalar flops and load/stores, vector lanes); elsewhere they stay null.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal

from ma_core.errors import AnnotationError, MAError
from ma_core.expr import Expression, parse_expression
from ma_core.trace_format import VEC_LOOP_GATHER_KEYS

from .mars import runtime, thread_state
from .sites import caller

Number = int | float

_PREDICTED = ("vloadstore", "vflops", "avl")
_MEASURED = ("vec_flops", "scalar_flops", "vec_fp_insns", "vec_lanes", "vec_loads", "vec_stores", "scalar_loads",
             "scalar_stores")
_lock = threading.Lock()


@dataclass
class VecLoopRecord:
    """Everything asserted and measured at one vec_loop site, summed over its calls."""

    id: str
    path: str                   # the enclosing site's path ("" at the top level)
    depth: int                  # annotations open around it, plus one: the paper's context depth
    exprs: tuple[str, str, str]
    mv: int
    file: str | None = None     # where the annotation is written (of its first call)
    line: int | None = None
    calls: int = 0
    first: list[Number] = field(default_factory=list)   # predicted vloadstore, vflops, avl of the first call
    predicted_sum: list[Number] = field(default_factory=lambda: [0, 0, 0])
    measured: dict[str, int] | None = None
    measured_calls: int = 0
    gather_exprs: tuple[str, str] | None = None         # gathers, gathered_bytes (when stated)
    gather_first: list[Number] = field(default_factory=list)
    gather_sum: list[Number] = field(default_factory=lambda: [0, 0])

    def add_gathers(self, values: list[Number]) -> None:
        if not self.gather_first:
            self.gather_first = values
        self.gather_sum = [a + b for a, b in zip(self.gather_sum, values, strict=True)]

    def gathers_json(self) -> dict[str, Any] | None:
        if self.gather_exprs is None:
            return None
        return {"expr": dict(zip(VEC_LOOP_GATHER_KEYS, self.gather_exprs, strict=True)),
                "predicted_first": dict(zip(VEC_LOOP_GATHER_KEYS, self.gather_first, strict=True)),
                "predicted_sum": dict(zip(VEC_LOOP_GATHER_KEYS, self.gather_sum, strict=True))}

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "path": self.path, "file": self.file, "line": self.line, "depth": self.depth,
                "mv": self.mv, "calls": self.calls,
                "expr": dict(zip(_PREDICTED, self.exprs, strict=True)),
                "predicted_first": dict(zip(_PREDICTED, self.first, strict=True)) if self.first else None,
                "predicted_sum": dict(zip(_PREDICTED, self.predicted_sum, strict=True)),
                "measured": self.measured, "measured_calls": self.measured_calls, "gathers": self.gathers_json()}


_records: dict[tuple[str, str], VecLoopRecord] = {}


def records_json() -> list[dict[str, Any]]:
    """The ``vector_loops`` array of the trace."""
    with _lock:
        return [r.to_json() for r in _records.values()]


def _vector_reader() -> Any:
    """The running valgrind provider's vector reading, or None (no maflops tool: unmeasured)."""
    for provider in runtime().providers:
        if provider.name == "valgrind" and getattr(provider, "running", False):
            return getattr(provider, "read_vector", None)
    return None


class vec_loop:
    """``ma.vec_loop(id, vloadstore, vflops, avl, mv, vloadstore_value=None, vflops_value=None, avl_value=None, *,
    gathers=None, gathered_bytes=None)``: ``gathers`` (indexed reads per call) and ``gathered_bytes`` (the size
    of the array they read) are expressions, stated together or not at all."""

    def __init__(self, id: str, vloadstore: str, vflops: str, avl: str, mv: int,
                 vloadstore_value: Number | None = None, vflops_value: Number | None = None,
                 avl_value: Number | None = None, *, gathers: str | None = None,
                 gathered_bytes: str | None = None) -> None:
        self.file, self.line = caller()
        if (gathers is None) != (gathered_bytes is None):
            raise AnnotationError(f"{self.where}ma.vec_loop({id!r}, ...): gathers and gathered_bytes go together "
                                  f"(the indexed reads and the size of the array they read)")
        stated = () if gathers is None else (("gathers", gathers), ("gathered_bytes", gathered_bytes))
        for name, text in (("vloadstore", vloadstore), ("vflops", vflops), ("avl", avl), *stated):
            if not isinstance(text, str):
                raise AnnotationError(f"{self.where}ma.vec_loop({id!r}, ...): {name} must be an expression str, "
                                      f"not {text!r}")
        if isinstance(mv, bool) or not isinstance(mv, int) or not 0 <= mv <= 3:
            raise AnnotationError(f"{self.where}ma.vec_loop({id!r}, ...): mv must be the MV score 0..3 "
                                  f"(2*vectorised + multithreaded), not {mv!r}")
        self.id = id
        self.exprs = (vloadstore, vflops, avl)
        self.parsed: tuple[Expression, ...] = tuple(self._parse(name, text) for name, text in
                                                    zip(_PREDICTED, self.exprs, strict=True))
        self.gather_exprs = None if gathers is None else (gathers, str(gathered_bytes))
        self.gather_parsed: tuple[Expression, ...] = () if self.gather_exprs is None else tuple(
            self._parse(name, text) for name, text in zip(VEC_LOOP_GATHER_KEYS, self.gather_exprs, strict=True))
        self.mv = mv
        self.given = (vloadstore_value, vflops_value, avl_value)
        self.record: VecLoopRecord | None = None
        self.read: Any = None
        self.before: Any = None

    @property
    def where(self) -> str:
        """``FILE:LINE: `` of the annotation, the prefix of its error messages (empty when unknown)."""
        return f"{self.file}:{self.line}: " if self.file else ""

    def _parse(self, name: str, text: str) -> Expression:
        try:
            return parse_expression(text)
        except MAError as exc:
            exc.add_note(f"in the {name} of ma.vec_loop({self.id!r}) at {self.file}:{self.line}")
            raise

    def _evaluate(self, state: Any, names: tuple[str, ...] = _PREDICTED, values_given: tuple[Number | None, ...] = (),
                  expressions: tuple[Expression, ...] = ()) -> list[Number]:
        values = []
        for name, given, parsed in zip(names, values_given or self.given, expressions or self.parsed, strict=True):
            try:
                values.append(given if given is not None else parsed.evaluate(state.env_for(parsed.symbols)))
            except MAError as exc:
                exc.add_note(f"in the {name} of ma.vec_loop({self.id!r}) at {self.file}:{self.line}")
                raise
        return values

    def __enter__(self) -> vec_loop:
        state = thread_state()
        if not state.enabled:
            return self
        frames = state.open_frames()
        node = frames[0].node if frames else None
        path = node.path if node is not None else ""
        values = self._evaluate(state)
        gathers = self._evaluate(state, VEC_LOOP_GATHER_KEYS, (None, None), self.gather_parsed) \
            if self.gather_exprs else None
        with _lock:
            record = _records.get((path, self.id))
            if record is None:
                record = _records[(path, self.id)] = VecLoopRecord(self.id, path, len(frames) + 1, self.exprs, self.mv,
                                                                   self.file, self.line)
            record.calls += 1
            if not record.first:
                record.first = values
            record.predicted_sum = [a + b for a, b in zip(record.predicted_sum, values, strict=True)]
            if gathers is not None:
                record.gather_exprs = record.gather_exprs or self.gather_exprs
                record.add_gathers(gathers)
        self.record = record
        self.read = _vector_reader()
        self.before = self.read() if self.read is not None else None
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> Literal[False]:
        if self.before is not None and self.record is not None:
            after = self.read()
            diff = after - self.before
            with _lock:
                record = self.record
                totals = record.measured or dict.fromkeys(_MEASURED, 0)
                record.measured = {k: totals[k] + getattr(diff, k) for k in _MEASURED}
                record.measured_calls += 1
        self.before = None
        return False


def vec_loop_call(id: str, vloadstore: str, vflops: str, avl: str, mv: int, vloadstore_value: Number | None = None,
                  vflops_value: Number | None = None, avl_value: Number | None = None, *, gathers: str | None = None,
                  gathered_bytes: str | None = None) -> vec_loop:
    return vec_loop(id, vloadstore, vflops, avl, mv, vloadstore_value, vflops_value, avl_value, gathers=gathers,
                    gathered_bytes=gathered_bytes)
