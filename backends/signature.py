"""Application signatures: what a program's signature runs measured per site beyond the model's counts, which a
backend convolves with a machine profile (MetaSim's output in PMaC), in a file any backend can read:

- cumulative hit rates per loadstore site on the profile's hierarchy, and per flop site without a ``loadstore``
  expression in its block the cache lines each level served per flop (``lines_per_flop``, L1 first, main memory
  last): ``ma run --counters valgrind --cache PROFILE``;
- calls into compiled code and subscripts per execution of a site (a Python program's runtime part,
  :mod:`backends.cpython`): ``ma run --counters ccalls``;
- a kernel that is a CSR row loop (per row a chain of dependent adds over its entries, SciPy's sparse product),
  stated by the program: ``csr_rows``, its entries and rows per execution as expressions in the model's variables,
  which the maps backend prices on the profile's CSR curve (:mod:`backends.maps.rowchain`);
- a kernel that is one dependent sum (a compiled dot product or norm, or a CSR row loop whose rows are too long for
  the core to overlap them), stated by the program: ``add_chains``, its terms per execution as an expression in
  the model's variables, which the maps backend prices at the profile's add chain (``cpu.add_chain_s``);
- the hit rates of a loadstore site as one of K ranks sharing the last cache sees it (``shared_hit_rates``, per
  share K): ``ma run --counters valgrind --cache PROFILE --cache-share K``, so the backend prices a rank's memory on
  its share of a node's last cache.

:func:`from_traces` makes one from the signature runs' traces (``ma signature``); :func:`save_signature_file` writes
it and :func:`load_signature_file` reads it back (``ma predict --signatures``), checking every entry.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ma_core.errors import BackendError, MAError
from ma_core.hitrates import cumulative_problem
from ma_core.inputs import read_regular_file

if TYPE_CHECKING:
    from ma_post import TraceSet
    from ma_post.traceset import Site

SIGNATURE_FORMAT = "ma-signature"


def check_hit_rates(rates: Sequence[float], levels: int, what: str) -> None:
    """Cumulative h_1..h_n in [0, 1], non-decreasing, ending at 1 (main memory), one per level of the profile;
    BackendError naming ``what``."""
    if len(rates) != levels:
        raise BackendError(f"{what}: expected {levels} cumulative hit rates (one per cache, then memory), "
                           f"got {len(rates)}")
    problem = cumulative_problem(rates)
    if problem is not None:
        raise BackendError(f"{what}: hit rates {list(rates)!r}: {problem}")


def check_lines_per_flop(lines: object, levels: int, what: str) -> tuple[float, ...]:
    """One number >= 0 per level (L1 first, main memory last): the lines each served per flop."""
    if (not isinstance(lines, (list, tuple)) or len(lines) != levels
            or any(isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 for v in lines)):
        raise BackendError(f"{what}: expected {levels} numbers >= 0 (cache lines each level served per flop, "
                           f"L1 first, main memory last), got {lines!r}")
    return tuple(float(v) for v in lines)


def check_csr_rows(stated: object, what: str) -> tuple[str, str]:
    """``{"entries": E, "rows": R}``, two expressions the project's parser reads (never evaluated as code)."""
    from ma_core.expr import parse_expression

    if not isinstance(stated, dict) or sorted(stated) != ["entries", "rows"]:
        raise BackendError(f"{what}: expected {{\"entries\": EXPR, \"rows\": EXPR}} (a CSR row loop's entries and "
                           f"rows per execution), got {stated!r}")
    for key in ("entries", "rows"):
        text = stated[key]
        if not isinstance(text, str):
            raise BackendError(f"{what}.{key}: expected an expression string, got {text!r}")
        try:
            parse_expression(text)
        except MAError as exc:
            raise BackendError(f"{what}.{key}: {text!r} is not an expression: {exc}") from None
    return str(stated["entries"]), str(stated["rows"])


def check_add_chain(stated: object, what: str) -> str:
    """An add chain's terms per execution: one expression the project's parser reads (never evaluated as code)."""
    from ma_core.expr import parse_expression

    if not isinstance(stated, str):
        raise BackendError(f"{what}: expected an expression string (the terms of the add chain per execution), "
                           f"got {stated!r}")
    try:
        parse_expression(stated)
    except MAError as exc:
        raise BackendError(f"{what}: {stated!r} is not an expression: {exc}") from None
    return stated


KINDS = ("hit_rates", "lines_per_flop", "c_calls", "subscripts", "csr_rows", "add_chains", "shared_hit_rates")


@dataclass(frozen=True)
class Signatures:
    """A signature file's contents, by site path: hit rates, lines per flop, calls into compiled code and
    subscripts per execution, CSR row loops."""

    hit_rates: dict[str, tuple[float, ...]] = field(default_factory=dict)
    c_calls: dict[str, float] = field(default_factory=dict)
    lines_per_flop: dict[str, tuple[float, ...]] = field(default_factory=dict)  # per level served, memory last
    csr_rows: dict[str, tuple[str, str]] = field(default_factory=dict)  # entries, rows per execution (expressions)
    subscripts: dict[str, float] = field(default_factory=dict)  # subscripts per execution
    add_chains: dict[str, str] = field(default_factory=dict)  # terms of one dependent sum per execution (expression)
    # per loadstore site, (K, hit rates) with the last cache shared by K ranks (K > 1), sorted by K
    shared_hit_rates: dict[str, tuple[tuple[float, tuple[float, ...]], ...]] = field(default_factory=dict)

    def coverage(self, paths: Iterable[str]) -> dict[str, list[str]]:
        """Per kind (:data:`KINDS`), the sites among ``paths`` (a run's) the signature gives a figure for."""
        present = set(paths)
        return {kind: sorted(present & set(getattr(self, kind))) for kind in KINDS}

    @property
    def paths(self) -> set[str]:
        """Every site the signature gives something for."""
        return {path for kind in KINDS for path in getattr(self, kind)}


def load_signature_file(path: str | os.PathLike[str], levels: int) -> Signatures:
    """``{"format": "ma-signature", "sites": {"<site path>": ENTRY, ...}}`` where ENTRY is either the list of
    cumulative hit rates ``[h1, ..., hn]`` or an object ``{"hit_rates": [...], "c_calls": C, "lines_per_flop":
    [l1, ..., ln], "csr_rows": {"entries": E, "rows": R}, "subscripts": S, "add_chain": T, "shared_hit_rates":
    [{"share": K, "hit_rates": [...]}, ...]}`` with any of the keys (``shared_hit_rates`` with ``hit_rates``):
    C is the calls from Python into compiled code per execution of the site (per iteration of a loop), S its
    subscripts alike;
    l_k the cache lines level k served per flop of the site (memory last); E and R the entries and rows per
    execution of a CSR row loop, expressions in the model's variables (:func:`check_csr_rows`); T the terms of the
    dependent sum the site runs per execution, an expression alike (:func:`check_add_chain`); K > 1 the ranks that
    share the last cache in a run of the same problem whose hit rates follow, each K once."""
    name = os.fspath(path)
    try:
        doc = json.loads(read_regular_file(Path(name)))
    except OSError as exc:
        raise BackendError(f"{name}: cannot read: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise BackendError(f"{name}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    if not isinstance(doc, dict) or doc.get("format") != SIGNATURE_FORMAT or not isinstance(doc.get("sites"), dict):
        raise BackendError(f"{name}: expected {{\"format\": \"{SIGNATURE_FORMAT}\", \"sites\": {{path: [h1..hn]}}}}")
    out = Signatures()
    for site, entry in doc["sites"].items():
        where = f"{name}: field 'sites.{site}'"
        rates, calls = (entry, None) if isinstance(entry, list) else (None, None)
        if isinstance(entry, dict):
            unknown = sorted(set(entry) - {"hit_rates", "c_calls", "lines_per_flop", "csr_rows", "subscripts",
                                           "add_chain", "shared_hit_rates"})
            if unknown or not entry:
                raise BackendError(f"{where}: expected the keys hit_rates, c_calls, lines_per_flop, csr_rows, "
                                   f"subscripts, add_chain and/or shared_hit_rates, got {sorted(entry)}")
            if "shared_hit_rates" in entry:
                if "hit_rates" not in entry:
                    raise BackendError(f"{where}.shared_hit_rates: the site's own hit_rates (one rank alone) are "
                                       "missing beside it")
                out.shared_hit_rates[site] = check_shared_hit_rates(entry["shared_hit_rates"], levels,
                                                                    f"{where}.shared_hit_rates")
            if "add_chain" in entry:
                out.add_chains[site] = check_add_chain(entry["add_chain"], f"{where}.add_chain")
            if "subscripts" in entry:
                out.subscripts[site] = _per_execution(entry["subscripts"], f"{where}.subscripts", "subscripts")
            if "csr_rows" in entry:
                out.csr_rows[site] = check_csr_rows(entry["csr_rows"], f"{where}.csr_rows")
            rates, calls = entry.get("hit_rates"), entry.get("c_calls")
            if "lines_per_flop" in entry:
                out.lines_per_flop[site] = check_lines_per_flop(entry["lines_per_flop"], levels,
                                                                f"{where}.lines_per_flop")
        elif not isinstance(entry, list):
            raise BackendError(f"{where}: expected a list of {levels} hit rates or an object with hit_rates/c_calls")
        if rates is not None:
            if not isinstance(rates, list):
                raise BackendError(f"{where}.hit_rates: expected a list of {levels} hit rates")
            check_hit_rates(rates, levels, where)
            out.hit_rates[site] = tuple(float(h) for h in rates)
        if calls is not None:
            out.c_calls[site] = _per_execution(calls, f"{where}.c_calls", "calls")
    return out


def check_shared_hit_rates(rows: object, levels: int, where: str) -> tuple[tuple[float, tuple[float, ...]], ...]:
    """A site's ``[{"share": K, "hit_rates": [...]}, ...]``: K > 1 each once, the hit rates as :func:`check_hit_rates`;
    sorted by K."""
    if not isinstance(rows, list) or not rows:
        raise BackendError(f"{where}: expected a list of {{\"share\": K, \"hit_rates\": [h1..hn]}}")
    out: dict[float, tuple[float, ...]] = {}
    for i, row in enumerate(rows):
        at = f"{where}[{i}]"
        if not isinstance(row, dict) or set(row) != {"share", "hit_rates"}:
            raise BackendError(f"{at}: expected the keys share and hit_rates, got {row!r}")
        share = row["share"]
        if not isinstance(share, (int, float)) or isinstance(share, bool) or not share > 1:
            raise BackendError(f"{at}.share: expected the ranks sharing the last cache, a number above 1, got "
                               f"{share!r}")
        if float(share) in out:
            raise BackendError(f"{at}.share: a second row of share {share}")
        if not isinstance(row["hit_rates"], list):
            raise BackendError(f"{at}.hit_rates: expected a list of {levels} hit rates")
        check_hit_rates(row["hit_rates"], levels, f"{at}.hit_rates")
        out[float(share)] = tuple(float(h) for h in row["hit_rates"])
    return tuple(sorted(out.items()))


def _per_execution(value: object, where: str, what: str) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
        raise BackendError(f"{where}: expected a number >= 0 ({what} per execution), got {value!r}")
    return float(value)


def load_signatures(path: str | os.PathLike[str], levels: int) -> dict[str, tuple[float, ...]]:
    """The hit rates of a signature file (:func:`load_signature_file`)."""
    return load_signature_file(path, levels).hit_rates


def save_signature_file(signatures: Signatures, path: str | os.PathLike[str]) -> Path:
    """Write ``signatures`` in the format :func:`load_signature_file` reads (for ``ma predict --signatures``)."""
    sites: dict[str, dict[str, object]] = {}
    for site, rates in signatures.hit_rates.items():
        sites.setdefault(site, {})["hit_rates"] = list(rates)
    for site, calls in signatures.c_calls.items():
        sites.setdefault(site, {})["c_calls"] = calls
    for site, counted in signatures.subscripts.items():
        sites.setdefault(site, {})["subscripts"] = counted
    for site, lines in signatures.lines_per_flop.items():
        sites.setdefault(site, {})["lines_per_flop"] = list(lines)
    for site, (entries, rows) in signatures.csr_rows.items():
        sites.setdefault(site, {})["csr_rows"] = {"entries": entries, "rows": rows}
    for site, terms in signatures.add_chains.items():
        sites.setdefault(site, {})["add_chain"] = terms
    for site, shared in signatures.shared_hit_rates.items():
        sites.setdefault(site, {})["shared_hit_rates"] = [{"share": k, "hit_rates": list(r)} for k, r in shared]
    target = Path(path)
    target.write_text(json.dumps({"format": SIGNATURE_FORMAT, "sites": sites}, indent=1) + "\n")
    return target


def site_hit_rates(site: Site) -> tuple[float, ...] | None:
    """The hit rates the trace measured at ``site``, or None."""
    rates = getattr(site, "hit_rates", None)
    return None if rates is None else tuple(float(h) for h in rates)


def site_lines_per_flop(site: Site) -> tuple[float, ...] | None:
    """Cache lines each level served (L1 first, main memory last: accesses no cache served) per flop the
    counters measured at ``site``, over every call of the run; None without a cache simulation or flops."""
    if site.type != "flop" or getattr(site, "hit_rates", None) is None:
        return None
    flops = float(np.nansum(site.measured.sum))
    if not flops > 0:
        return None
    hits = np.asarray(site.cache_hits, dtype=float).sum(axis=(1, 2))
    accesses = float(np.asarray(site.cache_accesses, dtype=float).sum())
    return tuple(float(v) / flops for v in (*hits, accesses - float(hits.sum())))


def from_traces(cache: TraceSet | None = None, calls: TraceSet | None = None,
                csr_rows: Mapping[str, tuple[str, str]] | None = None,
                add_chains: Mapping[str, str] | None = None, shared: Sequence[TraceSet] = ()) -> Signatures:
    """The signature of the runs whose traces are given: ``cache``, a ``--counters valgrind --cache PROFILE`` run
    (the hit rates of its loadstore sites, the lines per flop of its flop sites; where the hit rates differ in
    their number of levels, BackendError); ``calls``, a ``--counters ccalls`` run (calls into compiled code and
    subscripts per execution, the children's taken out; the cache run's own where it counted them and no calls
    run is given). ``csr_rows``: a site id (a path's last part) -> the (entries, rows) expressions of the row loop
    the program states there, given at every path of that id in the traces; ``add_chains`` alike, a site id -> the
    terms per execution of the dependent sum it runs. ``shared``: runs of the same program and problem with the last
    level of the cache run's hierarchy shared (``--cache-share K``), whose share K their run records give (the
    simulated hierarchies, :func:`cache_share`); their loadstore sites' hit rates become ``shared_hit_rates``."""
    from .cpython.tracedata import measured_c_calls, measured_subscripts

    out = Signatures()
    paths: set[str] = set()
    if cache is not None:
        for site in cache.walk():
            paths.add(site.path)
            if site.type == "loadstore" and (rates := site_hit_rates(site)) is not None:
                out.hit_rates[site.path] = rates
            if (lines := site_lines_per_flop(site)) is not None:
                out.lines_per_flop[site.path] = lines
        levels = {len(r) for r in (*out.hit_rates.values(), *out.lines_per_flop.values())}
        if len(levels) > 1:
            raise BackendError(f"the cache run's sites measured {sorted(levels)} levels: one run simulates one "
                               "hierarchy (ma run --counters valgrind --cache PROFILE)")
    if shared and cache is None:
        raise BackendError("shared-cache runs (ma signature --shared) need the cache run they share the last level of")
    by_share: dict[str, dict[float, tuple[float, ...]]] = {}
    for run in shared:
        assert cache is not None
        share = cache_share(cache, run)
        for site in run.walk():
            if site.type == "loadstore" and site.path in out.hit_rates and (rates := site_hit_rates(site)) is not None:
                if share in by_share.get(site.path, {}):
                    raise BackendError(f"two shared-cache runs with the last cache shared by {share:g}")
                by_share.setdefault(site.path, {})[share] = rates
    out.shared_hit_rates.update({path: tuple(sorted(by.items())) for path, by in by_share.items()})
    counted = calls if calls is not None else cache
    if counted is not None:
        paths |= {site.path for site in counted.walk()}
        out.c_calls.update(measured_c_calls(counted))
        out.subscripts.update(measured_subscripts(counted))
    for site_id, stated in (csr_rows or {}).items():
        found = _paths_of_id(paths, site_id, "csr_rows")
        entries, rows = check_csr_rows({"entries": stated[0], "rows": stated[1]}, f"csr_rows of {site_id!r}")
        out.csr_rows.update(dict.fromkeys(found, (entries, rows)))
    for site_id, terms in (add_chains or {}).items():
        found = _paths_of_id(paths, site_id, "add_chain")
        out.add_chains.update(dict.fromkeys(found, check_add_chain(terms, f"add_chain of {site_id!r}")))
    return out


def _paths_of_id(paths: Iterable[str], site_id: str, what: str) -> list[str]:
    """Every path of site id ``site_id`` (a path's last part), where a program states ``what``; BackendError if
    there is none."""
    found = sorted(path for path in paths if path.rsplit("/", 1)[-1] == site_id)
    if not found:
        raise BackendError(f"{what} of {site_id!r}: no site of that id in the traces")
    return found


def _hierarchy(traces: TraceSet, what: str) -> list[tuple[int, int, int]]:
    """(size, ways, line) per level of the hierarchy a run's tool simulated, from its run record."""
    record = traces.run_record
    spec = record.cache if record is not None else None
    if not spec:
        raise BackendError(f"{what} {traces.directory}: its run record names no simulated cache (a ma run --counters "
                           "valgrind --cache PROFILE run of this version writes it)")
    try:
        levels = [tuple(int(part) for part in level.split(":")) for level in spec.split(",")]
    except ValueError:
        raise BackendError(f"{what} {traces.directory}: the run record's cache {spec!r} is not SIZE:WAYS:LINE,...") \
            from None
    if any(len(level) != 3 or min(level) <= 0 for level in levels):
        raise BackendError(f"{what} {traces.directory}: the run record's cache {spec!r} is not SIZE:WAYS:LINE,...")
    return [(level[0], level[1], level[2]) for level in levels]


def cache_share(cache: TraceSet, shared: TraceSet) -> float:
    """K, the ranks a shared-cache run's last level is the share of: the cache run's last-level size over its, both
    hierarchies otherwise the same (BackendError naming the runs where they are not, or K is not above 1)."""
    full, part = _hierarchy(cache, "the cache run"), _hierarchy(shared, "the shared-cache run")
    if len(full) != len(part) or full[:-1] != part[:-1] or full[-1][1:] != part[-1][1:]:
        raise BackendError(f"the shared-cache run {shared.directory} simulated {part}, the cache run "
                           f"{cache.directory} {full} (size, ways, line per level): only the last level's size may "
                           "differ (ma run --cache PROFILE --cache-share K with the cache run's profile)")
    share = full[-1][0] / part[-1][0]
    if not share > 1:
        raise BackendError(f"the shared-cache run {shared.directory} has a last level of {part[-1][0]} bytes, the "
                           f"cache run's {full[-1][0]}: not a share of it (ma run --cache-share K, K > 1)")
    return share
