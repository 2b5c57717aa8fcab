"""``ma synth --machine PROFILE``: each site's compute in the synthetic SMPI traces is the backend's predicted
seconds of one execution of the site (compute, memory and runtime parts), as flops at the replay's host speed.

A 2-rank Python-language run of a small halo-exchange program (its traces written by post_fixtures) predicted by
the maps backend on the shipped profile: every rank's compute amounts add up to its predicted work x the speed,
and the computes between the MPI calls are those of the sites between them, per execution.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from post_fixtures import Loop, Mpi, Op, Sub, Var, write_run

import ma_post
from backends.machine import profile
from backends.maps.backend import MapsBackend
from ma_cli.commands.synth import PredictedWork
from ma_core.trace_format import rank_file
from ma_post import ModelBuilder, TraceSet
from ma_post.interop.synth import synthesize

SPEED = 2.5e9
STEPS = 4


def partner(env: dict[str, float]) -> float:
    return (env["__rank"] + 1) % env["__size"]


PROGRAM = [
    Var("nprocs", lambda e: e["__size"]), Var("n", 20000),
    Sub("solve", [
        Loop("steps", str(STEPS), [
            Op("flop", "axpy", "2*n/nprocs", body=[Op("loadstore", "axpy_ls", "3*n/nprocs")]),
            Mpi("mpi_irecv", "halo_r", "8*n/nprocs", peer=partner),
            Mpi("mpi_send", "halo_s", "8*n/nprocs", peer=partner),
            Op("loadstore", "copy", "2*n/nprocs"),
            Mpi("mpi_allreduce", "norm", "8"),
        ]),
    ]),
]


def traced_run(directory: Path) -> TraceSet:
    """The program's 2-rank traces, with the partner assertions (``peer=``) of its two messages."""
    write_run(directory, PROGRAM, size=2)
    for rank in range(2):
        path = rank_file(directory, rank)
        trace = json.loads(path.read_text())
        trace["peers"] = [{"path": f"solve/steps/{site}", "type": kind, "expr": "mod(rank+1, nprocs)",
                           "pass": STEPS, "fail": 0}
                          for site, kind in (("halo_r", "mpi_irecv"), ("halo_s", "mpi_send"))]
        path.write_text(json.dumps(trace))
    return ma_post.load(directory)


def computes(path: Path) -> list[float]:
    return [float(line.split()[2]) for line in path.read_text().splitlines() if line.split()[1] == "compute"]


def test_compute_amounts_are_the_predicted_seconds_at_the_host_speed(tmp_path: Path) -> None:
    ts = traced_run(tmp_path / "run")
    machine = profile.load(profile.shipped_profiles()["amd-epyc-zen4-kvm"])
    model = ModelBuilder(ts)
    prediction = MapsBackend().predict(model, machine, {})
    result = synthesize(ts, tmp_path / "smpi", {}, work=PredictedWork(model, prediction, SPEED))
    work = prediction.part("compute") + prediction.part("memory") + prediction.part("runtime")
    per_rank = prediction.per_rank(model, {}, work)
    assert per_rank.min() > 0

    def per_execution(*paths: str) -> float:  # the sites' predicted work per execution of the loop body, flops
        seconds = sum(s.compute + s.memory + s.runtime for s in prediction.sites if s.path in paths)
        return float(prediction.per_rank(model, {}, seconds)[0]) / STEPS * SPEED

    for rank, path in enumerate(result.files):
        amounts = computes(path)
        assert sum(amounts) == pytest.approx(per_rank[rank] * SPEED, rel=1e-9)
    # rank 0, each step: [loop, axpy with its loadstore, the irecv's own] irecv [the send's own] send wait
    # [copy, the allreduce's own] allreduce; the subroutine's own work joins the first
    amounts = computes(result.files[0])
    assert len(amounts) == 3 * STEPS
    assert amounts[1] == pytest.approx(per_execution("solve/steps/halo_s"), rel=1e-9)
    assert amounts[2] == pytest.approx(per_execution("solve/steps/copy", "solve/steps/norm"), rel=1e-9)
    assert amounts[3] == pytest.approx(per_execution("solve/steps", "solve/steps/axpy", "solve/steps/axpy/axpy_ls",
                                                     "solve/steps/halo_r"), rel=1e-9)
    memory = {s.path: float(prediction.per_rank(model, {}, s.memory)[0]) for s in prediction.sites}
    assert memory["solve/steps/axpy/axpy_ls"] > 0 and memory["solve/steps/copy"] > 0  # both parts are priced


def test_without_a_machine_the_computes_are_the_flops(tmp_path: Path) -> None:
    ts = traced_run(tmp_path / "run")
    result = synthesize(ts, tmp_path / "smpi", {})
    assert computes(result.files[0]) == [2 * 20000 / 2] * STEPS


def test_the_command_writes_the_same_traces(tmp_path: Path) -> None:
    """``ma synth --machine`` (no replay: no network needed) writes what PredictedWork gives; --backend alone is an
    error naming the missing option."""
    ts = traced_run(tmp_path / "run")
    machine = profile.load(profile.shipped_profiles()["amd-epyc-zen4-kvm"])
    model = ModelBuilder(ts)
    expected = synthesize(ts, tmp_path / "api", {}, work=PredictedWork(model, MapsBackend().predict(model, machine),
                                                                       SPEED))
    ma = [sys.executable, "-m", "ma_cli.main", "synth", str(tmp_path / "run"), str(tmp_path / "cli")]
    done = subprocess.run([*ma, "--machine", "amd-epyc-zen4-kvm", "--speed", repr(SPEED)], capture_output=True,
                          text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    for rank, path in enumerate(expected.files):
        assert (tmp_path / "cli" / f"rank-{rank}.smpi").read_text() == path.read_text()
    done = subprocess.run([*ma, "--backend", "maps"], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 2 and "--machine PROFILE" in done.stderr
