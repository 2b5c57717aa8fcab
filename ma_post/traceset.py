"""TraceSet: every rank's trace of one run, with ranks and threads as array dimensions.

The hub type of post-processing. Sites are keyed by their chain of ``(type, id)`` pairs from the root
(a path string alone is ambiguous when two sites of different types share an id), and every per-call
aggregate of a site is a numpy array of shape ``(ranks, threads)``, so validation and model checks are
vectorised over ranks.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from operator import itemgetter
from pathlib import Path
from typing import Any, Generic, Self, TypeVar, overload

import numpy as np

from ma_core import trace_format
from ma_core.errors import SiteNotFoundError, TraceError
from ma_core.trace_format import STRUCTURE_TYPES, header_status, is_mpi, rank_file_name

from .merged import MergedTrace, RankHeaders, RankProfiles, decoded, read_merged
from .reader import (
    FIELDS,
    FlatTrace,
    TraceWarning,
    default_workers,
    flatten_document,
    missing_ranks,
    read_many,
    read_trace_dir,
    to_float,
)
from .runrecord import RunRecord, record_for

SiteKey = tuple[tuple[str, str], ...]  # ((type, id), ...) from the root; () is the root

FIELD = {name: i for i, name in enumerate(FIELDS)}
_MINMAX = [i for i, name in enumerate(FIELDS) if name.endswith(("_min", "_max"))]

MPI_TYPES: frozenset[str] = frozenset(trace_format.MPI_TYPES)
T = TypeVar("T")


@dataclass(frozen=True)
class Stats:
    """Per-call statistics of one quantity, arrays of shape (ranks, threads); NaN min/max where absent."""

    n: np.ndarray
    min: np.ndarray
    max: np.ndarray
    sum: np.ndarray

    def per_rank(self) -> Stats:
        """Reduced over threads: shape (ranks,)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices: rank without the site
            return Stats(self.n.sum(axis=1), np.nanmin(self.min, axis=1), np.nanmax(self.max, axis=1),
                         self.sum.sum(axis=1))

    def mean_per_rank(self) -> np.ndarray:
        """Per-call mean on every rank (NaN where the rank has no values)."""
        reduced = self.per_rank()
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(reduced.n > 0, reduced.sum / np.where(reduced.n > 0, reduced.n, 1), np.nan)

    def total(self) -> tuple[float, float, float, float]:
        """(n, min, max, sum) over every rank and thread."""
        n = float(self.n.sum())
        if n == 0:
            return 0.0, float("nan"), float("nan"), 0.0
        return n, float(np.nanmin(self.min)), float(np.nanmax(self.max)), float(self.sum.sum())

    def mean(self) -> float:
        n, _, _, total = self.total()
        return total / n if n else float("nan")


class _Aggregate(Generic[T]):
    """A read-only attribute of a Site: its aggregate of one quantity of the trace (the class gives the view)."""

    def __init__(self, name: str, doc: str | None = None) -> None:
        self.name = name
        self.__doc__ = doc

    @overload
    def __get__(self, site: None, owner: type) -> Self: ...
    @overload
    def __get__(self, site: Site, owner: type) -> T: ...
    def __get__(self, site: Site | None, owner: type) -> Self | T:
        return self if site is None else self.view(site)

    def view(self, site: Site) -> T:
        raise NotImplementedError


class _Field(_Aggregate[np.ndarray]):
    """One field of the trace, an array of shape (ranks, threads)."""

    def view(self, site: Site) -> np.ndarray:
        return site._field(self.name)


class _Statistics(_Aggregate[Stats]):
    """Per-call statistics of one quantity (the fields ``<name>_n``, ``_min``, ``_max``, ``_sum``)."""

    def view(self, site: Site) -> Stats:
        return site._stats(self.name)


@dataclass
class Site:
    """One annotation site (union over ranks and threads) and views of its aggregates."""

    key: SiteKey
    index: int
    id: str
    type: str
    path: str
    expr: str | None
    count_expr: str | None
    file: str | None
    line: int | None
    parent: SiteKey | None
    children: list[SiteKey] = field(default_factory=list)
    other_exprs: set[str] = field(default_factory=set)  # different expression texts seen on other ranks
    first_fail: dict[int, dict[str, Any]] = field(default_factory=dict)  # rank -> first failing call
    first_mismatch: dict[int, dict[str, Any]] = field(default_factory=dict)
    _data: np.ndarray | None = field(default=None, repr=False)  # view (fields, ranks, threads)

    @property
    def count_text(self) -> str | None:
        """The count expression of an MPI site when it asserts other than one message per call, else None."""
        return self.count_expr if self.count_expr is not None and self.count_expr.strip() != "1" else None

    @property
    def depth(self) -> int:
        """Number of sites from the root down to this one (top-level sites are 1)."""
        return len(self.key)

    # --- the site's aggregates: arrays of shape (ranks, threads) --------------------------------
    def _field(self, name: str) -> np.ndarray:
        assert self._data is not None
        return self._data[FIELD[name]]

    def _stats(self, prefix: str) -> Stats:
        return Stats(*(self._field(f"{prefix}_{part}") for part in ("n", "min", "max", "sum")))

    @property
    def present(self) -> np.ndarray:
        """(ranks, threads) bool: where this site appears in the trace."""
        return self._field("calls") > 0

    calls = _Field("calls")
    passes = _Field("pass", "Calls whose measurement was within the tolerance of the prediction.")
    fails = _Field("fail")
    unmeasured = _Field("unmeasured", "Calls with a prediction but no measurement (no counter, MPI not profiled, "
                                      "an exception).")
    mismatches = _Field("mismatch", "Calls where the program's own value differed from the evaluated expression.")
    wall_ns = _Field("wall_ns")
    cpu_ns = _Field("cpu_ns")
    predicted = _Statistics("pred", "The expression's value per call (bytes per message for an MPI site).")
    measured = _Statistics("meas")
    count_predicted = _Statistics("cpred", "MPI sites: the count expression's value per call (messages).")
    count_measured = _Statistics("cmeas", "MPI sites: the messages the PMPI library counted per call.")

    # --- the measured signature (node fields `cache`, `c_calls`, `subscripts`; docs/trace-format.md) -------------
    cache_accesses = _Field("cache_accesses", "(ranks, threads): cache-line accesses of the calls the cache "
                                              "simulation measured (0 where none).")

    @property
    def cache_hits(self) -> np.ndarray:
        """(levels, ranks, threads): the accesses each cache level served (not cumulative), L1 first."""
        levels = int(np.max(self._field("cache_levels"), initial=0))
        return np.stack([self._field(f"cache_hits{k}") for k in range(1, levels + 1)]) if levels else \
            np.zeros((0, *self.calls.shape))

    @property
    def hit_rates(self) -> tuple[float, ...] | None:
        """Cumulative hit rates h1, ..., hn, 1 of the simulated caches (L1 first, then main memory's 1: the machine
        profile's convention), over every measured call on every rank and thread of the trace: the accesses and
        each level's hits are summed first, then divided (never averaged rates). None when the site was not
        measured (no ``ma run --counters valgrind --cache``, not a flop/loadstore site) or made no access."""
        measured = self._field("cache_calls") > 0
        levels = np.unique(self._field("cache_levels")[measured])
        if levels.size != 1:
            if levels.size > 1:
                raise TraceError(self.path, f"site {self.path!r}: ranks simulated different numbers of cache "
                                            f"levels ({sorted(levels.tolist())}); their hit rates do not combine")
            return None
        accesses = float(self.cache_accesses[measured].sum())
        if accesses <= 0:
            return None
        hits = self.cache_hits[:, measured].sum(axis=1)
        return (*(float(h) for h in np.cumsum(hits) / accesses), 1.0)

    @property
    def c_calls(self) -> int | None:
        """Calls from Python into compiled code inside the site (``ma run --counters ccalls``), inclusive of the
        sites below it, summed over all its executions on every rank and thread of the trace (a signature run:
        the one rank's total). Per execution: ``c_calls / site.calls[measured].sum()`` (``c_calls_per_rank``
        for each rank's). None when not measured."""
        return self._measured_total("ccalls")

    @property
    def subscripts(self) -> int | None:
        """Subscript instructions of the program's code inside the site (``ma run --counters ccalls``), inclusive
        and summed like :attr:`c_calls`. None when not measured (also on traces written before the counter
        counted them)."""
        return self._measured_total("subscripts")

    def _measured_total(self, name: str) -> int | None:
        """The sum of a counter's field over the calls that measured it (its ``<name>_n`` field), None if none."""
        measured = self._field(f"{name}_n") > 0
        return int(self._field(name)[measured].sum()) if measured.any() else None

    @property
    def c_calls_per_rank(self) -> np.ndarray:
        """(ranks,): each rank's total calls into compiled code at the site (summed over threads), NaN where it
        was not measured."""
        measured = (self._field("ccalls_n") > 0).any(axis=1)
        return np.where(measured, self._field("ccalls").sum(axis=1), np.nan)

    def ranks_present(self) -> np.ndarray:
        """Bool per rank: the site appears on at least one thread of the rank."""
        return np.asarray(self.present.any(axis=1))

    @property
    def is_assertion(self) -> bool:
        return self.type not in STRUCTURE_TYPES


@dataclass
class Variable:
    """One (name, scope) entry of the variable tables, with per-rank values (NaN where absent)."""

    name: str
    scope: str
    kind: str
    expr: str | None
    values: np.ndarray
    mins: np.ndarray
    maxs: np.ndarray
    defs: np.ndarray
    other_exprs: set[str] = field(default_factory=set)

    @property
    def present(self) -> np.ndarray:
        return self.defs > 0

    @property
    def rank_dependent(self) -> bool:
        """Its value differs between ranks."""
        vals = self.values[self.present]
        return bool(vals.size and np.nanmax(vals) != np.nanmin(vals))

    @property
    def varies_within_rank(self) -> bool:
        """It took more than one value during the run on some rank (re-declared with a new value)."""
        mask = self.present
        return bool(np.any(self.mins[mask] != self.maxs[mask]))


@dataclass
class Anomaly:
    kind: str
    path: str
    message: str
    count: int
    ranks: list[int]
    file: str | None
    line: int | None


@dataclass(frozen=True)
class RankSection:
    """One rank's entries of an optional top-level list of the trace (``OPTIONAL_DOCUMENT_KEYS``: ``peers``,
    ``vector_loops``), from its rank file or from the merged file's index."""

    rank: int
    source: str  # the file the entries were read from, for error messages
    entries: list[Any]


@dataclass(frozen=True, eq=False)
class TraceSet:
    """All ranks of one run. ``ranks[i]`` is the rank number of row i of every per-rank array.

    Complete when returned by ``load`` or ``from_traces``; nothing assigns to it afterwards."""

    directory: Path | None
    files: list[str]
    ranks: np.ndarray
    size: int
    run_id: str | None
    headers: Sequence[dict[str, Any]]  # one per rank (built on access for a merged trace)
    thread_ids: list[int]
    thread_names: dict[int, str]
    sites: dict[SiteKey, Site]
    variables: dict[tuple[str, str], Variable]
    anomalies: list[Anomaly]
    mpi_profiles: Sequence[dict[str, Any] | None]
    missing_ranks: list[int]
    skipped: dict[str, str]  # file -> why it was left out (allow_missing)
    data: np.ndarray = field(repr=False, default_factory=lambda: np.zeros((0, len(FIELDS), 0, 0)))
    run_record: RunRecord | None = None  # how the job and its ranks ended, when ma run wrote it
    optional_lists: Mapping[str, list[RankSection]] = field(default_factory=dict)  # key -> sections in rank order

    def optional(self, key: str) -> list[RankSection]:
        """The optional top-level list ``key`` (one of ``OPTIONAL_DOCUMENT_KEYS``) of every rank that wrote it, in
        rank order, whichever layout (rank files or merged file) the run was read from."""
        if key not in trace_format.OPTIONAL_DOCUMENT_KEYS:
            raise ValueError(f"{key!r} is not an optional trace key ({', '.join(trace_format.OPTIONAL_DOCUMENT_KEYS)})")
        return list(self.optional_lists.get(key, ()))

    # --- navigation -------------------------------------------------------------------------
    @property
    def root(self) -> Site:
        return self.sites[()]

    @property
    def n_ranks(self) -> int:
        return len(self.ranks)

    @property
    def language(self) -> str:
        languages = sorted({str(h.get("language")) for h in self.headers})
        return "+".join(languages)

    def children(self, site: Site) -> list[Site]:
        return [self.sites[k] for k in site.children]

    def walk(self, start: Site | None = None) -> Iterator[Site]:
        """Depth-first, in order of first appearance; the root itself is not yielded."""
        stack = [iter(self.children(start or self.root))]
        while stack:
            child = next(stack[-1], None)
            if child is None:
                stack.pop()
                continue
            yield child
            stack.append(iter(self.children(child)))

    def ancestors(self, site: Site) -> list[Site]:
        """From the top-level site down to the parent of ``site`` (root excluded)."""
        return [self.sites[site.key[:i]] for i in range(1, len(site.key))]

    def find(self, path: str, site_type: str | None = None) -> Site:
        """The site at ``path`` (ids joined by '/'); ``site_type`` disambiguates."""
        matches = [s for s in self.sites.values() if s.path == path and s.key
                   and (site_type is None or s.type == site_type)]
        if len(matches) != 1:
            what = f"{path!r}" + (f" of type {site_type}" if site_type else "")
            raise SiteNotFoundError(f"{len(matches)} sites match {what}" + (" (give the site type)" if matches else ""))
        return matches[0]

    # --- variables --------------------------------------------------------------------------
    def variable_names(self, kind: str | None = None) -> list[str]:
        names: dict[str, None] = {}
        for (name, _), var in self.variables.items():
            if kind is None or var.kind == kind:
                names.setdefault(name, None)
        return list(names)

    def incomplete_ranks(self) -> dict[int, str]:
        """Ranks whose trace is not from a clean exit: rank -> status (and reason)."""
        out = {}
        for rank, header in zip(self.ranks.tolist(), self.headers, strict=False):
            status = header_status({"status": trace_format.COMPLETE, **header})
            if not status.complete:
                out[rank] = status.describe()
        return out

    def tolerance(self, site_type: str) -> float:
        """The relative tolerance the runtime used for ``site_type`` (first rank's header)."""
        tol = self.headers[0].get("tolerance") or {}
        by_type = tol.get("by_type") or {}
        return float(by_type.get(site_type, tol.get("default", 0.0)))

    def unmeasured_reason(self, site_type: str) -> str | None:
        """Why ``site_type`` could not be measured, from the header's counter section (None if it was)."""
        kind = "mpi" if is_mpi(site_type) else site_type
        if kind == "mpi":
            mpi = self.headers[0].get("mpi") or {}
            return None if mpi.get("profiling") else (mpi.get("reason") or "MPI profiling was not loaded")
        measures = (self.headers[0].get("counters") or {}).get("measures") or {}
        if kind in measures and measures[kind] is None:
            providers = (self.headers[0].get("counters") or {}).get("providers") or []
            reasons = [f"{p.get('name')}: {p.get('reason')}" for p in providers if p.get("reason")]
            return "no counter provider measures " + kind + (f" ({'; '.join(reasons)})" if reasons else "")
        return None


def rank_ranges(ranks: Sequence[int] | np.ndarray) -> str:
    """Compact list: 0-3,5,7-9."""
    values = sorted(int(r) for r in ranks)
    parts: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        parts.append(str(values[i]) if i == j else f"{values[i]}-{values[j]}")
        i = j + 1
    return ",".join(parts)


def load(trace_dir: str | Path, *, allow_missing: bool = False, workers: int | None = None) -> TraceSet:
    """Read the traces of a run: the merged file ``job.ma.npz`` (with the rank files of ranks it lacks), or
    every ``rank-<r>.ma.json``. ``trace_dir`` may also name a merged file itself.

    Raises TraceError naming the file for: no trace files, a missing rank, a truncated or corrupt file,
    a newer schema version, a file that is not an ma-trace, a rank or size that does not match, or a
    different run id. With ``allow_missing=True``, missing and unreadable rank files are reported with
    ``warnings.warn`` (TraceWarning) and the ranks present are kept. ``workers`` processes parse the
    files (default: automatic, see ma_post.reader.default_workers; 0: this process only).
    """
    path = Path(trace_dir)
    named_file = path.name.endswith(".npz") and path.exists() and not path.is_dir()  # a FIFO too: read_merged says
    directory = path.parent if named_file else path
    merged_path = path if directory is not path else trace_format.merged_file(directory)
    if merged_path.exists():
        merged = read_merged(merged_path)
        extra = _rank_files_beside(merged, directory, allow_missing, workers)
        traces = _build_merged(merged, extra, directory, allow_missing)
    else:
        flats, skipped, missing = read_trace_dir(directory, allow_missing=allow_missing, workers=workers)
        traces = _build(flats, directory, skipped=skipped, missing=missing)
    return replace(traces, run_record=record_for(directory, traces.run_id))


def _rank_files_beside(merged: MergedTrace, directory: Path, allow_missing: bool, workers: int | None
                       ) -> list[FlatTrace]:
    """The rank files of ranks the merged file lacks (a rank that failed wrote its own), in rank order."""
    have = set(merged.ranks.tolist())
    jobs = []
    for candidate in directory.iterdir():
        match = trace_format.RANK_FILE.match(candidate.name)
        if match and int(match.group(1)) not in have:
            jobs.append((candidate, int(match.group(1))))
    flats = []
    for (candidate, _), result in zip(sorted(jobs, key=lambda j: j[1]), read_many(sorted(jobs, key=lambda j: j[1]),
                                      default_workers(len(jobs)) if workers is None else workers), strict=True):
        if isinstance(result, TraceError):
            if not allow_missing:
                raise result
            warnings.warn(f"skipping unreadable trace: {result}", TraceWarning, stacklevel=4)
            continue
        if result.header["size"] != merged.size or result.header.get("run_id") != merged.run_id:
            raise TraceError(str(candidate), f"size {result.header['size']} / run_id {result.header.get('run_id')!r} "
                                             f"differ from {merged.path.name}'s {merged.size} / {merged.run_id!r} "
                                             "(files from different runs in one directory?)")
        flats.append(result)
    return flats


def _build_merged(merged: MergedTrace, extra: list[FlatTrace], directory: Path, allow_missing: bool) -> TraceSet:
    """Arrays of the merged file straight into the rank dimension; sites once per distinct tree structure."""
    ranks = np.union1d(merged.ranks, np.asarray([int(f.header["rank"]) for f in extra], dtype=np.int64))
    missing = missing_ranks(merged.size, ranks.tolist())
    if missing:
        message = (f"{len(missing)} of {merged.size} ranks are neither in {merged.path.name} nor in a rank file "
                   f"(ranks {rank_ranges(missing)})")
        if not allow_missing:
            raise TraceError(str(merged.path), message + " (load with allow_missing=True / --allow-missing to use "
                                                         "the ranks present)")
        warnings.warn(f"{directory}: {message}; keeping the {len(ranks)} ranks present", TraceWarning, stacklevel=3)
    builder = _Builder(len(ranks))
    builder._site((), ("root", "", "", None, None, None, None), None)
    placements = []  # (rank positions, site index per row, thread index per row, the group's values)
    for group in merged.groups:
        sites, threads = [], []
        for thread_id, thread_name, nodes in group.threads:
            if thread_id not in builder.thread_index:
                builder.thread_index[thread_id] = len(builder.thread_index)
                builder.thread_names[thread_id] = thread_name
            keys: list[SiteKey] = []
            for parent_row, type_, id_, path, expr, count_expr, file, line in nodes:
                parent = keys[parent_row] if parent_row >= 0 else ()
                keys.append((*parent, (type_, id_)))
                sites.append(builder._site(keys[-1], (type_, id_, path, expr, count_expr, file, line), parent).index)
                threads.append(builder.thread_index[thread_id])
        placements.append((np.searchsorted(ranks, group.ranks), np.asarray(sites, dtype=np.intp),
                           np.asarray(threads, dtype=np.intp), group.values))
    group_of = dict(zip(merged.ranks.tolist(), merged.rank_group.tolist(), strict=True)) if merged.firsts else {}
    for entry in merged.firsts:
        try:
            kind, rank, row, value = entry
            sites_of_rows = placements[group_of[rank]][1]
            site = builder.sites_by_index[int(sites_of_rows[row])]
        except (ValueError, KeyError, IndexError, TypeError):
            raise TraceError(str(merged.path), f"trace.json: firsts entry {str(entry)[:80]} is not [kind, rank, row "
                                               "of the rank's group, object] of a rank and row in the file") from None
        if kind not in ("first_fail", "first_mismatch"):
            raise TraceError(str(merged.path), f"trace.json: firsts entry of kind {kind!r}, expected first_fail "
                                               "or first_mismatch")
        getattr(site, kind).setdefault(int(rank), decoded(value))
    for rank, sections in merged.optional:
        builder.add_optional(rank, str(merged.path), decoded(sections))
    for a in (decoded(x) for x in merged.anomalies):
        anomaly = Anomaly(str(a.get("kind")), str(a.get("path", "")), str(a.get("message", "")),
                          int(a.get("count", 1) or 1), [int(r) for r in a.get("ranks") or ()], a.get("file"),
                          a.get("line"))
        found = builder.anomalies.setdefault((anomaly.kind, anomaly.path), anomaly)
        if found is not anomaly:  # folded per rank by a writer that does not fold across ranks
            found.count += anomaly.count
            found.ranks.extend(anomaly.ranks)
    extra_positions = np.searchsorted(ranks, [int(f.header["rank"]) for f in extra])
    for position, flat in zip(extra_positions.tolist(), extra, strict=True):
        builder.add(position, flat)  # its sites, variables and anomalies; its values are laid out below
    data = np.zeros((len(builder.sites), len(FIELDS), len(ranks), max(1, len(builder.thread_index))))
    data[:, _MINMAX] = np.nan
    for rank_positions, sites_of_rows, threads_of_rows, values in placements:
        for start, block in values.blocks():  # a block of ranks at a time: the file's numbers are never all in memory
            positions = rank_positions[start:start + len(block)]
            data[sites_of_rows[None, :], :, positions[:, None], threads_of_rows[None, :]] = block
    builder.place_blocks(data)
    variables = _merged_variables(merged, ranks, builder)
    placements.clear()
    for group in merged.groups:  # now in `data`; the headers and profiles kept below need only the rank arrays
        group.variable_values = group.variable_values[:0]
    headers: Sequence[dict[str, Any]] = RankHeaders(merged)
    profiles: Sequence[dict[str, Any] | None] = RankProfiles(merged)
    files = [str(merged.path)]
    if extra:  # a few ranks from their own files: plain lists in rank order
        order = np.argsort(np.concatenate([merged.ranks, [int(f.header["rank"]) for f in extra]]), kind="stable")
        headers = [[*headers, *(f.header for f in extra)][i] for i in order]
        profiles = [[*profiles, *(f.mpi_profile for f in extra)][i] for i in order]
        files += [f.name for f in extra]
    return builder.finish_arrays(data, ranks, directory, files, merged.size, merged.run_id, headers, profiles,
                                 variables, missing)


def _merged_variables(merged: MergedTrace, ranks: np.ndarray, builder: _Builder) -> dict[tuple[str, str], Variable]:
    variables: dict[tuple[str, str], Variable] = {}
    for group in merged.groups:
        positions = np.searchsorted(ranks, group.ranks)
        for j, (name, scope, kind, expr) in enumerate(group.variables):
            key = (str(name), str(scope or ""))
            var = variables.get(key)
            if var is None:
                arrays = np.full((4, len(ranks)), np.nan)
                arrays[3] = 0
                var = variables[key] = Variable(key[0], key[1], str(kind or "input"), expr, arrays[0], arrays[1],
                                                arrays[2], arrays[3])
            elif expr is not None and expr != var.expr:
                var.other_exprs.add(str(expr))
            for field_index, target in enumerate((var.values, var.mins, var.maxs, var.defs)):
                target[positions] = group.variable_values[:, j, field_index]
    for key, (kind, expr, others, rows) in builder.var_rows.items():
        var = variables.get(key)
        if var is None:
            arrays = np.full((4, len(ranks)), np.nan)
            arrays[3] = 0
            var = variables[key] = Variable(key[0], key[1], kind, expr, arrays[0], arrays[1], arrays[2], arrays[3],
                                            set(others))
        for rank_idx, value, lo, hi, defs in rows:
            var.values[rank_idx], var.mins[rank_idx], var.maxs[rank_idx], var.defs[rank_idx] = value, lo, hi, defs
    return variables


def from_traces(traces: Sequence[Mapping[str, Any]], names: Sequence[str] | None = None, *,
                directory: Path | None = None) -> TraceSet:
    """Build a TraceSet from trace documents already in memory (one per rank, in rank order)."""
    if not traces:
        raise TraceError(str(directory or "<traces>"), "no trace to load")
    names = list(names) if names is not None else [rank_file_name(i) for i in range(len(traces))]
    return _build([flatten_document(t, n) for t, n in zip(traces, names, strict=False)], directory)


def _build(flats: Sequence[FlatTrace], directory: Path | None, *, skipped: dict[str, str] | None = None,
           missing: list[int] | None = None) -> TraceSet:
    builder = _Builder(len(flats))
    for index, flat in enumerate(flats):
        builder.add(index, flat)
    return builder.finish(flats, directory, skipped or {}, missing or [])


_STRUCTURE_OF_ROW = itemgetter(slice(0, 8))  # (parent, type, id, path, expr, count_expr, file, line) of a row


class _Builder:
    """Accumulates sites, variables and anomalies of every rank, then lays out the numpy arrays."""

    def __init__(self, n_ranks: int) -> None:
        self.n_ranks = n_ranks
        self.sites: dict[SiteKey, Site] = {}
        self.blocks: list[tuple[list[int], int, int, np.ndarray]] = []  # (site indices, rank, thread, values)
        self.thread_index: dict[int, int] = {}
        self.thread_names: dict[int, str] = {}
        self.var_rows: dict[tuple[str, str], list[Any]] = {}
        self.anomalies: dict[tuple[str, str], Anomaly] = {}
        self.ranks: list[int] = []
        self.sites_by_index: list[Site] = []
        self.structures: dict[tuple[Any, ...], list[Site]] = {}
        self.optional: dict[str, list[RankSection]] = {}

    def add_optional(self, rank: int, source: str, sections: Mapping[str, list[Any]]) -> None:
        for key, entries in sections.items():
            self.optional.setdefault(key, []).append(RankSection(rank, source, entries))

    def add(self, index: int, flat: FlatTrace) -> None:
        rank = int(flat.header["rank"])
        self.ranks.append(rank)
        for thread in flat.threads:
            if thread.thread not in self.thread_index:
                self.thread_index[thread.thread] = len(self.thread_index)
                self.thread_names[thread.thread] = thread.name
            thread_idx = self.thread_index[thread.thread]
            self._site((), ("root", "", "", None, None, None, None), None)
            # Ranks of one run almost always have the same tree: its sites are looked up once per structure.
            signature = (thread.thread, tuple(map(_STRUCTURE_OF_ROW, thread.nodes)))
            sites = self.structures.get(signature)
            if sites is None:
                keys: list[SiteKey] = []
                sites = []
                for node in thread.nodes:
                    parent_row = node[0]
                    parent = keys[parent_row] if parent_row >= 0 else ()
                    key = (*parent, (node[1], node[2]))
                    keys.append(key)
                    sites.append(self._site(key, node[1:8], parent))
                self.structures[signature] = sites
            for site, node in zip(sites, thread.nodes, strict=True):
                if node[8] and rank not in site.first_fail:
                    site.first_fail[rank] = node[8]
                if node[9] and rank not in site.first_mismatch:
                    site.first_mismatch[rank] = node[9]
            self.blocks.append(([site.index for site in sites], index, thread_idx, thread.values))
        for var in flat.variables:
            self._add_variable(var, index, flat.name)
        for anomaly in flat.anomalies:
            self._add_anomaly(anomaly, rank, flat.name)
        self.add_optional(rank, flat.name, flat.optional)

    def _site(self, key: SiteKey, node: tuple[Any, ...], parent: SiteKey | None) -> Site:
        """``node`` is (type, id, path, expr, count_expr, file, line) of the first rank that has it."""
        site = self.sites.get(key)
        if site is None:
            type_, id_, path, expr, count_expr, file, line = node
            site = Site(key=key, index=len(self.sites), id=id_, type=type_, path=path, expr=expr,
                        count_expr=count_expr, file=file, line=line, parent=parent)
            self.sites[key] = site
            self.sites_by_index.append(site)
            if parent is not None:
                self.sites[parent].children.append(key)
        elif node[3] is not None and node[3] != site.expr:
            site.other_exprs.add(str(node[3]))
        return site

    def _add_variable(self, var: Mapping[str, Any], rank_idx: int, name: str) -> None:
        if not isinstance(var, Mapping) or not isinstance(var.get("name"), str):
            raise TraceError(name, f"variables: entry {str(var)[:80]} has no 'name' string "
                                   "(docs/trace-format.md, variables)")
        for field_name, required in (("value", False), ("min", False), ("max", False), ("defs", True)):
            value = var.get(field_name, 1 if field_name == "defs" else None)
            if type(value) not in ((int,) if required else (int, float, type(None))):
                shown = repr(value) if len(repr(value)) < 60 else repr(value)[:57] + "..."
                raise TraceError(name, f"variable {var['name']!r} (scope {var.get('scope') or ''!r}): field "
                                       f"{field_name!r} is {type(value).__name__} {shown}, expected "
                                       f"{'an integer' if required else 'a number or null'}")
        if not isinstance(var.get("scope") or "", str) or not isinstance(var.get("expr"), (str, type(None))):
            raise TraceError(name, f"variable {var['name']!r}: 'scope' and 'expr' must be strings (expr may be null)")
        key = (var["name"], var.get("scope") or "")
        values = (_num(var.get("value")), _num(var.get("min")), _num(var.get("max")), _num(var.get("defs", 1)))
        entry = self.var_rows.get(key)
        if entry is None:
            entry = [str(var.get("kind") or "input"), var.get("expr"), set(), []]
            self.var_rows[key] = entry
        elif var.get("expr") != entry[1] and var.get("expr") is not None:
            entry[2].add(str(var["expr"]))
        entry[3].append((rank_idx, *values))

    def _add_anomaly(self, anomaly: Mapping[str, Any], rank: int, name: str = "<trace>") -> None:
        if not isinstance(anomaly, Mapping) or type(anomaly.get("count", 1)) is not int:
            raise TraceError(name, f"anomalies: entry {str(anomaly)[:80]} is not an object with an integer 'count'")
        key = (str(anomaly.get("kind")), str(anomaly.get("path", "")))
        found = self.anomalies.get(key)
        if found is None:
            self.anomalies[key] = Anomaly(key[0], key[1], str(anomaly.get("message", "")),
                                          int(anomaly.get("count", 1) or 1), [rank],
                                          anomaly.get("file"), anomaly.get("line"))
        else:
            found.count += int(anomaly.get("count", 1) or 1)
            found.ranks.append(rank)

    def place_blocks(self, data: np.ndarray) -> None:
        """The values of the ranks added one by one into ``data`` (sites, fields, ranks, threads)."""
        if self.blocks:
            s = np.concatenate([np.asarray(b[0], dtype=np.intp) for b in self.blocks])
            r = np.concatenate([np.full(len(b[0]), b[1], dtype=np.intp) for b in self.blocks])
            t = np.concatenate([np.full(len(b[0]), b[2], dtype=np.intp) for b in self.blocks])
            data[s, :, r, t] = np.concatenate([b[3] for b in self.blocks])

    def finish(self, flats: Sequence[FlatTrace], directory: Path | None, skipped: dict[str, str],
               missing: list[int]) -> TraceSet:
        n_sites, n_threads = len(self.sites), max(1, len(self.thread_index))
        data = np.zeros((n_sites, len(FIELDS), self.n_ranks, n_threads))
        data[:, _MINMAX] = np.nan
        self.place_blocks(data)
        order = np.argsort(self.ranks)
        if not np.all(order == np.arange(len(order))):
            raise TraceError(str(directory), "traces must be given in rank order")
        variables = {}
        for key, (kind, expr, others, rows) in self.var_rows.items():
            arrays = np.full((4, self.n_ranks), np.nan)
            arrays[3] = 0
            for rank_idx, value, lo, hi, defs in rows:
                arrays[:, rank_idx] = (value, lo, hi, defs)
            variables[key] = Variable(key[0], key[1], kind, expr, arrays[0], arrays[1], arrays[2], arrays[3], others)
        return self.finish_arrays(data, np.asarray(self.ranks, dtype=np.int64), directory, [f.name for f in flats],
                                  int(flats[0].header["size"]), flats[0].header.get("run_id"),
                                  [f.header for f in flats], [f.mpi_profile for f in flats], variables, missing,
                                  skipped)

    def finish_arrays(self, data: np.ndarray, ranks: np.ndarray, directory: Path | None, files: list[str], size: int,
                      run_id: str | None, headers: Sequence[dict[str, Any]],
                      profiles: Sequence[dict[str, Any] | None], variables: dict[tuple[str, str], Variable],
                      missing: list[int], skipped: dict[str, str] | None = None) -> TraceSet:
        for site in self.sites.values():
            site._data = data[site.index]
        tids = sorted(self.thread_index, key=self.thread_index.__getitem__)
        return TraceSet(
            directory=directory, files=files, ranks=ranks, size=size, run_id=run_id, headers=headers,
            thread_ids=tids, thread_names=self.thread_names, sites=self.sites, variables=variables,
            anomalies=list(self.anomalies.values()), mpi_profiles=profiles, missing_ranks=missing,
            skipped=skipped or {}, data=data,
            optional_lists={key: sorted(sections, key=lambda s: s.rank) for key, sections in self.optional.items()})


def _num(value: Any) -> float:
    return float("nan") if value is None else to_float(value)


__all__ = ["FIELDS", "MPI_TYPES", "STRUCTURE_TYPES", "Anomaly", "RankSection", "Site", "SiteKey", "Stats", "TraceSet",
           "TraceWarning", "Variable", "from_traces", "is_mpi", "load", "rank_ranges"]
