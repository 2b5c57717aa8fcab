"""Writing trace files: ``rank-<r>.ma.json``, atomically (temporary file, then rename).

No trace is lost to a value JSON cannot carry: a non-finite float, or an integer past CPython's limit on
decimal digits (``sys.get_int_max_str_digits()``, 4300 by default), is written as ``{"$num": text}``
(see docs/trace-format.md) and reported in the trace's ``anomalies`` as ``unrepresentable``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import threading
from pathlib import Path
from typing import Any

from ma_core.trace_format import FORMAT, VERSION, rank_file, temporary_file

__all__ = ["FORMAT", "VERSION", "trace_path", "write_atomic"]


def trace_path(directory: Path, rank: int) -> Path:
    return rank_file(directory, rank)


def write_atomic(directory: Path, rank: int, document: dict[str, Any]) -> Path:
    """Write ``document`` so that a reader sees either the previous complete file or the new one."""
    directory.mkdir(parents=True, exist_ok=True)
    final = trace_path(directory, rank)
    temporary = temporary_file(directory, rank, os.getpid(), threading.get_native_id())
    text = encode(document)
    try:
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, final)
    except OSError:
        with contextlib.suppress(OSError):  # a full disk: leave no partial temporary file behind
            os.unlink(temporary)
        raise
    return final


NUMBER_KEY = "$num"  # {"$num": "nan" | "inf" | "-inf" | "0x<hex digits>" | "-0x<hex digits>"}


def encode(document: dict[str, Any]) -> str:
    """The JSON text of a trace document; values JSON cannot carry become ``{"$num": ...}`` plus an anomaly."""
    try:
        return json.dumps(document, separators=(",", ":"), allow_nan=False, default=_plain_number)
    except (ValueError, TypeError):  # a non-finite float, an over-long integer, an object that is no number
        pass
    problems: list[dict[str, Any]] = []
    clean = _representable(document, "", {"path": ""}, problems)
    folded: dict[str, dict[str, Any]] = {}  # by site path, as the runtime folds its anomalies: first one, count
    for problem in problems:
        if problem["path"] in folded:
            folded[problem["path"]]["count"] += 1
        else:
            folded[problem["path"]] = problem
    clean["anomalies"] = [*clean.get("anomalies", []), *folded.values()]
    return json.dumps(clean, separators=(",", ":"), allow_nan=False)


def _plain_number(value: Any) -> Any:
    """NumPy scalars (a program may declare one) as the Python numbers they hold."""
    if hasattr(value, "dtype") and hasattr(value, "item"):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not a number")


def _representable(value: Any, where: str, site: dict[str, Any], problems: list[dict[str, Any]]) -> Any:
    """A copy of ``value`` that json.dumps can write; ``where`` is its place in the document, ``site`` the
    site tree node (or the document) it belongs to."""
    if isinstance(value, dict):
        site = value if isinstance(value.get("path"), str) and "type" in value else site
        return {key: _representable(item, f"{where}.{key}" if where else key, site, problems)
                for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_representable(item, f"{where}[{i}]", site, problems) for i, item in enumerate(value)]
    if value is None or isinstance(value, (bool, str)):
        return value
    if hasattr(value, "dtype") and hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return _replaced(str(value), "a non-finite number", where, site, problems)
    if isinstance(value, int):
        try:
            str(value)
        except ValueError:  # past the digit limit; base 16 has no such limit
            return _replaced(hex(value), f"an integer of {value.bit_length()} bits", where, site, problems)
        return value
    text = repr(value)[:200]
    problems.append(_anomaly(site, f"{where}: {text} is not a number; written as a string"))
    return text


def _replaced(text: str, what: str, where: str, site: dict[str, Any], problems: list[dict[str, Any]]
              ) -> dict[str, str]:
    problems.append(_anomaly(site, f"{where}: {what}, which JSON cannot carry, written as "
                                   f'{{"{NUMBER_KEY}": "{text if len(text) < 24 else text[:20] + "..."}"}}'))
    return {NUMBER_KEY: text}


def _anomaly(site: dict[str, Any], message: str) -> dict[str, Any]:
    return {"kind": "unrepresentable", "path": site["path"], "message": message, "count": 1,
            "file": site.get("file"), "line": site.get("line")}
