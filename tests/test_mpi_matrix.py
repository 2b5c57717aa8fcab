"""The MPI you have: {the mpich wheel, Debian's MPICH, Debian's Open MPI} x {the C ring, the Fortran ring with
``use mpi``, the same with ``use mpi_f08``} x {2, 4 ranks}, and Python's quickstart on each MPI.

Each program is built with the flags of ``ma config`` for that MPI (MA_MPICC), started by ``ma run`` (which picks
the MPI's launcher and PMPI library from the program), and ``ma validate`` passes with every MPI assertion
measured on every rank. The wheel has no Fortran bindings: its Fortran cells do not exist, and ``ma config``
says why (tested). mpi4py's wheel runs on all three: its MPICH-ABI extension on the wheel and (through
``ma run``'s libmpi.so.12 alias) on Debian's MPICH, its Open MPI one on Debian's Open MPI.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mpi_builds import ALL, REPO, WHEEL, Mpi, mpi_sites, validation

PROGRAMS = {"c ring": (), "fortran use mpi": (), "fortran use mpi_f08": ("-DUSE_MPI_F08",)}
RANKS = (2, 4)

pytestmark = [pytest.mark.mpi, pytest.mark.slow]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Path]:
    """Every program the matrix runs, built once per MPI."""
    programs: dict[tuple[str, str], Path] = {}
    for mpi in ALL:
        if not mpi.available:
            continue
        work = tmp_path_factory.mktemp(mpi.name)
        programs[mpi.name, "c ring"] = mpi.compile_c(REPO / "examples" / "c_ring" / "ring.c", work / "c_ring")
        if mpi.fortran:
            for name in ("fortran use mpi", "fortran use mpi_f08"):
                programs[mpi.name, name] = mpi.compile_fortran(REPO / "examples" / "fortran_ring" / "ring.F90",
                                                               work / name.replace(" ", "_"), *PROGRAMS[name])
    return programs


def check_run(mpi: Mpi, argv: list[str], ranks: int, work: Path, peers: bool = False) -> dict[str, Any]:
    """``ma run`` the program on ``ranks`` ranks, ``ma validate`` it (with partner assertions: ``peers``); return
    the validation report."""
    trace_dir = work / f"traces-{ranks}"
    done = mpi.ma("run", "-n", str(ranks), "--trace-dir", str(trace_dir), "--", *argv, cwd=work,
                  MA_TOLERANCE="heap_memory=0.01")
    assert f"{ranks} of {ranks} rank traces" in done.stderr, done.stderr
    report = validation(trace_dir)
    assert report["exit"] == 0, report
    sites = mpi_sites(report)
    assert sites, "no MPI assertion in the report"
    for site in sites:  # measured on every rank, and passing
        assert site["unmeasured"] == 0 and site["unmeasured_reason"] is None, site
        assert site["status"] == "PASS" and site["pass"] == site["calls"] > 0, site
    assert report["trace"]["ranks"] == list(range(ranks)) and report["trace"]["size"] == ranks
    if peers:
        assert report["peers"] and all(p["fail"] == 0 and p["pass"] > 0 for p in report["peers"]), report["peers"]
    return report


@pytest.mark.parametrize("ranks", RANKS)
@pytest.mark.parametrize("program", list(PROGRAMS))
@pytest.mark.parametrize("mpi", ALL, ids=lambda m: m.name)
def test_program_runs_and_validates(mpi: Mpi, program: str, ranks: int, built: dict[tuple[str, str], Path],
                                    tmp_path: Path) -> None:
    mpi.skip_unless_available()
    if program.startswith("fortran") and not mpi.fortran:
        # the cell cannot exist: the wheel ships no Fortran bindings (test_fortran.py checks ma config says so)
        done = mpi.ma("config", "--mpifc", check=False)
        assert done.returncode == 2 and "has no Fortran compiler wrapper" in done.stderr
        return
    fortran = program.startswith("fortran")
    report = check_run(mpi, [str(built[mpi.name, program])], ranks, tmp_path, peers=fortran)
    assert report["trace"]["language"] == ("fortran" if fortran else "c")


@pytest.mark.parametrize("mpi", ALL, ids=lambda m: m.name)
def test_python_quickstart_on_each_mpi(mpi: Mpi, tmp_path: Path) -> None:
    mpi.skip_unless_available()
    report = check_run(mpi, ["python", str(REPO / "examples" / "quickstart" / "axpy.py")], 2, tmp_path)
    assert report["trace"]["language"] == "python"
    import ma_post

    # mpi4py ran on this MPI, measured by its own PMPI library (ma run preloaded it)
    library = Path(ma_post.load(tmp_path / "traces-2").headers[0]["mpi"]["library"])
    assert library == Path(mpi.words("--pmpi-library")[0]).resolve()
    assert (f"/mpi/{mpi.name.split('-')[1]}-" in str(library)) == (mpi is not WHEEL)
