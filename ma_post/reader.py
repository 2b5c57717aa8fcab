"""Reading the rank files of a trace directory: checked against the documented schema, flattened into rows.

Every problem is a TraceError naming the file and what was expected; with ``allow_missing`` the
per-file problems (missing, truncated, corrupt, unknown version) become TraceWarnings instead and the
readable ranks are kept. Problems between files (different size or run id) are always errors: there is
no way to tell which file is the stray one.

Parsing JSON is most of the cost of loading a run (1024 ranks: ~40 MB). A rank file is decoded by msgspec into
typed structs (typed_reader.py: the exact JSON types checked in C) and its site trees flattened into compact rows
(a node's parent index, identity, and its aggregates as floats); a file the structs refuse is parsed and checked
here, which words the error. Worker processes read when there are many files and the cores for them, so the
main process only gathers rows into arrays. A job's merged file (merged.py) needs none of this.
"""

from __future__ import annotations

import json
import math
import os
import sys
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np

try:
    import msgspec

    from . import typed_reader
except ImportError:  # optional: the standard library parses the same text, slower
    msgspec = None  # type: ignore[assignment]
    typed_reader = None  # type: ignore[assignment]

from ma_core.errors import TraceError
from ma_core.inputs import read_regular_file
from ma_core.trace_format import (
    ALWAYS,
    FORMAT,
    MAX_JOB_SIZE,
    MERGED_FILE,
    NODE_C_CALLS_KEY,
    NODE_CACHE_KEY,
    NODE_COUNTS,
    NODE_LAYOUT,
    NODE_ROW_KEYS,
    NODE_STATS,
    NODE_SUBSCRIPTS_KEY,
    OPTIONAL_DOCUMENT_KEYS,
    OPTIONAL_INTEGER,
    OPTIONAL_OBJECT,
    OPTIONAL_STRING,
    RANK_FILE,
    STATS_KEYS,
    STRING,
    VALUE_FIELDS,
    VERSION,
    rank_file_name,
    signature_columns,
)

from .progress import progress

# Parse with msgspec where it is installed (tests and benchmarks switch it off to compare).
FAST_JSON = msgspec is not None
PROGRESS_FROM = 256  # rank files: from this many on, loading shows a progress bar on a terminal


class TraceWarning(UserWarning):
    """A trace problem that ``allow_missing=True`` turned from an error into a warning."""


def read_trace_dir(directory: Path, *, allow_missing: bool = False, workers: int | None = None
                   ) -> tuple[list[FlatTrace], dict[str, str], list[int]]:
    """(flat traces in rank order, skipped file -> reason, missing ranks). ``workers``: processes to parse
    with (None: automatic, 0: this process only)."""
    if not directory.is_dir():
        what = "not a directory" if directory.exists() else "no such trace directory"
        raise TraceError(str(directory), f"{what} (expected the MA_TRACE_DIR of a run, or its {MERGED_FILE})")
    files: dict[int, Path] = {}
    for path in directory.iterdir():
        match = RANK_FILE.match(path.name)
        if match:
            files[int(match.group(1))] = path
    if not files:
        raise TraceError(str(directory), "no job.ma.npz or rank-<r>.ma.json trace files in this directory "
                                         "(expected the MA_TRACE_DIR of an annotated run)")
    ranks = sorted(files)
    workers = default_workers(len(ranks)) if workers is None else workers
    traces: dict[int, FlatTrace] = {}
    skipped: dict[str, str] = {}
    results = read_many([(files[r], r) for r in ranks], workers)
    if len(ranks) >= PROGRESS_FROM:
        results = progress(results, total=len(ranks), desc=f"reading {directory}", unit="rank")
    for rank, result in zip(ranks, results, strict=False):
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
    missing = missing_ranks(size, traces)
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


def missing_ranks(size: int, present: Iterable[int]) -> list[int]:
    """The ranks 0..size-1 not in ``present`` (size at most MAX_JOB_SIZE: checked with the header)."""
    return np.setdiff1d(np.arange(size, dtype=np.int64), np.fromiter(present, dtype=np.int64)).tolist()


def read_trace_file(path: Path, *, expected_rank: int | None = None) -> dict[str, Any]:
    """Parse and check one rank file."""
    try:
        text = read_regular_file(path)
    except OSError as exc:
        raise TraceError(str(path), f"cannot read: {exc.strerror or exc}") from None
    if not text.strip():
        raise TraceError(str(path), "empty file (the rank may have been killed before its first flush)")
    document = parse_json(text, str(path))
    check_document(document, str(path), expected_rank)
    return document


def parse_json(text: bytes, name: str) -> Any:
    """JSON text to Python objects; TraceError naming ``name`` for anything else.

    msgspec where it can (several times faster than the standard library); the standard library for what msgspec
    refuses but JSON allows (a number past the range it holds) and for the ``{"$num": ...}`` form
    (docs/trace-format.md), and to word the errors. Nesting deeper than the interpreter's recursion allows is a
    TraceError, never a RecursionError."""
    if FAST_JSON and b'"$num"' not in text:
        try:
            return msgspec.json.decode(text)
        except (msgspec.DecodeError, RecursionError):
            pass  # read again below: the standard library accepts more, and words its errors better
    try:
        # A value JSON cannot carry is written as {"$num": ...}; decode only files with one.
        return json.loads(text, object_hook=number_from_text if b'"$num"' in text else None)
    except json.JSONDecodeError as exc:
        # A whole document is an object and ends with '}'; one that stops early was cut off mid-write.
        stripped = text.strip()
        what = "truncated" if stripped.startswith(b"{") and not stripped.endswith(b"}") else "corrupt"
        raise TraceError(name, f"{what} JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except UnicodeDecodeError as exc:
        raise TraceError(name, f"corrupt: not UTF-8 text ({exc.reason})") from None
    except RecursionError:
        raise TraceError(name, f"JSON nested more than {sys.getrecursionlimit()} levels deep: not a trace this "
                               "reader can hold (a site tree this deep is refused)") from None


def number_from_text(entry: dict[str, Any]) -> Any:
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
    return to_float(value)


_number_from_text = number_from_text  # the name older tests import


def to_float(value: int | float) -> float:
    """A JSON number as a double: an integer past the double range is +-inf (post-processing computes in
    doubles; the file keeps the exact value)."""
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
    if size > MAX_JOB_SIZE:
        raise TraceError(name, f"header.size is {size:,}, expected at most {MAX_JOB_SIZE:,} processes (the largest "
                               "job a trace may describe)")
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
FIELDS: tuple[str, ...] = VALUE_FIELDS

# (parent row or -1, *NODE_ROW_KEYS, first_fail, first_mismatch): type, id, path, expr, count_expr, file, line
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
    # The document's OPTIONAL_DOCUMENT_KEYS (those it has): key -> its array
    optional: dict[str, list[Any]] = dataclass_field(default_factory=dict)


_NO_STATS = (0, None, None, 0)
_EMPTY: dict[str, Any] = {}
_NUMBER_TYPES = {int, float}
_OPTIONAL_NUMBER_TYPES = {int, float, type(None)}
_COUNT_COLUMNS = tuple(i for i, f in enumerate(FIELDS) if f in ("calls", "pass", "fail", "unmeasured", "mismatch")
                       or f.endswith("_n"))
# Where each value of a row sits in a site node of the JSON document (for error messages): pred_min is predicted.min.
_JSON_FIELD = {f: next((f.replace(f"{prefix}_", f"{key}.", 1) for key, prefix in NODE_STATS.items()
                        if f.startswith(f"{prefix}_")), f) for f in FIELDS}
# The JSON types of a node row's fields, from the node layout: (allowed types, what the message says is expected).
_JSON_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    STRING: ((str,), "a string"), OPTIONAL_STRING: ((str, type(None)), "a string or null"),
    OPTIONAL_INTEGER: ((int, type(None)), "an integer or null"),
    OPTIONAL_OBJECT: ((dict, type(None)), "an object or null")}


def _row_field(name: str) -> tuple[str, tuple[type, ...], str]:
    """(field, allowed types, expected) of a node key; one that only some nodes have may be absent (None)."""
    key = next(key for key in NODE_LAYOUT if key.name == name)
    allowed, expected = _JSON_TYPES[key.value]
    if key.presence != ALWAYS and type(None) not in allowed:
        allowed, expected = (*allowed, type(None)), f"{expected} or null"
    return name, allowed, expected


# The fields of a node row after its parent: NODE_ROW_KEYS, then first_fail and first_mismatch.
_NODE_FIELDS: tuple[tuple[str, tuple[type, ...], str], ...] = tuple(
    _row_field(name) for name in (*NODE_ROW_KEYS, "first_fail", "first_mismatch"))


_AGGREGATES = itemgetter(*NODE_COUNTS)
_IDENTITY = itemgetter("type", "id", "path", "expr", "file", "line", "first_fail", "first_mismatch")
_STATS = itemgetter(*STATS_KEYS)


def _stats(stats: Mapping[str, Any] | None) -> tuple[Any, Any, Any, Any]:
    return _STATS(stats) if stats else _NO_STATS


def _flatten_tree(root: Mapping[str, Any], name: str, thread: int, thread_name: str) -> FlatThread:
    # The hot loop of loading: values are gathered raw, their types checked a column at a time (set(map(type)),
    # in C) and converted by numpy in one go (None -> NaN); a problem is then located by _diagnose.
    nodes: list[NodeRow] = []
    values: list[Any] = []
    stack: list[tuple[Any, int]] = [(child, -1) for child in reversed(_children(root, name, ""))]
    while stack:
        node, parent = stack.pop()
        try:
            get = node.get
            count = get("count") or _EMPTY
            try:  # every key present, as the runtimes write them: one C call per group of fields
                values += _AGGREGATES(node)
                type_, id_, path, expr, file, line, first_fail, first_mismatch = _IDENTITY(node)
            except KeyError:  # a hand-made trace may leave out what defaults
                values += (node["calls"], get("pass", 0), get("fail", 0), get("unmeasured", 0),
                           get("mismatch", 0), get("wall_ns", 0), get("cpu_ns", 0))
                type_, id_, path, expr, file, line, first_fail, first_mismatch = (
                    node["type"], node["id"], get("path", ""), get("expr"), get("file"), get("line"),
                    get("first_fail"), get("first_mismatch"))
            values += _stats(get("predicted"))
            values += _stats(get("measured"))
            values += _stats(count.get("predicted"))
            values += _stats(count.get("measured"))
            try:
                values += signature_columns(get(NODE_CACHE_KEY), get(NODE_C_CALLS_KEY), node["calls"],
                                            get(NODE_SUBSCRIPTS_KEY))
            except ValueError as problem:
                raise TraceError(name, f"site {path!r}: {problem} (docs/trace-format.md)") from None
            nodes.append((parent, type_, id_, path, expr, get("count_expr"), file, line, first_fail, first_mismatch))
            children = get("children")
            if children.__class__ is not list:
                if children is not None:
                    raise TypeError("children")
                children = ()
        except (KeyError, TypeError, AttributeError):
            raise _diagnose(node, parent, nodes, name) from None
        index = len(nodes) - 1
        for child in reversed(children):
            stack.append((child, index))
    columns: list[tuple[Any, ...]] = list(zip(*nodes, strict=True))[1:] if nodes else [()] * len(_NODE_FIELDS)
    for (field, allowed, _), column in zip(_NODE_FIELDS, columns, strict=True):
        if not set(map(type, column)) <= set(allowed):
            bad = next(i for i, v in enumerate(column) if type(v) not in allowed)
            raise _diagnose_row(nodes, bad, name, field)
    if not set(map(type, values)) <= _OPTIONAL_NUMBER_TYPES or any(
            not set(map(type, values[c::len(FIELDS)])) <= {int} for c in _COUNT_COLUMNS):
        for i, value in enumerate(values):
            col = i % len(FIELDS)
            if type(value) not in (_OPTIONAL_NUMBER_TYPES if col not in _COUNT_COLUMNS else {int}):
                raise _diagnose_row(nodes, i // len(FIELDS), name, _JSON_FIELD[FIELDS[col]], value,
                                    "an integer" if col in _COUNT_COLUMNS else "a number or null")
    try:
        array = np.asarray(values, dtype=float)
    except OverflowError:  # an integer past the double range: +-inf, as the {"$num": ...} form reads
        array = np.asarray([to_float(v) if type(v) is int else v for v in values], dtype=float)
    return FlatThread(thread, thread_name, nodes, array.reshape(len(nodes), len(FIELDS)))


def _children(node: Any, name: str, path: str) -> list[Any]:
    children = node.get("children") or [] if isinstance(node, dict) else None
    if not isinstance(children, list):
        raise TraceError(name, f"site {path!r}: field 'children' is {_shown(children)}, expected an array of sites")
    return children


def _shown(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) < 60 else text[:57] + '...'}"


def _site_path(nodes: list[NodeRow], row: int) -> str:
    node = nodes[row]
    if isinstance(node[3], str):
        return node[3]
    parent = _site_path(nodes, node[0]) if node[0] >= 0 else ""
    return f"{parent}/{node[2]}" if parent else str(node[2])


def _diagnose_row(nodes: list[NodeRow], row: int, name: str, field: str, value: Any = None,
                  expected: str | None = None) -> TraceError:
    if expected is None:
        index = [f for f, _, _ in _NODE_FIELDS].index(field)
        value, expected = nodes[row][index + 1], _NODE_FIELDS[index][2]
    return TraceError(name, f"site {_site_path(nodes, row)!r}: field {field!r} is {_shown(value)}, "
                            f"expected {expected} (docs/trace-format.md)")


def _diagnose(node: Any, parent: int, nodes: list[NodeRow], name: str) -> TraceError:
    """The TraceError for a node the fast path could not read: which field, what it is, what was expected."""
    above = _site_path(nodes, parent) if parent >= 0 else ""
    if not isinstance(node, dict):
        return TraceError(name, f"a child of site {above!r} is {_shown(node)}, expected a site object")
    path = node.get("path") if isinstance(node.get("path"), str) else f"{above}/{node.get('id')}".lstrip("/")
    for field in ("calls", "type", "id"):
        if field not in node:
            return TraceError(name, f"site {path!r}: missing field {field!r} (docs/trace-format.md)")
    for field in ("predicted", "measured", "count"):
        value = node.get(field)
        if value is not None and not isinstance(value, dict):
            return TraceError(name, f"site {path!r}: field {field!r} is {_shown(value)}, expected an object or null")
    for field, stats in (("predicted", node.get("predicted")), ("measured", node.get("measured")),
                         *((f"count.{k}", (node.get("count") or {}).get(k)) for k in ("predicted", "measured"))):
        if stats is not None and not isinstance(stats, dict):
            return TraceError(name, f"site {path!r}: field {field!r} is {_shown(stats)}, expected an object or null")
        missing = [key for key in STATS_KEYS if isinstance(stats, dict) and key not in stats]
        for key in missing[:1]:
                return TraceError(name, f"site {path!r}: field '{field}.{key}' is missing (stats are "
                                        "{\"n\", \"min\", \"max\", \"sum\"})")
    children = node.get("children")
    if children is not None and not isinstance(children, list):
        return TraceError(name, f"site {path!r}: field 'children' is {_shown(children)}, expected an array of sites")
    return TraceError(name, f"site {path!r}: a field has the wrong type; expected the node layout of "
                            "docs/trace-format.md")


def flatten(document: Mapping[str, Any], name: str) -> FlatTrace:
    """Flat rows of a checked trace document; TraceError naming ``name`` for a malformed site."""
    threads = [_flatten_tree(t["root"], name, int(t.get("thread", 0)),
                             str(t.get("name") or f"thread {t.get('thread', 0)}"))
               for t in document["threads"]]
    return FlatTrace(name, document["header"], list(document.get("variables") or ()),
                     list(document.get("anomalies") or ()), document.get("mpi_profile"), threads,
                     optional_sections(document, name))


def optional_sections(document: Mapping[str, Any], name: str) -> dict[str, list[Any]]:
    """The optional top-level lists of a document (OPTIONAL_DOCUMENT_KEYS) it has; TraceError for one that is
    not a list."""
    sections = {}
    for key in OPTIONAL_DOCUMENT_KEYS:
        value = document.get(key)
        if value is None:
            continue
        if not isinstance(value, list):
            raise TraceError(name, f"'{key}' must be an array, got {type(value).__name__} (docs/trace-format.md)")
        sections[key] = value
    return sections


def flatten_document(document: Any, name: str) -> FlatTrace:
    check_document(document, name)
    return flatten(document, name)


def read_flat(path: Path, expected_rank: int | None = None) -> FlatTrace:
    """One rank file's rows: decoded straight into typed structs (typed_reader.py) when it can, else parsed
    and checked here, which also words every error."""
    if FAST_JSON:
        try:
            text = read_regular_file(path)
        except OSError:  # read_trace_file below says why
            text = b""
        if text and b'"$num"' not in text:
            flat = _typed_flat(text, str(path), expected_rank)
            if flat is not None:
                return flat
    return flatten(read_trace_file(path, expected_rank=expected_rank), str(path))


def _typed_flat(text: bytes, name: str, expected_rank: int | None) -> FlatTrace | None:
    document = typed_reader.decode(text)
    if document is None:
        return None
    check_document({"format": document.format, "version": document.version, "header": document.header,
                    "threads": [{"root": {}} for _ in document.threads], "variables": document.variables,
                    "anomalies": document.anomalies}, name, expected_rank)
    threads = []
    for thread in document.threads:
        try:
            nodes, values = typed_reader.rows(thread)
        except ValueError:  # a malformed cache field: the checked path names the site
            return None
        try:
            array = np.asarray(values, dtype=float).reshape(len(nodes), len(FIELDS))
        except OverflowError:  # an integer past the double range: the checked path reads it as +-inf
            return None
        threads.append(FlatThread(thread.thread, thread.name or f"thread {thread.thread}", nodes, array))
    optional = optional_sections({key: getattr(document, key) for key in OPTIONAL_DOCUMENT_KEYS}, name)
    return FlatTrace(name, document.header, document.variables, document.anomalies, document.mpi_profile, threads,
                     optional)


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
