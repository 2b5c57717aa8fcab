"""The parsers of the runtime's environment settings (docs/settings.md), in a leaf module: the runtime reads
its settings with them when a program starts, and ``ma run`` checks the same settings with them before it
starts any rank, so a typo is one error line from ``ma run`` rather than a job whose ranks each fail (or
silently fall back) at ``import ma``."""

from __future__ import annotations

import math
from collections.abc import Mapping

from .errors import MAError
from .tolerance import parse_tolerance
from .trace_format import LAYOUTS

DEFAULT_FLUSH_SECONDS = 5.0
DEFAULT_MERGE_TIMEOUT = 120.0
DEFAULT_LAYOUT = "merged"
CPU_TIME_CHOICES = ("subroutines", "all", "none")


def _seconds(name: str, text: str, *, zero_allowed: bool, error: type[MAError]) -> float:
    try:
        value = float(text)
    except ValueError:
        raise error(f"{name}={text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero_allowed):
        least = "0 or more (0: never)" if zero_allowed else "more than 0"
        raise error(f"{name}={text!r}: expected a finite number of seconds, {least}")
    return value


def flush_seconds(text: str | None, error: type[MAError] = MAError) -> float:
    """MA_FLUSH_SECONDS: seconds between periodic trace writes (default 5; 0 writes only at the end)."""
    if text is None or not text.strip():
        return DEFAULT_FLUSH_SECONDS
    return _seconds("MA_FLUSH_SECONDS", text, zero_allowed=True, error=error)


def merge_timeout(text: str | None, error: type[MAError] = MAError) -> float:
    """MA_MERGE_TIMEOUT: seconds a wait of the merge at exit may take (default 120)."""
    if text is None or not text.strip():
        return DEFAULT_MERGE_TIMEOUT
    return _seconds("MA_MERGE_TIMEOUT", text, zero_allowed=False, error=error)


def trace_layout(text: str | None, error: type[MAError] = MAError) -> str:
    """MA_TRACE_LAYOUT: merged (default), per-rank or both."""
    value = (text or "").strip().lower() or DEFAULT_LAYOUT
    if value not in LAYOUTS:
        raise error(f"MA_TRACE_LAYOUT={text!r} is not one of {', '.join(LAYOUTS)}")
    return value


def cpu_time(text: str | None, error: type[MAError] = MAError) -> str:
    """MA_CPU_TIME: which sites also time CPU (subroutines, all, none)."""
    value = (text or "").strip().lower() or "subroutines"
    if value not in CPU_TIME_CHOICES:
        raise error(f"MA_CPU_TIME={value!r}: expected subroutines, all or none")
    return value


def check_environment(environ: Mapping[str, str], error: type[MAError] = MAError) -> None:
    """Every setting above, and MA_TOLERANCE, as the runtime would read them from ``environ``: ``error`` for
    the first one it would refuse or fall back from."""
    parse_tolerance(environ.get("MA_TOLERANCE", ""), error=error)
    flush_seconds(environ.get("MA_FLUSH_SECONDS"), error)
    merge_timeout(environ.get("MA_MERGE_TIMEOUT"), error)
    trace_layout(environ.get("MA_TRACE_LAYOUT"), error)
    cpu_time(environ.get("MA_CPU_TIME"), error)
