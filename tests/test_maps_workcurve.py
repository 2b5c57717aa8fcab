"""The wait of ranks beyond the cores read off the probe's oversubscribed exchange with work between messages
(``network.oversubscribed.work``): the curve's log-log interpolation against numpy.interp, and the maps
backend's communication on hand-computed cases (the rank's time per message is the curve's wall time at the
probe's ranks per core; no curve or no more ranks than cores: as before)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import sympy
from post_fixtures import octave_value
from test_maps_backend import BANDWIDTH, LATENCY, builder, halo_seconds, profile

from backends.machine.profile import MachineProfile, with_block
from backends.maps import MapsBackend
from backends.maps.network import wall_per_message

CURVE = [(0.0, 40e-6), (10e-6, 50e-6), (100e-6, 400e-6), (1e-3, 5e-3)]


def at(expr: sympy.Expr, **values: float) -> float:
    return float(expr.subs({sympy.Symbol(k): v for k, v in values.items()}))


def test_the_curve_is_numpy_interp_of_the_logs_inside_linear_from_zero_and_stretched_beyond() -> None:
    w = sympy.Symbol("w")
    wall = wall_per_message(CURVE, w)
    xs, ys = np.log([x for x, _ in CURVE[1:]]), np.log([y for _, y in CURVE[1:]])
    for work in (10e-6, 20e-6, 31.6e-6, 100e-6, 500e-6, 1e-3):
        assert at(wall, w=work) == pytest.approx(math.exp(np.interp(math.log(work), xs, ys)), rel=1e-12)
    assert at(wall, w=math.sqrt(10e-6 * 100e-6)) == pytest.approx(math.sqrt(50e-6 * 400e-6), rel=1e-12)
    assert at(wall, w=0) == pytest.approx(40e-6) and at(wall, w=5e-6) == pytest.approx(45e-6)
    assert at(wall, w=4e-3) == pytest.approx(4 * 5e-3)  # the last point's stretch, 5x
    assert at(wall_per_message(CURVE[1:], w), w=1e-6) == pytest.approx(50e-6)  # no zero-work point: the first's


def test_the_curve_puts_no_condition_on_the_work() -> None:
    """A whole program's work may hold Piecewise terms (the node term's): the curve reads it through min, max, log
    and exp only, since SymPy folds each Piecewise inside a condition into the condition's branches (a seven-point
    curve at CG B's work took minutes and gigabytes). Its values are the log-log Piecewise's."""
    n, w = sympy.Symbol("nprocs"), sympy.Symbol("w")
    node = sympy.Piecewise((1.0, n <= 1), (n ** 0.45, n <= 2), (1.37, True))
    work = 3e-5 * node + w
    seven = [(0.0, 11e-6), (5e-6, 20e-6), (17e-6, 42e-6), (86e-6, 187e-6), (346e-6, 586e-6), (1189e-6, 2898e-6),
             (5554e-6, 11342e-6)]
    wall = wall_per_message(seven, work)
    assert wall.atoms(sympy.Piecewise) == {node} and not wall.atoms(sympy.Rel) - node.atoms(sympy.Rel)
    xs, ys = np.log([x for x, _ in seven[1:]]), np.log([y for _, y in seven[1:]])
    for extra in (2e-6, 20e-6, 300e-6, 2e-3, 8e-3):
        total = 3e-5 * 2 ** 0.45 + extra
        expected = math.exp(np.interp(math.log(total), xs, ys)) if total <= seven[-1][0] else total * 11342 / 5554
        assert at(wall, nprocs=2, w=extra) == pytest.approx(expected, rel=1e-12)


def with_curve(curve: list[tuple[float, float]], version: int = 2) -> MachineProfile:
    block: dict[str, object] = {"version": version, "pattern": "exchange", "ranks": 4, "cores": 2, "latency_s": 7e-6,
                                "bandwidth_bytes_per_s": BANDWIDTH}
    if curve:
        block["work"] = [{"work_s": x, "seconds": y} for x, y in curve]
    return with_block(profile(), "network.oversubscribed", block)


def rank_work(point: dict[str, int]) -> float:
    """Compute + memory of one rank on a core of its own (no time-sharing: --cores 0)."""
    alone = MapsBackend(cores=0).predict(builder(), profile())
    return at(alone.part("compute") + alone.part("memory"), **point)


def test_at_the_probes_ratio_a_rank_spends_the_curves_wall_time_per_message() -> None:
    """4 ranks on 2 cores (r = 2, e = 1). Latencies a n per rank: allreduce 2 x 10, halo 1 x 20, bcast 2 x 1
    = 42; bytes: 2 x 10 x 8 + 20 x 8000 + 2 x 16. With w = W/42 between (x1, y1) and (x2, y2) of a curve,
    the wait per message is y(w) - 2 w and the rank's time 42 y(w) + bytes/B: the time-sharing stretch is
    charged once."""
    point = {"n": 10, "m": 1000, "nprocs": 4}
    w = rank_work(point) / 42
    y1, y2 = 30 * w, 120 * w  # at w/2 and 2w: y(w) = sqrt(y1 y2) = 60 w
    machine = with_curve([(0.0, 10 * w), (w / 2, y1), (2 * w, y2)])
    shared = MapsBackend(cores=2).predict(builder(), machine)
    assert any("work curve" in note for note in shared.notes)
    wait = 60 * w - 2 * w
    assert at(shared.messages, **point) == 42 and at(shared.work_per_message, **point) == pytest.approx(w, rel=1e-12)
    assert halo_seconds(shared, point) == pytest.approx(20 * wait + 20 * 8000 / BANDWIDTH, rel=1e-9)
    total = at(shared.total, **point)
    assert total == pytest.approx(42 * 60 * w + (160 + 160000 + 32) / BANDWIDTH, rel=1e-9)
    # twice the ranks per core (e = 3): messages a n = 30 + 20 + 3, the wait beyond L three times
    point8 = {**point, "nprocs": 8}
    w8 = rank_work(point8) / 53
    wall8 = at(wall_per_message([(0.0, 10 * w), (w / 2, y1), (2 * w, y2)], sympy.Symbol("w")), w=w8)
    assert halo_seconds(shared, point8) == pytest.approx(
        20 * (LATENCY + 3 * (wall8 - 2 * w8 - LATENCY)) + 20 * 8000 / BANDWIDTH, rel=1e-9)


def test_no_curve_or_no_more_ranks_than_cores_prices_messages_as_before() -> None:
    point = {"n": 10, "m": 1000}
    curved = MapsBackend(cores=2).predict(builder(), with_curve(CURVE))
    plain = MapsBackend(cores=2).predict(builder(), with_curve([], version=1))
    for procs in (1, 2):  # one rank per core or fewer: the two-rank L and B, curve or not
        at_p = {**point, "nprocs": procs}
        assert halo_seconds(curved, at_p) == pytest.approx(20 * LATENCY + 20 * 8000 / BANDWIDTH, rel=1e-12)
        assert at(curved.total, **at_p) == pytest.approx(at(plain.total, **at_p), rel=1e-12)
    # a version-1 block (no curve): the oversubscribed exchange's latency at 4 ranks on 2 cores, as before
    assert halo_seconds(plain, {**point, "nprocs": 4}) == pytest.approx(20 * 7e-6 + 20 * 8000 / BANDWIDTH, rel=1e-12)
    assert not any("work curve" in note for note in plain.notes)


@pytest.mark.octave
def test_the_curves_prediction_exports_to_octave_and_evaluates_alike(tmp_path: Path) -> None:
    b = builder()
    prediction = MapsBackend(cores=2).predict(b, with_curve(CURVE))
    model = b.submodel("maps_time", prediction.total)
    for procs in (2, 4, 8):
        args = {"n": 10, "m": 1000, "nprocs": procs}
        expected = prediction.evaluate(args)
        assert math.isfinite(expected) and expected > 0
        assert octave_value(model, args, tmp_path) == pytest.approx(expected, rel=1e-12)
