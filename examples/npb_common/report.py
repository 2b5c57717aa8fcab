"""The closing block of NPB's report (``print_results``), the same for every benchmark."""

from __future__ import annotations

FIELD = 12                                  # NPB's value column width


def completed_lines(benchmark: str, *, class_name: str, size: str, niter: int, time: float, nprocs: int,
                    mops: float, status: str) -> list[str]:
    """`` <benchmark> Benchmark Completed.`` and its fields; ``size`` as NPB prints it (one number or NxNxN)."""
    w = FIELD
    return [
        f"\n\n {benchmark} Benchmark Completed.",
        f" Class           = {'':12s}{class_name:>{w}s}",
        f" Size            = {'':12s}{size:>{w}s}",
        f" Iterations      = {'':12s}{niter:{w}d}",
        f" Time in seconds = {'':12s}{time:{w}.2f}",
        f" Total processes = {'':12s}{nprocs:{w}d}",
        f" Mop/s total     = {'':12s}{mops:{w}.2f}",
        f" Mop/s/process   = {'':12s}{mops / nprocs:{w}.2f}",
        f" Operation type  = {'floating point':>24s}",
        f" Verification    = {'':12s}{status:>{w}s}",
        f" Version         = {'':12s}{'3.4 (py)':>{w}s}",
        "",
    ]
