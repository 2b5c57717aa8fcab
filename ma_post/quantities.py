"""The quantities a model can be built for: which sites each sums, and how (MA paper section 3.5)."""

from __future__ import annotations

from .traceset import MPI_TYPES

SEND_TYPES = ("mpi_send", "mpi_isend", "mpi_sendrecv")
RECV_TYPES = ("mpi_recv", "mpi_irecv", "mpi_sendrecv")

# Base quantity -> (site types, what is summed: "value", "bytes" (value x count) or "count").
BASE_QUANTITIES: dict[str, tuple[tuple[str, ...], str]] = {
    "flops": (("flop",), "value"),
    "loadstore": (("loadstore",), "value"),
    "heap_memory": (("heap_memory",), "value"),
    "stack_memory": (("stack_memory",), "value"),
    "memory": (("heap_memory", "stack_memory"), "value"),
    "mpi_bytes": (tuple(sorted(MPI_TYPES)), "bytes"),
    "mpi_count": (tuple(sorted(MPI_TYPES)), "count"),
    "send_bytes": (SEND_TYPES, "bytes"),
    "send_count": (SEND_TYPES, "count"),
    "recv_bytes": (RECV_TYPES, "bytes"),
    "recv_count": (RECV_TYPES, "count"),
}
for _mpi_type in sorted(MPI_TYPES):
    BASE_QUANTITIES[f"{_mpi_type}_bytes"] = ((_mpi_type,), "bytes")
    BASE_QUANTITIES[f"{_mpi_type}_count"] = ((_mpi_type,), "count")

RATIOS: dict[str, tuple[str, str]] = {
    "loadstore_per_flop": ("loadstore", "flops"),
    "mpi_bytes_per_flop": ("mpi_bytes", "flops"),
    "bytes_per_message": ("mpi_bytes", "mpi_count"),
    "flops_per_mpi_byte": ("flops", "mpi_bytes"),
}
ALIASES = {"flop": "flops", "messages": "mpi_count", "message_volume": "mpi_bytes", "send_volume": "send_bytes"}

# Quantities offered by default (export, ma model without --quantity).
DEFAULT_QUANTITIES = ("flops", "loadstore", "heap_memory", "stack_memory", "memory", "mpi_bytes", "mpi_count",
                      "send_bytes", "send_count")


def normalise_quantity(quantity: str) -> str:
    q = quantity.strip()
    return ALIASES.get(q, q)


def known_quantities() -> list[str]:
    return sorted(BASE_QUANTITIES) + sorted(RATIOS)


DESCRIPTIONS = {
    "flops": "floating-point operations per rank",
    "loadstore": "loads and stores per rank",
    "heap_memory": "heap memory per rank (bytes, summed over allocations)",
    "stack_memory": "stack memory per rank (bytes, summed over declarations)",
    "memory": "heap and stack memory per rank (bytes, summed over allocations)",
    "mpi_bytes": "MPI message volume per rank (bytes, every MPI call type)",
    "mpi_count": "MPI messages per rank (every MPI call type)",
    "send_bytes": "MPI send volume per rank (bytes: send, isend, sendrecv)",
    "send_count": "MPI sends per rank (send, isend, sendrecv)",
    "recv_bytes": "MPI receive volume per rank (bytes: recv, irecv, sendrecv)",
    "recv_count": "MPI receives per rank (recv, irecv, sendrecv)",
}


def describe(quantity: str) -> str:
    if quantity in DESCRIPTIONS:
        return DESCRIPTIONS[quantity]
    for suffix, what in (("_bytes", "bytes per rank"), ("_count", "calls per rank")):
        if quantity.startswith("mpi_") and quantity.endswith(suffix):
            return f"{quantity[:-len(suffix)]} {what}"
    if "/" in quantity or "_per_" in quantity:
        return f"ratio {quantity}"
    return quantity


