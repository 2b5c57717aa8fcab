"""Runtime settings read from the environment (set by hand or by ``ma run``)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ma_core.errors import AnnotationError
from ma_core.tolerance import parse_tolerance


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
        tolerance = parse_tolerance(os.environ.get("MA_TOLERANCE", ""), error=AnnotationError)
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
            tolerance=tolerance.default,
            tolerance_by_type=dict(tolerance.by_type),
            flush_seconds=flush,
            run_id=os.environ.get("MA_RUN_ID") or None,
        )

    def tolerance_for(self, type_: str) -> float:
        return self.tolerance_by_type.get(type_, self.tolerance)
