"""The GA bandwidth fit: Equation 1 against a hand evaluation, recovery of known parameters from a surface it
generated, reproducibility, the Table-4 error summary and bad input."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from backends.machine import gafit
from backends.machine.gafit import Eq1Params, FitError, GASettings

TRUE = Eq1Params(c=(1.0, 3.5, 12.0, 60.0), b=(55.0, 30.0, 15.0, 6.0), f=(3.0, -2.0), x=(0.05, 0.3))


def by_hand(h: list[float], p: Eq1Params) -> float:
    """Equations 3, 4, 6 and 1 written out for one point, straight from the paper."""
    n, k = len(h), len(p.f)
    hh = [0.0, *h]
    t = [(hh[i + 1] - hh[i]) * p.c[i] for i in range(n)]
    total = sum(t)
    pen = [p.f[i] * (1 - math.exp(-(1 - h[i]) / (1 - h[i] + p.x[i]))) / (1 - math.e) * t[i] / total
           for i in range(k)]
    bw = 0.0
    for i in range(n):
        factor = 1 - sum(pen) if i == 0 else 1 + (pen[i - 1] if i - 1 < k else 0.0)
        bw += t[i] / total * p.b[i] * factor
    return bw


def synthetic_hit_rates(count: int, levels: int, seed: int) -> np.ndarray:
    """Cumulative hit rates like a MultiMAPS sweep's: plateaus (a level holds everything) and drops between."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(count):
        u = np.sort(rng.random(levels - 1))
        if rng.random() < 0.5:
            u[rng.integers(0, levels - 1):] = 1.0
        rows.append([*u, 1.0])
    return np.array(rows)


def test_equation_1_matches_the_paper_written_out() -> None:
    h = synthetic_hit_rates(50, 4, seed=5)
    vectorised = TRUE.bandwidth(h)
    assert vectorised == pytest.approx([by_hand(list(row), TRUE) for row in h], rel=1e-12)
    # without penalties it is Equation 5: plateaus weighted by the share of time in each level
    plain = Eq1Params(TRUE.c, TRUE.b, (0.0, 0.0), TRUE.x)
    assert plain.bandwidth([1, 1, 1, 1])[0] == pytest.approx(55.0)
    assert plain.bandwidth([0, 0, 0, 1])[0] == pytest.approx(6.0)
    assert plain.bandwidth([0.5, 1, 1, 1])[0] == pytest.approx((0.5 * 55 + 0.5 * 3.5 * 30) / (0.5 + 0.5 * 3.5))


def test_ga_recovers_known_parameters_within_two_percent() -> None:
    h = synthetic_hit_rates(200, 4, seed=1)
    result = gafit.fit(h, TRUE.bandwidth(h), penalties=2,
                       settings=GASettings(population=1000, generations=40, seed=3, lamarck_every=10))
    for name in ("c", "b", "f", "x"):
        assert getattr(result.params, name) == pytest.approx(getattr(TRUE, name), rel=0.02), name
    assert result.fitness < 1e-3
    assert result.history[-1] <= result.history[0]


def test_ga_is_reproducible_with_a_seed() -> None:
    h = synthetic_hit_rates(60, 3, seed=2)
    y = Eq1Params((1.0, 4.0, 20.0), (40.0, 12.0, 3.0), (1.0,), (0.1,)).bandwidth(h)
    settings = GASettings(population=200, generations=10, seed=7, lamarck_every=5, lamarck_evals=200)
    one, two = gafit.fit(h, y, penalties=1, settings=settings), gafit.fit(h, y, penalties=1, settings=settings)
    assert one.params == two.params and one.history == two.history
    other = gafit.fit(h, y, penalties=1, settings=GASettings(population=200, generations=10, seed=8,
                                                              lamarck_every=5, lamarck_evals=200))
    assert other.history != one.history


def test_one_penalty_per_cache_level_by_default() -> None:
    # the paper's p_1, p_2 are those of its machines' two cache levels: with L1, L2, L3 and memory, p_1..p_3
    h = synthetic_hit_rates(40, 4, seed=4)
    result = gafit.fit(h, TRUE.bandwidth(h), settings=GASettings(population=50, generations=2, polish_evals=0))
    assert len(result.params.f) == len(result.params.x) == 3


def test_polish_lowers_the_fitness_of_a_short_ga() -> None:
    h = synthetic_hit_rates(120, 4, seed=6)
    y = TRUE.bandwidth(h)
    short = GASettings(population=100, generations=5, seed=2, lamarck_every=0, lamarck_top=0, polish_evals=0)
    plain = gafit.fit(h, y, penalties=2, settings=short)
    polished = gafit.fit(h, y, penalties=2, settings=replace(short, polish_evals=2000))
    assert polished.history[:-1] == plain.history[:-1]  # the same GA up to the last step
    assert polished.fitness < 0.9 * plain.fitness
    again = gafit.fit(h, y, penalties=2, settings=replace(short, polish_evals=2000))
    assert again.params == polished.params  # Nelder-Mead from the same genome: reproducible


def test_error_table_like_table_4() -> None:
    measured = [10.0, 20.0, 10.0, 40.0]
    modelled = [11.0, 18.0, 10.0, 44.0]
    table = gafit.error_table(measured, modelled, ["stride 1", "stride 1", "stride 2", "stride 2"])
    assert table["all"].avg_abs_rel_error == pytest.approx((0.1 + 0.1 + 0.0 + 0.1) / 4)
    assert table["all"].std_abs_rel_error == pytest.approx(np.std([0.1, 0.1, 0.0, 0.1]))
    assert table["stride 2"].avg_abs_rel_error == pytest.approx(0.05)
    assert table["stride 1"].max_abs_rel_error == pytest.approx(0.1)
    text = gafit.format_error_table(table)
    assert "stride 2" in text and "7.50%" in text


@pytest.mark.parametrize(("h", "y", "message"), [
    ([[0.5, 1.0]], [1.0, 2.0], "bandwidths for 1 hit-rate rows"),
    ([[0.5, 0.4, 1.0]], [1.0], "cumulative"),
    ([[0.5, 0.9]], [1.0], "main memory"),
    ([[1.5, 1.0]], [1.0], r"\[0, 1\]"),
    ([[0.5, 1.0]], [0.0], "positive"),
    ([0.5, 1.0], [1.0], "shape"),
])
def test_bad_fit_input(h: list, y: list, message: str) -> None:
    with pytest.raises(FitError, match=message):
        gafit.fit(h, y, settings=GASettings(population=10, generations=1))


def test_penalties_must_fit_the_levels() -> None:
    with pytest.raises(FitError, match="penalties must be between 0 and 1"):
        gafit.fit([[0.5, 1.0]], [1.0], penalties=2, settings=GASettings(population=10, generations=1))
