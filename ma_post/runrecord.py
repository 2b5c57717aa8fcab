"""Reading the run record ``ma run`` writes beside the traces (docs/trace-format.md, "Run record").

A killed rank's trace and those of the ranks the launcher stopped all end ``status: running`` at their last
flush; only the record can say who died first (ma_post.completeness says it).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ma_core import trace_format as tf
from ma_core.errors import TraceError
from ma_core.inputs import read_regular_file

from .reader import TraceWarning


@dataclass(frozen=True)
class RankEnd:
    """How one rank's process ended, as ``ma run`` saw it (or the launcher reported it)."""

    rank: int
    pid: int | None
    how: str  # trace_format.END_SIGNAL, END_EXIT or END_UNKNOWN
    signal: int | None
    exit_code: int | None
    entry: Mapping[str, Any]

    @property
    def tied_with(self) -> list[int]:
        """Ranks seen ending at the same moment and the same way (first_failure only)."""
        return [r for r in self.entry.get("tied_with") or () if isinstance(r, int)]

    def describe(self) -> str:
        return tf.describe_end(dict(self.entry))


@dataclass(frozen=True)
class RunRecord:
    path: Path
    run_id: str | None
    command: list[str]
    launcher: str
    ranks: int
    exit_status: int
    ended: list[RankEnd]  # in the order the ranks ended
    first_failure: RankEnd | None
    launcher_report: Mapping[str, Any] | None
    cache: str | None = None  # the hierarchy the Valgrind tool simulated ("SIZE:WAYS:LINE,...", innermost first)


def _int(entry: Mapping[str, Any], key: str, path: Path, where: str, optional: bool = False) -> Any:
    value = entry.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise TraceError(str(path), f"{where}{key} is {value!r}, expected an integer")
    return value


def _end(entry: Any, path: Path, where: str) -> RankEnd:
    if not isinstance(entry, dict):
        raise TraceError(str(path), f"{where} is {entry!r}, expected an object with {', '.join(tf.END_KEYS)}")
    how = entry.get("how")
    if how not in (tf.END_SIGNAL, tf.END_EXIT, tf.END_UNKNOWN):
        raise TraceError(str(path), f"{where}.how is {how!r}, expected one of "
                                    f"{tf.END_SIGNAL!r}, {tf.END_EXIT!r}, {tf.END_UNKNOWN!r}")
    return RankEnd(_int(entry, "rank", path, f"{where}."), _int(entry, "pid", path, f"{where}.", True), how,
                   _int(entry, "signal", path, f"{where}.", True), _int(entry, "exit_code", path, f"{where}.", True),
                   entry)


def read_run_record(directory: Path) -> RunRecord | None:
    """The record in ``directory`` (None when there is none: traces written without ``ma run``)."""
    path = directory / tf.RUN_RECORD_FILE
    try:
        text = read_regular_file(path).decode("utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise TraceError(str(path), f"cannot read the run record: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise TraceError(str(path), f"cannot read the run record: {exc}") from None
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceError(str(path), f"corrupt JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if not isinstance(record, dict) or record.get("format") != tf.RUN_FORMAT:
        raise TraceError(str(path), f"not an ma run record (expected format {tf.RUN_FORMAT!r})")
    version = _int(record, "version", path, "")
    if version > tf.RUN_VERSION:
        raise TraceError(str(path), f"run record version {version} is newer than this reader ({tf.RUN_VERSION})")
    ended = record.get("ended")
    if not isinstance(ended, list):
        raise TraceError(str(path), f"ended is {ended!r}, expected an array")
    first = record.get("first_failure")
    command = record.get("command")
    report = record.get("launcher_report")
    return RunRecord(path, record.get("run_id") if isinstance(record.get("run_id"), str) else None,
                     [str(c) for c in command] if isinstance(command, list) else [], str(record.get("launcher")),
                     _int(record, "ranks", path, ""), _int(record, "exit_status", path, ""),
                     [_end(e, path, f"ended[{i}]") for i, e in enumerate(ended)],
                     None if first is None else _end(first, path, "first_failure"),
                     report if isinstance(report, dict) else None,
                     record.get("cache") if isinstance(record.get("cache"), str) else None)


def record_for(directory: Path, run_id: str | None) -> RunRecord | None:
    """The directory's record when it belongs to the run of the traces (a stray one is left out, with a warning)."""
    record = read_run_record(directory)
    if record is not None and record.run_id != run_id:
        warnings.warn(f"{record.path}: run id {record.run_id!r} differs from the traces' {run_id!r}; "
                      "the run record is left out", TraceWarning, stacklevel=3)
        return None
    return record
