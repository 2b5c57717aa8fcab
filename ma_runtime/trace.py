"""Writing trace files: ``rank-<r>.ma.json``, atomically (temporary file, then rename)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ma.trace_format import FORMAT, VERSION, rank_file, temporary_file

__all__ = ["FORMAT", "VERSION", "trace_path", "write_atomic"]


def trace_path(directory: Path, rank: int) -> Path:
    return rank_file(directory, rank)


def write_atomic(directory: Path, rank: int, document: dict[str, Any]) -> Path:
    """Write ``document`` so that a reader sees either the previous complete file or the new one."""
    directory.mkdir(parents=True, exist_ok=True)
    final = trace_path(directory, rank)
    temporary = temporary_file(directory, rank, os.getpid())
    text = json.dumps(document, separators=(",", ":"))
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(temporary, final)
    return final
