"""bench/fortran_annotation_cost.py: an annotation costs from Fortran within 10 % of the same call from C; and
bench/fortran_cg_cost.py: the annotated Fortran CG's timed loop costs a few per cent more instructions than its
disabled build at class S (Callgrind's instruction counts, which the host's load does not move)."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from mpi_builds import DEBIAN_MPICH, REPO


def load_bench(name: str) -> object:
    path = REPO / "bench" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench
    spec.loader.exec_module(bench)
    return bench


@pytest.mark.valgrind
def test_a_fortran_annotation_costs_within_10_percent_of_c() -> None:
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed (scripts/setup.sh installs it)")
    bench: Any = load_bench("fortran_annotation_cost")
    results = bench.measure(300, disabled=False)  # more steps: what varies between runs weighs less per call
    assert 300 < results["c"] < 3000  # a sane count: the runtime's work per call, start-up cancelled
    assert results["fortran"] <= 1.10 * results["c"], results


@pytest.mark.valgrind
@pytest.mark.mpi
@pytest.mark.slow
def test_the_annotated_fortran_cg_costs_a_few_per_cent_more_instructions_at_class_s(tmp_path: Path) -> None:
    """One iteration of the timed loop at S (1400 rows): the annotated build's runtime adds some hundred calls to
    about 20 million instructions of work; at A (ten times the rows, more entries a row) its share is smaller."""
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed (scripts/setup.sh installs it)")
    DEBIAN_MPICH.skip_unless_available()
    bench: Any = load_bench("fortran_cg_cost")
    counted = bench.loop_instructions(bench.build(tmp_path), "S", 1, tmp_path)
    assert counted["disabled"] > 10_000_000  # a timed iteration's work at S, start-up cancelled
    assert counted["disabled"] < counted["annotated"] < 1.10 * counted["disabled"], counted
