"""Site-tree nodes: one per annotation site (path of ids), folding every call into aggregates.

Nodes sit on the hot path of every annotation. Two things keep a call cheap: statistics are kept as runs
(a value repeated call after call only bumps a counter; the sum is formed when the value changes or the
trace is written), and a call whose predicted and measured values repeat the previous call's reuses its
PASS/FAIL verdict. A node goes one step further for such a call: it compares the prediction by identity
(the cached value of the expression) and the measurement as a C integer, and only counts the repeat,
folding it into the statistics when a different call comes (or, without changing the node, when the
trace is written). The annotations make that same repeat test inline before calling ``record*`` (so the
common call stays in their module); ``record*`` keeps it, for its other callers. Compiled with Cython
where available (tree.pxd), plain Python otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ma_core.expr import Expression, parse_expression

Number = int | float

# Relative tolerance used when a float expression is compared with the value the program passed.
_VALUE_RTOL = 1e-9
_NO_VERDICT, _PASS, _FAIL = 0, 1, 2
# What the previous call folded, so that a repeat of it may be counted without folding: nothing reusable,
# a prediction only, a prediction and a measured count, an MPI prediction, an MPI prediction and measurement.
_LAST_NONE, _LAST_PREDICTED, _LAST_COUNTED, _LAST_MPI, _LAST_MPI_MEASURED = 0, 1, 2, 3, 4


class Stats:
    """n/min/max/sum of a value over calls, with the current run of equal values kept apart."""

    __slots__ = ("last", "max", "min", "n", "run", "total")

    def __init__(self) -> None:
        self.n = 0
        self.min: Number = 0
        self.max: Number = 0
        self.total: Number = 0  # sum of every value before the current run
        self.last: Number = 0
        self.run = 0

    def add(self, x: Number) -> bool:
        """Fold ``x``; True when it equals the previous value (nothing else changed)."""
        if self.n and (x is self.last or x == self.last):
            self.run += 1
            self.n += 1
            return True
        if self.n == 0:
            self.min = self.max = x
        else:
            self.total += self.last * self.run
            if x < self.min:
                self.min = x
            elif x > self.max:
                self.max = x
        self.last = x
        self.run = 1
        self.n += 1
        return False

    def repeat(self, k: int) -> None:
        """Fold ``k`` more calls of the last value (there is one)."""
        self.n += k
        self.run += k

    @property
    def sum(self) -> Number:
        return self.total + self.last * self.run if self.n else 0

    def to_json(self, pending: int = 0) -> dict[str, Number] | None:
        """The aggregate, with ``pending`` repeats of the last value not yet folded (the object is left as
        it is: a flush may serialise it from another thread)."""
        if self.n == 0:
            return None
        return {"n": self.n + pending, "min": self.min, "max": self.max,
                "sum": self.total + self.last * (self.run + pending)}


def close_enough(predicted: Number, measured: Number, tolerance: float) -> bool:
    """PASS rule of docs/trace-format.md: |p - m| <= t*|m| (exact equality when t = 0)."""
    if tolerance == 0:
        return predicted == measured
    return abs(predicted - measured) <= tolerance * abs(measured)


def values_differ(given: Number, evaluated: Number) -> bool:
    if given == evaluated:
        return False
    return abs(given - evaluated) > _VALUE_RTOL * max(abs(evaluated), 1.0)


class Node:
    """One site of the tree. ``children`` is keyed by id; a same-id site of another type gets ``type:id``."""

    __slots__ = ("cache_count", "cache_value", "cache_version", "calls", "children", "count_expression",
                 "count_measured", "count_predicted", "count_raw", "count_text", "counters", "cpu_ns", "expr_text",
                 "expression", "failed", "file", "first_fail", "first_mismatch", "group", "id", "last_a", "last_b",
                 "last_count", "last_kind", "last_predicted", "line", "measured", "mismatch", "owner", "parent",
                 "passed", "path", "peers_done", "pending", "predicted", "reader", "region", "tolerance", "track_cpu",
                 "type", "unmeasured", "uses_iter", "verdict", "wall_ns")

    def __init__(self, parent: Node | None, type_: str, id_: str, expr_text: str | None,
                 tolerance: float, file: str | None = None, line: int | None = None,
                 count: str | int | None = None, track_cpu: bool = False,
                 reader: Callable[[], Any] | None = None) -> None:
        self.parent = parent
        self.id = id_
        self.type = type_
        self.path: str = id_ if parent is None or not parent.path else f"{parent.path}/{id_}"
        self.expr_text = expr_text
        self.expression: Expression | None = parse_expression(expr_text) if expr_text is not None else None
        self.count_raw = count  # as the annotation passed it (int or text): compared by identity when hot
        self.count_text = None if count is None else str(count)
        self.count_expression: Expression | None = (
            parse_expression(self.count_text) if self.count_text is not None else None)
        # The expressions use the iteration of the loop (``iter``): evaluated again at every call (threadstate.py).
        self.uses_iter = any(e is not None and "iter" in e.symbols for e in (self.expression, self.count_expression))
        self.reader = reader  # the running-total reader of the counter that measures this site
        self.counters: Any = None  # MPI sites: the PMPI library's totals (a uint64 memoryview) ...
        self.group = 0  # ... and the index of this site's (calls, bytes) pair in it
        self.peers_done: str | None = None  # the peer expression whose checks are done here (annotations.partnered)
        self.owner: type | None = None  # the annotation class whose calls this node folds
        self.region: Any = None  # the annotation object of its last call, handed out again when free
        self.file = file
        self.line = line
        self.children: dict[str, Node] = {}
        self.calls = 0
        self.predicted = Stats()
        self.measured = Stats()
        self.count_predicted = Stats()
        self.count_measured = Stats()
        self.verdict = _NO_VERDICT  # of the previous call, reused while its values repeat
        self.passed = 0
        self.failed = 0
        self.unmeasured = 0
        self.mismatch = 0
        self.first_mismatch: dict[str, Number] | None = None
        self.first_fail: dict[str, Number] | None = None
        self.wall_ns = 0
        self.cpu_ns = 0
        self.track_cpu = track_cpu
        self.tolerance = tolerance
        self.cache_version = -1
        self.cache_value: Number = 0
        self.cache_count: Number = 1
        # Repeats of the previous call counted but not yet folded into the statistics, what that call
        # folded (_LAST_*) and its values: prediction and count by identity, measurements as integers.
        self.pending = 0
        self.last_kind = _LAST_NONE
        self.last_predicted: Number | None = None
        self.last_count: Number | None = None
        self.last_a = 0
        self.last_b = 0

    def fold(self) -> None:
        """Fold the pending repeats of the previous call into the statistics it was folded into."""
        k = self.pending
        if k == 0:
            return
        self.pending = 0
        kind = self.last_kind
        if self.last_predicted is not None:
            self.predicted.repeat(k)
        if kind == _LAST_COUNTED:
            self.measured.repeat(k)
        elif kind in (_LAST_MPI, _LAST_MPI_MEASURED):
            self.count_predicted.repeat(k)
            if kind == _LAST_MPI_MEASURED:
                self.measured.repeat(k)
                self.count_measured.repeat(k)

    def record_input(self, value: Number) -> None:
        """A declared input: its value, nothing to check."""
        self.fold()
        self.last_kind = _LAST_NONE
        self.predicted.add(value)

    def record(self, predicted: Number | None, measured: Number | None) -> None:
        """Fold one call's predicted and measured value (None: could not be measured)."""
        if measured is None:
            if self.last_kind == _LAST_PREDICTED and predicted is self.last_predicted:
                self.pending += 1
                self.unmeasured += 1
                return
            self.fold()
            if predicted is not None:
                self.predicted.add(predicted)
            self.unmeasured += 1
            self.verdict = _NO_VERDICT
            self.last_kind = _LAST_PREDICTED
            self.last_predicted = predicted
            return
        self.fold()
        self.last_kind = _LAST_NONE
        self.last_predicted = None
        same = self.predicted.add(predicted) if predicted is not None else False
        same = self.measured.add(measured) and same
        if same and self.repeat_verdict():
            return
        agrees = predicted is None or close_enough(predicted, measured, self.tolerance)
        if self.judge(agrees) and predicted is not None:  # (a call without a prediction never fails)
            self.first_fail = {"call": self.calls, "predicted": predicted, "measured": measured}

    def record_count(self, predicted: Number | None, counted: int) -> None:
        """``record`` of a measured integer (a trip count): a repeat of the previous call costs a compare."""
        if (self.last_kind == _LAST_COUNTED and predicted is self.last_predicted and counted == self.last_a
                and self.verdict != _NO_VERDICT):
            self.pending += 1
            self.repeat_verdict()
            return
        self.record(predicted, counted)
        self.last_kind = _LAST_COUNTED
        self.last_predicted = predicted
        self.last_a = counted

    def record_mpi(self, size: Number, count: Number, measured: bool, calls: int, nbytes: int) -> None:
        """Fold one MPI assertion: predicted bytes per message and message count vs what PMPI saw
        (``calls`` messages of ``nbytes`` bytes in all, when ``measured``)."""
        kind = _LAST_MPI_MEASURED if measured else _LAST_MPI
        if (self.last_kind == kind and size is self.last_predicted and count is self.last_count
                and calls == self.last_a and nbytes == self.last_b):
            if not measured:
                self.pending += 1
                self.unmeasured += 1
                return
            if self.verdict != _NO_VERDICT:
                self.pending += 1
                self.repeat_verdict()
                return
        self.fold()
        self.last_kind = kind
        self.last_predicted = size
        self.last_count = count
        self.last_a = calls
        self.last_b = nbytes
        if measured and calls == 0 and count == 0:
            size = 0  # no message asserted, none made: nothing to compare the size with
        same = self.predicted.add(size)
        same = self.count_predicted.add(count) and same
        if not measured:
            self.unmeasured += 1
            self.verdict = _NO_VERDICT
            return
        measured_size = (nbytes // calls if nbytes % calls == 0 else nbytes / calls) if calls else 0
        same = self.measured.add(measured_size) and same
        same = self.count_measured.add(calls) and same
        if same and self.repeat_verdict():
            return
        if self.judge(close_enough(size, measured_size, self.tolerance) and close_enough(count, calls, self.tolerance)):
            self.first_fail = {"call": self.calls, "predicted": size, "measured": measured_size,
                               "count_predicted": count, "count_measured": calls}

    def judge(self, agrees: bool) -> bool:
        """Count this call's verdict; True at the site's first FAIL, whose values the caller keeps."""
        if agrees:
            self.passed += 1
            self.verdict = _PASS
            return False
        self.failed += 1
        self.verdict = _FAIL
        return self.first_fail is None

    def repeat_verdict(self) -> bool:
        """This call's values repeat the previous call's: count its verdict again (False: there is none)."""
        if self.verdict == _PASS:
            self.passed += 1
        elif self.verdict == _FAIL:
            self.failed += 1
        else:
            return False
        return True

    def note_value(self, given: Number, evaluated: Number) -> None:
        """The program passed its own value for the expression: count it when it disagrees."""
        if values_differ(given, evaluated):
            self.mismatch += 1
            if self.first_mismatch is None:
                self.first_mismatch = {"given": given, "evaluated": evaluated}

    def to_json(self) -> dict[str, Any]:
        k, kind = self.pending, self.last_kind
        k_predicted = k if self.last_predicted is not None else 0
        k_measured = k if kind in (_LAST_COUNTED, _LAST_MPI_MEASURED) else 0
        k_count_predicted = k if kind in (_LAST_MPI, _LAST_MPI_MEASURED) else 0
        k_count_measured = k if kind == _LAST_MPI_MEASURED else 0
        data: dict[str, Any] = {
            "id": self.id, "type": self.type, "path": self.path, "expr": self.expr_text,
            "file": self.file, "line": self.line, "calls": self.calls,
            "predicted": self.predicted.to_json(k_predicted), "measured": self.measured.to_json(k_measured),
            "pass": self.passed, "fail": self.failed, "unmeasured": self.unmeasured,
            "mismatch": self.mismatch, "first_mismatch": self.first_mismatch, "first_fail": self.first_fail,
            "wall_ns": self.wall_ns, "cpu_ns": self.cpu_ns,
        }
        if self.count_text is not None:
            data["count_expr"] = self.count_text
            data["count"] = {"predicted": self.count_predicted.to_json(k_count_predicted),
                             "measured": self.count_measured.to_json(k_count_measured)}
        # list() first: another thread may add a child while a flush serialises this tree.
        data["children"] = [child.to_json() for child in list(self.children.values())]
        return data


def new_root() -> Node:
    return Node(None, "root", "", None, 0.0, track_cpu=True)
