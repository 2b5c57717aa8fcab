"""The self-contained HTML report of a run (``ma report``): ``build_report(ts)`` / ``write_report(ts, path)``."""

from .build import build_report, write_report

__all__ = ["build_report", "write_report"]
