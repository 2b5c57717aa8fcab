"""The MPIs of the test matrix, and how a test builds and runs a C or Fortran program with one of them.

The environment's own MPI is the ``mpich`` wheel (C only: it has no Fortran bindings); the distribution's MPICH
and Open MPI are found by their Debian wrappers (``/usr/bin/mpicc.mpich``, ``/usr/bin/mpicc.openmpi``;
scripts/setup.sh installs them). A test of an MPI that is not installed is skipped with that reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
TIMEOUT = 300


@dataclass(frozen=True)
class Mpi:
    name: str  # the matrix's name for it
    mpicc: Path
    fortran: bool  # whether it has Fortran bindings (an mpifort)

    @property
    def available(self) -> bool:
        return self.mpicc.is_file()

    def skip_unless_available(self) -> None:
        if not self.available:
            pytest.skip(f"{self.name}: {self.mpicc} is not installed (scripts/setup.sh installs it)")

    def ma(self, *args: str, cwd: Path | None = None, check: bool = True,
           **env: str) -> subprocess.CompletedProcess[str]:
        """``ma ARGS`` with this MPI selected (MA_MPICC)."""
        done = subprocess.run([str(VENV_BIN / "ma"), *args], cwd=cwd, capture_output=True, text=True,
                              timeout=TIMEOUT, env=environment(MA_MPICC=str(self.mpicc), **env))
        if check:
            assert done.returncode == 0, f"ma {' '.join(args)} ({self.name}) failed:\n{done.stdout}\n{done.stderr}"
        return done

    def words(self, *flags: str) -> list[str]:
        """What ``ma config FLAGS`` prints for this MPI (computed here: a process per call costs seconds)."""
        from ma_tools import cparts, fortran, mpis

        install = mpis.install(self.mpicc)
        disabled = "--disabled" in flags
        makers = {"--cflags": cparts.c_flags, "--libs": lambda: cparts.c_libs(install),
                  "--fflags": lambda: fortran.fortran_flags(install, disabled),
                  "--flibs": lambda: fortran.fortran_libs(install, disabled),
                  "--mpifc": lambda: [str(fortran.mpi_fortran_compiler(install))],
                  "--pmpi-library": lambda: [str(cparts.build_pmpi(mpi=install))]}
        return [word for flag in flags if flag != "--disabled" for word in makers[flag]()]

    def compile_c(self, source: Path, output: Path, *extra: str) -> Path:
        return _compile([str(self.mpicc), "-O2", "-Wall", *extra, *self.words("--cflags"), str(source), "-o",
                         str(output), *self.words("--libs")])

    def compile_fortran(self, source: Path, output: Path, *extra: str, disabled: bool = False) -> Path:
        mpifc = self.words("--mpifc")[0]
        more = ["--disabled"] if disabled else []
        return _compile([mpifc, "-O2", "-Wall", *extra, *self.words("--fflags", *more), str(source), "-o",
                         str(output), *self.words("--flibs", *more)])


def _compile(command: list[str]) -> Path:
    done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, f"{' '.join(command)}\n{done.stderr}"
    return Path(command[command.index("-o") + 1])


WHEEL = Mpi("mpich-wheel", VENV_BIN / "mpicc", fortran=False)
DEBIAN_MPICH = Mpi("debian-mpich", Path("/usr/bin/mpicc.mpich"), fortran=True)
DEBIAN_OPENMPI = Mpi("debian-openmpi", Path("/usr/bin/mpicc.openmpi"), fortran=True)
ALL = (WHEEL, DEBIAN_MPICH, DEBIAN_OPENMPI)


def environment(**extra: str) -> dict[str, str]:
    """The test's environment without MA_* settings (but the build directory), the venv's bin/ first on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MA_") or k == "MA_BUILD_DIR"}
    env.pop("LD_PRELOAD", None)
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra)
    return env


def validation(trace_dir: Path) -> dict[str, Any]:
    """``ma validate --format json`` of a run, with its exit status under "exit"."""
    done = subprocess.run([str(VENV_BIN / "ma"), "validate", str(trace_dir), "--format", "json"],
                          capture_output=True, text=True, timeout=TIMEOUT, env=environment())
    report: dict[str, Any] = json.loads(done.stdout)
    report["exit"] = done.returncode
    return report


def mpi_sites(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [site for site in report["sites"] if site["type"].startswith("mpi_")]
