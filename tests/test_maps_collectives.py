"""Every MPI site type the annotations know is priced by the maps backend, each collective by its usual
algorithm's cost (Thakur, Rabenseifner and Gropp), worked out here by hand from the algorithm's rounds and the
bytes each round moves, on a power of two, on a count that is not one, and on one rank (free)."""

from __future__ import annotations

import math

import pytest
from post_fixtures import Loop, Mpi, Var, make_trace

from backends.machine.eq1 import Eq1Params
from backends.machine.profile import CPU, BandwidthFit, CacheLevel, Host, MachineProfile, Memory, NetworkProfile
from backends.maps import MapsBackend
from ma_core.trace_format import MPI_TYPES
from ma_post import ModelBuilder
from ma_post.traceset import from_traces

L, B = 2e-6, 1e9
CALLS, BYTES = 3, 800  # each site runs 3 times with one message of 800 bytes


def by_hand(site_type: str, p: int) -> float:
    """Seconds of CALLS messages of BYTES at a site of this type on p ranks, from the algorithm."""
    rounds = math.ceil(math.log2(p)) if p > 1 else 0
    n, volume = CALLS, CALLS * BYTES
    if site_type in ("mpi_send", "mpi_isend", "mpi_sendrecv"):
        return n * L + volume / B  # Hockney
    if site_type in ("mpi_recv", "mpi_irecv"):
        return 0.0  # its message is its sender's
    if site_type in ("mpi_bcast", "mpi_reduce", "mpi_allreduce"):
        return rounds * (n * L + volume / B)  # binomial tree / recursive doubling: the whole message each round
    if site_type in ("mpi_gather", "mpi_scatter", "mpi_allgather"):
        return rounds * n * L + (p - 1) * volume / B  # log p rounds moving the other p - 1 ranks' parts once
    if site_type == "mpi_alltoall":
        return (p - 1) * (n * L + volume / B)  # p - 1 pairwise exchanges
    if site_type == "mpi_barrier":
        return rounds * n * L  # dissemination: latencies only
    raise AssertionError(f"no hand cost for {site_type}")


def profile() -> MachineProfile:
    fit = BandwidthFit(Eq1Params((1.0, 10.0), (40e9, 5e9), (), ()))
    # 1024 cores: no time-sharing at these counts, so L and B are the ping-pong's
    return MachineProfile(name="hand", host=Host("h", "c", 1024), caches=(CacheLevel(1, 32768, 8, 64),), cpu=CPU(1e9),
                          memory=Memory(4e9), network=NetworkProfile(latency_s=L, bandwidth_bytes_per_s=B),
                          bandwidth_fit=fit)


def program() -> list[object]:
    return [Var("k", CALLS), Var("nprocs", lambda e: e["__size"]),
            Loop("it", "k", [Mpi(t, t.removeprefix("mpi_"), str(BYTES)) for t in MPI_TYPES])]


@pytest.mark.parametrize("p", [1, 2, 6, 8])
def test_every_mpi_site_type_at_its_algorithms_cost(p: int) -> None:
    builder = ModelBuilder(from_traces([make_trace(program(), r, 2, language="c") for r in range(2)]))
    prediction = MapsBackend().predict(builder, profile(), {"nprocs": p, "k": CALLS})
    sites = {s.path.removeprefix("it/"): float(s.communication) for s in prediction.sites}
    for site_type in MPI_TYPES:  # every type has a site, and a cost
        assert sites[site_type.removeprefix("mpi_")] == pytest.approx(by_hand(site_type, p), rel=1e-12), site_type
    if p == 1:  # one rank: the three point-to-point sites only
        assert float(prediction.part("communication")) == pytest.approx(3 * by_hand("mpi_send", 1))

