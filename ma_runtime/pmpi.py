"""The PMPI bridge: builds libmapmpi (the MPI wrapper library) and libma (the C runtime), and reads the
wrapper's counters from Python through ctypes.

``libmapmpi.so`` defines MPI_Send, MPI_Recv, MPI_Allreduce, ... (classic and MPI-4 ``_c`` forms) and counts
calls, bytes, time, message sizes and peers before forwarding to PMPI_*. Python programs get it either
preloaded (``LD_PRELOAD``, what ``ma run`` does) or through ``mpi4py.profile`` before ``mpi4py.MPI`` is
imported (:func:`prepare_for_mpi4py`). Importing this module is cheap: it neither imports ``mpi4py.MPI``
nor loads any library.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ma_core import trace_format

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

CSRC_DIR = Path(__file__).resolve().parent / "csrc"
LIBMA_DIR = CSRC_DIR / "libma"
PMPI_NAME = "mapmpi"  # libmapmpi.so
C_RUNTIME_NAME = "ma"  # libma.so
_PMPI_SOURCES = ("ma_pmpi.c", "ma_pmpi.h")
_LIBMA_SOURCES = ("ma_runtime.c", "ma_expr.c", "ma_trace.c", "ma_counters.c", "ma.h", "ma_expr.h",
                  "ma_internal.h")
_CFLAGS = ("-O2", "-g", "-fPIC", "-shared", "-Wall", "-Wextra")
_PROFILE_BUFFER = 1 << 16
PEER_RING = 64  # MA_PMPI_PEER_RING of ma_pmpi.h: partners remembered per group


# ma.errors and .toolchain are imported inside the functions: `import ma` loads this module while the ma
# package is still initialising (ma_runtime.bootstrap), so nothing here may import ma at module level.
def _toolchain() -> Any:
    from . import toolchain

    return toolchain


def library_path() -> Path:
    """Where libmapmpi.so is (or will be) built."""
    return _toolchain().build_dir() / f"lib{PMPI_NAME}.so"


def c_runtime_path() -> Path:
    """Where libma.so is (or will be) built."""
    return _toolchain().build_dir() / f"lib{C_RUNTIME_NAME}.so"


# --- building ------------------------------------------------------------------------------------
def _fingerprint(command: list[str], sources: list[Path]) -> str:
    import hashlib

    digest = hashlib.sha256("\0".join(command).encode())
    for source in sources:
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()


def build_library(target: Path, command: list[str], sources: list[Path], what: str, force: bool) -> Path:
    """Compile into ``target`` unless its stamp says the same sources and command built it already (every C part
    of the SDK is built this way, the machine probe's kernels too).

    Ranks of one job may all ask at once: a lock file serialises them, and the library appears by rename,
    so a process never loads a half-written file.
    """
    import fcntl

    from ma_core.errors import ToolBuildError

    toolchain = _toolchain()
    missing = [str(s) for s in sources if not s.is_file()]
    if missing:
        raise ToolBuildError(f"building {what}: source files missing: {', '.join(missing)}")
    stamp = target.with_name(target.name + ".stamp")
    with open(target.with_name(".build.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        expected = _fingerprint(command, sources)
        if not force and target.is_file() and stamp.is_file() and stamp.read_text().strip() == expected:
            return target
        temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            toolchain.run_compiler([*command, "-o", str(temporary)], what)
            os.replace(temporary, target)
        finally:
            temporary.unlink(missing_ok=True)
        stamp.write_text(expected + "\n")
    return target




def build_pmpi(force: bool = False) -> Path:
    """Build libmapmpi.so into ``toolchain.build_dir()`` with the environment's mpicc; return its path."""
    toolchain = _toolchain()
    mpicc = toolchain.find_mpicc()
    sources = [CSRC_DIR / name for name in _PMPI_SOURCES]
    command = [str(mpicc), *_CFLAGS, str(sources[0]), "-ldl"]
    return build_library(library_path(), command, sources, "the PMPI wrapper library libmapmpi", force)


def _valgrind_hook_flags(mpicc: Path) -> tuple[list[str], list[Path]]:
    """-DMA_HAVE_VGCOUNT when ma_vgcount.h and <valgrind/valgrind.h> are there (the Valgrind counter hook)."""
    from ma_core.errors import ToolBuildError

    toolchain = _toolchain()
    header = CSRC_DIR / "ma_vgcount.h"
    if not header.is_file():
        return [], []
    probe = toolchain.build_dir() / ".probe_valgrind.c"
    probe.write_text("#include <valgrind/valgrind.h>\nint ma_probe;\n")
    try:
        toolchain.run_compiler([mpicc, "-fsyntax-only", probe], "a probe for valgrind/valgrind.h")
    except ToolBuildError:
        return [], [header]
    finally:
        probe.unlink(missing_ok=True)
    return ["-DMA_HAVE_VGCOUNT"], [header]


def build_c_runtime(force: bool = False) -> Path:
    """Build libma.so (the C runtime, linked against libmapmpi) into the build directory; return its path."""
    toolchain = _toolchain()
    pmpi = build_pmpi(force)
    mpicc = toolchain.find_mpicc()
    defines, extra_sources = _valgrind_hook_flags(mpicc)
    sources = [LIBMA_DIR / name for name in _LIBMA_SOURCES] + [CSRC_DIR / "ma_pmpi.h", *extra_sources]
    c_files = [str(s) for s in sources if s.suffix == ".c"]
    command = [str(mpicc), *_CFLAGS, *defines, f"-I{CSRC_DIR}", f"-I{LIBMA_DIR}", *c_files,
               f"-L{pmpi.parent}", f"-Wl,-rpath,{pmpi.parent}", "-Wl,--no-as-needed", f"-l{PMPI_NAME}", "-lm"]
    # the stamp also covers libmapmpi's own stamp: a rebuilt wrapper relinks the runtime
    pmpi_stamp = pmpi.with_name(pmpi.name + ".stamp")
    return build_library(c_runtime_path(), command, [*sources, pmpi_stamp], "the C runtime libma", force)


def c_flags() -> list[str]:
    """Compiler flags for C programs using ma.h (``ma config --cflags``)."""
    return [f"-I{LIBMA_DIR}"]


def c_libs() -> list[str]:
    """Linker flags for C programs (``ma config --libs``); builds the libraries when they are missing.

    libma comes before libmapmpi, and both before the -lmpi that mpicc appends, so the wrappers win the
    symbol lookup; --no-as-needed keeps libmapmpi loaded even where the linker drops unreferenced libraries.
    """
    runtime = build_c_runtime()
    directory = runtime.parent
    return [f"-L{directory}", f"-Wl,-rpath,{directory}", "-Wl,--no-as-needed", f"-l{C_RUNTIME_NAME}",
            f"-l{PMPI_NAME}"]


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
        self.path = Path(raw_path.decode()) if raw_path else library_path()

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
    not be measured. Builds the library when it is missing. Never imports mpi4py.MPI.
    """
    if loaded_library() is not None:
        return None
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed"
    from ma_core.errors import ToolBuildError

    if "mpi4py.MPI" in sys.modules:
        return ("mpi4py.MPI was imported before the PMPI library could be loaded: import ma first, or run "
                "under `ma run` (which preloads it)")
    try:
        path = build_pmpi()
    except ToolBuildError as exc:
        return f"the PMPI library could not be built: {exc}"
    import warnings

    import mpi4py

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            mpi4py.profile(PMPI_NAME, path=[str(path.parent)])
        except (ValueError, OSError) as exc:
            return f"mpi4py.profile could not load {path}: {exc}"
    if loaded_library() is None:
        detail = "; ".join(str(w.message) for w in caught) or "its symbols are not visible"
        return f"mpi4py.profile did not make {path} live: {detail}"
    return None


__all__ = ["MPI_TYPES", "OTHER_ROUTINES", "PmpiLibrary", "build_c_runtime", "build_pmpi", "c_flags", "c_libs",
           "c_runtime_path", "library_path", "loaded_library", "prepare_for_mpi4py"]
