"""Which MPI a program runs with, and how ``ma run`` starts it there.

A compiled program brings its MPI with it: ``ldd`` shows the libmapmpi it was linked with (``ma config --libs`` /
``--flibs``, whose build directory's ``mpi.json`` names the MPI), or at least its libmpi, matched against the
builds there are. A Python program runs with the selected MPI (``MA_MPICC``, else the environment's). The job is
then started with that MPI's launcher, and the PMPI library preloaded is that MPI's (a library of another MPI
would stop the program at load time: libmapmpi checks).

Open MPI's ``mpirun`` refuses to run as root and to start more ranks than there are cores; in a container both
are usual, so ``ma run`` sets ``OMPI_ALLOW_RUN_AS_ROOT``/``OMPI_ALLOW_RUN_AS_ROOT_CONFIRM`` when it runs as root
and ``OMPI_MCA_rmaps_base_oversubscribe`` when the job has more ranks than the host has CPUs (docs/mpi.md).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from . import mpis

_LDD_LINE = re.compile(r"^\s*(\S+)\s+=>\s+(\S+)\s+\(0x[0-9a-f]+\)", re.M)
_ELF_MAGIC = b"\x7fELF"
LAUNCHER_NAMES = ("mpirun", "mpiexec")  # --launcher words that mean "this MPI's own"


@dataclass
class ProgramMpi:
    """The MPI a command will run with: the installation whose libraries to preload (None: preload nothing)."""

    install: mpis.MpiInstall | None
    linked_pmpi: Path | None = None  # the libmapmpi the program itself links, if it does
    notes: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # what the ranks' environment needs for this MPI


def _executable(command: list[str]) -> Path | None:
    """The ELF file the command starts, or None (a script, an interpreter's argument, not found)."""
    if not command:
        return None
    first = command[0]
    found = first if os.sep in first else shutil.which(first)
    if not found:
        return None
    path = Path(found)
    try:
        with path.open("rb") as handle:
            return path if handle.read(4) == _ELF_MAGIC else None
    except OSError:
        return None


def linked_libraries(binary: Path) -> dict[str, Path]:
    """soname -> resolved path of the shared libraries ``binary`` loads (``ldd``); empty when ldd cannot tell."""
    try:
        done = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return {}
    return {name: Path(path) for name, path in _LDD_LINE.findall(done.stdout) if path.startswith("/")}


def _mpi_library(libraries: dict[str, Path]) -> Path | None:
    """The MPI C library among them (libmpi.so.N, libmpich.so.N), resolved."""
    found = _mpi_soname(libraries)
    return libraries[found].resolve() if found else None


def _mpi_soname(libraries: dict[str, Path]) -> str | None:
    return next((name for name in libraries if re.match(r"lib(mpi|mpich)\.so(\.\d+)*$", name)), None)


def mpich_abi_alias(mpi: mpis.MpiInstall) -> Path | None:
    """A directory holding ``libmpi.so.12`` -> this MPICH's own library, for Python programs; None when not needed.

    mpi4py's wheel carries one extension per MPI ABI; its MPICH one needs ``libmpi.so.12``, the MPICH ABI's
    name. Debian's MPICH calls the same ABI ``libmpich.so.12``, so the extension finds no library; with this
    directory on LD_LIBRARY_PATH it loads Debian's (docs/mpi.md).
    """
    from ma_core.errors import ToolBuildError

    from .cparts import build_pmpi

    try:
        if mpi.family != "mpich":
            return None
        libraries = linked_libraries(build_pmpi(mpi=mpi))
    except ToolBuildError:  # said by the PMPI library's own build, when ma run preloads it
        return None
    name = _mpi_soname(libraries)
    if name is None or name == "libmpi.so.12" or not name.endswith(".so.12"):
        return None
    directory = mpi.build_dir / "mpich-abi"
    directory.mkdir(exist_ok=True)
    alias = directory / "libmpi.so.12"
    target = libraries[name].resolve()
    if not alias.is_symlink() or alias.resolve() != target:
        temporary = directory / f".libmpi.so.12.{os.getpid()}"
        temporary.unlink(missing_ok=True)
        temporary.symlink_to(target)
        temporary.replace(alias)
    return directory


def program_mpi(command: list[str]) -> ProgramMpi:
    """The MPI ``command`` runs with (see the module's docstring)."""
    from ma_core.errors import ToolBuildError

    binary = _executable(command)
    libraries = linked_libraries(binary) if binary else {}
    if "libmapmpi.so" in libraries:
        pmpi = libraries["libmapmpi.so"]
        install = mpis.install_of_build_dir(pmpi.parent)
        notes = [] if install else [f"{binary} links {pmpi}, whose build directory says no MPI (no {mpis.RECORD_FILE})"]
        return ProgramMpi(install, pmpi, notes)
    selected = mpis.selected()
    wanted = _mpi_library(libraries)
    if wanted is None:  # a Python program, or one without MPI: the selected MPI
        program = ProgramMpi(selected)
        alias = None if selected.own else mpich_abi_alias(selected)
        if alias is not None:
            old_path = os.environ.get("LD_LIBRARY_PATH")
            program.env["LD_LIBRARY_PATH"] = f"{alias}{os.pathsep + old_path if old_path else ''}"
        return program
    for install in [selected, *mpis.built_installs()]:
        try:
            from .cparts import build_pmpi

            built = build_pmpi(mpi=install)
        except ToolBuildError:
            continue
        if _mpi_library(linked_libraries(built)) == wanted:
            return ProgramMpi(install)
    return ProgramMpi(None, None, [f"{binary} uses the MPI library {wanted}, for which no PMPI library is built here "
                                   "(ma tools build --mpicc PATH-OF-ITS-MPICC): its MPI calls are not measured"])


@dataclass
class Launch:
    argv: list[str]  # the launcher and its options, without the program
    env: dict[str, str]
    kind: str  # trace_format.LAUNCHER_KINDS


def launcher(mpi: mpis.MpiInstall | None, nprocs: int, named: str | None) -> Launch:
    """The launcher command of a job of ``nprocs`` ranks: ``named`` (``--launcher``; "mpirun" and "mpiexec" mean
    the program's MPI's own) or the MPI's mpiexec; nothing for one rank when none is named."""
    from ma_core.errors import LaunchError

    env: dict[str, str] = {}
    if named:
        words = shlex.split(named)
        if words and words[0] in LAUNCHER_NAMES and mpi is not None:
            own = mpi.sibling(words[0])
            if own is None:
                raise LaunchError(f"--launcher {words[0]}: {mpi.mpicc} has no {words[0]} beside it")
            words[0] = str(own)
        program = words[0] if words else ""
    elif nprocs == 1:
        return Launch([], env, "direct")
    else:
        from .toolchain import find_program

        chosen = (mpi.launcher if mpi is not None else None) or find_program("mpiexec")
        if chosen is None:
            raise LaunchError("no mpiexec beside this Python or on PATH: pip install mpich, or name a launcher "
                              "with --launcher / MA_LAUNCHER")
        words, program = [str(chosen)], str(chosen)
    if _is_open_mpi(program, mpi):
        env.update(open_mpi_environment(nprocs))
    return Launch([*words, "-n", str(nprocs)], env, "other")


def _is_open_mpi(program: str, mpi: mpis.MpiInstall | None) -> bool:
    from ma_core.errors import ToolBuildError

    if not program:
        return False
    name = Path(program).name
    if name.startswith(("orterun", "prterun")) or name.endswith(".openmpi"):
        return True
    try:
        return mpi is not None and name in LAUNCHER_NAMES and mpi.family == "openmpi"
    except ToolBuildError:
        return False


def open_mpi_environment(nprocs: int) -> dict[str, str]:
    """What Open MPI's mpirun needs in a container: to run as root, and more ranks than cores."""
    env: dict[str, str] = {}
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    if nprocs > (os.cpu_count() or 1):
        env["OMPI_MCA_rmaps_base_oversubscribe"] = "1"
    return env


__all__ = ["Launch", "ProgramMpi", "launcher", "linked_libraries", "mpich_abi_alias", "open_mpi_environment",
           "program_mpi"]
