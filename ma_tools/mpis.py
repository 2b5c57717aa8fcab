"""The MPI installations the SDK builds against: which one is chosen, where its builds go, what it launches with.

An installation is named by its C compiler wrapper (``mpicc``): the environment's own (the ``mpich`` wheel's,
beside this Python), or another one given with ``ma tools build --mpicc PATH`` / ``MA_MPICC`` (Debian's
``/usr/bin/mpicc.mpich``, ``/usr/bin/mpicc.openmpi``, a site's Cray or Intel wrapper). The PMPI library, the C
runtime and the Fortran module bind to one MPI's ABI, so each installation gets its own build directory and
several coexist: the environment's own in ``ma_runtime.built.build_dir()`` itself, any other in
``built.build_dir()/mpi/<family>-<version>-<hash of the mpicc path>``, with an ``mpi.json`` that says which
MPI built it (read back by ``ma run`` to start a program with the launcher of the MPI it was linked with).

Its Fortran wrapper and launcher are its ``mpicc``'s siblings: ``mpicc.openmpi`` -> ``mpifort.openmpi``,
``mpiexec.openmpi``; ``mpicc`` -> ``mpifort``, ``mpiexec`` (``MA_MPIFC`` names another Fortran wrapper).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ma_runtime import built

from . import toolchain

RECORD_FILE = "mpi.json"
RECORD_FORMAT = "ma-mpi-build"
FAMILIES = ("mpich", "openmpi", "unknown")


@dataclass(frozen=True)
class MpiInstall:
    """One MPI installation, named by its C compiler wrapper."""

    mpicc: Path
    own: bool  # the environment's own MPI: builds in the top build directory

    @property
    def build_dir(self) -> Path:
        top = built.build_dir()
        if self.own:
            return top
        path = top / "mpi" / self.key
        path.mkdir(parents=True, exist_ok=True)
        return path

    @property
    def key(self) -> str:
        """``<family>-<version>-<8 hex digits of the mpicc path>``: one directory per installation."""
        family, version = identify(self.mpicc)
        digest = hashlib.sha256(str(self.mpicc).encode()).hexdigest()[:8]
        return f"{family}-{version}-{digest}"

    @property
    def name(self) -> str:
        """``<family>-<version>`` ("mpich-4.0.2", "openmpi-4.1.4"): the MPI's name where it must mean the same on
        another host, as a machine profile's network blocks are keyed (the build directory's key adds the path)."""
        family, version = identify(self.mpicc)
        return f"{family}-{version}"

    @property
    def family(self) -> str:
        return identify(self.mpicc)[0]

    @property
    def version(self) -> str:
        return identify(self.mpicc)[1]

    def sibling(self, *tools: str) -> Path | None:
        """The first of ``tools`` (e.g. "mpifort", "mpif90") that sits beside this mpicc with its suffix."""
        name = self.mpicc.name
        if not name.startswith("mpicc"):
            return None  # a wrapper named otherwise (a site's cc, MA_MPICC=/bin/false): no siblings to trust
        suffix = name[len("mpicc"):]
        for tool in tools:
            candidate = self.mpicc.parent / f"{tool}{suffix}"
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return candidate
        return None

    @property
    def mpifc(self) -> Path | None:
        """The Fortran compiler wrapper of this MPI (``MA_MPIFC`` for the selected one), or None (the wheel)."""
        override = os.environ.get("MA_MPIFC")
        if override and selected() == self:
            return Path(override)
        return self.sibling("mpifort", "mpif90")

    @property
    def launcher(self) -> Path | None:
        """This MPI's ``mpiexec`` (``mpirun`` when there is none)."""
        return self.sibling("mpiexec", "mpirun")

    def record(self) -> dict[str, object]:
        """What ``mpi.json`` says about the build (written by ``write_record`` after a build)."""
        mpifc = self.sibling("mpifort", "mpif90")
        launcher = self.launcher
        return {"format": RECORD_FORMAT, "version": 1, "mpicc": str(self.mpicc), "family": self.family,
                "mpi_version": self.version, "mpifc": str(mpifc) if mpifc else None,
                "launcher": str(launcher) if launcher else None, "own": self.own}

    def write_record(self) -> Path:
        path = self.build_dir / RECORD_FILE
        text = json.dumps(self.record(), indent=1) + "\n"
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            temporary = path.with_name(f".{RECORD_FILE}.{os.getpid()}.tmp")
            temporary.write_text(text, encoding="utf-8")
            temporary.replace(path)
        return path


def named_wrapper(mpicc: str | os.PathLike[str]) -> Path:
    """The wrapper ``mpicc`` stands for, through links whose names still say which MPI it is.

    ``/usr/bin/mpicc`` -> ``/etc/alternatives/mpi`` -> ``/usr/bin/mpicc.openmpi`` -> ``opal_wrapper``: the last
    name starting with "mpicc" (``mpicc.openmpi``) keeps the suffix its siblings share.
    """
    path = Path(mpicc).absolute()
    best = path
    for _ in range(16):
        if not path.is_symlink():
            break
        target = Path(os.readlink(path))
        path = target if target.is_absolute() else (path.parent / target)
        path = Path(os.path.normpath(path))
        if path.name.startswith("mpicc"):
            best = path
    return best


@functools.cache
def identify(mpicc: Path) -> tuple[str, str]:
    """(family, version) from the macros of the wrapper's ``mpi.h``: ("mpich", "4.0.2"), ("openmpi", "4.1.4")."""
    from ma_core.errors import ToolBuildError

    try:
        done = subprocess.run([str(mpicc), "-E", "-dM", "-x", "c", "-"], input="#include <mpi.h>\n",
                              capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise ToolBuildError(f"building for the MPI of {mpicc}: cannot run it: {exc}") from None
    if done.returncode != 0:
        raise ToolBuildError(f"building for the MPI of {mpicc}: it cannot compile a file that includes mpi.h "
                             f"(exit {done.returncode}) {(done.stderr or done.stdout).strip()[:500]}")
    macros = dict(re.findall(r"^#define (\w+) (.*)$", done.stdout, flags=re.M))
    if "OMPI_MAJOR_VERSION" in macros:
        parts = (macros.get(f"OMPI_{p}_VERSION", "0").strip() for p in ("MAJOR", "MINOR", "RELEASE"))
        return "openmpi", ".".join(parts)
    if "MPICH_VERSION" in macros:
        return "mpich", macros["MPICH_VERSION"].strip().strip('"')
    return "unknown", f"{macros.get('MPI_VERSION', '0').strip()}.{macros.get('MPI_SUBVERSION', '0').strip()}"


def own_mpicc() -> Path | None:
    """The environment's own mpicc (beside this Python, else on PATH), ignoring MA_MPICC."""
    return toolchain.find_program("mpicc")


def install(mpicc: str | os.PathLike[str]) -> MpiInstall:
    """The installation of the wrapper ``mpicc`` (a path, or a name looked up on PATH)."""
    from ma_core.errors import ToolBuildError

    text = os.fspath(mpicc)
    found = Path(text) if os.sep in text else toolchain.find_program(text)
    if found is None or not found.is_file():
        raise ToolBuildError(f"no MPI compiler wrapper {text!r}: give the path of an mpicc (e.g. "
                             "/usr/bin/mpicc.openmpi, /usr/bin/mpicc.mpich)")
    wrapper = named_wrapper(found)
    own = own_mpicc()
    return MpiInstall(wrapper, own is not None and named_wrapper(own) == wrapper)


def selected() -> MpiInstall:
    """The installation builds and flags use: ``MA_MPICC``, else the MPI of ``MA_MPIFC`` (its Fortran wrapper's
    mpicc sibling), else the environment's own."""
    from ma_core.errors import ToolBuildError

    chosen = os.environ.get("MA_MPICC")
    if chosen:
        return install(chosen)
    fortran = os.environ.get("MA_MPIFC")
    if fortran:
        wrapper = Path(fortran) if os.sep in fortran else toolchain.find_program(fortran)
        name = wrapper.name if wrapper else ""
        for prefix in ("mpifort", "mpif90", "mpif77"):
            if wrapper and name.startswith(prefix) and (wrapper.parent / f"mpicc{name[len(prefix):]}").is_file():
                return install(wrapper.parent / f"mpicc{name[len(prefix):]}")
        raise ToolBuildError(f"MA_MPIFC={fortran}: no mpicc beside it names its MPI; set MA_MPICC as well")
    own = own_mpicc()
    if own is None:
        raise ToolBuildError("no mpicc found beside this Python or on PATH: install the 'mpich' wheel "
                             "(pip install mpich) or set MA_MPICC")
    return MpiInstall(named_wrapper(own), True)


def built_installs() -> list[MpiInstall]:
    """Every installation with a build here (its ``mpi.json``), the environment's own first."""
    top = built.build_dir()
    found: list[MpiInstall] = []
    for record_path in [top / RECORD_FILE, *sorted((top / "mpi").glob(f"*/{RECORD_FILE}"))]:
        try:
            record = json.loads(record_path.read_text(encoding="utf-8"))
            found.append(MpiInstall(Path(record["mpicc"]), bool(record.get("own"))))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return found


def install_of_build_dir(directory: Path) -> MpiInstall | None:
    """The installation whose build directory ``directory`` is (from its ``mpi.json``), or None."""
    try:
        record = json.loads((directory / RECORD_FILE).read_text(encoding="utf-8"))
        return MpiInstall(Path(record["mpicc"]), bool(record.get("own")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def name_of_library(library: str | os.PathLike[str]) -> str | None:
    """The name (:attr:`MpiInstall.name`) of the MPI a PMPI library was built for, as a trace's header gives its
    path (``mpi.library``): from the ``mpi.json`` beside it, else from its build directory's key
    (``mpi/<family>-<version>-<hash>``, for a trace read where the library is not); None when neither says."""
    directory = Path(library).parent
    try:
        record = json.loads((directory / RECORD_FILE).read_text(encoding="utf-8"))
        family, version = record["family"], record["mpi_version"]
        if isinstance(family, str) and isinstance(version, str):
            return f"{family}-{version}"
    except (OSError, ValueError, KeyError, TypeError):
        pass
    key = re.fullmatch(r"([a-z]+)-(.+)-[0-9a-f]{8}", directory.name)
    if directory.parent.name == "mpi" and key:
        return f"{key.group(1)}-{key.group(2)}"
    return None


__all__ = ["FAMILIES", "MpiInstall", "built_installs", "identify", "install", "install_of_build_dir",
           "name_of_library", "named_wrapper", "own_mpicc", "selected"]
