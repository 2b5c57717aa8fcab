"""Which MPI the SDK builds for and runs with (ma_tools.mpis, ma_tools.mpilaunch), without starting a job: the
wrappers identified, one build directory per MPI with its record, the launcher and its Open MPI settings, the
MPI a compiled program brings with it."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from mpi_builds import DEBIAN_MPICH, DEBIAN_OPENMPI, REPO, WHEEL

from ma_tools import mpilaunch, mpis


def test_each_mpi_is_identified_by_its_wrapper() -> None:
    assert mpis.identify(mpis.install(WHEEL.mpicc).mpicc)[0] == "mpich"
    for mpi, family in ((DEBIAN_MPICH, "mpich"), (DEBIAN_OPENMPI, "openmpi")):
        if not mpi.available:
            continue
        install = mpis.install(mpi.mpicc)
        assert install.family == family and re.fullmatch(r"\d+\.\d+(\.\d+)?", install.version)
        assert install.key == f"{family}-{install.version}-{install.key[-8:]}"
        assert install.sibling("mpifort") == mpi.mpicc.with_name(f"mpifort.{mpi.mpicc.suffix[1:]}")


def test_an_alternatives_link_is_followed_to_the_wrapper_it_stands_for() -> None:
    link = Path("/usr/bin/mpicc")
    if not link.is_symlink():
        pytest.skip("no /usr/bin/mpicc alternatives link here")
    named = mpis.named_wrapper(link)
    assert named.name.startswith("mpicc.") and named.parent == Path("/usr/bin")


def test_mpis_build_into_directories_of_their_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MA_MPICC", raising=False)
    monkeypatch.delenv("MA_MPIFC", raising=False)
    own = mpis.selected()
    assert own.own and own.mpicc == mpis.named_wrapper(WHEEL.mpicc)
    directories = {own.build_dir}
    for mpi in (DEBIAN_MPICH, DEBIAN_OPENMPI):
        if not mpi.available:
            continue
        monkeypatch.setenv("MA_MPICC", str(mpi.mpicc))
        chosen = mpis.selected()
        assert not chosen.own and chosen.build_dir == own.build_dir / "mpi" / chosen.key
        directories.add(chosen.build_dir)
        record = chosen.record()
        assert record["mpicc"] == str(mpi.mpicc) and record["family"] == chosen.family
        assert record["launcher"] == str(mpi.mpicc.with_name(f"mpiexec.{mpi.mpicc.suffix[1:]}"))
        # MA_MPIFC alone names the same MPI, through its mpicc sibling
        monkeypatch.delenv("MA_MPICC")
        monkeypatch.setenv("MA_MPIFC", str(record["mpifc"]))
        assert mpis.selected() == chosen
        monkeypatch.delenv("MA_MPIFC")
    assert len(directories) == 1 + DEBIAN_MPICH.available + DEBIAN_OPENMPI.available


def test_open_mpi_is_launched_as_root_and_oversubscribed_only_where_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    if not DEBIAN_OPENMPI.available:
        pytest.skip("Debian's Open MPI is not installed")
    openmpi = mpis.install(DEBIAN_OPENMPI.mpicc)
    many = (os.cpu_count() or 1) + 1
    start = mpilaunch.launcher(openmpi, many, None)
    assert start.argv == ["/usr/bin/mpiexec.openmpi", "-n", str(many)]
    assert start.env.get("OMPI_MCA_rmaps_base_oversubscribe") == "1"
    assert ("OMPI_ALLOW_RUN_AS_ROOT" in start.env) == (os.geteuid() == 0)
    assert "OMPI_MCA_rmaps_base_oversubscribe" not in mpilaunch.launcher(openmpi, 1, "mpirun").env
    assert mpilaunch.launcher(openmpi, 2, "mpirun").argv[0] == "/usr/bin/mpirun.openmpi"
    assert mpilaunch.launcher(openmpi, 2, "srun --mpi=pmix").argv == ["srun", "--mpi=pmix", "-n", "2"]
    wheel = mpis.install(WHEEL.mpicc)
    assert mpilaunch.launcher(wheel, 2, None).env == {}  # Hydra needs none of it
    assert mpilaunch.launcher(wheel, 1, None).argv == []  # one rank, no launcher named: run directly


@pytest.mark.mpi
def test_a_program_brings_its_mpi_with_it(tmp_path: Path) -> None:
    if not DEBIAN_OPENMPI.available:
        pytest.skip("Debian's Open MPI is not installed")
    program = DEBIAN_OPENMPI.compile_c(REPO / "examples" / "c_ring" / "ring.c", tmp_path / "ring")
    found = mpilaunch.program_mpi([str(program), "100"])
    assert found.install == mpis.install(DEBIAN_OPENMPI.mpicc)
    assert found.linked_pmpi is not None and found.linked_pmpi.parent == found.install.build_dir
    assert json.loads((found.linked_pmpi.parent / mpis.RECORD_FILE).read_text())["family"] == "openmpi"
    python = mpilaunch.program_mpi(["python", "app.py"])
    assert python.install == mpis.selected() and python.linked_pmpi is None

