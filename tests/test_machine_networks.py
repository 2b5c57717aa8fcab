"""One network block per MPI in a machine profile (schema version 2): read and written, errors naming the field,
the block a run's MPI picks (backends.machine.profile.network_for, runnetwork), and with the real MPIs,
``ma machine network --mpicc`` measuring a block with that MPI's own mpiexec and ``ma predict`` pricing a run's
messages with the block of the MPI the run used."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mpi_builds import DEBIAN_MPICH, DEBIAN_OPENMPI, REPO, VENV_BIN, environment

from backends.machine import profile
from backends.machine.profile import network_for, with_network
from ma_core.errors import ProfileError
from ma_tools import mpis

SHIPPED = profile.shipped_profiles()["amd-epyc-zen4-kvm"]


def block(latency_s: float) -> dict[str, Any]:
    """A network block as the probe writes it (figures given: these tests check the plumbing, not a machine)."""
    return {"latency_s": latency_s, "bandwidth_bytes_per_s": 1e10, "ranks": 2, "launcher": "mpiexec",
            "pingpong": [{"bytes": 8, "seconds": latency_s}], "oversubscribed": None}


def two_mpis() -> profile.MachineProfile:
    """The shipped profile with its default block named mpich-5.0.2 and a second block for openmpi-4.1.4."""
    doc = profile.load(SHIPPED).to_json()
    doc["network"]["mpi"] = "mpich-5.0.2"
    return with_network(profile.from_json(doc), block(3e-6), "openmpi-4.1.4")


def test_a_version_1_profile_reads_and_is_written_as_version_2(tmp_path: Path) -> None:
    assert json.loads(SHIPPED.read_text())["version"] == 1
    shipped = profile.load(SHIPPED)
    assert shipped.network is not None and shipped.network.mpi is None and not shipped.networks
    again = profile.load(shipped.save(tmp_path / "p.json"))
    assert again == shipped and json.loads((tmp_path / "p.json").read_text())["version"] == 2


def test_blocks_per_mpi_round_trip(tmp_path: Path) -> None:
    machine = two_mpis()
    assert machine.network is not None and machine.network.mpi == "mpich-5.0.2"
    assert list(machine.networks) == ["openmpi-4.1.4"] and machine.networks["openmpi-4.1.4"].latency_s == 3e-6
    doc = json.loads(machine.save(tmp_path / "p.json").read_text())
    assert doc["networks"]["openmpi-4.1.4"]["mpi"] == "openmpi-4.1.4" and doc["network"]["mpi"] == "mpich-5.0.2"
    assert profile.load(tmp_path / "p.json") == machine
    # the block of the default's own MPI replaces the default; a profile without a network takes it as default
    replaced = with_network(machine, block(7e-6), "mpich-5.0.2")
    assert replaced.network is not None and replaced.network.latency_s == 7e-6 and len(replaced.networks) == 1
    # --default: the block replaces the default (one that names no MPI, or another MPI's), and its networks entry
    named = with_network(profile.load(SHIPPED), block(4e-6), "mpich-5.0.2", default=True)
    assert named.network is not None and named.network.mpi == "mpich-5.0.2" and not named.networks
    swapped = with_network(machine, block(5e-6), "openmpi-4.1.4", default=True)
    assert swapped.network is not None and swapped.network.mpi == "openmpi-4.1.4" and not swapped.networks
    bare = profile.from_json({k: v for k, v in profile.load(SHIPPED).to_json().items() if k != "network"})
    first = with_network(bare, block(1e-6), "mpich-4.0.2")
    assert first.network is not None and first.network.mpi == "mpich-4.0.2" and not first.networks


def _set(doc: dict[str, Any], where: str, value: Any) -> None:
    *parents, last = where.split(".")
    for name in parents:
        doc = doc[name]
    doc[last] = value


@pytest.mark.parametrize(("where", "value", "version", "field", "message"), [
    ("network.mpi", "mpich-4.0.2", 1, "network.mpi", "version-1 profile does not name the MPI"),
    ("networks", {"openmpi-4.1.4": block(1e-6)}, 1, "networks", "version-1 profile has one network block"),
    ("network.mpi", "MPICH 4", 2, "network.mpi", "does not match"),
    ("networks", {"Open MPI": block(1e-6)}, 2, "networks", "does not match"),
    ("networks", {"openmpi-4.1.4": {**block(1e-6), "mpi": "openmpi-5.0.0"}}, 2, "networks.openmpi-4.1.4.mpi",
     "says it was measured with 'openmpi-5.0.0'"),
    ("networks", {"mpich-5.0.2": block(1e-6)}, 2, "networks.mpich-5.0.2", "has two network blocks"),
    ("networks", {"openmpi-4.1.4": {"bandwidth_bytes_per_s": 1e9}}, 2, "networks.openmpi-4.1.4.latency_s",
     "required field is missing"),
    ("networks", {"openmpi-4.1.4": None}, 2, "networks.openmpi-4.1.4", "is not of type 'object'"),
])
def test_errors_name_the_file_and_field(tmp_path: Path, where: str, value: Any, version: int, field: str,
                                        message: str) -> None:
    doc = two_mpis().to_json()
    doc["version"] = version
    if version == 1:
        doc.pop("networks")
        doc["network"].pop("mpi")
    _set(doc, where, value)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ProfileError, match=message) as caught:
        profile.load(path)
    assert caught.value.field == field and str(caught.value).startswith(f"{path}: field {field!r}: ")


def test_a_run_takes_the_block_of_its_mpi() -> None:
    machine = two_mpis()
    same, note = network_for(machine, "mpich-5.0.2")
    assert same is machine and note is None
    other, note = network_for(machine, "openmpi-4.1.4")
    assert other.network is not None and other.network.latency_s == 3e-6
    assert note == "messages priced with the network block of openmpi-4.1.4"
    unsaid, note = network_for(machine, None)
    assert unsaid is machine and note is not None and "does not say which MPI" in note and "--mpi NAME" in note
    with pytest.raises(ProfileError, match=r"no network block for mpich-4\.0\.2, the MPI the run used .*the "
                                           r"profile has mpich-5\.0\.2, openmpi-4\.1\.4.*ma machine network") as caught:
        network_for(machine, "mpich-4.0.2")
    assert caught.value.field == "networks"


def test_a_default_block_that_names_no_mpi_prices_any_with_a_note() -> None:
    shipped = profile.load(SHIPPED)
    chosen, note = network_for(shipped, "mpich-4.0.2")
    assert chosen is shipped and note is not None and "does not say which MPI it was measured with" in note
    assert network_for(shipped, None) == (shipped, None)  # one block, nothing to choose


def test_the_mpi_of_a_pmpi_library(tmp_path: Path) -> None:
    own = tmp_path / "lib"
    own.mkdir()
    (own / mpis.RECORD_FILE).write_text(json.dumps({"family": "mpich", "mpi_version": "5.0.2"}))
    assert mpis.name_of_library(own / "libmapmpi.so") == "mpich-5.0.2"
    # read where the build is not: the build directory's key still names it
    assert mpis.name_of_library("/elsewhere/mpi/openmpi-4.1.4-4bf198bf/libmapmpi.so") == "openmpi-4.1.4"
    assert mpis.name_of_library("/elsewhere/libmapmpi.so") is None


def ma(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(VENV_BIN / "ma"), *args], capture_output=True, text=True, timeout=300,
                          env=environment())
    if check:
        assert done.returncode == 0, f"ma {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.mark.mpi
def test_ma_machine_network_measures_each_mpi_with_its_own_launcher(tmp_path: Path) -> None:
    DEBIAN_MPICH.skip_unless_available()
    DEBIAN_OPENMPI.skip_unless_available()
    target = tmp_path / "p.json"
    source = SHIPPED  # the first measurement writes a copy; the second adds its block to that copy
    for mpi, launcher in ((DEBIAN_MPICH, "mpiexec.mpich"), (DEBIAN_OPENMPI, "mpiexec.openmpi")):
        done = ma("machine", "network", str(source), "-o", str(target), "--mpicc", str(mpi.mpicc), "--quick")
        source = target
        assert f"started by {mpi.mpicc.with_name(launcher)}" in done.stdout
        name = mpis.install(mpi.mpicc).name
        machine = profile.load(target)
        measured = machine.networks[name]
        assert measured.mpi == name and measured.launcher == launcher and measured.latency_s > 0
        assert [m.bytes for m in measured.pingpong] == [8, 4096, 65536]
        assert measured.oversubscribed is not None and measured.oversubscribed.ranks > measured.ranks
        assert measured.synchronised is not None and measured.synchronised.curves[0].ranks == 2
        assert "synchronised exchange on 2 ranks" in done.stdout
        assert machine.network == profile.load(SHIPPED).network  # the shipped figures stay as they were
    assert len(profile.load(target).networks) == 2


@pytest.mark.mpi
def test_ma_predict_prices_messages_with_the_block_of_the_runs_mpi(tmp_path: Path) -> None:
    DEBIAN_MPICH.skip_unless_available()
    program = DEBIAN_MPICH.compile_c(REPO / "examples" / "c_ring" / "ring.c", tmp_path / "ring")
    run = tmp_path / "run"
    DEBIAN_MPICH.ma("run", "-n", "2", "--trace-dir", str(run), "--", str(program), "20000", "20")
    name = mpis.install(DEBIAN_MPICH.mpicc).name
    doc = profile.load(SHIPPED).to_json()
    doc["network"]["mpi"] = "mpich-0.0.0"  # a default block of another MPI: never the run's unsaid
    other = profile.from_json(doc)
    slow = with_network(other, block(1e-3), name).save(tmp_path / "slow.json")
    fast = with_network(other, block(1e-6), name).save(tmp_path / "fast.json")

    def predicted(machine: Path, *more: str) -> dict[str, Any]:
        report: dict[str, Any] = json.loads(ma("predict", str(run), "--machine", str(machine), "--format", "json",
                                               *more).stdout)
        return report

    def communication(report: dict[str, Any]) -> float:
        return sum(site["communication"] for site in report["sites"])

    on_slow, on_fast = predicted(slow), predicted(fast)
    assert f"messages priced with the network block of {name}" in on_slow["notes"]
    # 20 iterations of a send and an allreduce per rank at 1 ms against 1 us a message
    assert communication(on_slow) > 0.02 and communication(on_fast) < communication(on_slow) / 100
    # --mpi prices the run as on another MPI's block, and says so
    forced = predicted(slow, "--mpi", "mpich-0.0.0")
    assert communication(forced) < communication(on_slow) / 10
    assert f"--mpi mpich-0.0.0: messages priced as on mpich-0.0.0; the run used {name}" in forced["notes"]
    # a profile with no block of the run's MPI is refused, naming the field and the command that measures it
    refused = ma("predict", str(run), "--machine", str(profile.from_json(doc).save(tmp_path / "none.json")),
                 check=False)
    assert refused.returncode != 0
    assert f"field 'networks': no network block for {name}" in refused.stderr
    assert "ma machine network PROFILE --mpicc" in refused.stderr


def test_ma_machine_network_refuses_what_names_no_mpi(tmp_path: Path) -> None:
    target = tmp_path / "p.json"
    for args, said in ((["--mpicc", str(tmp_path / "mpicc")], "no MPI compiler wrapper"),
                       (["--mpicc", "/bin/false"], "cannot compile a file that includes mpi.h")):
        done = ma("machine", "network", str(SHIPPED), "-o", str(target), *args, check=False)
        assert done.returncode == 2 and said in done.stderr and not target.exists()
    done = ma("machine", "network", "amd-epyc-zen4-kvm", check=False)  # a shipped profile is not changed in place
    assert done.returncode == 2 and "give -o FILE" in done.stderr
