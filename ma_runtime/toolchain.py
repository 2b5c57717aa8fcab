"""Where the project's C parts are built, and with which compilers.

The PMPI library, the C runtime and the Valgrind tool are built per Python environment (they bind to the
environment's MPI), into ``MA_BUILD_DIR`` or ``<sys.prefix>/lib/ma-sdk``.

``import ma`` reaches this module (to find the PMPI library), so it imports ``ma.errors`` only where it
raises: importing it at the top would re-enter the ``ma`` package while it initialises.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def build_dir() -> Path:
    """Directory that holds the built libraries and tools (created on demand)."""
    override = os.environ.get("MA_BUILD_DIR")
    path = Path(override) if override else Path(sys.prefix) / "lib" / "ma-sdk"
    path.mkdir(parents=True, exist_ok=True)
    return path


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
    from ma_core.errors import ToolBuildError

    mpicc = os.environ.get("MA_MPICC") or find_program("mpicc")
    if not mpicc:
        raise ToolBuildError("no mpicc found beside this Python or on PATH: install the 'mpich' wheel "
                             "(pip install mpich) or set MA_MPICC")
    return Path(mpicc)


def run_compiler(args: Sequence[str | os.PathLike[str]], what: str) -> None:
    """Run a compiler command; on failure raise ToolBuildError with the command and its output."""
    from ma_core.errors import ToolBuildError

    argv = [str(a) for a in args]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise ToolBuildError(f"building {what}: cannot run {argv[0]}: {exc}") from None
    if done.returncode != 0:
        raise ToolBuildError(f"building {what} failed (exit {done.returncode}):\n  {' '.join(argv)}\n"
                             f"{done.stderr.strip() or done.stdout.strip()}")
