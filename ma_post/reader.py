"""Reading the rank files of a trace directory and checking them against the documented schema.

Every problem is a TraceError naming the file and what was expected; with ``allow_missing`` the
per-file problems (missing, truncated, corrupt, unknown version) become TraceWarnings instead and the
readable ranks are kept. Problems between files (different size or run id) are always errors: there is
no way to tell which file is the stray one.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ma.errors import TraceError

if TYPE_CHECKING:
    from .flat import FlatTrace

FORMAT = "ma-trace"
SCHEMA_VERSION = 1
RANK_FILE = re.compile(r"^rank-(\d+)\.ma\.json$")


class TraceWarning(UserWarning):
    """A trace problem that ``allow_missing=True`` turned from an error into a warning."""


def rank_file_name(rank: int) -> str:
    return f"rank-{rank}.ma.json"


def read_trace_dir(directory: Path, *, allow_missing: bool = False, workers: int | None = None
                   ) -> tuple[list[FlatTrace], dict[str, str], list[int]]:
    """(flat traces in rank order, skipped file -> reason, missing ranks). ``workers``: processes to parse
    with (None: automatic, 0: this process only)."""
    from .flat import default_workers, read_many

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
    for rank, result in zip(ranks, read_many([(files[r], r) for r in ranks], workers)):
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
    if version > SCHEMA_VERSION:
        raise TraceError(name, f"schema version {version} is newer than this reader supports "
                               f"({SCHEMA_VERSION}); upgrade the ma package to read it")
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
