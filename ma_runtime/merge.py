"""The merged trace of a job: every rank's site tree reduced onto rank 0 through MPI at exit, one file written.

Each rank turns its final trace document into a *part*: the structure of its trees (a JSON text, identical on
almost every rank) and its numbers (doubles). Parts travel up a binomial tree (depth log2 of the ranks); a
message carries each distinct structure once and the numbers of every rank below the sender, so rank 0
receives N x (numbers of one rank) plus the few distinct structures. Rank 0 writes ``job.ma.npz``
(docs/trace-format.md, "Merged trace") and sends an acknowledgement back down the tree; a rank that gets no
acknowledgement (rank 0 could not write, or a wait passed ``MA_MERGE_TIMEOUT`` seconds) writes its own rank
file instead, so no trace is lost to the merge. Every wait polls with a deadline: a rank that never arrives
(it raised and aborted the job, or it runs no ``import ma``) cannot hang the others for ever.

Standard library only (the runtime lives inside the application): the .npy members are written by hand, as
the C runtime writes them.
"""

from __future__ import annotations

import contextlib
import json
import os
import struct
import sys
import time
import zipfile
from array import array
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ma_core import settings
from ma_core.errors import MAError
from ma_core.trace_format import (
    MERGED_FORMAT,
    MERGED_INDEX,
    MERGED_VERSION,
    NODE_C_CALLS_KEY,
    NODE_CACHE_KEY,
    NODE_COUNTS,
    NODE_ROW_KEYS,
    NODE_SUBSCRIPTS_KEY,
    OPTIONAL_DOCUMENT_KEYS,
    RANK_HEADER_KEYS,
    RUNNING,
    VALUE_FIELDS,
    VARIABLE_FIELDS,
    merged_file,
    rank_file,
    signature_columns,
)

from . import trace

TAG_DATA, TAG_ACK = 0x4D41, 0x4D42  # "MA": kept apart from the program's own messages on COMM_WORLD
DEFAULT_TIMEOUT = settings.DEFAULT_MERGE_TIMEOUT
_NAN = float("nan")
_ROW_DEFAULTS = {"path": ""}  # of a node row's keys (NODE_ROW_KEYS) a hand-made document may leave out

# A rank's part: (rank, structure text, values, variable values, header text, per-rank header fields,
# anomalies, first fails and mismatches [(kind, row, object)], mpi_profile, optional top-level lists
# {OPTIONAL_DOCUMENT_KEYS entry: list} of the ones the document has)
Part = tuple[int, str, bytes, bytes, str, tuple[Any, ...], list[Any], list[Any], Any, dict[str, Any]]


def layout() -> str:
    """MA_TRACE_LAYOUT (merged by default: it applies only under MPI with more than one rank). An unknown value
    is reported and read as ``both``, which loses nothing (``ma run`` refuses it before the job starts)."""
    try:
        return settings.trace_layout(os.environ.get("MA_TRACE_LAYOUT"))
    except MAError as exc:
        print(f"ma: {exc}; writing both", file=sys.stderr)
        return "both"


def timeout() -> float:
    """MA_MERGE_TIMEOUT; a value that is not a positive number of seconds is read as the default at exit
    (``ma run`` refuses it before the job starts)."""
    try:
        return settings.merge_timeout(os.environ.get("MA_MERGE_TIMEOUT"))
    except MAError:
        return DEFAULT_TIMEOUT


def mpi_world() -> Any:
    """COMM_WORLD when MPI runs with more than one rank and can still communicate, else None."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is None:
        return None
    try:
        if not mpi.Is_initialized() or mpi.Is_finalized() or mpi.COMM_WORLD.Get_size() < 2:
            return None
    except Exception:  # MPI unable to answer: no merge
        return None
    return mpi.COMM_WORLD


# --- one rank's part --------------------------------------------------------------------------------
def _number(value: Any) -> float:
    if value is None:
        return _NAN
    try:
        return float(value)
    except OverflowError:  # an integer past the double range
        return float("inf") if value > 0 else float("-inf")


def _stats(stats: Mapping[str, Any] | None) -> tuple[float, float, float, float]:
    if not stats:
        return 0.0, _NAN, _NAN, 0.0
    return _number(stats["n"]), _number(stats["min"]), _number(stats["max"]), _number(stats["sum"])


def part_of(document: Mapping[str, Any]) -> Part:
    """The part of one rank's final trace document (the dictionary its rank file would hold)."""
    values = array("d")
    firsts: list[Any] = []
    threads = []
    row = 0
    for thread in document["threads"]:
        nodes: list[list[Any]] = []
        stack = [(child, -1) for child in reversed(thread["root"].get("children") or ())]
        while stack:
            node, parent = stack.pop()
            get = node.get
            count = get("count") or {}
            values.extend(_number(get(key, 0)) for key in NODE_COUNTS)
            for stats in (get("predicted"), get("measured"), count.get("predicted"), count.get("measured")):
                values.extend(_stats(stats))
            values.extend(signature_columns(get(NODE_CACHE_KEY), get(NODE_C_CALLS_KEY), get("calls", 0),
                                            get(NODE_SUBSCRIPTS_KEY)))
            for kind in ("first_fail", "first_mismatch"):
                if get(kind):
                    firsts.append((kind, row, get(kind)))
            nodes.append([parent, *(get(key, _ROW_DEFAULTS.get(key)) for key in NODE_ROW_KEYS)])
            index = len(nodes) - 1
            row += 1
            stack.extend((child, index) for child in reversed(get("children") or ()))
        threads.append({"thread": thread.get("thread", 0), "name": thread.get("name"), "nodes": nodes})
    variables = array("d")
    names = []
    for var in document.get("variables") or ():
        names.append([var["name"], var.get("scope") or "", var.get("kind"), var.get("expr")])
        variables.extend(_number(var.get(key)) for key in VARIABLE_FIELDS[:3])
        variables.append(_number(var.get("defs", 1)))
    structure = json.dumps({"threads": threads, "variables": names}, separators=(",", ":"))
    header = dict(document["header"])
    per_rank = tuple(header.pop(key, None) for key in RANK_HEADER_KEYS)
    header_text = json.dumps(header, separators=(",", ":"), sort_keys=True, default=str)
    return (int(per_rank[0]), structure, values.tobytes(), variables.tobytes(), header_text, per_rank[1:],
            list(document.get("anomalies") or ()), firsts, document.get("mpi_profile"),
            {key: document[key] for key in OPTIONAL_DOCUMENT_KEYS if document.get(key) is not None})


# --- the reduction ------------------------------------------------------------------------------------
class Bundle:
    """Parts of a subtree of ranks, each distinct structure and header text once."""

    def __init__(self) -> None:
        self.structures: dict[str, int] = {}
        self.headers: dict[str, int] = {}
        self.parts: list[tuple[Any, ...]] = []  # Part with the two texts replaced by their indices

    def add(self, part: Part) -> None:
        rank, structure, values, variables, header, *rest = part
        s = self.structures.setdefault(structure, len(self.structures))
        h = self.headers.setdefault(header, len(self.headers))
        self.parts.append((rank, s, values, variables, h, *rest))

    def merge(self, other: Bundle) -> None:
        s_map = {i: self.structures.setdefault(text, len(self.structures)) for text, i in other.structures.items()}
        h_map = {i: self.headers.setdefault(text, len(self.headers)) for text, i in other.headers.items()}
        self.parts.extend((p[0], s_map[p[1]], p[2], p[3], h_map[p[4]], *p[5:]) for p in other.parts)

    def __getstate__(self) -> tuple[Any, ...]:
        return self.structures, self.headers, self.parts

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        self.structures, self.headers, self.parts = state


def _wait(request_done: Any, deadline: float) -> bool:
    pause = 0.0001
    while not request_done():
        if time.monotonic() > deadline:
            return False
        time.sleep(pause)
        pause = min(pause * 2, 0.01)
    return True


def _send(comm: Any, message: Any, dest: int, tag: int, deadline: float) -> bool:
    request = comm.issend(message, dest=dest, tag=tag)
    if _wait(lambda: request.test()[0], deadline):
        return True
    with contextlib.suppress(Exception):  # nothing more to do for a message nobody takes
        request.Cancel()
    return False


def _receive(comm: Any, source: int, tag: int, deadline: float) -> tuple[bool, Any]:
    if not _wait(lambda: comm.iprobe(source=source, tag=tag), deadline):
        return False, None
    return True, comm.recv(source=source, tag=tag)


def reduce_parts(comm: Any, part: Part | None, deadline: float) -> tuple[Bundle | None, int | None, list[int]]:
    """Binomial-tree reduction onto rank 0: (the whole bundle on rank 0 or None, parent, children)."""
    rank, size = comm.Get_rank(), comm.Get_size()
    bundle = Bundle()
    if part is not None:
        bundle.add(part)
    children: list[int] = []
    step = 1
    while step < size:
        if rank & step:
            parent = rank - step
            sent = _send(comm, bundle, parent, TAG_DATA, deadline)
            return None, parent if sent else None, children
        child = rank + step
        if child < size:
            received, other = _receive(comm, child, TAG_DATA, deadline)
            if received:
                bundle.merge(other)
                children.append(child)
        step <<= 1
    return bundle, None, children


def acknowledge(comm: Any, parent: int | None, children: list[int], written: bool | None, deadline: float) -> bool:
    """Pass rank 0's outcome down the tree; True when this rank's numbers are in the merged file."""
    if parent is not None:
        received, written = _receive(comm, parent, TAG_ACK, deadline)
        written = bool(received and written)
    for child in children:
        _send(comm, bool(written), child, TAG_ACK, deadline)
    return bool(written)


# --- writing the file on rank 0 ------------------------------------------------------------------------
_ORDER = "<" if sys.byteorder == "little" else ">"


def npy(descr: str, shape: tuple[int, ...], data: bytes) -> bytes:
    """An .npy file (format 1.0): magic, header padded to 64 bytes, raw C-order data."""
    dims = "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': {dims}, }}"
    padding = 64 - (10 + len(header) + 1) % 64
    text = (header + " " * (padding % 64) + "\n").encode("latin1")
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text + data


def _f8(shape: tuple[int, ...], data: bytes | array) -> bytes:
    return npy(_ORDER + "f8", shape, bytes(data))


def _i8(values: list[int]) -> bytes:
    return npy(_ORDER + "i8", (len(values),), array("q", values).tobytes())


def build_archive(bundle: Bundle, size: int, extra: Mapping[str, Any] | None = None) -> dict[str, bytes]:
    """The members of the merged file: name -> bytes (docs/trace-format.md, "Merged trace")."""
    parts = sorted(bundle.parts, key=lambda p: p[0])
    structures = [json.loads(text) for text in bundle.structures]
    headers = [json.loads(text) for text in bundle.headers]
    n_fields, n_var_fields = len(VALUE_FIELDS), len(VARIABLE_FIELDS)
    members: dict[str, bytes] = {}
    groups = []
    for g, structure in enumerate(structures):
        members_of = [p for p in parts if p[1] == g]
        rows = sum(len(t["nodes"]) for t in structure["threads"])
        n_vars = len(structure["variables"])
        members[f"group-{g}-values.npy"] = _f8((len(members_of), rows, n_fields), b"".join(p[2] for p in members_of))
        members[f"group-{g}-variables.npy"] = _f8((len(members_of), n_vars, n_var_fields),
                                                  b"".join(p[3] for p in members_of))
        members[f"group-{g}-ranks.npy"] = _i8([p[0] for p in members_of])
        groups.append(structure)
    hosts: dict[str, int] = {}
    statuses: dict[tuple[Any, Any], int] = {}
    pids, times, host_of, status_of = [], array("d"), [], []
    anomalies: dict[tuple[str, str], dict[str, Any]] = {}
    firsts: list[list[Any]] = []
    routines: dict[str, int] = {}
    totals: dict[tuple[int, int], tuple[float, float, float]] = {}
    hist, peers = array("d"), array("d")
    has_profile = []
    optional: list[list[Any]] = []  # [rank, {key: list}] of the ranks whose document has optional lists
    for position, (rank, _group, _values, _variables, _header, per_rank, rank_anomalies, rank_firsts, profile,
                   sections) in enumerate(parts):
        if sections:
            optional.append([rank, sections])
        pid, host, start, end, status, reason = per_rank
        pids.append(int(pid) if isinstance(pid, int) else -1)
        times.extend((_number(start), _number(end)))
        host_of.append(hosts.setdefault(str(host), len(hosts)))
        status_of.append(statuses.setdefault((status, reason), len(statuses)))
        for anomaly in rank_anomalies:
            key = (str(anomaly.get("kind")), str(anomaly.get("path", "")))
            if key in anomalies:
                anomalies[key]["count"] += int(anomaly.get("count", 1) or 1)
                anomalies[key]["ranks"].append(rank)
            else:
                anomalies[key] = {**anomaly, "count": int(anomaly.get("count", 1) or 1), "ranks": [rank]}
        firsts.extend([kind, rank, row, value] for kind, row, value in rank_firsts)
        has_profile.append(1 if profile is not None else 0)
        for name, entry in ((profile or {}).get("calls") or {}).items():
            r = routines.setdefault(name, len(routines))
            totals[(position, r)] = (_number(entry.get("calls")), _number(entry.get("bytes")),
                                     _number(entry.get("time_ns")))
            for lo, hi, count in entry.get("hist") or ():
                hist.extend((position, r, _number(lo), _number(hi), _number(count)))
            for peer, (calls, nbytes) in (entry.get("peers") or {}).items():
                peers.extend((position, r, _number(int(peer)), _number(calls), _number(nbytes)))
    mpi_totals = array("d", bytes(8 * 3 * len(parts) * len(routines)))
    for (position, r), numbers in totals.items():
        offset = 3 * (position * len(routines) + r)
        mpi_totals[offset:offset + 3] = array("d", numbers)
    present = {p[0] for p in parts}
    members["rank.npy"] = _i8([p[0] for p in parts])
    members["rank_group.npy"] = _i8([p[1] for p in parts])
    members["rank_header.npy"] = _i8([p[4] for p in parts])
    members["rank_host.npy"] = _i8(host_of)
    members["rank_status.npy"] = _i8(status_of)
    members["rank_pid.npy"] = _i8(pids)
    members["rank_time.npy"] = _f8((len(parts), 2), times)
    members["rank_mpi.npy"] = _i8(has_profile)
    members["mpi_totals.npy"] = _f8((len(parts), len(routines), 3), mpi_totals)
    members["mpi_hist.npy"] = _f8((len(hist) // 5, 5), hist)
    members["mpi_peers.npy"] = _f8((len(peers) // 5, 5), peers)
    index = {
        "format": MERGED_FORMAT, "version": MERGED_VERSION, "size": size,
        "run_id": headers[0].get("run_id") if headers else None,
        "fields": list(VALUE_FIELDS), "variable_fields": list(VARIABLE_FIELDS),
        "absent": [r for r in range(size) if r not in present],
        "groups": groups, "headers": headers, "hosts": list(hosts),
        "statuses": [list(key) for key in statuses], "mpi_routines": list(routines),
        "anomalies": list(anomalies.values()), "firsts": firsts, "optional": optional, "writer": dict(extra or {}),
    }
    members[MERGED_INDEX] = trace.encode(index).encode("utf-8")
    return members


def write_archive(directory: Path, members: Mapping[str, bytes]) -> Path:
    """An uncompressed zip (what numpy.savez writes), atomically: a temporary file, then rename."""
    directory.mkdir(parents=True, exist_ok=True)
    final = merged_file(directory)
    temporary = directory / f".{final.name}.{os.getpid()}.tmp"
    with zipfile.ZipFile(temporary, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    os.replace(temporary, final)
    return final


def merge_job(comm: Any, document: Mapping[str, Any] | None, directory: Path) -> bool:
    """Collective over ``comm``: reduce every rank's final document, rank 0 writes the merged file.

    True when this rank's numbers are in the written file (its rank file is then not needed)."""
    start = time.perf_counter()
    deadline = time.monotonic() + timeout()
    part = part_of(document) if document is not None else None
    bundle, parent, children = reduce_parts(comm, part, deadline)
    written: bool | None = None
    if bundle is not None:  # rank 0
        reduced = time.perf_counter()
        try:
            members = build_archive(bundle, comm.Get_size(), {"reduction_seconds": reduced - start})
            write_archive(directory, members)
            written = True
        except OSError as error:
            print(f"ma: cannot write the merged trace into {directory}: {error}", file=sys.stderr)
            written = False
        if os.environ.get("MA_MERGE_TIMING"):
            print(f"ma: merged {len(bundle.parts)} ranks ({len(bundle.structures)} structures): reduction "
                  f"{reduced - start:.4f} s, write {time.perf_counter() - reduced:.4f} s", file=sys.stderr)
    return acknowledge(comm, parent, children, written, deadline) and document is not None


def at_exit() -> None:
    """The exit hook ``import ma`` registers: under MPI with several ranks, join the merge (also a rank that ran
    no annotation, so that nobody waits for it), then keep or drop this rank's own file as the layout says."""
    mars = sys.modules.get("ma_runtime.mars")
    runtime = mars.current_runtime() if mars is not None else None
    if runtime is not None and not runtime.finished:
        runtime.finish("complete")
    document = runtime.pending_final if runtime is not None else None
    comm = mpi_world()
    chosen = layout()
    merged = False
    if comm is not None and chosen != "per-rank":
        try:
            directory = runtime.settings.trace_dir if runtime is not None else _trace_dir()
            merged = merge_job(comm, document, directory)
        except Exception as error:  # the merge must never cost the rank its trace
            print(f"ma: merging the traces failed ({type(error).__name__}: {error}); writing rank files",
                  file=sys.stderr)
    if runtime is None or document is None:
        return
    runtime.pending_final = None
    if merged and chosen == "merged":
        _drop_flush(runtime.settings.trace_dir, int(document["header"]["rank"]))
    else:
        try:
            trace.write_atomic(runtime.settings.trace_dir, int(document["header"]["rank"]), document)
        except OSError as error:  # said, not raised: an exit handler's traceback would hide the reason
            print(f"ma: rank {document['header']['rank']}: cannot write the final trace into "
                  f"{runtime.settings.trace_dir}: {error}", file=sys.stderr, flush=True)


def merged_ranks(directory: Path) -> set[int]:
    """Ranks whose final numbers are in the directory's merged file (none when it has no readable one)."""
    try:
        with zipfile.ZipFile(merged_file(directory)) as archive:
            index = json.loads(archive.read(MERGED_INDEX))
        absent = set(index["absent"])
        return {r for r in range(int(index["size"])) if r not in absent}
    except (OSError, KeyError, ValueError, TypeError, zipfile.BadZipFile):
        return set()


def _trace_dir() -> Path:
    return Path(os.environ.get("MA_TRACE_DIR", "ma-traces")).absolute()


def _drop_flush(directory: Path, rank: int) -> None:
    """This rank's periodic flush, now superseded by the merged file."""
    path = rank_file(directory, rank)
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
        if f'"status":"{RUNNING}"'.encode() in head:
            path.unlink()
    except OSError:
        pass
