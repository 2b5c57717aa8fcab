"""The README's example runs as written: under `ma run`, validated, and with flops measured by the tool."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, VENV_BIN, clean_env

AXPY = REPO / "examples" / "quickstart" / "axpy.py"


def ma(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(VENV_BIN / "ma"), *args], env=env or clean_env(), capture_output=True, text=True,
                          timeout=600)


@pytest.mark.mpi
def test_readme_example_validates(tmp_path: Path) -> None:
    run = ma("run", "-n", "2", "--trace-dir", str(tmp_path / "t"), "--", sys.executable, str(AXPY), "4000", "5")
    assert run.returncode == 0, run.stderr
    assert "x.y after 5 iterations: 50000" in run.stdout
    report = ma("validate", str(tmp_path / "t"))
    assert report.returncode == 0, report.stdout + report.stderr
    lines = report.stdout.splitlines()
    assert "iterations:ma_loop:5:5:0.0:PASS=2:FAIL=0" in lines
    assert "norm:ma_mpi_allreduce:8:8:0.0:PASS=10:FAIL=0" in lines
    assert "axpy:ma_flop:4000:-:-:PASS=0:FAIL=0:UNMEASURED=10" in lines


@pytest.mark.mpi
@pytest.mark.valgrind
def test_readme_example_flops_are_measured_under_the_tool(tmp_path: Path) -> None:
    run = ma("run", "-n", "2", "--counters", "valgrind", "--trace-dir", str(tmp_path / "t"), "--",
             sys.executable, str(AXPY), "4096", "3", env=clean_env(MA_TOLERANCE="flop=0.01"))
    assert run.returncode == 0, run.stderr
    report = ma("validate", str(tmp_path / "t"))
    assert report.returncode == 0, report.stdout
    lines = report.stdout.splitlines()
    assert "axpy:ma_flop:4096:4096:0.0:PASS=6:FAIL=0" in lines  # 2n exactly, as Figure 8 prints it
    dot = next(line for line in lines if line.startswith("dot:ma_flop:4096:"))
    measured = int(dot.split(":")[3])
    assert 4096 <= measured <= 4096 + 32 and dot.endswith("PASS=6:FAIL=0")  # 2n plus the reduction's tail
