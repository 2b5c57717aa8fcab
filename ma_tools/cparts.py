"""The PMPI wrapper library (libmapmpi) and the C runtime (libma): their sources, their build, their flags.

Both are built with an MPI's ``mpicc`` -- the environment's, or the one ``MA_MPICC`` / ``--mpicc`` names
(:mod:`.mpis`) -- into that MPI's build directory (the environment's own: :mod:`ma_runtime.built`'s), where the
runtime and ``ma run`` find them. The source lists are the source directories' files, so a file added to
``ma_runtime/csrc/libma`` is compiled without naming it here:

- libmapmpi: ``csrc/ma_pmpi*.c``, with every header of ``csrc``;
- libma: every ``.c`` under ``csrc/libma``, with every header there and in ``csrc`` (ma_pmpi.h, ma_vgcount.h).
"""

from __future__ import annotations

from pathlib import Path

from ma_core.errors import ToolBuildError
from ma_runtime.built import C_RUNTIME_NAME, PMPI_NAME, SOURCE_DIR, c_runtime_library, pmpi_library, stamp_path

from .build import build_c
from .mpis import RECORD_FILE, MpiInstall, selected
from .toolchain import run_compiler

CSRC_DIR = SOURCE_DIR / "csrc"
LIBMA_DIR = CSRC_DIR / "libma"
CFLAGS = ("-O2", "-g", "-fPIC", "-shared", "-Wall", "-Wextra")
VGCOUNT_HEADER = CSRC_DIR / "ma_vgcount.h"  # the Valgrind counter hook: compiled in where valgrind.h is there


def pmpi_sources() -> tuple[list[Path], list[Path]]:
    """(the .c files, the headers) of libmapmpi."""
    return sorted(CSRC_DIR.glob("ma_pmpi*.c")), sorted(CSRC_DIR.glob("*.h"))


def libma_sources() -> tuple[list[Path], list[Path]]:
    """(the .c files, the headers) of libma."""
    return sorted(LIBMA_DIR.rglob("*.c")), sorted([*LIBMA_DIR.rglob("*.h"), *CSRC_DIR.glob("*.h")])


def build_pmpi(force: bool = False, mpi: MpiInstall | None = None) -> Path:
    """Build libmapmpi.so with ``mpi``'s mpicc (default: the selected MPI, ``mpis.selected()``) into its build
    directory; return its path. The directory's ``mpi.json`` says which MPI built it."""
    mpi = mpi or selected()
    c_files, headers = pmpi_sources()
    # --no-undefined: every symbol it needs is in the MPI's C library (a C program links no Fortran library)
    command = [str(mpi.mpicc), *CFLAGS, f"-I{CSRC_DIR}", *map(str, c_files), "-ldl", "-Wl,--no-undefined"]
    library = build_c(pmpi_library().name, command, [*c_files, *headers], "the PMPI wrapper library libmapmpi",
                      force, directory=mpi.build_dir)
    if not (library.parent / RECORD_FILE).is_file():
        mpi.write_record()
    return library


def _valgrind_hook_flags(mpicc: Path, directory: Path) -> list[str]:
    """-DMA_HAVE_VGCOUNT when ma_vgcount.h and <valgrind/valgrind.h> are there (the Valgrind counter hook)."""
    if not VGCOUNT_HEADER.is_file():
        return []
    directory.mkdir(parents=True, exist_ok=True)
    probe = directory / f".probe_valgrind.{mpicc.name}.c"
    probe.write_text("#include <valgrind/valgrind.h>\nint ma_probe;\n")
    try:
        run_compiler([mpicc, "-fsyntax-only", probe], "a probe for valgrind/valgrind.h")
    except ToolBuildError:
        return []
    finally:
        probe.unlink(missing_ok=True)
    return ["-DMA_HAVE_VGCOUNT"]


def build_c_runtime(force: bool = False, mpi: MpiInstall | None = None) -> Path:
    """Build libma.so (the C runtime, linked against libmapmpi) for ``mpi``; return its path."""
    mpi = mpi or selected()
    pmpi = build_pmpi(force, mpi)
    c_files, headers = libma_sources()
    command = [str(mpi.mpicc), *CFLAGS, *_valgrind_hook_flags(mpi.mpicc, pmpi.parent), f"-I{CSRC_DIR}",
               f"-I{LIBMA_DIR}", *map(str, c_files), f"-L{pmpi.parent}", f"-Wl,-rpath,{pmpi.parent}",
               "-Wl,--no-as-needed", f"-l{PMPI_NAME}", "-lm"]
    # libmapmpi's stamp is an input: a rebuilt wrapper relinks the runtime
    return build_c(c_runtime_library().name, command, [*c_files, *headers], "the C runtime libma", force,
                   inputs=[stamp_path(pmpi)], directory=pmpi.parent)


def c_flags() -> list[str]:
    """Compiler flags for C programs using ma.h (``ma config --cflags``)."""
    return [f"-I{LIBMA_DIR}"]


def c_libs(mpi: MpiInstall | None = None) -> list[str]:
    """Linker flags for C programs (``ma config --libs``); builds the libraries when they are missing.

    libma comes before libmapmpi, and both before the -lmpi that mpicc appends, so the wrappers win the
    symbol lookup; --no-as-needed keeps libmapmpi loaded even where the linker drops unreferenced libraries.
    """
    directory = build_c_runtime(mpi=mpi).parent
    return [f"-L{directory}", f"-Wl,-rpath,{directory}", "-Wl,--no-as-needed", f"-l{C_RUNTIME_NAME}",
            f"-l{PMPI_NAME}"]
