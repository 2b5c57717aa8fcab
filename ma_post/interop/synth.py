"""Synthetic MPI traces from the control-flow model (``ma synth DIR --set nprocs=N --format smpi OUT/``).

The MA paper's plan (MPIDtrace-like traces for a network simulator) with today's simulator: the annotated
site tree of one traced run is executed symbolically for every rank of a process count that was never run,
and each rank's MPI calls are written as a SimGrid/SMPI *time-independent trace* (``init``, ``compute F``,
``send``/``isend``/``recv``/``irecv`` with partner and bytes, ``wait``, collectives, ``finalize``):

- inputs keep their traced values unless ``--set`` overrides them; ``rank`` is the rank being generated and
  ``iter`` the iteration of the innermost loop (as in the runtime's partner checks); derived variables
  (``ma.assign``) are evaluated where they were declared;
- a loop runs its trip-count expression's number of iterations. A variable the program declares in every
  iteration of a loop is that loop's index: it counts from its traced minimum, up, or down when the trace
  shows it ending at its minimum (NPB CG's reduction steps);
- an MPI assertion makes ``count`` calls of its bytes expression each, to the partner of its ``peer=``
  expression (docs/trace-format.md, ``peers``); a rooted collective without one has root 0;
- the flops of the flop assertions between two MPI calls become one ``compute`` of their sum, or, with a
  :data:`Work` function (``ma synth --machine``), what it gives each execution of a site: a kernel's (a flop,
  loadstore or memory region, with the sites nested in it), a subroutine's or a loop iteration's own, and an
  MPI call's own besides its message (:func:`flop_work` is the default);
- the requests of nonblocking calls are waited for (one ``wait`` each, in order) before the next compute,
  the next nonblocking call and at the end of a loop iteration or subroutine: where NPB-style code waits.

Only annotated MPI calls appear: the traces match, call for call, what the PMPI per-call log (MA_PMPI_LOG)
records of a run whose MPI calls are all annotated.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ma_core.errors import MAError, SynthError
from ma_core.expr import parse_expression

if TYPE_CHECKING:
    from ma_post.traceset import Site, TraceSet

Number = int | float
# One operation of a rank: (action, partner, bytes or flops); partner -1 where there is none.
Op = tuple[str, int, float]
# The compute amount (flops at the replay's host speed) of one execution of a site at a rank's values (``rank``,
# ``iter``, inputs and derived variables); None: the site does no work of its own, and adds no compute.
Work = Callable[["Site", Mapping[str, Number]], float | None]

POINT_TO_POINT = {"mpi_send": "send", "mpi_isend": "isend", "mpi_recv": "recv", "mpi_irecv": "irecv"}
NONBLOCKING = {"isend", "irecv"}
ROOTED = {"mpi_bcast": "bcast", "mpi_reduce": "reduce", "mpi_gather": "gather", "mpi_scatter": "scatter"}
UNROOTED = {"mpi_allreduce": "allreduce", "mpi_allgather": "allgather", "mpi_alltoall": "alltoall",
            "mpi_barrier": "barrier"}

# Ranks ma synth writes at most by default: one file each, and SimGrid replays far fewer in reasonable time.
MAX_RANKS = 65536


@dataclass(frozen=True)
class IndexVariable:
    """A variable declared in every iteration of a loop: its value in iteration k (from 0) of n."""

    first: float
    descending: bool

    def value(self, k: int, n: int) -> float:
        return self.first + (n - 1 - k if self.descending else k)


def flop_work(site: Site, env: Mapping[str, Number]) -> float | None:
    """The default :data:`Work`: a flop assertion's flops, computed at the host's flop rate; no other site works."""
    if site.type != "flop":
        return None
    return _evaluate(site.expr or "0", env, site, "flop expression")


@dataclass
class Program:
    """What the generator needs of a traced run, read once and shared by every rank."""

    ts: TraceSet
    inputs: dict[str, float]
    index_variables: dict[str, IndexVariable]  # site path -> rule
    peers: dict[tuple[str, str], str]  # (path, type) -> peer expression
    region: tuple[Site, ...] = ()  # the chain of sites from the top down to the region to generate
    varying_loops: set[Any] = field(default_factory=set)  # keys of loops whose iterations differ
    work: Work = flop_work


KERNELS = ("flop", "loadstore", "heap_memory", "stack_memory")  # regions the walk does not enter


def _site_label(site: Site) -> str:
    where = f" ({site.file}:{site.line})" if site.file else ""
    return f"{site.type} {site.path!r}{where}"


def _evaluate(text: str, env: Mapping[str, Number], site: Site, what: str) -> float:
    try:
        return float(parse_expression(text).evaluate(env))
    except MAError as exc:
        raise SynthError(f"{_site_label(site)}: its {what} {text!r}: {exc}") from exc


def load_program(ts: TraceSet, settings: Mapping[str, float], region: str | None = None,
                 work: Work = flop_work) -> Program:
    """Inputs (traced, overridden by ``settings``), loop-index rules and partner expressions of ``ts``."""
    from ma_post.peers import peer_results

    inputs: dict[str, float] = {}
    index_variables: dict[str, IndexVariable] = {}
    for site in ts.walk():
        if site.type != "variable":
            continue
        var = ts.variables.get((site.id, ts.sites[site.parent].path if site.parent else ""))
        if var is None:
            continue
        parent = ts.sites[site.parent] if site.parent else None
        if parent is not None and parent.type == "loop" and site.id not in settings:
            mask = var.present
            mins, maxs, last = var.mins[mask], var.maxs[mask], var.values[mask]
            descending = bool(np.any((last == mins) & (maxs > mins)))
            index_variables[site.path] = IndexVariable(float(np.min(mins)), descending)
        elif site.id not in settings and site.id not in inputs:
            values = var.values[var.present]
            if values.size and np.any(values != values[0]) and site.id != "rank":
                raise SynthError(f"input {site.id!r} differs between the traced ranks ({np.min(values):g}.."
                                 f"{np.max(values):g}): give its value with --set {site.id}=V")
            if values.size:
                inputs[site.id] = float(values[0])
    inputs.update({k: float(v) for k, v in settings.items()})
    peers = {(r.path, r.type): r.expr for r in peer_results(ts)}
    chain: tuple[Site, ...] = ()
    if region:
        target = ts.find(region)
        chain = (*ts.ancestors(target), target)
    # a loop's iterations differ when it declares an index variable, or a partner below it uses `iter`
    varying = {ts.sites[ts.find(path, "variable").parent].key for path in index_variables  # type: ignore[index]
               if ts.find(path, "variable").parent is not None}
    for (path, kind), text in peers.items():
        if "iter" in parse_expression(text).symbols:
            loops = [a for a in ts.ancestors(ts.find(path, kind)) if a.type == "loop"]
            if loops:
                varying.add(loops[-1].key)
    return Program(ts, inputs, index_variables, peers, chain, varying, work)


class RankGenerator:
    """The operations of one rank: the site tree run symbolically."""

    def __init__(self, program: Program, rank: int, nprocs: int) -> None:
        self.program = program
        self.rank = rank
        self.nprocs = nprocs

    # --- ops lists: computes merge, requests are waited for -------------------------------------------
    @staticmethod
    def append(ops: list[Op], op: Op) -> None:
        if op[0] == "compute" and ops and ops[-1][0] == "compute":
            ops[-1] = ("compute", -1, ops[-1][2] + op[2])
        else:
            ops.append(op)

    def extend(self, ops: list[Op], more: Sequence[Op]) -> None:
        if more:
            self.append(ops, more[0])
            ops.extend(more[1:])

    @staticmethod
    def wait_all(ops: list[Op], pending: list[Op]) -> None:
        ops.extend(("wait", peer, float(tag)) for _action, peer, tag in pending)
        pending.clear()

    # --- the walk ----------------------------------------------------------------------------------
    def run(self) -> list[Op]:
        env: dict[str, Number] = {**self.program.inputs, "rank": self.rank}
        env.setdefault("nprocs", self.nprocs)
        ts = self.program.ts
        chain = self.program.region
        ops = self._enter_chain(ts.children(ts.root), chain, env) if chain else self.body(ts.children(ts.root), env)
        return ops

    def _enter_chain(self, siblings: list[Site], chain: tuple[Site, ...], env: dict[str, Number]) -> list[Op]:
        """Declarations before the region's ancestors, then the region itself (one execution)."""
        target = chain[0]
        for site in siblings:
            if site.key == target.key:
                if len(chain) == 1:
                    return self.body([site], env)
                return self._enter_chain(self.program.ts.children(site), chain[1:], dict(env))
            if site.type in ("variable", "assign"):
                self.declare(site, env, 0, 1)
        raise SynthError(f"region {target.path!r} not found below its parent")

    def declare(self, site: Site, env: dict[str, Number], k: int, n: int) -> None:
        if site.type == "assign":
            env[site.id] = _evaluate(site.expr or "", env, site, "expression")
            return
        rule = self.program.index_variables.get(site.path)
        if rule is not None:
            env[site.id] = rule.value(k, n)
        elif site.id in self.program.inputs:
            env[site.id] = self.program.inputs[site.id]

    def work(self, site: Site, env: Mapping[str, Number], ops: list[Op], pending: list[Op]) -> None:
        """The site's own compute (:data:`Work`), after the requests before it."""
        amount = self.program.work(site, env)
        if amount is not None:
            self.wait_all(ops, pending)
            self.append(ops, ("compute", -1, amount))

    def body(self, sites: Sequence[Site], env: dict[str, Number], k: int = 0, n: int = 1) -> list[Op]:
        ops: list[Op] = []
        pending: list[Op] = []
        ts = self.program.ts
        for site in sites:
            kind = site.type
            if kind in ("variable", "assign"):
                self.declare(site, env, k, n)
            elif kind in KERNELS:
                self.work(site, env, ops, pending)
            elif kind == "subroutine":
                self.wait_all(ops, pending)
                inside = dict(env)
                self.work(site, inside, ops, pending)
                self.extend(ops, self.body(ts.children(site), inside))
            elif kind == "loop":
                self.wait_all(ops, pending)
                self.extend(ops, self.loop(site, env))
            elif kind.startswith("mpi_"):
                self.mpi(site, env, ops, pending)
        self.wait_all(ops, pending)
        return ops

    def loop(self, site: Site, env: dict[str, Number]) -> list[Op]:
        trips_value = _evaluate(site.expr or "0", env, site, "trip count")
        trips = round(trips_value)
        if trips < 0 or not math.isclose(trips, trips_value, abs_tol=1e-9):
            raise SynthError(f"{_site_label(site)}: trip count {site.expr!r} = {trips_value:g} is not a count")
        ops: list[Op] = []
        if site.key not in self.program.varying_loops and trips > 0:  # the same calls every time: repeat one
            once = self.iteration(site, {**env, "iter": 0})
            for _ in range(trips):
                self.extend(ops, once)
            return ops
        for k in range(trips):
            self.extend(ops, self.iteration(site, {**env, "iter": k}, k, trips))
        return ops

    def iteration(self, loop: Site, env: dict[str, Number], k: int = 0, n: int = 1) -> list[Op]:
        """One iteration of ``loop``: its own work, then its body."""
        ops: list[Op] = []
        self.work(loop, env, ops, [])
        self.extend(ops, self.body(self.program.ts.children(loop), env, k, n))
        return ops

    def mpi(self, site: Site, env: dict[str, Number], ops: list[Op], pending: list[Op]) -> None:
        kind = site.type
        nbytes = _evaluate(site.expr or "0", env, site, "bytes expression")
        count_value = _evaluate(site.count_expr or "1", env, site, "count expression")
        count = round(count_value)
        peer_text = self.program.peers.get((site.path, kind))
        peer = -1
        if peer_text is not None:
            peer = round(_evaluate(peer_text, env, site, "peer expression"))
            if count and not 0 <= peer < self.nprocs:
                raise SynthError(f"{_site_label(site)}: peer {peer_text!r} = {peer} on rank {self.rank}: outside "
                                 f"0..{self.nprocs - 1}")
        amount = self.program.work(site, env)  # the call's own time besides its message: no wait before it,
        if amount is not None:  # which would reorder an exchange (irecv, send, wait)
            self.append(ops, ("compute", -1, amount))
        if kind in POINT_TO_POINT:
            if count and peer_text is None:
                raise SynthError(f"{_site_label(site)}: a point-to-point assertion needs its partner: "
                                 "add peer=\"<expression of rank>\"")
            action = POINT_TO_POINT[kind]
            if action in NONBLOCKING:
                self.wait_all(ops, pending)
            for _ in range(count):
                ops.append((action, peer, nbytes))
                if action == "isend" or action == "irecv":
                    pending.append((action, peer, 0.0))
            return
        self.wait_all(ops, pending)
        if kind in ROOTED:
            for _ in range(count):
                ops.append((ROOTED[kind], max(peer, 0), nbytes))
        elif kind in UNROOTED:
            for _ in range(count):
                ops.append((UNROOTED[kind], -1, nbytes))
        else:
            raise SynthError(f"{_site_label(site)}: {kind} has no SMPI time-independent action here")


# --- SMPI time-independent text -----------------------------------------------------------------------------
TAG = 0  # one tag: MPI matches messages between two ranks in order, and every rank posts them in program order


def smpi_lines(rank: int, nprocs: int, ops: Sequence[Op]) -> list[str]:
    """The rank's time-independent trace (sizes in bytes: ``init`` without a datatype means MPI_BYTE)."""
    lines = [f"{rank} init"]
    requests: list[tuple[int, int]] = []  # (src, dst) of the requests not waited for yet, in order
    for action, peer, value in ops:
        if action == "compute":
            if value > 0:
                lines.append(f"{rank} compute {value:.17g}")
        elif action in ("send", "isend", "recv", "irecv"):
            lines.append(f"{rank} {action} {peer} {TAG} {round(value)}")
            if action == "isend":
                requests.append((rank, peer))
            elif action == "irecv":
                requests.append((peer, rank))
        elif action == "wait":
            src, dst = requests.pop(0)
            lines.append(f"{rank} wait {src} {dst} {TAG}")
        elif action == "barrier":
            lines.append(f"{rank} barrier")
        elif action == "bcast":
            lines.append(f"{rank} bcast {round(value)} {peer}")
        elif action == "reduce":
            lines.append(f"{rank} reduce {round(value)} 0 {peer}")
        elif action == "allreduce":
            lines.append(f"{rank} allreduce {round(value)} 0")
        elif action in ("gather", "scatter"):
            lines.append(f"{rank} {action} {round(value)} {round(value)} {peer}")
        elif action == "allgather":
            lines.append(f"{rank} allgather {round(value)} {round(value)}")
        elif action == "alltoall":  # PMPI counts the whole send buffer: SMPI wants one block
            block = round(value / nprocs)
            lines.append(f"{rank} alltoall {block} {block}")
    lines.append(f"{rank} finalize")
    return lines


@dataclass
class SynthResult:
    directory: Path
    nprocs: int
    files: list[Path]
    index: Path  # the file listing every rank's trace, for smpirun -replay
    actions: int


def rank_ops(program: Program, rank: int, nprocs: int) -> list[Op]:
    return RankGenerator(program, rank, nprocs).run()


def synthesize(ts: TraceSet, out: str | Path, settings: Mapping[str, float], *, region: str | None = None,
               nprocs: int | None = None, work: Work = flop_work, max_ranks: int = MAX_RANKS) -> SynthResult:
    """Write ``OUT/rank-<r>.smpi`` for every rank and ``OUT/traces.txt`` listing them (smpirun -replay); ``work``
    gives each site's compute amount (default: a flop site's flops); more than ``max_ranks`` ranks is a SynthError
    before anything is written."""
    values = dict(settings)
    if nprocs is None:
        nprocs = int(values.get("nprocs", ts.size))
    values.setdefault("nprocs", nprocs)
    if nprocs < 1:
        raise SynthError(f"nprocs must be at least 1, got {nprocs}")
    if nprocs > max_ranks:
        raise SynthError(f"nprocs={nprocs:,} would write {nprocs:,} rank files; the limit is {max_ranks:,} "
                         "(--max-ranks)")
    program = load_program(ts, values, region, work)
    directory = Path(out)
    directory.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    actions = 0
    for rank in range(nprocs):
        lines = smpi_lines(rank, nprocs, rank_ops(program, rank, nprocs))
        path = directory / f"rank-{rank}.smpi"
        path.write_text("\n".join(lines) + "\n")
        files.append(path)
        actions += len(lines)
    index = directory / "traces.txt"
    index.write_text("".join(f"{p.resolve()}\n" for p in files))
    return SynthResult(directory, nprocs, files, index, actions)
