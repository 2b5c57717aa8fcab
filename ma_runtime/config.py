"""Runtime settings read from the environment (set by hand or by ``ma run``)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ma_core.errors import AnnotationError


def parse_tolerance(spec: str) -> tuple[float, dict[str, float]]:
    """``"0.05"`` or ``"flop=0.2,loadstore=0.1"`` or ``"0.01,flop=0.2"`` -> (default, per type)."""
    default = 0.0
    by_type: dict[str, float] = {}
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        name, _, number = part.rpartition("=")
        try:
            value = float(number)
        except ValueError:
            raise AnnotationError(f"MA_TOLERANCE={spec!r}: {number!r} is not a number "
                                  "(expected e.g. 0.05 or flop=0.2,loadstore=0.1)") from None
        if value < 0:
            raise AnnotationError(f"MA_TOLERANCE={spec!r}: a tolerance cannot be negative")
        if name:
            by_type[name.strip()] = value
        else:
            default = value
    return default, by_type


@dataclass
class Settings:
    trace_dir: Path
    counters: str = "auto"
    tolerance: float = 0.0
    tolerance_by_type: dict[str, float] = field(default_factory=dict)
    flush_seconds: float = 5.0
    run_id: str | None = None
    # CPU time costs a system call (more than the rest of an annotation): by default only
    # subroutines record it; MA_CPU_TIME=all records it everywhere, none nowhere.
    cpu_time: str = "subroutines"

    @classmethod
    def from_environment(cls) -> Settings:
        default, by_type = parse_tolerance(os.environ.get("MA_TOLERANCE", ""))
        flush_text = os.environ.get("MA_FLUSH_SECONDS", "5")
        try:
            flush = float(flush_text)
        except ValueError:
            raise AnnotationError(f"MA_FLUSH_SECONDS={flush_text!r} is not a number of seconds") from None
        cpu_time = os.environ.get("MA_CPU_TIME", "subroutines").strip().lower() or "subroutines"
        if cpu_time not in ("subroutines", "all", "none"):
            raise AnnotationError(f"MA_CPU_TIME={cpu_time!r}: expected subroutines, all or none")
        return cls(
            cpu_time=cpu_time,
            trace_dir=Path(os.environ.get("MA_TRACE_DIR", "ma-traces")).absolute(),
            counters=os.environ.get("MA_COUNTERS", "auto").strip() or "auto",
            tolerance=default,
            tolerance_by_type=by_type,
            flush_seconds=flush,
            run_id=os.environ.get("MA_RUN_ID") or None,
        )

    def tolerance_for(self, type_: str) -> float:
        return self.tolerance_by_type.get(type_, self.tolerance)
