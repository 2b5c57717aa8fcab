"""Shared fixtures: run a small annotated program in a fresh interpreter and read its trace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ma_core.trace_format import rank_file

REPO = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent


def clean_env(**extra: str) -> dict[str, str]:
    """The test process's environment without any MA_* setting, the venv's bin/ first on PATH, and outside any
    Slurm job (inside one, ma run would launch with srun; the Slurm tests give the `slurm` fixture's SLURM_CONF)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MA_", "SLURM_")) and k != "LD_PRELOAD"}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    # Most tests read the rank files of their runs; those of the merged layout (test_merged_trace.py) say so.
    env["MA_TRACE_LAYOUT"] = "per-rank"
    env.update(extra)
    return env


@pytest.fixture(scope="session")
def cg_class_s_on_two_ranks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The trace directory of the Python NPB CG, class S, on 2 ranks under `ma run` (read it, never write into it):
    one run for the model, report and study tests that all start from it."""
    trace_dir = tmp_path_factory.mktemp("cg-S-2") / "traces"
    done = subprocess.run([str(VENV_BIN / "ma"), "run", "-n", "2", "--trace-dir", str(trace_dir), "--",
                           sys.executable, str(REPO / "examples" / "npb_cg" / "cg.py"), "--class", "S"],
                          env=clean_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "VERIFICATION SUCCESSFUL" in done.stdout
    return trace_dir


@dataclass
class ProgramRun:
    returncode: int
    stdout: str
    stderr: str
    trace_dir: Path

    def trace(self, rank: int = 0) -> dict[str, Any]:
        return json.loads(rank_file(self.trace_dir, rank).read_text())

    def tree(self, rank: int = 0, thread: int = 0) -> dict[str, Any]:
        return self.trace(rank)["threads"][thread]["root"]


def find_node(root: dict[str, Any], path: str) -> dict[str, Any]:
    for child in root["children"]:
        if child["path"] == path:
            return child
        if path.startswith(child["path"] + "/"):
            return find_node(child, path)
    raise KeyError(f"no node {path!r}; children: {[c['path'] for c in root['children']]}")


def count_nodes(node: dict[str, Any]) -> int:
    return 1 + sum(count_nodes(c) for c in node["children"])


@pytest.fixture
def run_program(tmp_path: Path):
    """run_program(source, env=..., timeout=...) -> ProgramRun, in tmp_path with MA_TRACE_DIR=tmp_path/traces."""

    def run(source: str, timeout: float = 120, args: tuple[str, ...] = (), **env: str) -> ProgramRun:
        script = tmp_path / "prog.py"
        script.write_text(textwrap.dedent(source))
        trace_dir = tmp_path / "traces"
        environment = clean_env(MA_TRACE_DIR=str(trace_dir), **env)
        done = subprocess.run([sys.executable, str(script), *args], cwd=tmp_path, env=environment,
                              capture_output=True, text=True, timeout=timeout)
        return ProgramRun(done.returncode, done.stdout, done.stderr, trace_dir)

    return run


@pytest.fixture(scope="session")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A single-node Slurm cluster of this machine's munged, slurmctld and slurmd (scripts/slurm-local.sh),
    started for the session's Slurm tests and stopped after them; yields its client settings (SLURM_CONF)."""
    script, directory = REPO / "scripts" / "slurm-local.sh", tmp_path_factory.mktemp("slurm")
    started = subprocess.run(["bash", str(script), "start", str(directory)], capture_output=True, text=True,
                             timeout=120)
    if started.returncode != 0:  # scripts/setup.sh installs Slurm: a cluster that cannot start is a broken set-up
        pytest.fail(f"the local Slurm did not start (deselect with -m 'not slurm'):\n{started.stderr}", pytrace=False)
    try:
        yield {"SLURM_CONF": str(directory / "slurm.conf")}
    finally:
        stopped = subprocess.run(["bash", str(script), "stop", str(directory)], capture_output=True, text=True,
                                 timeout=120)
        assert stopped.returncode == 0, stopped.stderr
