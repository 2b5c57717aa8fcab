"""Which of a profile's network blocks prices a run's messages: the one measured with the MPI the run used.

The MPI library a program ran on sets its message costs (two MPICH builds of one host differed several times in
small-message latency), so a profile holds one network block per MPI (``network`` and ``networks``, keyed by
:attr:`ma_tools.mpis.MpiInstall.name`) and a prediction takes the run's. A trace names the PMPI library it was
measured through (``header.mpi.library``), whose build directory names the MPI it was built for
(:func:`ma_tools.mpis.name_of_library`); ``ma predict --mpi NAME`` names it where the trace does not (a run without
the PMPI library) or prices the run as if on another MPI.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .profile import MachineProfile, network_for

if TYPE_CHECKING:
    from ma_post.traceset import TraceSet


def mpi_of_run(traces: TraceSet) -> str | None:
    """The name of the MPI the run's ranks used, from its first trace header's PMPI library; None if unsaid."""
    from ma_tools import mpis

    for header in traces.headers:
        library = (header.get("mpi") or {}).get("library")
        if isinstance(library, str) and library:
            return mpis.name_of_library(library)
    return None


def for_run(profile: MachineProfile, traces: TraceSet, named: str | None = None) -> tuple[MachineProfile, list[str]]:
    """``profile`` with the network block of the run's MPI (``named`` over the trace's) as its default block, and
    notes saying which block was taken where it is not plain (ProfileError where the profile has none for it)."""
    found = mpi_of_run(traces)
    chosen, note = network_for(profile, named or found)
    notes = [note] if note else []
    if named and found and named != found:
        notes.insert(0, f"--mpi {named}: messages priced as on {named}; the run used {found}")
    return chosen, notes
