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
# Optional top-level list, present only when some MPI assertion named its partner (peer=): one entry per site
# and thread (docs/trace-format.md).
PEERS_KEY = "peers"
PEER_KEYS = ("path", "type", "thread", "expr", "pass", "fail", "unmeasured", "first_fail")
# Written only when used: ``peers`` (above) and ``vector_loops``, the records of ma.vec_loop
# (docs/vector-backend.md).
VECTOR_LOOPS_KEY = "vector_loops"
# A record's optional indexed loads (its "gathers" object, null when not stated): expressions, first-call values
# and sums under these names.
VEC_LOOP_GATHER_KEYS = ("gathers", "gathered_bytes")
# ``given_hit_rates``: the cumulative hit rates ma.loadstore(..., hits=[...]) states, one entry per site path
# (ma_runtime/givenhits.py), read by the maps backend where a site has no measured ones.
GIVEN_HITS_KEY = "given_hit_rates"
GIVEN_HITS_KEYS = ("path", "hit_rates", "file", "line")
OPTIONAL_DOCUMENT_KEYS = (PEERS_KEY, VECTOR_LOOPS_KEY, GIVEN_HITS_KEY)
HEADER_KEYS = ("language", "producer", "rank", "size", "host", "pid", "run_id", "command", "start_time",
               "end_time", "status", "exit_reason", "tolerance", "counters", "mpi")
# --- the site node ---------------------------------------------------------------------------------------------
# Every key of a site node (docs/trace-format.md, "Site tree nodes"), in the order the runtimes write it, with the
# JSON value it holds and when it is there. Spelled here once: the C runtime takes names and order from the header
# generated from this table (csrc/libma/ma_trace_format.h, by ma_core/trace_format_c.py); the Python runtime's
# writer (ma_runtime/tree.py, sitecounts.py), the merge (ma_runtime/merge.py) and both readers (ma_post/reader.py,
# typed_reader.py) are checked against it (tests/test_node_layout.py).
STRING, OPTIONAL_STRING, OPTIONAL_INTEGER, COUNT = "string", "string or null", "integer or null", "integer >= 0"
OPTIONAL_STATS, OPTIONAL_OBJECT, OBJECT, NODES = "stats or null", "object or null", "object", "array of nodes"
# Where a key is present: on every node, on MPI nodes only, or only where a counter measured it.
ALWAYS, MPI_ONLY, MEASURED = "always", "mpi", "measured"


@dataclass(frozen=True)
class NodeKey:
    """One key of a site node."""

    name: str
    value: str  # STRING ... NODES
    presence: str = ALWAYS
    c_runtime: bool = True  # False: a measurement only the Python runtime makes (the C runtime never writes it)


NODE_LAYOUT: tuple[NodeKey, ...] = (
    NodeKey("id", STRING), NodeKey("type", STRING), NodeKey("path", STRING), NodeKey("expr", OPTIONAL_STRING),
    NodeKey("file", OPTIONAL_STRING), NodeKey("line", OPTIONAL_INTEGER), NodeKey("calls", COUNT),
    NodeKey("predicted", OPTIONAL_STATS), NodeKey("measured", OPTIONAL_STATS), NodeKey("pass", COUNT),
    NodeKey("fail", COUNT), NodeKey("unmeasured", COUNT), NodeKey("mismatch", COUNT),
    NodeKey("first_mismatch", OPTIONAL_OBJECT), NodeKey("first_fail", OPTIONAL_OBJECT), NodeKey("wall_ns", COUNT),
    NodeKey("cpu_ns", COUNT),
    NodeKey("count_expr", STRING, MPI_ONLY), NodeKey("count", OBJECT, MPI_ONLY),
    NodeKey("children", NODES),
    # The measured signature (docs/trace-format.md): `cache` {"calls", "accesses", "hits": [per level]} of the
    # Valgrind tool's cache simulation (ma run --cache), `c_calls` the calls from Python into compiled code inside
    # the site (ma run --counters ccalls), `subscripts` the subscript instructions of the program's code inside it
    # (the same counter; traces before it have none).
    NodeKey("cache", OBJECT, MEASURED), NodeKey("c_calls", COUNT, MEASURED, c_runtime=False),
    NodeKey("subscripts", COUNT, MEASURED, c_runtime=False),
)
NODE_KEYS = tuple(k.name for k in NODE_LAYOUT if k.presence == ALWAYS)
NODE_MPI_KEYS = tuple(k.name for k in NODE_LAYOUT if k.presence == MPI_ONLY)
NODE_CACHE_KEY, NODE_C_CALLS_KEY, NODE_SUBSCRIPTS_KEY = (k.name for k in NODE_LAYOUT if k.presence == MEASURED)
# The objects inside a node: stats, `count`, `first_mismatch`, `first_fail` (an MPI node's adds the count pair),
# `cache`.
STATS_KEYS = ("n", "min", "max", "sum")
COUNT_KEYS = ("predicted", "measured")
FIRST_MISMATCH_KEYS = ("given", "evaluated")
FIRST_FAIL_KEYS = ("call", "predicted", "measured")
FIRST_FAIL_MPI_KEYS = ("count_predicted", "count_measured")
CACHE_KEYS = ("calls", "accesses", "hits")
CACHE_MAX_LEVELS = 4  # MA_VG_CACHE_MAX_LEVELS of csrc/ma_vgcount.h
# Sites nested deeper than this are refused at the call, by both runtimes: a trace nests two JSON levels per site
# level, and the writers and readers of JSON (the standard library's, msgspec) stop near 1000 levels.
MAX_SITE_DEPTH = 400
# The counts of a node (the integer keys every node has), and its stats with the prefix of their value columns,
# in the order of the value arrays (VALUE_FIELDS).
NODE_COUNTS = tuple(k.name for k in NODE_LAYOUT if k.value == COUNT and k.presence == ALWAYS)
NODE_STATS = {"predicted": "pred", "measured": "meas", "count.predicted": "cpred", "count.measured": "cmeas"}
# What a flat row of a node holds besides its numbers, after its parent's row (-1 at the top): a merged trace's
# structure (`groups`) and the readers' rows; the readers add the node's first_fail and first_mismatch.
NODE_ROW_KEYS = ("type", "id", "path", "expr", "count_expr", "file", "line")

# The run record `ma run` writes beside the rank files: how the job and each rank ended (docs/trace-format.md).
RUN_RECORD_FILE = "ma-run.json"
RUN_FORMAT = "ma-run"
RUN_VERSION = 1
RUN_KEYS = ("format", "version", "run_id", "command", "argv", "launcher", "ranks", "exit_status", "start_time",
            "end_time", "ended", "first_failure", "stopped_by_ma_run", "signal_to_ma_run", "launcher_report", "cache")
# One entry of "ended" (and "first_failure", which adds "tied_with"): how one rank's process ended, as ma run saw it.
END_KEYS = ("rank", "pid", "after_s", "how", "signal", "signal_name", "exit_code")
END_SIGNAL, END_EXIT, END_UNKNOWN = "signal", "exit", "unknown"
# MPICH's mpiexec, Slurm's srun, no launcher (one process), anything else
LAUNCHER_KINDS = ("hydra", "srun", "direct", "other")

# The merged trace of a job (docs/trace-format.md, "Merged trace"): one uncompressed .npz written by rank 0.
MERGED_FORMAT = "ma-trace-merged"
MERGED_VERSION = 3  # 2: the value arrays gained the cache and ccalls columns; 3: the subscripts columns
MERGED_V2_FIELDS = 32  # a version-2 file's value columns (read with the subscripts columns unmeasured)
MERGED_FILE = "job.ma.npz"
# The most processes a trace may say its job had (header.size, the merged index's size): 16,777,216, past every
# MPI job run so far. A reader's work and memory grow with the size (the ranks it lists as missing), so a larger
# claim, such as a damaged or hostile header saying 10^9, is refused before any of it.
MAX_JOB_SIZE = 1 << 24
MERGED_INDEX = "trace.json"  # the JSON member of the archive: structure, names, whatever is not an array
# MA_TRACE_LAYOUT: what a run under MPI writes at finalize (periodic flushes are per rank in every layout).
LAYOUTS = ("merged", "per-rank", "both")
# Per-call aggregates of a site in the order of a merged trace's value arrays (and of a TraceSet's data axis 1).
VALUE_FIELDS: tuple[str, ...] = (
    *NODE_COUNTS,
    *(f"{prefix}_{key}" for prefix in NODE_STATS.values() for key in STATS_KEYS),
    # The node's optional measurements (NODE_CACHE_KEY, NODE_C_CALLS_KEY): calls measured, levels, line accesses,
    # accesses served by each level (0 beyond `levels`); calls counted and calls from Python into C; calls counted
    # and subscripts (NODE_SUBSCRIPTS_KEY).
    "cache_calls", "cache_levels", "cache_accesses", *(f"cache_hits{k}" for k in range(1, CACHE_MAX_LEVELS + 1)),
    "ccalls_n", "ccalls", "subscripts_n", "subscripts",
)
VARIABLE_FIELDS = ("value", "min", "max", "defs")
# Header fields that differ between the ranks of one job; a merged trace keeps them as per-rank arrays.
RANK_HEADER_KEYS = ("rank", "pid", "host", "start_time", "end_time", "status", "exit_reason")


def is_mpi(site_type: str) -> bool:
    return site_type.startswith("mpi_")


def merged_file(directory: Path) -> Path:
    return directory / MERGED_FILE


def rank_file_name(rank: int) -> str:
    return f"rank-{rank}.ma.json"


def rank_file(directory: Path, rank: int) -> Path:
    return directory / rank_file_name(rank)


def temporary_file(directory: Path, rank: int, pid: int, thread: int | None = None) -> Path:
    """Where a rank's file is written before the rename that makes it visible (one name per writing thread)."""
    return directory / f".{rank_file_name(rank)}.{pid}{'' if thread is None else f'-{thread}'}.tmp"


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


def describe_end(end: dict[str, Any]) -> str:
    """How a rank ended, in words, from an entry of a run record's ``ended`` list."""
    how = end.get("how")
    if how == END_SIGNAL:
        name = end.get("signal_name")
        return f"was killed by signal {end.get('signal')}" + (f" ({name})" if name else "")
    if how == END_EXIT:
        return f"exited with status {end.get('exit_code')}"
    return "ended (how, the launcher did not say)"


def _count(value: Any, field: str) -> int:
    if type(value) is not int or value < 0:
        raise ValueError(f"field {field!r} is {value!r}, expected an integer >= 0")
    return value


def signature_columns(cache: Any, c_calls: Any, calls: int, subscripts: Any = None) -> tuple[int, ...]:
    """The value columns ``cache_calls`` ... ``subscripts`` of a node's optional ``cache``, ``c_calls`` and
    ``subscripts`` fields (None when absent); ValueError naming the field when one is malformed."""
    if cache is None:
        cached: tuple[int, ...] = (0,) * (3 + CACHE_MAX_LEVELS)
    else:
        if not isinstance(cache, dict) or set(cache) != set(CACHE_KEYS):
            raise ValueError(f"field {NODE_CACHE_KEY!r} is {cache!r}, expected an object with keys "
                             f"{', '.join(CACHE_KEYS)}")
        hits = cache["hits"]
        if not isinstance(hits, list) or not 1 <= len(hits) <= CACHE_MAX_LEVELS:
            raise ValueError(f"field '{NODE_CACHE_KEY}.hits' is {hits!r}, expected an array of 1 to "
                             f"{CACHE_MAX_LEVELS} counts (accesses served per cache level)")
        served = [_count(h, f"{NODE_CACHE_KEY}.hits[{i}]") for i, h in enumerate(hits)]
        accesses = _count(cache["accesses"], f"{NODE_CACHE_KEY}.accesses")
        if sum(served) > accesses:
            raise ValueError(f"field '{NODE_CACHE_KEY}.hits' sums to {sum(served)}, more than its "
                             f"{accesses} accesses")
        cached = (_count(cache["calls"], f"{NODE_CACHE_KEY}.calls"), len(served), accesses,
                  *served, *(0,) * (CACHE_MAX_LEVELS - len(served)))
    counted = (0, 0) if c_calls is None else (calls, _count(c_calls, NODE_C_CALLS_KEY))
    indexed = (0, 0) if subscripts is None else (calls, _count(subscripts, NODE_SUBSCRIPTS_KEY))
    return (*cached, *counted, *indexed)
