"""The PMPI bridge: loads libmapmpi (the MPI wrapper library) and reads its counters from Python through ctypes.

``libmapmpi.so`` defines MPI_Send, MPI_Recv, MPI_Allreduce, ... (classic and MPI-4 ``_c`` forms) and counts
calls, bytes, time, message sizes and peers before forwarding to PMPI_*. Python programs get it either
preloaded (``LD_PRELOAD``, what ``ma run`` does) or through ``mpi4py.profile`` before ``mpi4py.MPI`` is
imported (:func:`prepare_for_mpi4py`). ``ma tools build`` builds it (ma_tools/cparts.py) into
``ma_runtime.built``'s directory; the runtime only loads what is there. Importing this module is cheap: it neither
imports ``mpi4py.MPI`` nor loads any library.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ma_core import trace_format

from . import built

# Annotation type -> the MPI routines its assertions count; the order is the group order of ma_pmpi.h.
MPI_TYPES: dict[str, tuple[str, ...]] = dict(zip(trace_format.MPI_TYPES, (
    ("MPI_Send", "MPI_Bsend", "MPI_Ssend", "MPI_Rsend"),  # mpi_send
    ("MPI_Isend", "MPI_Ibsend", "MPI_Issend", "MPI_Irsend"),  # mpi_isend
    ("MPI_Recv", "MPI_Mrecv"),  # mpi_recv
    ("MPI_Irecv", "MPI_Imrecv"),  # mpi_irecv
    ("MPI_Sendrecv", "MPI_Sendrecv_replace"),  # mpi_sendrecv
    ("MPI_Bcast",),  # mpi_bcast
    ("MPI_Reduce",),  # mpi_reduce
    ("MPI_Allreduce",),  # mpi_allreduce
    ("MPI_Gather", "MPI_Gatherv"),  # mpi_gather
    ("MPI_Scatter", "MPI_Scatterv"),  # mpi_scatter
    ("MPI_Allgather", "MPI_Allgatherv"),  # mpi_allgather
    ("MPI_Alltoall", "MPI_Alltoallv"),  # mpi_alltoall
    ("MPI_Barrier",),  # mpi_barrier
), strict=True))
# Routines timed but not tied to an annotation type (group "other" in ma_pmpi.h).
OTHER_ROUTINES: tuple[str, ...] = (
    "MPI_Wait", "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome", "MPI_Test", "MPI_Testall", "MPI_Testany",
    "MPI_Testsome", "MPI_Probe", "MPI_Iprobe", "MPI_Mprobe", "MPI_Improbe",
)

_PROFILE_BUFFER = 1 << 16
PEER_RING = 64  # MA_PMPI_PEER_RING of ma_pmpi.h: partners remembered per group


# --- reading the counters ------------------------------------------------------------------------
class PmpiLibrary:
    """The wrapper library whose symbols are live in this process."""

    def __init__(self, handle: Any) -> None:
        import ctypes

        from ma_core.errors import ToolBuildError

        self._ctypes = ctypes
        self._lib = handle
        lib = handle
        lib.ma_pmpi_group_id.argtypes = [ctypes.c_char_p]
        lib.ma_pmpi_group_id.restype = ctypes.c_int
        lib.ma_pmpi_ngroups.restype = ctypes.c_int
        lib.ma_pmpi_profile_json.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        lib.ma_pmpi_profile_json.restype = ctypes.c_size_t
        lib.ma_pmpi_library_path.restype = ctypes.c_char_p
        lib.ma_pmpi_reset.restype = None
        self._groups: dict[str, int] = {}
        for index, mpi_type in enumerate(MPI_TYPES):
            group = lib.ma_pmpi_group_id(mpi_type.encode())
            if group != index:
                raise ToolBuildError(f"the loaded PMPI library does not match this SDK ({mpi_type!r} is group "
                                     f"{group}, expected {index}): rebuild it with `ma tools build`")
            self._groups[mpi_type] = group
        # {calls, bytes} per group, updated by the wrappers: a reader is two array loads, no call into C
        totals_type = ctypes.c_uint64 * (2 * lib.ma_pmpi_ngroups())
        self._totals = totals_type.in_dll(lib, "ma_pmpi_group_totals")
        self._view: memoryview | None = None
        peers_type = ctypes.c_int32 * (PEER_RING * lib.ma_pmpi_ngroups())
        self._peers = memoryview(peers_type.in_dll(lib, "ma_pmpi_group_peers")).cast("B").cast("i")
        raw_path = lib.ma_pmpi_library_path()
        self.path = Path(raw_path.decode()) if raw_path else built.pmpi_library()

    def reader(self, mpi_type: str) -> Callable[[], tuple[int, int]]:
        """Running (calls, bytes) summed over the routines of ``mpi_type`` (see MPI_TYPES)."""
        import functools
        import operator

        from ma_core.errors import AnnotationError

        group = self._groups.get(mpi_type)
        if group is None:
            known = ", ".join(MPI_TYPES)
            raise AnnotationError(f"{mpi_type!r} is not an MPI annotation type (expected one of {known})")
        # operator.itemgetter runs in C: reading is as cheap as a Python call gets
        return functools.partial(operator.itemgetter(2 * group, 2 * group + 1), self._totals)

    def counters(self, mpi_type: str) -> tuple[memoryview, int]:
        """(view, i): ``view[i]`` and ``view[i + 1]`` are the running calls and bytes of ``mpi_type``.

        The hot path of MPI assertions reads these two integers straight from the library's memory.
        """
        from ma_core.errors import AnnotationError

        group = self._groups.get(mpi_type)
        if group is None:
            raise AnnotationError(f"{mpi_type!r} is not an MPI annotation type (expected one of "
                                  f"{', '.join(MPI_TYPES)})")
        if self._view is None:
            self._view = memoryview(self._totals).cast("B").cast("Q")
        return self._view, 2 * group

    def recent_peers(self, group: int, first: int, end: int) -> list[int] | None:
        """Partners of the group's calls ``first .. end-1`` (counted as its running ``calls`` total), or None
        when the library no longer remembers all of them (more than PEER_RING calls)."""
        if end - first > PEER_RING or first < 0:
            return None
        base = group * PEER_RING
        return [self._peers[base + n % PEER_RING] for n in range(first, end)]

    def profile(self) -> dict[str, Any]:
        """The whole-run profile: the ``mpi_profile`` object of docs/trace-format.md."""
        import json

        size = _PROFILE_BUFFER
        while True:
            buffer = self._ctypes.create_string_buffer(size)
            needed = self._lib.ma_pmpi_profile_json(buffer, size)
            if needed < size:
                return json.loads(buffer.value.decode())  # type: ignore[no-any-return]
            size = needed + 1

    def reset(self) -> None:
        """Zero every counter of the wrapper library."""
        self._lib.ma_pmpi_reset()


_loaded: PmpiLibrary | None = None


def loaded_library() -> PmpiLibrary | None:
    """The wrapper if its symbols are live in this process (preloaded, or loaded RTLD_GLOBAL), else None."""
    global _loaded
    if _loaded is not None:
        return _loaded
    import ctypes

    process = ctypes.CDLL(None)
    try:
        process.ma_pmpi_read  # noqa: B018 -- only asks whether the symbol is there
    except AttributeError:
        return None
    _loaded = PmpiLibrary(process)
    return _loaded


def prepare_for_mpi4py() -> str | None:
    """Load libmapmpi through ``mpi4py.profile`` so that mpi4py's MPI calls go through the wrappers.

    Returns None when the wrapper is live (now or already); otherwise a short reason why MPI calls will
    not be measured. Never builds the library, nor imports mpi4py.MPI.
    """
    if loaded_library() is not None:
        return None
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed"
    if "mpi4py.MPI" in sys.modules:
        return ("mpi4py.MPI was imported before the PMPI library could be loaded: import ma first, or run "
                "under `ma run` (which preloads it)")
    path = built.pmpi_library()
    if not path.is_file():
        return f"the PMPI library {path} is not built (run `ma tools build`)"
    import warnings

    import mpi4py

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            mpi4py.profile(built.PMPI_NAME, path=[str(path.parent)])
        except (ValueError, OSError) as exc:
            return f"mpi4py.profile could not load {path}: {exc}"
    if loaded_library() is None:
        detail = "; ".join(str(w.message) for w in caught) or "its symbols are not visible"
        return f"mpi4py.profile did not make {path} live: {detail}"
    return None


__all__ = ["MPI_TYPES", "OTHER_ROUTINES", "PmpiLibrary", "loaded_library", "prepare_for_mpi4py"]
