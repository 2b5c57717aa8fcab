"""Reading the merged trace of a job (``job.ma.npz``, docs/trace-format.md "Merged trace").

The archive is read member by member into NumPy arrays: the per-rank numbers go straight into the rank
dimension (no Python object per rank). Per-rank header fields and MPI profiles stay arrays until asked for:
``RankHeaders`` and ``RankProfiles`` build a rank's dictionary on access.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

import numpy as np

from ma_core.errors import TraceError
from ma_core.inputs import check_regular_file
from ma_core.trace_format import (
    MAX_JOB_SIZE,
    MERGED_FORMAT,
    MERGED_INDEX,
    MERGED_V2_FIELDS,
    MERGED_VERSION,
    NODE_ROW_KEYS,
    OPTIONAL_DOCUMENT_KEYS,
    VALUE_FIELDS,
    VARIABLE_FIELDS,
)

from .reader import number_from_text


class ValueMember:
    """A group's value array, read a block of ranks at a time when laid out (never whole in memory: the TraceSet's
    own array is the one copy of the numbers)."""

    BLOCK_BYTES = 64 << 20

    def __init__(self, path: Path, name: str, shape: tuple[int, int, int], stored_fields: int | None = None) -> None:
        """``stored_fields``: the file's value columns where fewer than ``shape``'s (an older version: the
        columns it lacks, the last ones, read as 0, i.e. unmeasured)."""
        self.path, self.name, self.shape = path, name, shape
        self.stored = shape if stored_fields is None else (*shape[:2], stored_fields)
        with zipfile.ZipFile(path) as archive:
            try:
                handle = archive.open(name)
            except KeyError:
                raise TraceError(str(path), f"merged trace has no member {name}") from None
            with handle:
                found, dtype = self._header(handle)
        if found != self.stored or dtype.kind != "f":
            raise TraceError(str(path), f"member {name} has shape {found} of {dtype}, expected {self.stored} of "
                                        "doubles")
        self.dtype = dtype

    def _header(self, handle: Any) -> tuple[tuple[int, ...], np.dtype[Any]]:
        try:
            version = np.lib.format.read_magic(handle)
            shape, fortran, dtype = (np.lib.format.read_array_header_1_0(handle) if version == (1, 0)
                                     else np.lib.format.read_array_header_2_0(handle))
        except ValueError as exc:
            raise TraceError(str(self.path), f"member {self.name} is not an .npy array ({exc})") from None
        if fortran:
            raise TraceError(str(self.path), f"member {self.name} is in Fortran order, expected C order")
        return tuple(shape), dtype

    def blocks(self) -> Iterator[tuple[int, np.ndarray]]:
        """(first rank position, values of a block of ranks) through the whole array."""
        ranks, rows, fields = self.stored
        missing = self.shape[2] - fields
        per_rank = rows * fields * self.dtype.itemsize
        step = max(1, self.BLOCK_BYTES // max(per_rank, 1))
        try:
            with zipfile.ZipFile(self.path) as archive, archive.open(self.name) as handle:
                self._header(handle)
                for start in range(0, ranks, step):
                    count = min(step, ranks - start)
                    data = handle.read(count * per_rank)
                    if len(data) != count * per_rank:
                        raise TraceError(str(self.path), f"member {self.name} is cut short")
                    block = np.frombuffer(data, dtype=self.dtype).reshape(count, rows, fields)
                    if missing:
                        block = np.concatenate([block, np.zeros((count, rows, missing), dtype=block.dtype)], axis=2)
                    yield start, block.astype(np.float64, copy=False)
        except (OSError, zipfile.BadZipFile) as exc:
            raise TraceError(str(self.path), f"member {self.name} cannot be read ({exc})") from None


@dataclass
class Group:
    """Ranks whose site trees have one structure: nodes once, numbers (ranks, rows, fields)."""

    threads: list[tuple[int, str, list[list[Any]]]]  # (thread id, name, nodes [parent, type, id, path, ...])
    variables: list[list[Any]]  # [name, scope, kind, expr]
    ranks: np.ndarray
    values: ValueMember  # (ranks, rows, len(VALUE_FIELDS)); rows thread by thread, nodes in order
    variable_values: np.ndarray  # (ranks, variables, len(VARIABLE_FIELDS))


@dataclass
class MergedTrace:
    path: Path
    size: int
    run_id: str | None
    groups: list[Group]
    ranks: np.ndarray  # every rank in the file, ascending
    rank_group: np.ndarray
    rank_header: np.ndarray
    headers: list[dict[str, Any]]
    hosts: list[str]
    rank_host: np.ndarray
    statuses: list[list[Any]]
    rank_status: np.ndarray
    rank_pid: np.ndarray
    rank_time: np.ndarray  # (ranks, 2): start, end
    anomalies: list[dict[str, Any]]
    firsts: list[list[Any]]  # [kind, rank, row in the rank's group, object]
    mpi_routines: list[str]
    rank_mpi: np.ndarray
    mpi_totals: np.ndarray  # (ranks, routines, 3): calls, bytes, time_ns
    mpi_hist: np.ndarray  # (k, 5): rank position, routine, lo, hi, count
    mpi_peers: np.ndarray  # (k, 5): rank position, routine, peer, calls, bytes
    writer: dict[str, Any]
    optional: list[tuple[int, dict[str, list[Any]]]]  # (rank, its optional top-level lists) of ranks that have any


def _optional(index: dict[str, Any], path: Path) -> list[tuple[int, dict[str, list[Any]]]]:
    """The index's ``optional`` entries, [rank, {key: array}] (absent in a file without any), checked."""
    entries = index.get("optional") or []
    where = f"{MERGED_INDEX}: optional"
    if not isinstance(entries, list):
        raise TraceError(str(path), f"{where} is {type(entries).__name__}, expected an array of [rank, object]")
    out = []
    for i, entry in enumerate(entries):
        if not (isinstance(entry, list) and len(entry) == 2 and type(entry[0]) is int and isinstance(entry[1], dict)):
            raise TraceError(str(path), f"{where}[{i}]: {str(entry)[:80]} is not [rank, {{key: array}}]")
        for key, value in entry[1].items():
            if key not in OPTIONAL_DOCUMENT_KEYS or not isinstance(value, list):
                raise TraceError(str(path), f"{where}[{i}]: key {key!r} with {type(value).__name__}, expected one "
                                            f"of {', '.join(OPTIONAL_DOCUMENT_KEYS)} with an array")
        out.append((entry[0], entry[1]))
    return out


def _array(archive: Any, name: str, path: Path, shape: tuple[int | None, ...]) -> np.ndarray:
    try:
        array = archive[name]
    except KeyError:
        raise TraceError(str(path), f"merged trace has no member {name}.npy") from None
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise TraceError(str(path), f"member {name}.npy is corrupt ({exc})") from None
    if array.ndim != len(shape) or any(want is not None and got != want for got, want in zip(array.shape, shape,
                                                                                               strict=True)):
        raise TraceError(str(path), f"member {name}.npy has shape {array.shape}, expected "
                                    f"{tuple('*' if s is None else s for s in shape)}")
    if not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)):
        raise TraceError(str(path), f"member {name}.npy holds {array.dtype}, expected numbers")
    return array


# The runtime stores the members uncompressed (numpy.savez): one that would expand past this many times its stored
# size, and past MAX_INFLATED bytes, is not its work (a zip bomb: a few MB that inflate to gigabytes).
MAX_RATIO = 100
MAX_INFLATED = 64 << 20


def _check_member_sizes(path: Path) -> None:
    """Each member's size as the archive declares it (the most that reading it yields), before any is read; an
    array member's .npy header agrees with it, so that no array is allocated for data the file does not hold."""
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist():
                if info.file_size > max(MAX_INFLATED, MAX_RATIO * info.compress_size):
                    raise TraceError(str(path), f"member {info.filename} would inflate from {info.compress_size:,} "
                                                f"to {info.file_size:,} bytes: not a merged trace as the runtime "
                                                "writes it (members stored uncompressed)")
                if info.filename.endswith(".npy"):
                    with archive.open(info) as handle:
                        _npy_fits(handle, info, path)
    except (OSError, zipfile.BadZipFile, EOFError):
        return  # _index below says what is wrong with the archive itself


def _npy_fits(handle: Any, info: zipfile.ZipInfo, path: Path) -> None:
    try:
        version = np.lib.format.read_magic(handle)
        shape, _, dtype = (np.lib.format.read_array_header_1_0(handle) if version == (1, 0)
                           else np.lib.format.read_array_header_2_0(handle))
    except ValueError:
        return  # not an .npy array: the member's reader names it
    claimed = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if claimed > info.file_size:
        raise TraceError(str(path), f"member {info.filename} says it holds {shape} of {dtype} ({claimed:,} bytes) "
                                    f"but has {info.file_size:,} bytes")


def _index(path: Path) -> dict[str, Any]:
    try:
        with zipfile.ZipFile(path) as archive:
            text = archive.read(MERGED_INDEX)
    except KeyError:
        raise TraceError(str(path), f"not a merged ma trace: no {MERGED_INDEX} member") from None
    except (OSError, zipfile.BadZipFile) as exc:
        raise TraceError(str(path), f"cannot read the merged trace ({exc}): truncated or not a zip archive"
                         ) from None
    from .reader import parse_json

    index = parse_json(text, str(path) + ":" + MERGED_INDEX)
    if not isinstance(index, dict) or index.get("format") != MERGED_FORMAT:
        raise TraceError(str(path), f"{MERGED_INDEX}: format is not {MERGED_FORMAT!r}")
    version = index.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise TraceError(str(path), f"{MERGED_INDEX}: bad version {version!r}, expected an integer >= 1")
    if version > MERGED_VERSION:
        raise TraceError(str(path), f"merged format version {version} is newer than this reader supports "
                                    f"({MERGED_VERSION}); upgrade the ma package to read it")
    if version == 2:  # the same layout without the subscripts columns, which read as unmeasured
        fields = list(VALUE_FIELDS[:MERGED_V2_FIELDS])
    elif version < MERGED_VERSION:
        raise TraceError(str(path), f"merged format version {version} predates this reader's ({MERGED_VERSION}: "
                                    "value arrays with the cache and ccalls columns); write the job's rank files "
                                    "(MA_TRACE_LAYOUT=per-rank) or run it again to read it")
    else:
        fields = list(VALUE_FIELDS)
    if index.get("fields") != fields or index.get("variable_fields") != list(VARIABLE_FIELDS):
        raise TraceError(str(path), f"{MERGED_INDEX}: fields differ from this reader's ({', '.join(VALUE_FIELDS)})")
    for key, kind in (("size", int), ("groups", list), ("headers", list), ("hosts", list), ("statuses", list),
                      ("mpi_routines", list), ("anomalies", list), ("firsts", list)):
        if not isinstance(index.get(key), kind) or isinstance(index.get(key), bool):
            raise TraceError(str(path), f"{MERGED_INDEX}: field {key!r} is {index.get(key)!r}, "
                                        f"expected {'an integer' if kind is int else 'an array'}")
    return index


def _group(archive: Any, path: Path, g: int, entry: Any, fields: int) -> Group:
    """Group ``g`` of the index, its value array of ``fields`` columns (fewer than VALUE_FIELDS: an older file)."""
    where = f"{MERGED_INDEX}: groups[{g}]"
    if not isinstance(entry, dict) or not isinstance(entry.get("threads"), list) \
            or not isinstance(entry.get("variables"), list):
        raise TraceError(str(path), f"{where}: expected {{'threads': [...], 'variables': [...]}}")
    threads = []
    for t, thread in enumerate(entry["threads"]):
        nodes = thread.get("nodes") if isinstance(thread, dict) else None
        if not isinstance(nodes, list) or not isinstance(thread.get("thread"), int):
            raise TraceError(str(path), f"{where}.threads[{t}]: expected {{'thread': int, 'name', 'nodes': [...]}}")
        for n, node in enumerate(nodes):
            if not (isinstance(node, list) and len(node) == 1 + len(NODE_ROW_KEYS) and isinstance(node[0], int)
                    and -1 <= node[0] < n and isinstance(node[1], str) and isinstance(node[2], str)):
                raise TraceError(str(path), f"{where}.threads[{t}].nodes[{n}]: expected [parent row before it, "
                                            f"{', '.join(NODE_ROW_KEYS)}]")
        threads.append((thread["thread"], str(thread.get("name") or f"thread {thread['thread']}"), nodes))
    rows = sum(len(nodes) for _, _, nodes in threads)
    ranks = _array(archive, f"group-{g}-ranks", path, (None,))
    values = ValueMember(path, f"group-{g}-values.npy", (len(ranks), rows, len(VALUE_FIELDS)), fields)
    variable_values = _array(archive, f"group-{g}-variables", path,
                             (len(ranks), len(entry["variables"]), len(VARIABLE_FIELDS)))
    return Group(threads, entry["variables"], ranks.astype(np.int64), values,
                 variable_values.astype(np.float64, copy=False))


def read_merged(path: Path) -> MergedTrace:
    """Parse and check a merged trace; TraceError naming the file and the member for any problem."""
    try:
        check_regular_file(path)
    except OSError as exc:
        raise TraceError(str(path), f"cannot read: {exc.strerror or exc}") from None
    _check_member_sizes(path)
    index = _index(path)
    try:
        archive = np.load(path, allow_pickle=False)
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise TraceError(str(path), f"cannot read the merged trace ({exc})") from None
    with archive:
        groups = [_group(archive, path, g, entry, len(index["fields"])) for g, entry in enumerate(index["groups"])]
        ranks = _array(archive, "rank", path, (None,)).astype(np.int64)
        n = len(ranks)
        per_rank = {name: _array(archive, name, path, (n,)).astype(np.int64)
                    for name in ("rank_group", "rank_header", "rank_host", "rank_status", "rank_pid", "rank_mpi")}
        merged = MergedTrace(
            path=path, size=index["size"], run_id=index.get("run_id"), groups=groups, ranks=ranks,
            rank_group=per_rank["rank_group"],
            rank_header=per_rank["rank_header"], headers=index["headers"], hosts=index["hosts"],
            rank_host=per_rank["rank_host"], statuses=index["statuses"], rank_status=per_rank["rank_status"],
            rank_pid=per_rank["rank_pid"], rank_time=_array(archive, "rank_time", path, (n, 2)),
            anomalies=index["anomalies"], firsts=index["firsts"], mpi_routines=index["mpi_routines"],
            rank_mpi=per_rank["rank_mpi"],
            mpi_totals=_array(archive, "mpi_totals", path, (n, len(index["mpi_routines"]), 3)),
            mpi_hist=_array(archive, "mpi_hist", path, (None, 5)),
            mpi_peers=_array(archive, "mpi_peers", path, (None, 5)),
            writer=index.get("writer") or {}, optional=_optional(index, path))
    _check(merged)
    return merged


def _check(merged: MergedTrace) -> None:
    name = str(merged.path)
    if not 1 <= merged.size <= MAX_JOB_SIZE:
        raise TraceError(name, f"{MERGED_INDEX}: size {merged.size:,}, expected 1 to {MAX_JOB_SIZE:,} processes (the "
                               "largest job a trace may describe)")
    if len(merged.ranks) and (np.any(np.diff(merged.ranks) <= 0) or merged.ranks[0] < 0
                              or merged.ranks[-1] >= merged.size):
        raise TraceError(name, f"rank.npy: ranks must be ascending, distinct and within size {merged.size}")
    grouped = np.sort(np.concatenate([g.ranks for g in merged.groups])) if merged.groups else np.zeros(0, np.int64)
    if not np.array_equal(grouped, merged.ranks):
        raise TraceError(name, "group-*-ranks.npy: the groups do not hold exactly the ranks of rank.npy")
    for g, group in enumerate(merged.groups):
        if np.any(merged.rank_group[np.searchsorted(merged.ranks, group.ranks)] != g):
            raise TraceError(name, f"rank_group.npy disagrees with group-{g}-ranks.npy")
    for field, table, what in (("rank_header", merged.headers, "headers"), ("rank_host", merged.hosts, "hosts"),
                               ("rank_status", merged.statuses, "statuses")):
        array = getattr(merged, field)
        if len(array) and (array.min() < 0 or array.max() >= len(table)):
            raise TraceError(name, f"{field}.npy: an index outside the {len(table)} entries of {what}")
    stray = sorted({rank for rank, _ in merged.optional} - set(merged.ranks.tolist()))
    if stray:
        raise TraceError(name, f"{MERGED_INDEX}: optional: entries of ranks {stray[:5]} that the file does not hold")
    if not all(isinstance(h, dict) for h in merged.headers):
        raise TraceError(name, f"{MERGED_INDEX}: headers must be objects")
    for array, what in ((merged.mpi_hist, "mpi_hist"), (merged.mpi_peers, "mpi_peers")):
        if len(array) and (array[:, 0].min() < 0 or array[:, 0].max() >= len(merged.ranks)
                           or array[:, 1].min() < 0 or array[:, 1].max() >= len(merged.mpi_routines)):
            raise TraceError(name, f"{what}.npy: a rank position or routine index out of range")


class RankHeaders(Sequence[dict[str, Any]]):
    """The header of every rank of a merged trace, built on access from the shared header and the arrays."""

    def __init__(self, merged: MergedTrace) -> None:
        self.merged = merged

    def __len__(self) -> int:
        return len(self.merged.ranks)

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, i: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, i: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        m = self.merged
        i = range(len(self))[i]
        status, reason = m.statuses[int(m.rank_status[i])]
        start, end = (None if np.isnan(t) else float(t) for t in m.rank_time[i])
        return {**m.headers[int(m.rank_header[i])], "rank": int(m.ranks[i]), "pid": int(m.rank_pid[i]),
                "host": m.hosts[int(m.rank_host[i])], "start_time": start, "end_time": end, "status": status,
                "exit_reason": reason}

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (self[i] for i in range(len(self)))

    def statuses(self) -> tuple[np.ndarray, list[list[Any]]]:
        """(status index per rank, [status, reason] table): the ranks' statuses without building headers."""
        return self.merged.rank_status, self.merged.statuses


class RankProfiles(Sequence[dict[str, Any] | None]):
    """The MPI profile of every rank of a merged trace, rebuilt on access in the rank-file form."""

    def __init__(self, merged: MergedTrace) -> None:
        self.merged = merged
        self.hist_at = np.searchsorted(merged.mpi_hist[:, 0], np.arange(len(merged.ranks) + 1))
        self.peers_at = np.searchsorted(merged.mpi_peers[:, 0], np.arange(len(merged.ranks) + 1))

    def __len__(self) -> int:
        return len(self.merged.ranks)

    @overload
    def __getitem__(self, i: int) -> dict[str, Any] | None: ...

    @overload
    def __getitem__(self, i: slice) -> list[dict[str, Any] | None]: ...

    def __getitem__(self, i: int | slice) -> dict[str, Any] | list[dict[str, Any] | None] | None:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        m = self.merged
        i = range(len(self))[i]
        if not m.rank_mpi[i]:
            return None
        calls: dict[str, dict[str, Any]] = {}
        for r, name in enumerate(m.mpi_routines):
            count, nbytes, time_ns = (_plain(x) for x in m.mpi_totals[i, r])
            if count or nbytes or time_ns:
                calls[name] = {"calls": count, "bytes": nbytes, "time_ns": time_ns, "hist": [], "peers": {}}
        for _, r, lo, hi, count in m.mpi_hist[self.hist_at[i]:self.hist_at[i + 1]].tolist():
            calls.setdefault(m.mpi_routines[int(r)], {"calls": 0, "bytes": 0, "time_ns": 0, "hist": [], "peers": {}}
                             )["hist"].append([_plain(lo), _plain(hi), _plain(count)])
        for _, r, peer, count, nbytes in m.mpi_peers[self.peers_at[i]:self.peers_at[i + 1]].tolist():
            calls.setdefault(m.mpi_routines[int(r)], {"calls": 0, "bytes": 0, "time_ns": 0, "hist": [], "peers": {}}
                             )["peers"][str(int(peer))] = [_plain(count), _plain(nbytes)]
        return {"calls": calls}

    def __iter__(self) -> Iterator[dict[str, Any] | None]:
        return (self[i] for i in range(len(self)))


def _plain(value: float) -> int | float:
    """A count read back as the integer it was written as."""
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


def decoded(value: Any) -> Any:
    """An object of the index (a first failing call, an anomaly) with ``{"$num": ...}`` forms read back."""
    if isinstance(value, dict):
        value = {key: decoded(item) for key, item in value.items()}
        return number_from_text(value)
    if isinstance(value, list):
        return [decoded(item) for item in value]
    return value


__all__ = ["Group", "MergedTrace", "RankHeaders", "RankProfiles", "decoded", "read_merged"]
