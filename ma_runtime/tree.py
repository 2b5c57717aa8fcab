"""Site-tree nodes: one per annotation site (path of ids), folding every call into aggregates.

Nodes sit on the hot path of every annotation, so they are plain slotted objects updated in place.
"""

from __future__ import annotations

from typing import Any, Union

from ma.expr import Expression, parse_expression

Number = Union[int, float]

# Relative tolerance used when a float expression is compared with the value the program passed.
_VALUE_RTOL = 1e-9


class Stats:
    """min/max/sum over the calls that produced a value."""

    __slots__ = ("n", "min", "max", "sum")

    def __init__(self) -> None:
        self.n = 0
        self.min: Number = 0
        self.max: Number = 0
        self.sum: Number = 0

    def add(self, x: Number) -> None:
        if self.n == 0:
            self.min = self.max = x
        elif x < self.min:
            self.min = x
        elif x > self.max:
            self.max = x
        self.n += 1
        self.sum += x

    def to_json(self) -> dict[str, Number] | None:
        if self.n == 0:
            return None
        return {"n": self.n, "min": self.min, "max": self.max, "sum": self.sum}


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

    __slots__ = (
        "parent", "id", "type", "path", "expr_text", "expression", "count_text", "count_expression",
        "file", "line", "children", "calls", "p_n", "p_min", "p_max", "p_sum", "m_n", "m_min", "m_max", "m_sum",
        "passed", "failed", "unmeasured", "mismatch", "first_mismatch", "first_fail", "count_predicted",
        "count_measured", "wall_ns", "cpu_ns", "track_cpu", "tolerance", "cache_version", "cache_value",
        "cache_count",
    )

    def __init__(self, parent: Node | None, type_: str, id_: str, expr_text: str | None,
                 tolerance: float, file: str | None = None, line: int | None = None,
                 count_text: str | None = None, track_cpu: bool = False) -> None:
        self.parent = parent
        self.id = id_
        self.type = type_
        self.path = id_ if parent is None or not parent.path else f"{parent.path}/{id_}"
        self.expr_text = expr_text
        self.expression: Expression | None = parse_expression(expr_text) if expr_text is not None else None
        self.count_text = count_text
        self.count_expression: Expression | None = (
            parse_expression(count_text) if count_text is not None else None)
        self.file = file
        self.line = line
        self.children: dict[str, Node] = {}
        self.calls = 0
        # predicted and measured stats, flat because they are updated on every call
        self.p_n = self.m_n = 0
        self.p_min: Number = 0
        self.p_max: Number = 0
        self.p_sum: Number = 0
        self.m_min: Number = 0
        self.m_max: Number = 0
        self.m_sum: Number = 0
        self.passed = 0
        self.failed = 0
        self.unmeasured = 0
        self.mismatch = 0
        self.first_mismatch: dict[str, Number] | None = None
        self.first_fail: dict[str, Number] | None = None
        self.count_predicted = Stats()
        self.count_measured = Stats()
        self.wall_ns = 0
        self.cpu_ns = 0
        self.track_cpu = track_cpu
        self.tolerance = tolerance
        self.cache_version = -1
        self.cache_value: Number = 0
        self.cache_count: Number = 1

    def record(self, predicted: Number | None, measured: Number | None) -> None:
        """Fold one call's predicted and measured value (None: could not be measured)."""
        if predicted is not None:
            if self.p_n == 0:
                self.p_min = self.p_max = predicted
            elif predicted < self.p_min:
                self.p_min = predicted
            elif predicted > self.p_max:
                self.p_max = predicted
            self.p_n += 1
            self.p_sum += predicted
        if measured is None:
            self.unmeasured += 1
            return
        if self.m_n == 0:
            self.m_min = self.m_max = measured
        elif measured < self.m_min:
            self.m_min = measured
        elif measured > self.m_max:
            self.m_max = measured
        self.m_n += 1
        self.m_sum += measured
        if predicted is None or (predicted == measured if self.tolerance == 0
                                 else close_enough(predicted, measured, self.tolerance)):
            self.passed += 1
        else:
            self.failed += 1
            if self.first_fail is None:
                self.first_fail = {"call": self.calls, "predicted": predicted, "measured": measured}

    def record_mpi(self, size: Number, count: Number, calls: int | None, nbytes: int) -> None:
        """Fold one MPI assertion: predicted bytes per message and message count vs what PMPI saw."""
        self.count_predicted.add(count)
        if calls is None:
            self.record(size, None)
            return
        self.count_measured.add(calls)
        if calls == 0 and count == 0:
            size = 0  # no message asserted, none made: nothing to compare the size with
        measured_size = (nbytes // calls if nbytes % calls == 0 else nbytes / calls) if calls else 0
        passed_before = self.passed
        self.record(size, measured_size)  # judges the size
        if not close_enough(count, calls, self.tolerance) and self.passed > passed_before:
            self.passed -= 1  # right size, wrong number of calls: still a FAIL
            self.failed += 1
            if self.first_fail is None:
                self.first_fail = {"call": self.calls, "predicted": size, "measured": measured_size}
        if self.first_fail is not None and "count_predicted" not in self.first_fail:
            self.first_fail.update(count_predicted=count, count_measured=calls)

    def note_value(self, given: Number, evaluated: Number) -> None:
        """The program passed its own value for the expression: count it when it disagrees."""
        if values_differ(given, evaluated):
            self.mismatch += 1
            if self.first_mismatch is None:
                self.first_mismatch = {"given": given, "evaluated": evaluated}

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id, "type": self.type, "path": self.path, "expr": self.expr_text,
            "file": self.file, "line": self.line, "calls": self.calls,
            "predicted": _stats(self.p_n, self.p_min, self.p_max, self.p_sum),
            "measured": _stats(self.m_n, self.m_min, self.m_max, self.m_sum),
            "pass": self.passed, "fail": self.failed, "unmeasured": self.unmeasured,
            "mismatch": self.mismatch, "first_mismatch": self.first_mismatch, "first_fail": self.first_fail,
            "wall_ns": self.wall_ns, "cpu_ns": self.cpu_ns,
        }
        if self.count_text is not None:
            data["count_expr"] = self.count_text
            data["count"] = {"predicted": self.count_predicted.to_json(),
                             "measured": self.count_measured.to_json()}
        # list() first: another thread may add a child while a flush serialises this tree.
        data["children"] = [child.to_json() for child in list(self.children.values())]
        return data


def _stats(n: int, low: Number, high: Number, total: Number) -> dict[str, Number] | None:
    return {"n": n, "min": low, "max": high, "sum": total} if n else None


def new_root() -> Node:
    return Node(None, "root", "", None, 0.0, track_cpu=True)
