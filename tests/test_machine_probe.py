"""`ma machine probe --quick` on this host, for real: the C kernels, MultiMAPS, flops, triad, MPI ping-pong under
the environment's mpiexec, hit rates and the GA fit; then show, fit and plot on its profile."""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path

import numpy as np
import pytest

from backends.cpython import exchange
from backends.machine import plan, probe, profile
from ma_cli.main import main
from ma_tools import mpis


@pytest.fixture(scope="module")
def quick_profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("probe") / "quick.json"
    assert main(["machine", "probe", "--quick", "-o", str(path), "--note", "test run"]) == 0
    return path


@pytest.mark.mpi
def test_quick_probe_measures_a_complete_profile(quick_profile: Path) -> None:
    machine = profile.load(quick_profile)
    assert machine.host.quick is True and machine.host.notes == "test run"
    curves = {p.curve for p in machine.multimaps}
    assert curves == {f"stride {s}" for s in probe.STRIDES} | {"random"}
    sizes = sorted({p.size_bytes for p in machine.multimaps})
    assert len(sizes) >= 10 and sizes[0] == 1024
    for point in machine.multimaps:
        assert point.hit_rates is not None and point.hit_rates[-1] == 1.0
        # a point whose pass is long has fewer samples (plan.FEW_SAMPLES)
        assert len(point.samples_bytes_per_s) in (machine.multimaps_settings.samples, plan.FEW_SAMPLES)
        assert point.bandwidth_bytes_per_s == pytest.approx(float(np.median(point.samples_bytes_per_s)), rel=1e-3)
    by_key = {(p.curve, p.size_bytes): p for p in machine.multimaps}
    # the quick probe reaches past twice the last cache (plan.py), with a stream of lines there for the memory plateau
    assert sizes[-1] > 2 * machine.caches[-1].size_bytes
    assert machine.host.estimate_s is not None and machine.host.estimate_s <= 30
    assert {"MultiMAPS", "hit rates", "GA fit"} <= set(machine.host.phase_seconds)
    # the cache levels show: an L1-resident stride-1 read beats a stride-16 read from memory (a line per load, and
    # the other of its 128-byte pair fetched by x86's adjacent-line prefetcher modelled at L2 is never used)
    in_l1 = by_key[("stride 1", max(s for s in sizes if s <= machine.caches[0].size_bytes // 2))]
    beyond_l2 = by_key[("stride 16", sizes[-1])]
    assert in_l1.hit_rates == (1.0,) * machine.levels
    assert beyond_l2.hit_rates is not None and beyond_l2.hit_rates[0] == 0.0 and beyond_l2.hit_rates[1] <= 0.5
    # best samples: the others who share this host slow a sample down, never up
    assert max(in_l1.samples_bytes_per_s) > 2 * max(beyond_l2.samples_bytes_per_s)
    assert machine.peak_flops > 1e9 and machine.cpu.isa in machine.cpu.by_isa
    assert machine.memory.vector_streams is not None  # the vector stream curve (test_maps_streams.py)
    # the multicore block on every physical core this process may use (test_machine_multicore.py)
    cores = machine.memory.multicore
    assert cores is not None and cores.runs[0].cores == 1 and cores.runs[-1].cores == len(cores.runs[-1].cpus)
    assert machine.triad_bytes_per_s > 0.5e9
    assert machine.cpu.csr_rows is not None and len(machine.cpu.csr_rows.points) > 2  # the CSR curve in L1
    # a compiled dot product's add chain: one add latency a term, slower than its two flops at the peak
    assert machine.cpu.add_chain_s is not None and 2 / machine.peak_flops < machine.cpu.add_chain_s < 1e-7
    assert machine.network is not None and 0 < machine.network.latency_s < 1e-3
    # measured with the environment's MPI (the mpich wheel), which the block names for ma predict to match
    assert machine.network.mpi == mpis.selected().name and machine.network.mpi.startswith("mpich-")
    assert [row.bytes for row in machine.network.pingpong] == list(probe.ProbeSettings.quick().pingpong_sizes)
    # exchanges on twice as many ranks as cores: the wait for a partner without a core
    over = machine.network.oversubscribed
    assert over is not None and over.version == 2 and over.extra["pattern"] == "exchange"
    assert over.ranks == 2 * over.cores > machine.host.cpus - 1
    assert [row.bytes for row in over.pingpong] == list(probe.ProbeSettings.quick().pingpong_sizes)
    assert over.latency_s == min(over.pingpong, key=lambda row: row.bytes).seconds > 0
    # the same exchange with work before each message: the work alone grows with the passes; a message takes at
    # least its own work (a timing on a shared host: no stricter order is asserted)
    work = over.work
    assert [row.passes for row in work] == list(probe.ProbeSettings.quick().oversubscribed_work)
    assert work[0].work_s == 0 and all(a.work_s < b.work_s for a, b in itertools.pairwise(work))
    assert all(row.seconds >= 0.9 * row.work_s and row.seconds > 0 for row in work)
    # the CPython terms, and the two-rank Python exchange curve (test_maps_pymessages.py)
    assert machine.cpython is not None and machine.cpython.call_overhead_s is not None
    python = machine.cpython.exchange
    assert python is not None and [row.passes for row in python.work] == list(exchange.QUICK["passes"])
    fit = machine.bandwidth_fit
    assert fit is not None and fit.params.levels == machine.levels and fit.avg_abs_rel_error is not None
    assert set(fit.per_curve) == curves


@pytest.mark.mpi
def test_show_fit_and_plot(quick_profile: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["machine", "show", str(quick_profile)]) == 0
    out = capsys.readouterr().out
    assert "peak flops" in out and "MPI ping-pong" in out and "stride 64" in out and "avg |err|" in out
    assert "(oversubscribed): latency" in out
    assert "us of work -> us per message: 0 -> " in out
    assert re.search(r"Python programs: \d+ ns per call into compiled code, .*; an annotation site: "
                     r"region \d+ ns, loop \d+ ns, mpi \d+ ns", out)
    refit = tmp_path / "refit.json"
    assert main(["machine", "fit", str(quick_profile), "-o", str(refit), "--population", "100",
                 "--generations", "5", "--seed", "3"]) == 0
    fit = profile.load(refit).bandwidth_fit
    assert fit is not None and fit.ga["population"] == 100 and fit.ga["seed"] == 3
    assert main(["machine", "plot", str(refit), "-o", str(tmp_path / "fig")]) == 0
    for name in ("fig-curves.png", "fig-errors-stride4.png"):
        assert (tmp_path / name).read_bytes()[:4] == b"\x89PNG"


def test_probe_restores_the_affinity() -> None:
    before = os.sched_getaffinity(0)
    with probe.pinned() as cpu:
        assert os.sched_getaffinity(0) == {cpu}
    assert os.sched_getaffinity(0) == before


def test_working_sets_span_past_the_last_cache() -> None:
    caches = profile.CacheLevel(1, 32768, 8, 64), profile.CacheLevel(2, 1 << 25, 16, 64)
    sizes = probe.working_sets(list(caches), probe.ProbeSettings())
    assert sizes[0] == 1024 and sizes[-1] >= 4 * (1 << 25) - 64 and len(sizes) >= 30
    assert all(s % 64 == 0 for s in sizes)


def test_bad_cache_override_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["machine", "probe", "--quick", "--cache", "L2", "-o", str(tmp_path / "p.json")]) == 2
    assert "expected LN=SIZE" in capsys.readouterr().err
    assert not (tmp_path / "p.json").exists()


def test_show_names_a_bad_profile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "p.json"
    bad.write_text('{"schema": "ma-machine-profile", "version": 1}')
    assert main(["machine", "show", str(bad)]) == 2
    assert f"{bad}: field 'name': required field is missing" in capsys.readouterr().err


def test_show_names_the_shipped_profiles_when_the_file_is_missing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["machine", "show", "no-such-profile"]) == 2
    assert "no-such-profile: no such file, nor the name of a shipped profile" in capsys.readouterr().err


def test_the_vector_width_is_the_narrowest_isa_at_the_peak() -> None:
    # Zen 4: AVX-512 FMAs run as two 256-bit halves, so AVX2 and AVX-512 reach the same peak
    assert probe.vector_isa({"sse2": 25e9, "avx2+fma": 58.8e9, "avx512f+fma": 59.1e9}) == "avx2+fma"
    assert probe.vector_isa({"sse2": 25e9, "avx2+fma": 58.8e9, "avx512f+fma": 110e9}) == "avx512f+fma"
    assert probe.vector_isa({"sse2": 25e9}) == "sse2"
