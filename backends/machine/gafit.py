"""Bandwidth as a function of cache hit rates, fitted by a genetic algorithm (Tikir et al., SC07, Section 3-4).

Equation 1 with Equations 3-6 (:mod:`.eq1`, where it is written) has ``n`` levels and ``k`` penalties.
The paper uses k = 2 penalties (``p_1, p_2``), one per cache level of its two-cache machines, and writes the
first level's factor as ``1 - (p_1 + p_2)``; ``penalties=k`` generalises that to k levels, by default one per
cache level (k = n - 1: p_1..p_3 on a machine with L1, L2 and L3). Only the ratios of the latencies ``c_i``
matter (T divides them out), so ``c_1`` is fixed at 1 and the others are latencies relative to the first level's.

The GA works on genomes in [0, 1]^D mapped to the parameter bounds (log scale for c, b and x), with
tournament selection, two-point crossover and Gaussian mutation (probabilities 0.8 and 0.8 as in the paper's
Table 2), elitism, and a Lamarckian step: the best genomes are refined by a bounded local search and
written back, the adaptation the paper's GAUL islands apply; the best of the last generation is then polished
by Nelder-Mead on the fitness itself (a memetic last step: the GA's search stops at a generation count, not at
an optimum). Fitness is the paper's: the sum of the absolute relative errors over all points. Everything is
vectorised over the population with NumPy and seeded, so a fit is reproducible.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ma_core.errors import FitError

from .eq1 import Eq1Params, equation1, numeric_damping

FloatArray = npt.NDArray[np.float64]
C_BOUNDS = (1.0, 1.0e4)  # latency of levels 2..n relative to level 1
X_BOUNDS = (1.0e-4, 1.0e2)
F_BOUNDS = (-30.0, 30.0)
_CHUNK = 256  # individuals per vectorised block: keeps the (individuals x points) temporaries in cache


def eq1(h: FloatArray, c: FloatArray, b: FloatArray, f: FloatArray, x: FloatArray) -> FloatArray:
    """Equation 1 (:func:`.eq1.equation1`) for a population: h (m, n); c, b (P, n); f, x (P, k). Returns (P, m)."""
    m, n = h.shape
    k = f.shape[1]
    rows = [h[None, :, i] for i in range(n)]
    out = np.empty((c.shape[0], m))
    for lo in range(0, c.shape[0], _CHUNK):
        hi = min(lo + _CHUNK, c.shape[0])
        out[lo:hi] = equation1(rows, [c[lo:hi, i, None] for i in range(n)], [b[lo:hi, i, None] for i in range(n)],
                               [f[lo:hi, i, None] for i in range(k)], [x[lo:hi, i, None] for i in range(k)],
                               numeric_damping)
    return out


@dataclass(frozen=True)
class GASettings:
    """GA settings; the defaults are the paper's Table 2 (population 10,000, 200 generations, 0.8/0.8)."""

    population: int = 10_000
    generations: int = 200
    mutation: float = 0.8
    crossover: float = 0.8
    tournament: int = 3
    elite: float = 0.01
    lamarck_every: int = 25
    lamarck_top: int = 4
    lamarck_evals: int = 400
    polish_evals: int = 4000  # Nelder-Mead evaluations on the GA's best at the end; 0: no polish
    seed: int = 0


@dataclass
class FitResult:
    params: Eq1Params
    fitness: float  # the GA's: sum of absolute relative errors
    seconds: float  # wall time
    cpu_seconds: float  # this process's CPU time: what the fit costs on a host others share
    settings: GASettings
    history: list[float] = field(default_factory=list)  # best fitness per generation


class _Genome:
    """Maps genomes in [0, 1]^D to Equation 1's parameters and back."""

    def __init__(self, levels: int, penalties: int, b_bounds: tuple[float, float]) -> None:
        self.n, self.k = levels, penalties
        self.dim = (levels - 1) + levels + 2 * penalties
        self.log_c = np.log(C_BOUNDS)
        self.log_b = np.log(b_bounds)
        self.log_x = np.log(X_BOUNDS)

    def decode(self, g: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        n, k = self.n, self.k
        pos = 0

        def take(width: int) -> FloatArray:
            nonlocal pos
            part = g[:, pos:pos + width]
            pos += width
            return part

        def log_scale(u: FloatArray, bounds: FloatArray) -> FloatArray:
            return np.asarray(np.exp(bounds[0] + u * (bounds[1] - bounds[0])))

        c = np.concatenate([np.ones((g.shape[0], 1)), log_scale(take(n - 1), self.log_c)], axis=1)
        b = log_scale(take(n), self.log_b)
        f = F_BOUNDS[0] + take(k) * (F_BOUNDS[1] - F_BOUNDS[0])
        x = log_scale(take(k), self.log_x)
        return c, b, f, x

    def encode(self, p: Eq1Params) -> FloatArray:
        def unlog(v: Sequence[float], bounds: FloatArray) -> list[float]:
            return [float((math.log(a) - bounds[0]) / (bounds[1] - bounds[0])) for a in v]

        genes = (unlog(p.c[1:], self.log_c) + unlog(p.b, self.log_b)
                 + [(a - F_BOUNDS[0]) / (F_BOUNDS[1] - F_BOUNDS[0]) for a in p.f] + unlog(p.x, self.log_x))
        return np.clip(np.array(genes), 0.0, 1.0)

    def params(self, g: FloatArray) -> Eq1Params:
        c, b, f, x = self.decode(g[None, :])
        return Eq1Params(tuple(c[0].tolist()), tuple(b[0].tolist()), tuple(f[0].tolist()), tuple(x[0].tolist()))


def check_data(hit_rates: npt.ArrayLike, bandwidth: npt.ArrayLike) -> tuple[FloatArray, FloatArray]:
    """Validated copies: cumulative hit rates (m, n) ending in 1, and positive bandwidths (m,)."""
    h = np.asarray(hit_rates, dtype=float)
    y = np.asarray(bandwidth, dtype=float)
    if h.ndim != 2 or h.shape[1] < 2:
        raise FitError(f"hit rates must be a table of shape (points, levels >= 2), got shape {h.shape}")
    if y.shape != (h.shape[0],):
        raise FitError(f"{y.shape[0] if y.ndim else 0} bandwidths for {h.shape[0]} hit-rate rows")
    if h.shape[0] == 0:
        raise FitError("no points to fit")
    if not (np.all(np.isfinite(h)) and np.all((h >= 0) & (h <= 1))):
        raise FitError("hit rates must lie in [0, 1]")
    if np.any(np.diff(h, axis=1) < -1e-12):
        raise FitError("hit rates must be cumulative: h_1 <= h_2 <= ... <= h_n")
    if not np.allclose(h[:, -1], 1.0):
        raise FitError("the last level (main memory) must have hit rate 1")
    if not np.all(np.isfinite(y) & (y > 0)):
        raise FitError("bandwidths must be positive and finite")
    return h, y


def fit(hit_rates: npt.ArrayLike, bandwidth: npt.ArrayLike, *, penalties: int | None = None,
        settings: GASettings | None = None,
        progress: Callable[[int, float], None] | None = None) -> FitResult:
    """Fit Equation 1 to measured bandwidths at the given cumulative hit rates; ``progress(gen, best)``.

    ``penalties`` is k, the number of penalty terms p_1..p_k; None: one per cache level (n - 1)."""
    h, y = check_data(hit_rates, bandwidth)
    cfg = settings or GASettings()
    n = h.shape[1]
    if penalties is None:
        penalties = n - 1
    if not 0 <= penalties < n:
        raise FitError(f"penalties must be between 0 and {n - 1} for {n} levels, got {penalties}")
    if cfg.population < 4 or cfg.generations < 1:
        raise FitError("the GA needs a population of at least 4 and at least one generation")
    started, cpu_started = time.perf_counter(), time.process_time()
    rng = np.random.default_rng(cfg.seed)
    genome = _Genome(n, penalties, (0.5 * float(y.min()), 2.0 * float(y.max())))
    inv_y = 1.0 / y
    # MultiMAPS repeats hit-rate rows (every L1-resident point is (1, ..., 1), strides of a line or more share
    # theirs): Equation 1 is evaluated once per distinct row
    rows, point_row = np.unique(h, axis=0, return_inverse=True)
    point_row = point_row.ravel()

    def fitness(pop: FloatArray) -> FloatArray:
        predicted = eq1(rows, *genome.decode(pop))[:, point_row]
        return np.asarray(np.abs(predicted - y) @ inv_y)

    def residuals(g: FloatArray) -> FloatArray:
        return np.asarray((eq1(rows, *genome.decode(g[None, :]))[0, point_row] - y) * inv_y)

    pop = rng.random((cfg.population, genome.dim))
    score = fitness(pop)
    elite = max(1, int(cfg.elite * cfg.population))
    history: list[float] = []
    for gen in range(cfg.generations):
        order = np.argsort(score)
        pop, score = pop[order], score[order]
        if cfg.lamarck_every and (gen + 1) % cfg.lamarck_every == 0:
            _lamarck(pop, score, residuals, cfg)
        history.append(float(score[0]))
        if progress:
            progress(gen, float(score[0]))
        children = _offspring(pop, score, cfg.population - elite, cfg, rng, 1.0 - gen / cfg.generations)
        pop = np.concatenate([pop[:elite], children])
        score = np.concatenate([score[:elite], fitness(children)])
    order = np.argsort(score)
    pop, score = pop[order], score[order]
    _lamarck(pop, score, residuals, cfg)
    best = int(np.argmin(score))
    if cfg.polish_evals:
        _polish(pop, score, best, fitness, cfg.polish_evals)
    return FitResult(genome.params(pop[best]), float(score[best]), time.perf_counter() - started,
                     time.process_time() - cpu_started, cfg,
                     [*history, float(score[best])])


def _offspring(pop: FloatArray, score: FloatArray, count: int, cfg: GASettings, rng: np.random.Generator,
               temperature: float) -> FloatArray:
    """Tournament selection, two-point crossover and Gaussian mutation, all vectorised."""
    size, dim = pop.shape
    pairs = (count + 1) // 2
    contenders = rng.integers(0, size, (2 * pairs, cfg.tournament))
    winners = contenders[np.arange(2 * pairs), np.argmin(score[contenders], axis=1)]
    mothers, fathers = pop[winners[:pairs]], pop[winners[pairs:]]
    cuts = np.sort(rng.integers(0, dim + 1, (pairs, 2)), axis=1)
    genes = np.arange(dim)
    swap = (genes >= cuts[:, :1]) & (genes < cuts[:, 1:]) & (rng.random((pairs, 1)) < cfg.crossover)
    first = np.where(swap, fathers, mothers)
    second = np.where(swap, mothers, fathers)
    children = np.concatenate([first, second])[:count]
    mutate = (rng.random((count, 1)) < cfg.mutation) & (rng.random((count, dim)) < max(2.0 / dim, 0.1))
    sigma = 0.002 + 0.15 * temperature ** 2
    children = np.where(mutate, children + rng.normal(0.0, sigma, children.shape), children)
    return np.asarray(np.clip(children, 0.0, 1.0))


def _lamarck(pop: FloatArray, score: FloatArray, residuals: Callable[[FloatArray], FloatArray],
             cfg: GASettings) -> None:
    """Refine the best (sorted) genomes by a bounded local search and write improvements back (Lamarckian).

    The search minimises a robust (soft-L1) loss of the relative residuals with a trust-region method: close
    to the paper's sum of absolute relative errors but smooth, so it converges in tens of evaluations where a
    derivative-free search needs thousands. A result is kept only if it improves the GA's own fitness.
    """
    from scipy.optimize import least_squares

    for i in range(min(cfg.lamarck_top, len(pop))):
        found = least_squares(residuals, pop[i], bounds=(0.0, 1.0), method="trf", loss="soft_l1", f_scale=0.01,
                              max_nfev=cfg.lamarck_evals, x_scale=0.1)
        candidate = np.clip(found.x, 0.0, 1.0)
        fitness = float(np.abs(residuals(candidate)).sum())
        if fitness < score[i]:
            pop[i] = candidate
            score[i] = fitness


def _polish(pop: FloatArray, score: FloatArray, best: int, fitness: Callable[[FloatArray], FloatArray],
            evals: int) -> None:
    """Nelder-Mead from genome ``best`` on the GA's own fitness (not a smooth stand-in), within the genome's
    bounds; the result replaces the genome if it is fitter. Deterministic: the simplex starts from the genome."""
    from scipy.optimize import minimize

    found = minimize(lambda g: float(fitness(g[None, :])[0]), pop[best], method="Nelder-Mead",
                     bounds=[(0.0, 1.0)] * pop.shape[1],
                     options={"maxfev": evals, "xatol": 1e-7, "fatol": 1e-9, "adaptive": True})
    candidate = np.clip(found.x, 0.0, 1.0)
    value = float(fitness(candidate[None, :])[0])
    if value < score[best]:
        pop[best], score[best] = candidate, value


# --- the paper's Table 4: average absolute relative error and its standard deviation ---------------------
@dataclass(frozen=True)
class ErrorSummary:
    points: int
    avg_abs_rel_error: float  # fraction (0.036 = 3.6 %)
    std_abs_rel_error: float
    max_abs_rel_error: float

    def as_dict(self) -> dict[str, float | int]:
        return {"points": self.points, "avg_abs_rel_error": self.avg_abs_rel_error,
                "std_abs_rel_error": self.std_abs_rel_error, "max_abs_rel_error": self.max_abs_rel_error}


def relative_errors(measured: npt.ArrayLike, modelled: npt.ArrayLike) -> FloatArray:
    """Signed relative error (modelled - measured) / measured per point."""
    y = np.asarray(measured, dtype=float)
    return np.asarray((np.asarray(modelled, dtype=float) - y) / y)


def summarise(errors: npt.ArrayLike) -> ErrorSummary:
    e = np.abs(np.asarray(errors, dtype=float))
    return ErrorSummary(int(e.size), float(e.mean()), float(e.std()), float(e.max()))


def error_table(measured: npt.ArrayLike, modelled: npt.ArrayLike,
                curves: Sequence[str]) -> dict[str, ErrorSummary]:
    """Table-4 figures overall (key ``all``) and per curve (``stride 1``, ..., ``random``)."""
    errors = relative_errors(measured, modelled)
    labels = np.asarray(curves)
    table = {"all": summarise(errors)}
    for label in dict.fromkeys(curves):
        table[label] = summarise(errors[labels == label])
    return table


def format_error_table(table: Mapping[str, ErrorSummary]) -> str:
    lines = [f"{'curve':<10} {'points':>6} {'avg |err|':>10} {'std':>8} {'max':>8}"]
    for label, s in table.items():
        lines.append(f"{label:<10} {s.points:>6} {100 * s.avg_abs_rel_error:>9.2f}% {100 * s.std_abs_rel_error:>7.2f}"
                     f"% {100 * s.max_abs_rel_error:>7.2f}%")
    return "\n".join(lines)


def settings_dict(cfg: GASettings) -> dict[str, Any]:
    from dataclasses import asdict

    return asdict(cfg)
