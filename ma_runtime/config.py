"""Runtime settings read from the environment (set by hand or by ``ma run``)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ma_core import settings
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
        flush = settings.flush_seconds(os.environ.get("MA_FLUSH_SECONDS"), AnnotationError)
        cpu_time = settings.cpu_time(os.environ.get("MA_CPU_TIME"), AnnotationError)
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
