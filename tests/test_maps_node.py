"""The node term of the maps backend (backends/maps/node.py): with the profile's multicore block, each rank's
memory is priced at the bandwidth of the ranks that share its node, symbolic in nprocs; without it, as before."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import sympy
from mpi_builds import REPO, WHEEL
from post_fixtures import write_run
from test_maps_backend import C2, builder, hand_f, profile, program

from backends.machine import multicore, whatif
from backends.machine.hierarchy import shared_last_level
from backends.machine.profile import CacheLevel, MachineProfile, from_json, shipped_profiles, with_block
from backends.machine.profile import load as load_profile
from backends.maps import MapsBackend
from backends.signature import Signatures, load_signature_file, save_signature_file
from ma_cli.main import main
from ma_core.errors import BackendError, ProfileError

SHIPPED = shipped_profiles()["amd-epyc-zen4-kvm"]

VALUES = {"n": 10, "m": 1000}
RATIOS = {1: 1.0, 2: 0.8, 4: 0.5, 8: 0.3, 16: 0.2}  # a core's memory read with k cores at once, over alone
FROM_MEMORY = {"solve/it/ls": (0.0, 1.0)}  # every load of the kernel from memory: its time is 1/plateau


def node_profile(ratios: dict[int, float] = RATIOS) -> MachineProfile:
    runs = [{"cores": k, "cpus": list(range(k)), "points": [{"size_bytes": (64 << 20) // k, "level": "memory",
                                                             "read_gbs": 10.0 * r, "triad_gbs": 8.0 * r}]}
            for k, r in ratios.items()]
    return with_block(profile(), multicore.FIELD, {"version": 1, "runs": runs})


def memory(backend: MapsBackend, machine: MachineProfile, nprocs: Any) -> float:
    prediction = backend.predict(builder(), machine, {"nprocs": nprocs})
    return float(prediction.part("memory").subs(VALUES))


def test_sixteen_ranks_of_a_node_pay_for_its_shared_memory() -> None:
    backend = MapsBackend(signatures=FROM_MEMORY)
    machine = node_profile()
    alone = memory(backend, machine, 1)
    assert alone == pytest.approx(10 * 3000 * 8 / hand_f(0.0))  # one rank: the per-core profile's price
    for k, ratio in RATIOS.items():
        assert memory(backend, machine, k) == pytest.approx(alone / ratio)
    # between measured counts: log-log (a power law between 8 and 16 ranks)
    assert memory(backend, machine, 8) < memory(backend, machine, 12) < memory(backend, machine, 16)
    assert any("node term" in note and "16: 0.20" in note for note in backend.predict(builder(), machine).notes)


def test_a_site_mostly_in_cache_is_slowed_by_its_share_of_time_in_memory() -> None:
    """r(k) was measured on a stride-1 stream from memory (h1 = 7/8 on the hand profile's one 64-byte-line cache):
    a site at that stream's share of Equation 1's time in memory or more is slowed by 1/r, one with less in
    proportion (w = its share over the stream's)."""
    mostly_l1 = MapsBackend(signatures={"solve/it/ls": (0.99, 1.0)})
    share = lambda h1: (1 - h1) * C2 / (h1 + (1 - h1) * C2)  # noqa: E731 -- Equation 1's t_2 / T
    weight = share(0.99) / share(0.875)
    alone = memory(mostly_l1, node_profile(), 1)
    assert memory(mostly_l1, node_profile(), 16) == pytest.approx(alone * (1 - weight + weight / 0.2))
    assert memory(MapsBackend(), node_profile(), 16) == pytest.approx(memory(MapsBackend(), node_profile(), 1) / 0.2)


def test_without_the_block_memory_is_priced_as_before() -> None:
    backend = MapsBackend(signatures=FROM_MEMORY)
    plain = profile()
    assert memory(backend, plain, 16) == memory(backend, plain, 1) == pytest.approx(10 * 3000 * 8 / hand_f(0.0))
    prediction = backend.predict(builder(), plain)
    assert not prediction.part("memory").has(sympy.Piecewise)  # nprocs only in the time-sharing factor
    assert any("has no multicore block" in note for note in prediction.notes)
    # the default assumed rates too: the block changes nothing at one rank
    assert memory(MapsBackend(), node_profile(), 1) == pytest.approx(memory(MapsBackend(), plain, 1))


def test_the_prediction_stays_symbolic_in_nprocs() -> None:
    prediction = MapsBackend(signatures=FROM_MEMORY).predict(builder(), node_profile())
    expr = prediction.part("memory")
    assert sympy.Symbol("nprocs") in expr.free_symbols
    assert float(expr.subs({**VALUES, "nprocs": 4})) == pytest.approx(
        memory(MapsBackend(signatures=FROM_MEMORY), node_profile(), 4))


def test_ranks_per_node_and_cores_bound_the_sharing() -> None:
    machine = node_profile()
    alone = memory(MapsBackend(signatures=FROM_MEMORY), machine, 1)
    # 16 ranks, 2 per node: each node's pair shares its memory
    assert memory(MapsBackend(signatures=FROM_MEMORY, ranks_per_node=2), machine, 16) == pytest.approx(alone / 0.8)
    # 16 ranks on 4 cores: 4 read at once (r(4)), and the ranks time-share the cores (x 16/4), as before
    assert memory(MapsBackend(signatures=FROM_MEMORY, cores=4), machine, 16) == pytest.approx(alone / 0.5 * 4)
    # beyond the measured core counts: the last ratio
    assert memory(MapsBackend(signatures=FROM_MEMORY), node_profile({1: 1.0, 2: 0.6}), 32) == pytest.approx(
        alone / 0.6)
    with pytest.raises(BackendError, match="ranks per node must be >= 1"):
        MapsBackend(ranks_per_node=0)


def test_a_what_if_on_the_block_moves_the_prediction() -> None:
    machine = node_profile()
    backend = MapsBackend(signatures=FROM_MEMORY)
    halved = whatif.apply(machine, whatif.parse("memory.multicore.runs[4].points.read_gbs=*0.5"))  # k = 16 only
    assert memory(backend, halved, 16) == pytest.approx(2 * memory(backend, machine, 16))
    assert memory(backend, halved, 1) == pytest.approx(memory(backend, machine, 1))


def test_ma_predict_ranks_per_node(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace_dir = write_run(tmp_path / "run", program(), 2)
    path = node_profile().save(tmp_path / "node.json")
    assert main(["predict", str(trace_dir), "--backend", "maps", "--machine", str(path), "--set", "nprocs=16"]) == 0
    filled = capsys.readouterr().out
    assert main(["predict", str(trace_dir), "--backend", "maps", "--machine", str(path), "--set", "nprocs=16",
                 "--ranks-per-node", "1"]) == 0
    spread = capsys.readouterr().out
    assert "k = Min(64, nprocs) ranks sharing a node" in filled and "k = Min(1, nprocs) ranks sharing" in spread
    total = [float(text.split("predicted time per rank: ")[1].split(" s")[0]) for text in (filled, spread)]
    assert total[0] > total[1]


# the last cache shared by 2 and by 8 ranks
SHARED: dict[str, tuple[tuple[float, tuple[float, ...]], ...]] = {"solve/it/ls": ((2.0, (0.5, 1.0)), (8.0, (0.0, 1.0)))}


def test_a_rank_on_its_share_of_the_last_cache_is_priced_between_the_signatures_shares() -> None:
    """One rank alone hits the cache at 0.875; with the last cache shared by 2 at 0.5, by 8 not at all: its seconds
    per byte move linearly in log2 of the ranks sharing it (4 ranks: halfway between 2 and 8), beyond 8 the last."""
    signature = Signatures(hit_rates={"solve/it/ls": (0.875, 1.0)}, shared_hit_rates=SHARED)
    backend = MapsBackend(signatures=signature)
    words = 10 * 3000 * 8
    per_byte = {1: 1 / hand_f(0.875), 2: 1 / hand_f(0.5), 8: 1 / hand_f(0.0)}
    for k, seconds in per_byte.items():
        assert memory(backend, profile(), k) == pytest.approx(words * seconds, rel=1e-12)
    assert memory(backend, profile(), 4) == pytest.approx(words * (per_byte[2] + per_byte[8]) / 2, rel=1e-12)
    assert memory(backend, profile(), 32) == pytest.approx(words * per_byte[8], rel=1e-12)
    # two per node: every pair shares its node's cache, however many ranks there are
    pairs = MapsBackend(signatures=signature, ranks_per_node=2)
    assert memory(pairs, profile(), 16) == pytest.approx(words * per_byte[2], rel=1e-12)
    notes = backend.predict(builder(), profile()).notes
    assert any("on their share of the last cache" in note and "solve/it/ls" in note for note in notes)
    # with the multicore block too, each share's rates at that k's memory bandwidth
    both = memory(backend, node_profile(), 2)
    assert both > memory(backend, profile(), 2)


def test_shared_hit_rates_round_trip_and_bad_rows_name_their_field(tmp_path: Path) -> None:
    signature = Signatures(hit_rates={"solve/it/ls": (0.875, 1.0)}, shared_hit_rates=SHARED)
    path = save_signature_file(signature, tmp_path / "sig.json")
    assert load_signature_file(path, 2) == signature
    for entry, message in (
            ({"shared_hit_rates": [{"share": 2, "hit_rates": [0.5, 1.0]}]}, "own hit_rates .* are missing"),
            ({"hit_rates": [0.9, 1], "shared_hit_rates": [{"share": 1, "hit_rates": [0.5, 1.0]}]},
             r"shared_hit_rates\[0\]\.share: expected the ranks sharing the last cache, a number above 1"),
            ({"hit_rates": [0.9, 1], "shared_hit_rates": [{"share": 2, "hit_rates": [0.5, 1.0]}] * 2},
             r"shared_hit_rates\[1\]\.share: a second row of share 2"),
            ({"hit_rates": [0.9, 1], "shared_hit_rates": [{"share": 2, "hit_rates": [0.5]}]},
             r"shared_hit_rates\[0\]\.hit_rates.*expected 2")):
        path.write_text(json.dumps({"format": "ma-signature", "sites": {"solve/it/ls": entry}}))
        with pytest.raises(BackendError, match=message):
            load_signature_file(path, 2)


def test_a_shared_last_level_keeps_its_ways_and_lines() -> None:
    l3 = CacheLevel(3, 32 << 20, 16, 64)
    assert shared_last_level(l3, 4) == CacheLevel(3, 8 << 20, 16, 64)
    assert shared_last_level(CacheLevel(3, 3 * 16 * 64, 16, 64), 2).size_bytes == 16 * 64  # whole sets
    with pytest.raises(ProfileError, match=r"--cache-share.*shared by 0"):
        shared_last_level(l3, 0)


@pytest.mark.mpi
@pytest.mark.valgrind
def test_ma_signature_takes_the_hit_rates_of_a_shared_last_cache_from_the_runs(tmp_path: Path) -> None:
    """The node bench's stream over 3 MiB, three sweeps, on a hierarchy with a 4 MiB last level: alone, the sweeps
    after the first hit it; with the last level shared by 2 (2 MiB) they miss it. ma signature reads K = 2 from the
    run records and ma predict prices two ranks of one node on the shared rates."""
    WHEEL.skip_unless_available()
    program = WHEEL.compile_c(REPO / "bench" / "node_stream" / "stream.c", tmp_path / "stream")
    machine_path = small_l3_profile(tmp_path / "small-l3.json")
    n, runs = str(3 << 17), {}
    for label, extra in (("alone", ()), ("shared", ("--cache-share", "2"))):
        runs[label] = tmp_path / label
        WHEEL.ma("run", "-n", "1", "--trace-dir", str(runs[label]), "--counters", "valgrind", "--cache",
                 str(machine_path), *extra, "--", str(program), n, "3")
    assert json.loads((runs["shared"] / "ma-run.json").read_text())["cache"].endswith(",2097152:16:64")
    out = tmp_path / "stream.signature.json"
    done = WHEEL.ma("signature", str(runs["alone"]), "--shared", str(runs["shared"]), "--machine",
                    str(machine_path), "-o", str(out))
    assert "shared hit rates 1" in done.stdout
    signature = load_signature_file(out, 4)
    alone = signature.hit_rates["stream/sum"]
    (share, shared), = signature.shared_hit_rates["stream/sum"]
    # alone every access after the first sweep's hits the last level; on half of it, a twelfth go to memory
    assert share == 2.0 and 1 - alone[2] < 0.01 and 1 - shared[2] > 0.05 and shared[:2] == pytest.approx(alone[:2])
    one = json.loads(WHEEL.ma("predict", str(runs["alone"]), "--machine", str(machine_path), "--signatures",
                              str(out), "--set", "nprocs=1", "--format", "json").stdout)
    two = json.loads(WHEEL.ma("predict", str(runs["alone"]), "--machine", str(machine_path), "--signatures",
                              str(out), "--set", "nprocs=2", "--format", "json").stdout)
    assert two["total_s"] > one["total_s"]
    # a run of another hierarchy, or one whose last level is no share, is refused, naming the runs
    other = tmp_path / "other"
    shutil.copytree(runs["shared"], other)
    record = json.loads((other / "ma-run.json").read_text())
    (other / "ma-run.json").write_text(json.dumps({**record, "cache": "32768:8:64,524288:8:64,2097152:16:64"}))
    for given, message in ((other, "only the last level's size may differ"), (runs["alone"], "not a share of it")):
        refused = WHEEL.ma("signature", str(runs["alone"]), "--shared", str(given), "-o", str(out), check=False)
        assert refused.returncode == 2 and message in refused.stderr and str(given) in refused.stderr


def small_l3_profile(path: Path) -> Path:
    """The shipped profile with a 4 MiB last level: the hierarchy the tool simulates, its fit kept as it is."""
    doc = load_profile(SHIPPED).to_json()
    doc["caches"][2]["size_bytes"] = 4 << 20
    return from_json(doc).save(path)
