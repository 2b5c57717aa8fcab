"""The maps backend gives the numbers it gave before its refactoring: every part of every site, per traced rank, of
fixed traces (synthetic programs and real runs of NPB CG, SP and the C ring example, :mod:`maps_golden`) with the
shipped profile, against the record in ``tests/data/maps-golden/predictions.json`` (relative 1e-9).

The record was written when the interpreter's seconds were charged to every program: a Python program's prediction
must not move, part by part. A compiled program's (C here) has no runtime part now: its compute and memory are as
recorded, its runtime part 0, and its messages as recorded where the ranks have a core each (beyond, the wait read
off the oversubscribed exchange's work curve depends on the work per message, which no longer holds interpreter
seconds the program never spent)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from maps_golden import CASES, RECORD, Case, load_traces, predict

from backends.cpython.runtime import applies

EXPECTED: dict[str, Any] = json.loads(RECORD.read_text())
REL = 1e-9
CORES = 2  # the shipped profile's host.cpus


def close(got: float, expected: float) -> bool:
    return math.isclose(got, expected, rel_tol=REL, abs_tol=1e-300)


def compare(got: list[float], expected: list[float]) -> bool:
    return len(got) == len(expected) and all(close(a, b) for a, b in zip(got, expected, strict=True))


def differences(case: Case) -> list[str]:
    """What the backend gives that the record does not (for a compiled program, as the docstring says)."""
    traces = load_traces(case.traces)
    compiled = not applies(traces)
    procs = case.parameters.get("nprocs", traces.size)
    shared = compiled and procs > CORES and case.options.get("cores", CORES) != 0
    got, expected = predict(case), EXPECTED[case.name]
    wrong = [] if set(got["sites"]) == set(expected["sites"]) else [
        f"sites: {sorted(set(got['sites']) ^ set(expected['sites']))} added or missing"]
    for path, parts in expected["sites"].items():
        for part, ranks in parts.items():
            values = got["sites"].get(path, {}).get(part)
            if compiled and part == "runtime":
                ranks = [0.0] * len(ranks)
            if values is None or (not (shared and part == "communication") and not compare(values, ranks)):
                wrong.append(f"{path} {part}: {values} (expected {ranks})")
    if not compiled and not compare(got["total"], expected["total"]):
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
