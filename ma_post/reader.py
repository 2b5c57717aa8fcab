"""Reading the rank files of a trace directory: checked against the documented schema, flattened into rows.

Every problem is a TraceError naming the file and what was expected; with ``allow_missing`` the
per-file problems (missing, truncated, corrupt, unknown version) become TraceWarnings instead and the
readable ranks are kept. Problems between files (different size or run id) are always errors: there is
no way to tell which file is the stray one.

Parsing JSON is most of the cost of loading a run (1024 ranks: ~40 MB). A rank file is parsed and its
site trees flattened into compact rows (a node's parent index, identity, and its aggregates as floats),
in worker processes when there are many files, so the main process only gathers rows into arrays.
"""

from __future__ import annotations

import json
import math
import os
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ma.errors import TraceError
from ma.trace_format import FORMAT, RANK_FILE, VERSION, rank_file_name


class TraceWarning(UserWarning):
    """A trace problem that ``allow_missing=True`` turned from an error into a warning."""


def read_trace_dir(directory: Path, *, allow_missing: bool = False, workers: int | None = None
                   ) -> tuple[list[FlatTrace], dict[str, str], list[int]]:
    """(flat traces in rank order, skipped file -> reason, missing ranks). ``workers``: processes to parse
    with (None: automatic, 0: this process only)."""
    if not directory.is_dir():
        raise TraceError(str(directory), "no such trace directory (expected the MA_TRACE_DIR of a run)")
    files: dict[int, Path] = {}
    for path in directory.iterdir():
        match = RANK_FILE.match(path.name)
        if match:
            files[int(match.group(1))] = path
    if not files:
        raise TraceError(str(directory), "no rank-<r>.ma.json trace files in this directory "
                                         "(expected the MA_TRACE_DIR of an annotated run)")
    ranks = sorted(files)
    workers = default_workers(len(ranks)) if workers is None else workers
    traces: dict[int, FlatTrace] = {}
    skipped: dict[str, str] = {}
    for rank, result in zip(ranks, read_many([(files[r], r) for r in ranks], workers), strict=False):
        if isinstance(result, TraceError):
            if not allow_missing:
                raise result
            skipped[str(files[rank])] = str(result)
            warnings.warn(f"skipping unreadable trace: {result}", TraceWarning, stacklevel=3)
        else:
            traces[rank] = result
    if not traces:
        raise TraceError(str(directory), "none of the trace files could be read: " + "; ".join(skipped.values()))
    _check_consistent(traces, files)
    size = next(iter(traces.values())).header["size"]
    missing = [r for r in range(size) if r not in traces]
    if missing:
        names = ", ".join(rank_file_name(r) for r in missing[:8]) + (" ..." if len(missing) > 8 else "")
        message = (f"{len(missing)} of {size} rank files missing ({names}); the run's header says "
                   f"size={size}")
        if not allow_missing:
            raise TraceError(str(directory / rank_file_name(missing[0])),
                             message + " (load with allow_missing=True / --allow-missing to use the ranks present)")
        warnings.warn(f"{directory}: {message}; keeping the {len(traces)} ranks present", TraceWarning,
                      stacklevel=3)
    return [traces[r] for r in sorted(traces)], skipped, missing


def read_trace_file(path: Path, *, expected_rank: int | None = None) -> dict[str, Any]:
    """Parse and check one rank file."""
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise TraceError(str(path), f"cannot read: {exc.strerror or exc}") from None
    if not text.strip():
        raise TraceError(str(path), "empty file (the rank may have been killed before its first flush)")
    try:
        # A value JSON cannot carry is written as {"$num": ...} (docs/trace-format.md); decode only files with one.
        document = json.loads(text, object_hook=_number_from_text if b'"$num"' in text else None)
    except json.JSONDecodeError as exc:
        # A whole document is an object and ends with '}'; one that stops early was cut off mid-write.
        stripped = text.strip()
        what = "truncated" if stripped.startswith(b"{") and not stripped.endswith(b"}") else "corrupt"
        raise TraceError(str(path), f"{what} JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except UnicodeDecodeError as exc:
        raise TraceError(str(path), f"corrupt: not UTF-8 text ({exc.reason})") from None
    check_document(document, str(path), expected_rank)
    return document


def _number_from_text(entry: dict[str, Any]) -> Any:
    """``{"$num": "nan" | "inf" | "-inf" | "0x..." | "-0x..."}`` back to a number post-processing can hold.

    Post-processing computes in doubles, so an integer written in hex (past the JSON digit limit, so far past
    the double range) reads as +-inf; its exact value stays in the file, and the trace's ``unrepresentable``
    anomaly names it."""
    text = entry.get("$num") if len(entry) == 1 else None
    if not isinstance(text, str):
        return entry
    try:
        if "0x" not in text:
            return float(text)
        value = int(text, 16)
    except ValueError:
        return entry  # not a form this reader knows: left as it is, for check_document's type checks
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def check_document(document: Any, name: str, expected_rank: int | None = None) -> None:
    """Check the top-level layout of a trace document; raise TraceError naming ``name``."""
    if not isinstance(document, dict):
        raise TraceError(name, f"expected a JSON object at top level, found {type(document).__name__}")
    if document.get("format") != FORMAT:
        raise TraceError(name, f"not an ma trace: format is {document.get('format')!r}, expected {FORMAT!r}")
    version = document.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise TraceError(name, f"bad schema version {version!r}, expected an integer >= 1")
    if version > VERSION:
        raise TraceError(name, f"schema version {version} is newer than this reader supports "
                               f"({VERSION}); upgrade the ma package to read it")
    header = document.get("header")
    if not isinstance(header, dict):
        raise TraceError(name, "missing 'header' object")
    for key in ("rank", "size"):
        if not isinstance(header.get(key), int) or isinstance(header.get(key), bool):
            raise TraceError(name, f"header.{key} is {header.get(key)!r}, expected an integer")
    rank, size = header["rank"], header["size"]
    if size < 1 or not 0 <= rank < size:
        raise TraceError(name, f"header says rank {rank} of size {size}, expected 0 <= rank < size")
    if expected_rank is not None and rank != expected_rank:
        raise TraceError(name, f"header.rank is {rank} but the file name says rank {expected_rank}")
    threads = document.get("threads")
    if not isinstance(threads, list):
        raise TraceError(name, "missing 'threads' array (one site tree per thread)")
    for i, thread in enumerate(threads):
        if not isinstance(thread, dict) or not isinstance(thread.get("root"), dict):
            raise TraceError(name, f"threads[{i}] has no 'root' site tree")
    if not isinstance(document.get("variables", []), list):
        raise TraceError(name, "'variables' must be an array")
    if not isinstance(document.get("anomalies", []), list):
        raise TraceError(name, "'anomalies' must be an array")


def _check_consistent(traces: dict[int, FlatTrace], files: dict[int, Path]) -> None:
    first_rank = min(traces)
    first = traces[first_rank].header
    for rank, trace in traces.items():
        header = trace.header
        if header["size"] != first["size"]:
            raise TraceError(str(files[rank]), f"header.size is {header['size']} but "
                                               f"{files[first_rank].name} says {first['size']} "
                                               "(files from different runs in one directory?)")
        if header.get("run_id") != first.get("run_id"):
            raise TraceError(str(files[rank]), f"run_id {header.get('run_id')!r} differs from "
                                               f"{first.get('run_id')!r} in {files[first_rank].name} "
                                               "(files from different runs in one directory?)")
    extra = [r for r in traces if r >= first["size"]]
    if extra:  # caught per file already; kept for documents built by hand
        raise TraceError(str(files[extra[0]]), f"rank {extra[0]} is outside size {first['size']}")


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
