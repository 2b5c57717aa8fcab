"""The node term of the maps backend (backends/maps/node.py): with the profile's multicore block, each rank's
memory is priced at the bandwidth of the ranks that share its node, symbolic in nprocs; without it, as before."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sympy
from post_fixtures import write_run
from test_maps_backend import C2, builder, hand_f, profile, program

from backends.machine import multicore, whatif
from backends.machine.profile import MachineProfile, with_block
from backends.maps import MapsBackend
from ma_cli.main import main
from ma_core.errors import BackendError

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
