"""bench/fortran_annotation_cost.py: an annotation costs from Fortran within 10 % of the same call from C
(Callgrind's instruction counts, which the host's load does not move)."""

from __future__ import annotations

import importlib.util
import shutil
import sys

import pytest
from mpi_builds import REPO


@pytest.mark.valgrind
def test_a_fortran_annotation_costs_within_10_percent_of_c() -> None:
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed (scripts/setup.sh installs it)")
    path = REPO / "bench" / "fortran_annotation_cost.py"
    spec = importlib.util.spec_from_file_location("fortran_annotation_cost", path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench
    spec.loader.exec_module(bench)
    results = bench.measure(100, disabled=False)
    assert 300 < results["c"] < 3000  # a sane count: the runtime's work per call, start-up cancelled
    assert results["fortran"] <= 1.10 * results["c"], results
