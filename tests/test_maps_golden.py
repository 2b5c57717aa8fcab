"""The maps backend gives the numbers it gave before its refactoring: every part of every site, per traced rank, of
fixed traces (synthetic programs and real runs of NPB CG, SP and the C ring example, :mod:`maps_golden`) with the
shipped profile, against the record in ``tests/data/maps-golden/predictions.json`` (relative 1e-9)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from maps_golden import CASES, RECORD, Case, parts_of, predict

EXPECTED: dict[str, Any] = json.loads(RECORD.read_text())
REL = 1e-9


def close(got: float, expected: float) -> bool:
    return math.isclose(got, expected, rel_tol=REL, abs_tol=1e-300)


def differences(case: Case) -> list[str]:
    got, expected = predict(case, parts_of), EXPECTED[case.name]
    wrong = [] if set(got["sites"]) == set(expected["sites"]) else [
        f"sites: {sorted(set(got['sites']) ^ set(expected['sites']))} added or missing"]
    for path, parts in expected["sites"].items():
        for part, ranks in parts.items():
            values = got["sites"].get(path, {}).get(part)
            if values is None or not all(close(a, b) for a, b in zip(values, ranks, strict=True)):
                wrong.append(f"{path} {part}: {values} (expected {ranks})")
    if not all(close(a, b) for a, b in zip(got["total"], expected["total"], strict=True)):
        wrong.append(f"total: {got['total']} (expected {expected['total']})")
    return wrong


def test_every_case_is_recorded() -> None:
    assert {case.name for case in CASES} == set(EXPECTED)


@pytest.mark.parametrize("case", [c for c in CASES if c.traces.startswith("synthetic:")], ids=lambda c: c.name)
def test_synthetic_traces_predict_as_recorded(case: Case) -> None:
    wrong = differences(case)
    assert not wrong, "\n".join(wrong)


@pytest.mark.slow
@pytest.mark.parametrize("case", [c for c in CASES if not c.traces.startswith("synthetic:")], ids=lambda c: c.name)
def test_real_traces_predict_as_recorded(case: Case) -> None:
    wrong = differences(case)
    assert not wrong, "\n".join(wrong)
