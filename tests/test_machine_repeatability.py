"""Two probes of one host compared point by point (``backends.machine.repeatability``)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from backends.machine import profile, repeatability
from ma_core.errors import ProfileError


def shipped() -> profile.MachineProfile:
    return profile.load(next(iter(profile.shipped_profiles().values())))


def test_difference_per_curve_and_over_the_stride_points() -> None:
    first = shipped()
    # first is 10 % above second on stride 4
    second = replace(first, multimaps=tuple(
        replace(p, bandwidth_bytes_per_s=p.bandwidth_bytes_per_s / 1.1) if p.curve == "stride 4" else p
        for p in first.multimaps))
    table = repeatability.probe_difference(first, second)
    assert table["stride 4"].avg_abs_rel_error == pytest.approx(0.1)
    assert table["stride 1"].avg_abs_rel_error == 0.0
    strided = [p for p in first.multimaps if p.pattern == "stride"]
    assert table["all"].points == len(strided)
    assert table["all"].avg_abs_rel_error == pytest.approx(0.1 * table["stride 4"].points / len(strided))
    assert list(table)[-1] == "random" and list(table)[1:3] == ["stride 1", "stride 2"]


def test_only_points_both_probes_measured_count() -> None:
    first = shipped()
    second = replace(first, multimaps=tuple(p for p in first.multimaps if p.curve == "stride 8"))
    table = repeatability.probe_difference(first, second)
    assert set(table) == {"all", "stride 8"}
    second = replace(first, multimaps=tuple(p for p in first.multimaps if p.pattern == "random"))
    with pytest.raises(ProfileError, match="no MultiMAPS stride point in common"):
        repeatability.probe_difference(first, second)
