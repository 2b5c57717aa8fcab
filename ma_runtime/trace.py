"""Writing trace files: ``rank-<r>.ma.json``, atomically (temporary file, then rename)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

FORMAT = "ma-trace"
VERSION = 1


def trace_path(directory: Path, rank: int) -> Path:
    return directory / f"rank-{rank}.ma.json"


def write_atomic(directory: Path, rank: int, document: dict[str, Any]) -> Path:
    """Write ``document`` so that a reader sees either the previous complete file or the new one."""
    directory.mkdir(parents=True, exist_ok=True)
    final = trace_path(directory, rank)
    temporary = directory / f".{final.name}.{os.getpid()}.tmp"
    text = json.dumps(document, separators=(",", ":"))
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(temporary, final)
    return final
