"""MPI started as NPB starts it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

ROOT = 0                                    # the rank that reports, as in NPB


def start_mpi() -> ModuleType:
    """The mpi4py.MPI module, with MPI started as NPB starts it: MPI_Init, no thread support asked for.

    mpi4py would ask for MPI_THREAD_MULTIPLE, at which MPICH locks around every call and the PMPI library
    counts with atomic operations; the ports call MPI from one thread only. Once mpi4py.MPI is imported,
    MPI runs as it was started.
    """
    if "mpi4py.MPI" not in sys.modules:
        import mpi4py

        mpi4py.rc.threads = False
    from mpi4py import MPI

    return MPI


def start_run(comm: Any, verbose: bool) -> tuple[ModuleType, Any, Callable[..., None]]:
    """A port's run begins: MPI started (:func:`start_mpi`), the run's communicator (COMM_WORLD unless given)
    and what prints NPB's report: ``print`` on the root rank when ``verbose``, nothing elsewhere."""
    MPI = start_mpi()
    comm = MPI.COMM_WORLD if comm is None else comm
    say = print if verbose and comm.Get_rank() == ROOT else (lambda *a, **k: None)
    return MPI, comm, say
