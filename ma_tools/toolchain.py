"""Which compilers and MPI programs build and start the project's C parts: the environment's first.

The environment's MPI (the ``mpich`` wheel puts ``mpicc`` and ``mpiexec`` beside the running Python) wins over
the system's, so that what is built binds to the MPI the program's mpi4py uses.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from ma_core.errors import ToolBuildError
from ma_core.programs import run_program


def env_bin_dir() -> Path:
    """The bin/ directory of the running Python's environment (where pip puts mpiexec and mpicc)."""
    return Path(sys.executable).parent


def find_program(name: str) -> Path | None:
    """``name`` beside the running Python first, then on PATH: the environment's MPI wins over the system's."""
    local = env_bin_dir() / name
    if local.is_file() and os.access(local, os.X_OK):
        return local
    found = shutil.which(name)
    return Path(found) if found else None


def find_mpicc() -> Path:
    mpicc = os.environ.get("MA_MPICC") or find_program("mpicc")
    if not mpicc:
        raise ToolBuildError("no mpicc found beside this Python or on PATH: install the 'mpich' wheel "
                             "(pip install mpich) or set MA_MPICC")
    return Path(mpicc)


def find_cc() -> Path:
    """The plain C compiler (``MA_CC``, else gcc or cc): for what must not link MPI, like the Valgrind tool."""
    for candidate in (os.environ.get("MA_CC"), "gcc", "cc"):
        if candidate and (found := find_program(candidate)):
            return found
    raise ToolBuildError("no C compiler (gcc or cc) found on PATH: install gcc or set MA_CC")


def run_compiler(args: Sequence[str | os.PathLike[str]], what: str) -> None:
    """Run a compiler command; on failure raise ToolBuildError with the command and its output."""
    run_program(args, ToolBuildError, f"building {what}")
