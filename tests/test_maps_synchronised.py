"""The wait for a later partner where every rank has a core (``network.synchronised``): the probe's exchange with
work streamed from memory on one rank per core, the typed block that holds it, and the maps backend's charge per
message (the curve's wall time beyond the work and L at the program's work per message, interpolated in log2 of the
ranks between the measured rank counts; nothing for one rank; the oversubscribed exchange's beyond the cores)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import sympy
from test_maps_backend import BANDWIDTH, LATENCY, builder, halo_seconds, profile

from backends.cpython.runtime import message_extra as python_message_extra
from backends.machine.probe import ProbeSettings, measure_synchronised
from backends.machine.profile import MachineProfile, from_json, with_block
from backends.maps import MapsBackend
from ma_core.errors import ProfileError

POINT = {"n": 10, "m": 1000}
HALO_BYTES = 20 * 8000 / BANDWIDTH  # the halo site: 20 messages of 8000 bytes per rank


def at(expr: sympy.Expr, **values: float) -> float:
    return float(expr.subs({sympy.Symbol(k): v for k, v in values.items()}))


def block(curves: dict[int, list[tuple[float, float]]], cores: int = 2) -> dict[str, Any]:
    return {"version": 1, "pattern": "exchange", "cores": cores, "batch_s": 0.05,
            "curves": [{"ranks": ranks, "stream_mib": 64,
                        "work": [{"passes": i, "work_s": x, "seconds": y} for i, (x, y) in enumerate(curve)]}
                       for ranks, curve in curves.items()]}


def with_sync(curves: dict[int, list[tuple[float, float]]], cores: int = 2) -> MachineProfile:
    return with_block(profile(), "network.synchronised", block(curves, cores))


def loglog(curve: list[tuple[float, float]], work: float) -> float:
    """The wall time per message at ``work`` between two measured points with work, as numpy interpolates logs."""
    xs, ys = np.log([x for x, _ in curve if x > 0]), np.log([y for x, y in curve if x > 0])
    return math.exp(float(np.interp(math.log(work), xs, ys)))


def work_per_message(procs: int) -> float:
    """A rank's work between messages (compute + memory over the latencies its messages pay), as the backend
    reads it off a prediction without the block: the block does not change the work."""
    plain = MapsBackend(cores=2).predict(builder(language="c"), profile())
    return at(plain.work_per_message, **POINT, nprocs=procs)


def test_up_to_one_rank_per_core_each_message_waits_the_curves_excess_over_work_and_latency() -> None:
    w = work_per_message(2)
    curve = [(0.0, LATENCY), (w / 2, 15 * w), (2 * w, 60 * w)]  # log-log: 30 w at w
    wait = loglog(curve, w) - w - LATENCY
    assert wait == pytest.approx(29 * w - LATENCY) and wait > 10 * LATENCY
    synced = MapsBackend(cores=2).predict(builder(language="c"), with_sync({2: curve}))
    plain = MapsBackend(cores=2).predict(builder(language="c"), profile())
    assert any("network.synchronised" in note for note in synced.notes)
    assert any("no synchronised exchange" in note for note in plain.notes)
    two = {**POINT, "nprocs": 2}
    assert halo_seconds(synced, two) == pytest.approx(20 * (LATENCY + wait) + HALO_BYTES, rel=1e-9)
    assert halo_seconds(plain, two) == pytest.approx(20 * LATENCY + HALO_BYTES, rel=1e-12)
    messages = at(synced.messages, **two)
    assert at(synced.total, **two) == pytest.approx(at(plain.total, **two) + messages * wait, rel=1e-9)
    # one rank has no partner to wait for
    one = {**POINT, "nprocs": 1}
    assert halo_seconds(synced, one) == pytest.approx(halo_seconds(plain, one), rel=1e-12)


def test_beyond_the_cores_the_oversubscribed_exchange_prices_the_message_as_before() -> None:
    w = work_per_message(2)
    synced = MapsBackend(cores=2).predict(builder(language="c"), with_sync({2: [(0.0, LATENCY), (w, 3 * w)]}))
    plain = MapsBackend(cores=2).predict(builder(language="c"), profile())
    four = {**POINT, "nprocs": 4}
    assert at(synced.total, **four) == pytest.approx(at(plain.total, **four), rel=1e-12)


def test_between_the_measured_rank_counts_the_wait_moves_with_log2_of_the_ranks() -> None:
    """Curves at 2 and 8 ranks on an 8-core node: 4 ranks wait halfway between, 8 and more (on 8 cores) the
    8-rank curve's wait, and an unmeasured 16-core node's ranks stay at the last curve's."""
    w = work_per_message(4)
    two = [(0.0, LATENCY), (w / 4, 5 * w), (4 * w, 80 * w)]  # 20 w at w
    eight = [(0.0, LATENCY), (w / 4, 10 * w), (4 * w, 160 * w)]  # 40 w at w
    synced = MapsBackend(cores=8).predict(builder(language="c"), with_sync({2: two, 8: eight}, cores=8))
    plain = MapsBackend(cores=8).predict(builder(language="c"), profile())
    at4 = {**POINT, "nprocs": 4}
    waits = [loglog(c, w) - w - LATENCY for c in (two, eight)]
    assert min(waits) > 5 * LATENCY
    assert halo_seconds(synced, at4) - halo_seconds(plain, at4) == pytest.approx(20 * sum(waits) / 2, rel=1e-9)
    w8 = at(plain.work_per_message, **POINT, nprocs=8)
    at8 = {**POINT, "nprocs": 8}
    assert halo_seconds(synced, at8) - halo_seconds(plain, at8) == pytest.approx(
        20 * (loglog(eight, w8) - w8 - LATENCY), rel=1e-9)


def test_a_python_programs_exchange_curve_is_referred_to_the_wait_already_charged() -> None:
    """The two-rank mpi4py curve holds the late partner too: what it adds is taken beyond the charged wait, so a
    Python message costs L + max(wait, its own excess), not both."""
    curve = [(0.0, 3e-6), (10e-6, 20e-6), (100e-6, 130e-6)]
    w = sympy.Float(50e-6)
    plain = float(python_message_extra(curve, 3, 1e-6, 1e-7, w))
    small, large = sympy.Float(2e-6), sympy.Float(plain + 5e-6)
    assert float(python_message_extra(curve, 3, 1e-6, 1e-7, w, small)) == pytest.approx(plain - 2e-6, rel=1e-12)
    assert float(python_message_extra(curve, 3, 1e-6, 1e-7, w, large)) == 0.0


def test_the_block_round_trips_and_bad_blocks_name_their_field() -> None:
    machine = with_sync({8: [(0.0, 1e-6), (1e-4, 1.1e-4)], 2: [(0.0, 1e-6), (1e-4, 1.05e-4)]}, cores=8)
    sync = machine.network.synchronised if machine.network else None
    assert sync is not None and [c.ranks for c in sync.curves] == [2, 8] and sync.extra["batch_s"] == 0.05
    assert sync.curves[0].curve == [(0.0, 1e-6), (1e-4, 1.05e-4)]
    assert from_json(machine.to_json()) == machine
    twice = block({2: [(0.0, 1e-6), (1e-4, 1.1e-4)]})
    twice["curves"] *= 2
    with pytest.raises(ProfileError, match=r"network\.synchronised\.curves\[1\]\.ranks'.*second curve of 2 ranks"):
        with_block(profile(), "network.synchronised", twice)
    with pytest.raises(ProfileError, match=r"network\.synchronised\.curves\[0\]\.ranks'.*one rank per core"):
        with_sync({4: [(0.0, 1e-6), (1e-4, 1.1e-4)]}, cores=2)
    with pytest.raises(ProfileError, match=r"network\.synchronised\.curves\[0\]\.work"):
        with_sync({2: [(0.0, 1e-6)]})


@pytest.mark.mpi
def test_the_probe_measures_the_exchange_with_work_on_one_rank_per_core() -> None:
    measured = measure_synchronised(ProbeSettings.quick(), last_cache_bytes=1 << 20, cores=2)
    assert measured["cores"] == 2 and [c["ranks"] for c in measured["curves"]] == [2]
    rows = measured["curves"][0]["work"]
    assert [r["passes"] for r in rows] == [0, 16, 256] and rows[0]["work_s"] == 0.0
    assert 0 < rows[1]["work_s"] < rows[2]["work_s"]  # more passes, more work
    # the exchange with work lasts about as long as the work and more than the exchange alone
    assert rows[2]["seconds"] > rows[0]["seconds"] and rows[2]["seconds"] > 0.5 * rows[2]["work_s"]
    machine = with_block(profile(), "network.synchronised", measured)
    assert machine.network is not None and machine.network.synchronised is not None
