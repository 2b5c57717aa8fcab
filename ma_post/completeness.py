"""Whether a run ended cleanly, and if not, what happened: the failed rank, the ranks stopped with it, and
the ranks without a trace."""

from __future__ import annotations

from .traceset import TraceSet, rank_ranges


def incomplete_run(ts: TraceSet) -> list[str]:
    """Why the run is incomplete, one sentence each; empty when every rank ended cleanly with its trace."""
    record = ts.run_record
    unclean = ts.incomplete_ranks()
    out: list[str] = []
    first = record.first_failure if record is not None else None
    if record is not None and first is not None:
        tied = (f"; rank{'s' if len(first.tied_with) > 1 else ''} {rank_ranges(first.tied_with)} ended at the "
                "same moment, the same way" if first.tied_with else "")
        out.append(f"rank {first.rank} failed first: it {first.describe()} (run record {record.path.name}, "
                   f"{'from the launcher' if first.entry.get('after_s') is None else 'seen by ma run'}{tied})")
        stopped = sorted(r for r in unclean if r != first.rank)
        if stopped:
            out.append(f"the others were stopped: rank{'s' if len(stopped) > 1 else ''} {rank_ranges(stopped)} "
                       "(their traces end at their last flush)")
    elif record is not None and record.exit_status != 0:
        out.append(f"the run ended with exit status {record.exit_status} (run record {record.path.name})")
    if first is None:
        out += [f"rank {rank} did not end cleanly: {status}" for rank, status in sorted(unclean.items())]
    if ts.missing_ranks:
        out.append(f"no trace from rank{'s' if len(ts.missing_ranks) > 1 else ''} {rank_ranges(ts.missing_ranks)}")
    return out
