"""Add chains in the maps backend: the probe's dependent add chain of a compiled dot product (measured for real,
``backends/machine/chains.py``), the profile's ``cpu.add_chain_s``, a kernel a signature states as one dependent sum
(its terms at the add chain, or its words as L1 hits if longer, plus its memory beyond L1 hits), the signature
file's ``add_chain`` and ``ma signature --add-chain`` with their errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from maps_golden import DATA
from test_maps_rowchain import PEAK, VALUES, builder, in_l1_seconds, memory_seconds, profile

from backends.machine import chains
from backends.machine import profile as profiles
from backends.machine.profile import MachineProfile
from backends.maps import MapsBackend
from backends.signature import Signatures, from_traces, load_signature_file, save_signature_file
from ma_cli.main import main
from ma_core.errors import BackendError, ProfileError
from ma_post.traceset import load

CHAIN_S = 3e-9  # seconds per term of the hand profile's add chain


def chained(seconds: float | None = CHAIN_S) -> MachineProfile:
    bare = profile(None)
    return bare if seconds is None else profiles.with_block(bare, "cpu.add_chain_s", seconds)


def kernel_seconds(signatures: Signatures, machine: MachineProfile, flops: str = "2*m") -> float:
    prediction = MapsBackend(signatures=signatures).predict(builder(flops), machine, {})
    return sum(float(s.total.subs(VALUES)) for s in prediction.sites if s.path.startswith("it/k"))


@pytest.mark.parametrize(("terms", "chain"), [("m", 10 * 1000 * CHAIN_S), ("m/100", 10 * 10 * CHAIN_S)])
def test_a_stated_add_chain_costs_its_terms_at_the_chain_or_its_words_in_l1_and_its_memory_beyond(
        terms: str, chain: float) -> None:
    """m terms a call: 30 us of chains over the words' 6 us as L1 hits; m/100: 0.3 us, under them. The kernel
    costs max(chains, M_1) + (M - M_1), M its memory at F(h), plus its flops beyond two a term at the peak."""
    signatures = Signatures(add_chains={"it/k/k_ls": terms})
    memory, in_l1 = memory_seconds(), in_l1_seconds()
    extra = 0 if terms == "m" else 10 * (2000 - 2 * 10)
    assert kernel_seconds(signatures, chained()) == pytest.approx(max(chain, in_l1) + memory - in_l1 + extra / PEAK)
    prediction = MapsBackend(signatures=signatures).predict(builder(), chained(), {})
    memory_part = sum(float(s.memory.subs(VALUES)) for s in prediction.sites if s.path.startswith("it/k"))
    assert memory_part == pytest.approx(memory)  # memory stays where it was, the chain goes to compute
    assert any("add chains" in note and "it/k" in note for note in prediction.notes)
    assert prediction.signature_coverage["add_chains"] == ("it/k/k_ls",)


def test_the_chain_scales_with_the_profiles_figure_and_without_it_the_kernel_is_priced_like_any_other() -> None:
    signatures = Signatures(add_chains={"it/k/k_ls": "m"})
    slower = kernel_seconds(signatures, chained(2 * CHAIN_S)) - kernel_seconds(signatures, chained())
    assert slower == pytest.approx(10 * 1000 * CHAIN_S)
    plain = MapsBackend().predict(builder(), chained(None), {})
    without = MapsBackend(signatures=signatures).predict(builder(), chained(None), {})
    assert without.evaluate(VALUES) == pytest.approx(plain.evaluate(VALUES))
    assert any("no cpu.add_chain_s" in note for note in without.notes)


def test_the_probe_measures_the_add_chain_and_the_profile_keeps_and_checks_it() -> None:
    measured = chains.measure_add_chain(quick=True)
    # one dependent add a term: slower than the two flops at the FMA peak of any core, faster than 100 ns
    assert 2 / 1e12 < measured < 1e-7
    machine = chained(measured)
    assert machine.cpu.add_chain_s == measured
    assert profiles.from_json(machine.to_json()).cpu.add_chain_s == measured
    assert "add_chain_s" not in chained(None).to_json()["cpu"]
    with pytest.raises(ProfileError, match="minimum of 0") as caught:
        chained(-1e-9)
    assert str(caught.value.field).startswith("cpu.add_chain_s")


def test_the_signature_file_carries_add_chains_and_names_a_bad_one(tmp_path: Path) -> None:
    path = save_signature_file(Signatures(add_chains={"it/k/k_ls": "na/num_proc_cols"}), tmp_path / "sig.json")
    assert load_signature_file(path, 2).add_chains == {"it/k/k_ls": "na/num_proc_cols"}
    for stated, expected in ((4, "add_chain: expected an expression string"),
                             ("m*(", r"add_chain: 'm\*\(' is not an expression")):
        path.write_text(json.dumps({"format": "ma-signature", "sites": {"it/k/k_ls": {"add_chain": stated}}}))
        with pytest.raises(BackendError, match=r"sig.json: field 'sites.it/k/k_ls'.*" + expected):
            load_signature_file(path, 2)


def test_ma_signature_states_add_chains_at_every_site_of_the_id(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sig.json"
    assert main(["signature", str(DATA / "cg-S-cache"), "--add-chain", "matvec_ls", "na*nonzer*(nonzer+1)/nprocs",
                 "-o", str(out)]) == 0
    assert "csr rows 0, add chains 4" in capsys.readouterr().out
    stated = load_signature_file(out, 4).add_chains
    assert len(stated) == 4 and all(p.endswith("/matvec/matvec_ls") for p in stated)
    assert set(stated.values()) == {"na*nonzer*(nonzer+1)/nprocs"}
    assert main(["signature", str(DATA / "cg-S-cache"), "--add-chain", "matvec_ls", "1", "--csr-rows", "matvec_ls",
                 "1", "1", "-o", str(out)]) == 2
    assert "'matvec_ls' is given both as --csr-rows and as --add-chain" in capsys.readouterr().err
    with pytest.raises(BackendError, match="add_chain of 'no_such_site': no site of that id"):
        from_traces(load(DATA / "cg-S-cache"), add_chains={"no_such_site": "1"})
