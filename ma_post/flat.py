"""One rank file as flat rows, and reading many of them on every core.

Parsing JSON is most of the cost of loading a run (1024 ranks: ~40 MB). A rank file is parsed and its
site trees flattened into compact rows (a node's parent index, identity, and its aggregates as floats),
in worker processes when there are many files, so the main process only gathers rows into arrays.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ma.errors import TraceError

from .reader import check_document, read_trace_file

# Per-call aggregates of a site, in the order of the value rows (and of TraceSet.data's axis 1).
FIELDS: tuple[str, ...] = (
    "calls", "pass", "fail", "unmeasured", "mismatch", "wall_ns", "cpu_ns",
    "pred_n", "pred_min", "pred_max", "pred_sum",
    "meas_n", "meas_min", "meas_max", "meas_sum",
    "cpred_n", "cpred_min", "cpred_max", "cpred_sum",
    "cmeas_n", "cmeas_min", "cmeas_max", "cmeas_sum",
)

# (parent row or -1, type, id, path, expr, count_expr, file, line, first_fail, first_mismatch)
NodeRow = tuple[int, str, str, str, Any, Any, Any, Any, Any, Any]


@dataclass
class FlatThread:
    thread: int
    name: str
    nodes: list[NodeRow]
    values: np.ndarray  # (nodes, len(FIELDS)) float64, NaN for a missing min/max


@dataclass
class FlatTrace:
    name: str
    header: dict[str, Any]
    variables: list[dict[str, Any]]
    anomalies: list[dict[str, Any]]
    mpi_profile: dict[str, Any] | None
    threads: list[FlatThread]


_NO_STATS = (0, None, None, 0)
_EMPTY: dict[str, Any] = {}


def _stats(stats: Mapping[str, Any] | None) -> tuple[Any, Any, Any, Any]:
    return (stats["n"], stats["min"], stats["max"], stats["sum"]) if stats else _NO_STATS


def _flatten_tree(root: Mapping[str, Any], name: str, thread: int, thread_name: str) -> FlatThread:
    # The hot loop of loading: values are gathered raw and converted by numpy in one go (None -> NaN).
    nodes: list[NodeRow] = []
    values: list[Any] = []
    stack: list[tuple[Mapping[str, Any], int]] = [(child, -1) for child in reversed(root.get("children") or ())]
    while stack:
        node, parent = stack.pop()
        try:
            get = node.get
            count = get("count") or _EMPTY
            values += (node["calls"], get("pass", 0), get("fail", 0), get("unmeasured", 0), get("mismatch", 0),
                       get("wall_ns", 0), get("cpu_ns", 0))
            values += _stats(get("predicted"))
            values += _stats(get("measured"))
            values += _stats(count.get("predicted"))
            values += _stats(count.get("measured"))
            nodes.append((parent, str(node["type"]), str(node["id"]), str(get("path", "")), get("expr"),
                          get("count_expr"), get("file"), get("line"), get("first_fail"), get("first_mismatch")))
        except (KeyError, TypeError, AttributeError) as exc:
            where = node.get("path", "?") if isinstance(node, Mapping) else "?"
            raise TraceError(name, f"site {where!r}: bad or missing field ({exc!s}); "
                                   "expected the node layout of docs/trace-format.md") from None
        index = len(nodes) - 1
        for child in reversed(get("children") or ()):
            stack.append((child, index))
    try:
        array = np.asarray(values, dtype=float).reshape(len(nodes), len(FIELDS))
    except (TypeError, ValueError) as exc:
        raise TraceError(name, f"a site aggregate is not a number ({exc}); expected numbers or null "
                               "(docs/trace-format.md)") from None
    return FlatThread(thread, thread_name, nodes, array)


def flatten(document: Mapping[str, Any], name: str) -> FlatTrace:
    """Flat rows of a checked trace document; TraceError naming ``name`` for a malformed site."""
    threads = [_flatten_tree(t["root"], name, int(t.get("thread", 0)),
                             str(t.get("name") or f"thread {t.get('thread', 0)}"))
               for t in document["threads"]]
    return FlatTrace(name, document["header"], list(document.get("variables") or ()),
                     list(document.get("anomalies") or ()), document.get("mpi_profile"), threads)


def flatten_document(document: Any, name: str) -> FlatTrace:
    check_document(document, name)
    return flatten(document, name)


def read_flat(path: Path, expected_rank: int | None = None) -> FlatTrace:
    return flatten(read_trace_file(path, expected_rank=expected_rank), str(path))


def _read_or_report(job: tuple[str, int]) -> FlatTrace | tuple[str, str]:
    """Worker side: exceptions with custom constructors do not pickle, so errors travel as (path, message)."""
    path, rank = job
    try:
        return read_flat(Path(path), rank)
    except TraceError as exc:
        return (exc.path, str(exc).removeprefix(f"{exc.path}: "))


def default_workers(n_files: int) -> int:
    """Worker processes for ``n_files``: none for small runs, on small machines (with two cores the
    parent, which gathers the rows, competes with the workers: measured no faster), or where forking is
    unsafe (MPI initialised in this process)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if n_files < 256 or cpus < 4 or "mpi4py.MPI" in sys.modules or sys.platform != "linux":
        return 0
    return min(cpus - 1, 8)


def read_many(jobs: Sequence[tuple[Path, int]], workers: int) -> Iterator[FlatTrace | TraceError]:
    """Read rank files in order; yields a FlatTrace or the TraceError of each (raised by the caller)."""
    if workers <= 1:
        for path, rank in jobs:
            try:
                yield read_flat(path, rank)
            except TraceError as exc:
                yield exc
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("fork")
    chunk = max(1, len(jobs) // (workers * 4))
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        for result in pool.map(_read_or_report, [(str(p), r) for p, r in jobs], chunksize=chunk):
            yield TraceError(*result) if isinstance(result, tuple) else result
