"""What ``import ma`` does besides binding names; nothing here imports the runtime proper.

- An uncaught exception writes the trace, prints as usual, then aborts the whole MPI job, so that the other
  ranks do not hang in their next message.
- The PMPI library is loaded ahead of mpi4py.MPI when it can be. Loading a shared library initialises
  nothing; MPI itself starts only when the program imports mpi4py.MPI.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from typing import Any

from ma_core.trace_format import EXCEPTION

# Why MPI calls will not be measured, when that is known at import time (read by the runtime).
mpi_profiling_problem: str | None = None


def install_excepthook() -> None:
    previous = sys.excepthook
    if getattr(previous, "_ma_hook", False):
        return

    def hook(exc_type: type[BaseException], exc: BaseException, tb: Any) -> None:
        mars = sys.modules.get("ma_runtime.mars")
        runtime = mars.current_runtime() if mars is not None else None
        if runtime is not None:
            try:
                runtime.finish(EXCEPTION, f"{exc_type.__name__}: {exc}")
            except Exception as write_error:  # never hide the program's own exception behind ours
                print(f"ma: could not write the trace: {write_error}", file=sys.stderr)
        previous(exc_type, exc, tb)
        abort_mpi_job()

    hook._ma_hook = True  # type: ignore[attr-defined]
    sys.excepthook = hook


def register_merge_at_exit() -> None:
    """Every rank of an MPI job joins the merge of the traces at exit, also one that ran no annotation.

    Registered at import, before the runtime registers its own exit hook, so it runs after the runtime has
    closed its trees (atexit runs last-registered first); mpi4py finalizes MPI after every atexit hook."""
    import atexit

    def merge_at_exit() -> None:
        if "mpi4py.MPI" not in sys.modules:
            return  # no MPI in this process: the runtime wrote its rank file
        from . import merge

        merge.at_exit()

    atexit.register(merge_at_exit)


def abort_mpi_job() -> None:
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is None:
        return
    try:
        if mpi.Is_initialized() and not mpi.Is_finalized() and mpi.COMM_WORLD.Get_size() > 1:
            sys.stderr.flush()
            # Hydra forwards output asynchronously and kills the job as soon as the abort reaches it: give
            # its forwarder a moment to pass the traceback on (seen cut after its first line in CI).
            time.sleep(0.25)
            mpi.COMM_WORLD.Abort(1)
    except Exception:  # Abort itself failing leaves nothing better to do than exit normally
        pass


def prepare_mpi_profiling() -> None:
    global mpi_profiling_problem
    if os.environ.get("MA_PMPI_PRELOADED") or "mpi4py.MPI" in sys.modules:
        return  # already interposed by `ma run`, or too late: the runtime will say which
    if importlib.util.find_spec("mpi4py") is None:
        return
    from . import pmpi

    mpi_profiling_problem = pmpi.prepare_for_mpi4py()
