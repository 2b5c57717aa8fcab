"""PASS/FAIL per call under a tolerance other than the runtime's, from what the trace keeps of each site.

A trace folds the calls of a site: per rank and thread it keeps the number of calls, the minimum, maximum and
sum of the predicted and the measured values, and the runtime's verdicts under its own tolerance ``t0``. Under
another tolerance ``t`` each call is judged again, exactly where that information decides it:

- ``t == t0``: the runtime's verdicts;
- the prediction is the same on every call of the cell (the usual case): the error ``|p - m| / |m|`` of one
  prediction grows on both sides of ``m = p``, so the calls that measured the minimum and the maximum are the
  worst ones. All pass when both are within ``t``; all fail when every call measured the same value and it is
  outside ``t``. Otherwise those two calls are judged one by one, and the runtime's verdicts decide the others
  as far as they can: under a larger tolerance a call that passed still passes, under a smaller one a call that
  failed still fails;
- the prediction changes between calls: every call passed at ``t0 <= t``, or every call failed at ``t0 >= t``,
  decides; otherwise the runtime's verdicts, as above.

The calls left undecided take the verdict of their cell: its per-call error bound (the module docstring of
validation.py) within ``t`` or not. For a constant prediction that bound is the larger error of the minimum and
the maximum, so there the undecided calls fail with the worst call. An MPI call passes when both its bytes per
message and its message count pass; a call that asserted no message and made none passes whatever its size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .traceset import Site, Stats, is_mpi


@dataclass
class Verdicts:
    """Calls per rank (arrays over the trace's ranks): passed, failed, and of those how many took their cell's
    verdict because the trace cannot judge them one by one."""

    passes: np.ndarray
    fails: np.ndarray
    by_cell: np.ndarray


def relative_error(predicted: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """``|p - m| / |m|`` elementwise: 0 where equal (0/0 is agreement), infinite for ``p != 0 = m``."""
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.abs(predicted - measured) / np.abs(measured)
    return np.where(predicted == measured, 0.0, out)


@dataclass
class _Cells:
    """What the trace decides for one quantity (bytes or count, or the value) in each (rank, thread) cell."""

    all_pass: np.ndarray
    all_fail: np.ndarray
    bound: np.ndarray          # the cell's per-call error bound
    extremes: list[np.ndarray]  # errors of the calls that measured the minimum and the maximum (NaN: no such call)


def _cells(pred: Stats, meas: Stats, t: float, t0: float, passes: np.ndarray, fails: np.ndarray) -> _Cells:
    constant = (pred.min == pred.max) & np.isfinite(pred.min) & (meas.n > 0)
    p = np.where(constant, pred.min, np.nan)
    e_lo, e_hi = relative_error(p, meas.min), relative_error(p, meas.max)
    distinct = meas.min != meas.max
    crosses_zero = (meas.min < 0) & (meas.max > 0)
    worst = np.maximum(e_lo, e_hi)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_mean = pred.sum / np.where(pred.n > 0, pred.n, 1)
        m_mean = meas.sum / np.where(meas.n > 0, meas.n, 1)
    bound = np.where(constant, np.where(crosses_zero & (p != 0), np.inf, worst), relative_error(p_mean, m_mean))
    all_pass = np.where(constant, (worst <= t) & ~crosses_zero, (t >= t0) & (fails == 0))
    all_fail = np.where(constant, ~distinct & (e_lo > t), (t <= t0) & (passes == 0))
    extremes = [np.where(constant, e_lo, np.nan), np.where(constant & distinct, e_hi, np.nan)]
    return _Cells(all_pass, all_fail, bound, extremes)


def _between(errors: list[np.ndarray], above: float, at_most: float, shape: tuple[int, ...]) -> np.ndarray:
    """How many of the extreme calls have an error in (above, at_most] (NaN: no such call, never counted)."""
    out = np.zeros(shape, dtype=np.int64)
    with np.errstate(invalid="ignore"):
        for e in errors:
            out += (e > above) & (e <= at_most)
    return out


def rejudge(site: Site, tolerance: float, runtime_tolerance: float) -> Verdicts:
    """The site's calls per rank judged under ``tolerance`` (the runtime judged them under ``runtime_tolerance``)."""
    passes, fails = site.passes.astype(np.int64), site.fails.astype(np.int64)
    if tolerance == runtime_tolerance:
        return Verdicts(passes.sum(axis=1), fails.sum(axis=1), np.zeros(passes.shape[0], dtype=np.int64))
    t, t0 = tolerance, runtime_tolerance
    judged = passes + fails
    components = [_cells(site.predicted, site.measured, t, t0, passes, fails)]
    if is_mpi(site.type):
        components.append(_cells(site.count_predicted, site.count_measured, t, t0, passes, fails))
        # No message asserted and none made: the call passes whatever its size (the runtimes record size 0).
        nothing = (site.count_predicted.max == 0) & (site.count_measured.max == 0)
        for cells in components:
            cells.all_pass = cells.all_pass | nothing
            cells.all_fail = cells.all_fail & ~nothing
            cells.bound = np.where(nothing, 0.0, cells.bound)
    all_pass = np.logical_and.reduce([c.all_pass for c in components])
    all_fail = np.logical_or.reduce([c.all_fail for c in components]) & ~all_pass
    bound = np.fmax.reduce([c.bound for c in components])
    # The two extreme calls are judged alone only when one quantity decides the verdict (not an MPI pair).
    extremes = components[0].extremes if len(components) == 1 else []
    if t > t0:  # what passed still passes
        sure_pass = passes + _between(extremes, t0, t, judged.shape)
        sure_fail = _between(extremes, t, np.inf, judged.shape)
    else:  # what failed still fails
        sure_pass = _between(extremes, -1.0, t, judged.shape)
        sure_fail = fails + _between(extremes, t, t0, judged.shape)
    undecided = np.maximum(judged - sure_pass - sure_fail, 0)
    cell_passes = np.where(np.nan_to_num(bound, nan=0.0) <= t, undecided, 0)
    new_passes = np.where(all_pass, judged, np.where(all_fail, 0, sure_pass + cell_passes))
    new_fails = judged - new_passes
    by_cell = np.where(all_pass | all_fail, 0, undecided)
    return Verdicts(new_passes.sum(axis=1), new_fails.sum(axis=1), by_cell.sum(axis=1))


__all__ = ["Verdicts", "rejudge", "relative_error"]
