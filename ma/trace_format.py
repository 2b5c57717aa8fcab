"""The trace file format, defined once (docs/trace-format.md): names, version, statuses, the header.

Both layers import it: the runtime writes what is spelled here, post-processing reads it, and a test checks
the C runtime's copy (csrc/libma) against it. It stays light (standard library only), since the runtime
loads it inside the annotated program.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORMAT = "ma-trace"
VERSION = 1

# One file per rank, written atomically through a hidden temporary beside it.
RANK_FILE = re.compile(r"^rank-(\d+)\.ma\.json$")
RANK_FILE_GLOB = "rank-*.ma.json"
TEMPORARY_GLOB = ".rank-*.tmp"

# header.status: a periodic flush writes RUNNING; the final write says how the process ended.
RUNNING, COMPLETE, EXCEPTION, TERMINATED = "running", "complete", "exception", "terminated"
STATUSES = (RUNNING, COMPLETE, EXCEPTION, TERMINATED)

# Annotation types of the MPI calls, in the order of the PMPI library's groups (csrc/ma_pmpi.c).
MPI_TYPES: tuple[str, ...] = ("mpi_send", "mpi_isend", "mpi_recv", "mpi_irecv", "mpi_sendrecv", "mpi_bcast",
                              "mpi_reduce", "mpi_allreduce", "mpi_gather", "mpi_scatter", "mpi_allgather",
                              "mpi_alltoall", "mpi_barrier")
# The other node types of a site tree; STRUCTURE_TYPES are structure or declarations, not checked assertions.
REGION_TYPES: tuple[str, ...] = ("subroutine", "loop", "flop", "loadstore", "heap_memory", "stack_memory")
DECLARATION_TYPES: tuple[str, ...] = ("variable", "assign")
NODE_TYPES: tuple[str, ...] = ("root", *REGION_TYPES, *DECLARATION_TYPES, *MPI_TYPES)
STRUCTURE_TYPES: frozenset[str] = frozenset({"root", "subroutine", *DECLARATION_TYPES})

# Top-level keys of a document, and of its header.
DOCUMENT_KEYS = ("format", "version", "header", "variables", "threads", "anomalies", "mpi_profile")
# Written only when used: ``vector_loops``, the records of ma.vec_loop (docs/vector-backend.md).
OPTIONAL_DOCUMENT_KEYS = ("vector_loops",)
HEADER_KEYS = ("language", "producer", "rank", "size", "host", "pid", "run_id", "command", "start_time",
               "end_time", "status", "exit_reason", "tolerance", "counters", "mpi")
# Keys of a site node; an MPI node has NODE_MPI_KEYS too.
NODE_KEYS = ("id", "type", "path", "expr", "file", "line", "calls", "predicted", "measured", "pass", "fail",
             "unmeasured", "mismatch", "first_mismatch", "first_fail", "wall_ns", "cpu_ns", "children")
NODE_MPI_KEYS = ("count_expr", "count")
STATS_KEYS = ("n", "min", "max", "sum")


def is_mpi(site_type: str) -> bool:
    return site_type.startswith("mpi_")


def rank_file_name(rank: int) -> str:
    return f"rank-{rank}.ma.json"


def rank_file(directory: Path, rank: int) -> Path:
    return directory / rank_file_name(rank)


def temporary_file(directory: Path, rank: int, pid: int) -> Path:
    """Where a rank's file is written before the rename that makes it visible."""
    return directory / f".{rank_file_name(rank)}.{pid}.tmp"


@dataclass(frozen=True)
class HeaderStatus:
    """How a rank's process ended, from the header of its file."""

    rank: int
    size: int
    status: str
    exit_reason: str | None

    @property
    def complete(self) -> bool:
        return self.status == COMPLETE

    def describe(self) -> str:
        """``status: reason``, or the status alone."""
        return f"{self.status}: {self.exit_reason}" if self.exit_reason else self.status


def header_status(header: Any) -> HeaderStatus:
    """The status fields of a header object (a parsed JSON object); ValueError if they are not there."""
    if not isinstance(header, dict):
        raise ValueError(f"expected a header object, found {type(header).__name__}")
    try:
        rank, size, status = header["rank"], header["size"], header["status"]
    except KeyError as missing:
        raise ValueError(f"header has no {missing} field") from None
    reason = header.get("exit_reason")
    return HeaderStatus(int(rank), int(size), str(status), None if reason is None else str(reason))
