"""Synthetic ma-trace documents for the post-processing tests and bench (docs/trace-format.md, version 1).

A small program description (variables, subroutines, loops, assertions) is *simulated* per rank: every
expression is evaluated with the runtime's own evaluator (ma_core.expr), loops multiply the work of their
body, and the folded aggregates are written exactly as the runtimes write them. Loops with an ``index``
variable and ``If`` nodes are executed iteration by iteration; everything else is aggregated in closed
form, so a CG-sized tree on 1024 ranks is synthesised in well under a second per hundred ranks.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ma_core.expr import parse_expression
from ma_core.trace_format import FORMAT, VERSION, rank_file

Number = int | float
Env = dict[str, Number]
Actual = str | Callable[[Env], Number] | None  # expression text, function of the env, or "as predicted"


@dataclass
class Var:
    name: str
    value: Number | Callable[[Env], Number]


@dataclass
class Assign:
    name: str
    expr: str
    given: Number | None = None  # the program's own value (recorded as measured)


@dataclass
class Sub:
    id: str
    body: list[Any]


@dataclass
class Loop:
    id: str
    expr: str
    body: list[Any] = field(default_factory=list)
    actual: Actual = None
    index: str | None = None  # declare this variable (ma.variable) with the iteration number every iteration


@dataclass
class Op:
    """flop, loadstore, heap_memory or stack_memory."""

    type: str
    id: str
    expr: str
    actual: Actual = None
    body: Sequence[Any] = ()  # regions nested in this one (a loadstore region inside a flop region)


@dataclass
class Mpi:
    type: str
    id: str
    expr: str
    count: str = "1"
    actual: Actual = None
    actual_count: Actual = None
    peer: Callable[[Env], Number] | None = None


@dataclass
class If:
    cond: Callable[[Env], bool]
    body: list[Any]


ROUTINE = {"mpi_send": "MPI_Send", "mpi_isend": "MPI_Isend", "mpi_recv": "MPI_Recv", "mpi_irecv": "MPI_Irecv",
           "mpi_sendrecv": "MPI_Sendrecv", "mpi_bcast": "MPI_Bcast", "mpi_reduce": "MPI_Reduce",
           "mpi_allreduce": "MPI_Allreduce", "mpi_gather": "MPI_Gather", "mpi_scatter": "MPI_Scatter",
           "mpi_allgather": "MPI_Allgather", "mpi_alltoall": "MPI_Alltoall", "mpi_barrier": "MPI_Barrier"}


def _value(actual: Actual, env: Env, default: Number) -> Number:
    if actual is None:
        return default
    if callable(actual):
        return actual(env)
    return parse_expression(actual).evaluate(env)


class _Stats:
    __slots__ = ("max", "min", "n", "sum")

    def __init__(self) -> None:
        self.n = 0
        self.min: Number | None = None
        self.max: Number | None = None
        self.sum: Number = 0

    def add(self, value: Number, times: int) -> None:
        if times <= 0:
            return
        self.n += times
        self.min = value if self.min is None else min(self.min, value)
        self.max = value if self.max is None else max(self.max, value)
        self.sum += value * times

    def json(self) -> dict[str, Any] | None:
        return None if self.n == 0 else {"n": self.n, "min": self.min, "max": self.max, "sum": self.sum}


class _Node:
    def __init__(self, type_: str, id_: str, path: str, expr: str | None, count_expr: str | None = None) -> None:
        self.type, self.id, self.path, self.expr, self.count_expr = type_, id_, path, expr, count_expr
        self.calls = self.passes = self.fails = self.unmeasured = self.mismatch = 0
        self.pred, self.meas, self.cpred, self.cmeas = _Stats(), _Stats(), _Stats(), _Stats()
        self.first_fail: dict[str, Any] | None = None
        self.first_mismatch: dict[str, Any] | None = None
        self.children: dict[tuple[str, str], _Node] = {}

    def child(self, type_: str, id_: str, expr: str | None, count_expr: str | None = None) -> _Node:
        key = (type_, id_)
        if key not in self.children:
            path = f"{self.path}/{id_}" if self.path else id_
            self.children[key] = _Node(type_, id_, path, expr, count_expr)
        return self.children[key]

    def json(self, line: int) -> dict[str, Any]:
        node: dict[str, Any] = {
            "id": self.id, "type": self.type, "path": self.path, "expr": self.expr,
            "file": "prog.py", "line": line, "calls": self.calls,
            "predicted": self.pred.json(), "measured": self.meas.json(),
            "pass": self.passes, "fail": self.fails, "unmeasured": self.unmeasured,
            "mismatch": self.mismatch, "first_mismatch": self.first_mismatch, "first_fail": self.first_fail,
            "wall_ns": 1000 * self.calls, "cpu_ns": 900 * self.calls,
            "children": [c.json(line + 1 + i) for i, c in enumerate(self.children.values())],
        }
        if self.count_expr is not None:
            node["count_expr"] = self.count_expr
            node["count"] = {"predicted": self.cpred.json(), "measured": self.cmeas.json()}
        return node


def _agrees(predicted: Number, measured: Number, tolerance: float) -> bool:
    return abs(predicted - measured) <= tolerance * abs(measured)


class Simulator:
    """Runs a program description for one rank and folds the calls like the runtime does."""

    def __init__(self, rank: int, size: int, tolerance: Mapping[str, float], measured_kinds: set[str],
                 mpi: bool) -> None:
        self.rank, self.size = rank, size
        self.tolerance = dict(tolerance)
        self.measured_kinds = measured_kinds
        self.mpi = mpi
        self.root = _Node("root", "", "", None)
        self.variables: dict[tuple[str, str], dict[str, Any]] = {}
        self.profile: dict[str, dict[str, Any]] = {}

    def tol(self, type_: str) -> float:
        return self.tolerance.get(type_, self.tolerance.get("default", 0.0))

    def run(self, body: Sequence[Any]) -> None:
        self._block(body, self.root, {"__rank": self.rank, "__size": self.size}, 1)

    def _declare(self, name: str, scope: str, kind: str, expr: str | None, value: Number, times: int) -> None:
        entry = self.variables.setdefault((name, scope), {"name": name, "kind": kind, "expr": expr, "scope": scope,
                                                          "defs": 0, "value": value, "min": value, "max": value})
        entry["defs"] += times
        entry["value"] = value
        entry["min"], entry["max"] = min(entry["min"], value), max(entry["max"], value)

    def _block(self, body: Sequence[Any], parent: _Node, env: Env, times: int) -> None:
        env = dict(env)  # declarations are scoped to the block of the enclosing site
        for item in body:
            if isinstance(item, Var):
                value = item.value(env) if callable(item.value) else item.value
                env[item.name] = value
                node = parent.child("variable", item.name, None)
                node.calls += times
                node.pred.add(value, times)
                self._declare(item.name, parent.path, "input", None, value, times)
            elif isinstance(item, Assign):
                value = parse_expression(item.expr).evaluate(env)
                env[item.name] = value
                node = parent.child("assign", item.name, item.expr)
                node.calls += times
                node.pred.add(value, times)
                if item.given is not None:
                    node.meas.add(item.given, times)
                    if item.given != value:
                        node.mismatch += times
                        node.first_mismatch = node.first_mismatch or {"given": item.given, "evaluated": value}
                self._declare(item.name, parent.path, "derived", item.expr, value, times)
            elif isinstance(item, Sub):
                node = parent.child("subroutine", item.id, None)
                node.calls += times
                self._block(item.body, node, env, times)
            elif isinstance(item, Loop):
                self._loop(item, parent, env, times)
            elif isinstance(item, Op):
                self._op(item, parent, env, times)
            elif isinstance(item, Mpi):
                self._mpi(item, parent, env, times)
            elif isinstance(item, If):
                if item.cond(env):
                    self._block(item.body, parent, env, times)
            else:
                raise TypeError(f"unknown program item {item!r}")

    def _check(self, node: _Node, predicted: Number, measured: Number, times: int, kind: str) -> None:
        node.pred.add(predicted, times)
        if kind not in self.measured_kinds:
            node.unmeasured += times
            return
        node.meas.add(measured, times)
        if _agrees(predicted, measured, self.tol(node.type)):
            node.passes += times
        else:
            node.fails += times
            if node.first_fail is None:
                node.first_fail = {"call": node.calls - times + 1, "predicted": predicted, "measured": measured}

    def _loop(self, item: Loop, parent: _Node, env: Env, times: int) -> None:
        node = parent.child("loop", item.id, item.expr)
        predicted = parse_expression(item.expr).evaluate(env)
        actual = int(_value(item.actual, env, predicted))
        node.calls += times
        self._check(node, predicted, actual, times, "loop")
        if item.index is None and not _needs_literal(item.body):
            if actual > 0:
                self._block(item.body, node, env, times * actual)
            return
        for _ in range(times):
            for k in range(actual):
                inner = {**env, "iter": k}  # the iteration, from 0 (every expression inside may use it)
                if item.index is not None:
                    inner[item.index] = k
                    self._declare(item.index, node.path, "input", None, k, 1)
                    var = node.child("variable", item.index, None)
                    var.calls += 1
                    var.pred.add(k, 1)
                self._block(item.body, node, inner, 1)

    def _op(self, item: Op, parent: _Node, env: Env, times: int) -> None:
        node = parent.child(item.type, item.id, item.expr)
        predicted = parse_expression(item.expr).evaluate(env)
        node.calls += times
        self._check(node, predicted, _value(item.actual, env, predicted), times, item.type)
        if item.body:
            self._block(item.body, node, env, times)

    def _mpi(self, item: Mpi, parent: _Node, env: Env, times: int) -> None:
        node = parent.child(item.type, item.id, item.expr, item.count)
        size = parse_expression(item.expr).evaluate(env)
        count = parse_expression(item.count).evaluate(env)
        real_size = _value(item.actual, env, size)
        real_count = int(_value(item.actual_count, env, count))
        node.calls += times
        node.pred.add(size, times)
        node.cpred.add(count, times)
        if not self.mpi:
            node.unmeasured += times
        else:
            node.meas.add(real_size, times)
            node.cmeas.add(real_count, times)
            tol = self.tol(node.type)
            if _agrees(size, real_size, tol) and _agrees(count, real_count, tol):
                node.passes += times
            else:
                node.fails += times
                if node.first_fail is None:
                    node.first_fail = {"call": node.calls - times + 1, "predicted": size, "measured": real_size,
                                       "count_predicted": count, "count_measured": real_count}
        entry = self.profile.setdefault(ROUTINE[item.type], {"calls": 0, "bytes": 0, "time_ns": 0, "hist": {},
                                                             "peers": {}})
        messages = times * real_count
        entry["calls"] += messages
        entry["bytes"] += messages * int(real_size)
        entry["time_ns"] += messages * 2000
        bits = int(real_size).bit_length()
        bucket = (0, 0) if real_size == 0 else (2 ** (bits - 1), 2 ** bits - 1)
        entry["hist"][bucket] = entry["hist"].get(bucket, 0) + messages
        if item.peer is not None and item.type in ("mpi_send", "mpi_isend", "mpi_recv", "mpi_irecv", "mpi_sendrecv"):
            peer = str(item.peer(env))
            calls, nbytes = entry["peers"].get(peer, (0, 0))
            entry["peers"][peer] = (calls + messages, nbytes + messages * int(real_size))

    def profile_json(self) -> dict[str, Any] | None:
        if not self.mpi:
            return None
        calls = {}
        for name, entry in self.profile.items():
            calls[name] = {"calls": entry["calls"], "bytes": entry["bytes"], "time_ns": entry["time_ns"],
                           "hist": [[lo, hi, n] for (lo, hi), n in sorted(entry["hist"].items())],
                           "peers": {p: list(v) for p, v in entry["peers"].items()}}
        return {"calls": calls}


def _needs_literal(body: Sequence[Any]) -> bool:
    """Whether a loop with this body must run iteration by iteration: a condition, or an expression in ``iter``."""
    for item in body:
        if isinstance(item, If):
            return True
        texts = [getattr(item, "expr", None), getattr(item, "count", None)]
        if any(isinstance(t, str) and "iter" in parse_expression(t).symbols for t in texts):
            return True
        if isinstance(item, (Sub, Loop)) and _needs_literal(item.body):
            return True
    return False


DEFAULT_TOLERANCE = {"default": 0.0, "flop": 0.2, "loadstore": 0.2}


def make_trace(program: Sequence[Any], rank: int = 0, size: int = 1, *, run_id: str | None = "run-1",
               language: str = "python", tolerance: Mapping[str, float] | None = None,
               measured_kinds: Sequence[str] = ("loop", "flop", "loadstore", "heap_memory", "stack_memory"),
               mpi: bool = True, threads: Sequence[Sequence[Any]] = (), status: str = "complete",
               anomalies: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """One rank's trace document. ``threads`` are extra thread programs (threads 1, 2, ...)."""
    tol = dict(DEFAULT_TOLERANCE if tolerance is None else tolerance)
    sim = Simulator(rank, size, tol, set(measured_kinds), mpi)
    sim.run(program)
    trees = [{"thread": 0, "name": "MainThread",
              "root": root_node([c.json(10 + 20 * i) for i, c in enumerate(sim.root.children.values())])}]
    for k, extra in enumerate(threads, start=1):
        tsim = Simulator(rank, size, tol, set(measured_kinds), mpi)
        tsim.run(extra)
        trees.append({"thread": k, "name": f"worker-{k}",
                      "root": root_node([c.json(500 + 20 * i) for i, c in enumerate(tsim.root.children.values())])})
    header = make_header(rank, size, run_id=run_id, language=language, tolerance=tol,
                         measured_kinds=measured_kinds, mpi=mpi, status=status)
    return {"format": FORMAT, "version": VERSION, "header": header,
            "variables": list(sim.variables.values()), "threads": trees,
            "anomalies": [dict(a) for a in anomalies], "mpi_profile": sim.profile_json()}


def write_run(directory: Path, program: Sequence[Any], size: int = 1, **kwargs: Any) -> Path:
    """Write rank-<r>.ma.json for every rank of a simulated run; returns ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    for rank in range(size):
        trace = make_trace(program, rank, size, **kwargs)
        rank_file(directory, rank).write_text(json.dumps(trace))
    return directory


# --- the NAS CG example of the MA paper (Figures 4-8), much reduced -------------------------------------------


def cg_program(na: int = 1400, nonzer: int = 7, niter: int = 15, flop_noise: float = 0.0) -> list[Any]:
    """CG-shaped annotation tree: ~40 sites, depth 5, the paper's variables and expressions."""
    def noisy(expr: str) -> Actual:
        if not flop_noise:
            return None
        return lambda env: round(parse_expression(expr).evaluate(env) * (1 + flop_noise * ((env["__rank"] % 3) - 1)))

    def cg_step() -> list[Any]:
        """The sites of one CG step, shared by the warm-up and the timed iterations."""
        return [
            Op("flop", "flopq", "2*nonzer*(nonzer+1)*na/nprocs", actual=noisy("2*nonzer*(nonzer+1)*na/nprocs")),
            Op("loadstore", "lsq", "3*nonzer*(nonzer+1)*na/nprocs"),
            Loop("l2q", "l2npcols", [
                Mpi("mpi_irecv", "l2rcv", "dp*na/num_proc_rows"),
                Mpi("mpi_send", "l2snd", "dp*na/num_proc_rows"),
            ]),
            Op("flop", "floprho", "2*na/num_proc_rows"),
            Loop("l3q", "l2npcols", [Mpi("mpi_irecv", "l3rcv", "dp"), Mpi("mpi_send", "l3snd", "dp")]),
            Op("flop", "flopalpha", "5*na/num_proc_rows"),
        ]

    nrecv = [Mpi("mpi_irecv", "nrecv", "dp*2", peer=lambda e: (e["__rank"] + 1) % e["__size"]),
             Mpi("mpi_send", "nsend", "dp*2", peer=lambda e: (e["__rank"] + 1) % e["__size"])]
    return [
        Var("na", na), Var("nonzer", nonzer), Var("niter", niter), Var("nprocs", lambda e: e["__size"]),
        Var("dp", 8), Var("cgitmax", 25),
        Assign("num_proc_cols", "2^ceil(log(nprocs)/(2*log(2)))"),
        Assign("num_proc_rows", "nprocs/num_proc_cols"),
        Assign("l2npcols", "log(num_proc_cols)/log(2)"),
        Sub("makea", [
            Op("heap_memory", "amat", "8*na*(nonzer+1)^2/nprocs"),
            Op("heap_memory", "colidx", "4*na*(nonzer+1)^2/nprocs"),
            Loop("sprnvc_loop", "na/num_proc_rows", [Op("flop", "flopsprnvc", "2*nonzer")]),
        ]),
        Op("stack_memory", "work", "8*(na/num_proc_rows + 2)"),
        Loop("init_loop", "1", [
            Sub("conj_grad", [Op("flop", "flopinit", "2*na/num_proc_rows"), Loop("cgit", "cgitmax", cg_step())]),
        ]),
        Loop("conj_loop", "niter", [
            Sub("conj_grad", [
                Op("flop", "flopinit", "2*na/num_proc_rows"),
                Loop("cgit", "cgitmax", [*cg_step(), Op("loadstore", "lsalpha", "4*na/num_proc_rows")]),
                Op("flop", "flopresid", "4*na/num_proc_rows"),
                Loop("l2r", "l2npcols", [Mpi("mpi_irecv", "l2rrcv", "dp*na/num_proc_rows"),
                                         Mpi("mpi_send", "l2rsnd", "dp*na/num_proc_rows")]),
            ]),
            Op("flop", "flopzeta", "4*na/num_proc_cols"),
            Loop("norm_loop", "l2npcols", nrecv),
            Op("flop", "flopnorm", "3*na/num_proc_rows"),
            Mpi("mpi_allreduce", "zeta_reduce", "dp*2"),
        ]),
        Mpi("mpi_reduce", "final_reduce", "dp", count="1"),
        Mpi("mpi_barrier", "final_barrier", "0"),
    ]


def count_sites(trace: Mapping[str, Any]) -> int:
    def walk(node: Mapping[str, Any]) -> int:
        return 1 + sum(walk(c) for c in node["children"])

    return sum(walk(t["root"]) - 1 for t in trace["threads"])


def approx_equal(a: float, b: float, rel: float = 1e-12) -> bool:
    return math.isclose(a, b, rel_tol=rel, abs_tol=0.0) or (a == b)


def make_header(rank: int = 0, size: int = 1, *, run_id: str | None = "run-1", language: str = "python",
                tolerance: Mapping[str, float] | None = None,
                measured_kinds: Sequence[str] = ("loop", "flop", "loadstore", "heap_memory", "stack_memory"),
                mpi: bool = True, status: str = "complete") -> dict[str, Any]:
    tol = dict(DEFAULT_TOLERANCE if tolerance is None else tolerance)
    measures = {kind: ({"provider": "synthetic", "source": kind} if kind in measured_kinds else None)
                for kind in ("flop", "loadstore", "heap_memory", "stack_memory")}
    return {
        "language": language, "producer": "ma_runtime 0.1.0" if language == "python" else "libma 0.1.0",
        "rank": rank, "size": size, "host": "node0", "pid": 1000 + rank, "run_id": run_id,
        "command": ["python", "prog.py"], "start_time": 1.7e9,
        "end_time": 1.7e9 + 5 if status == "complete" else None,
        "status": status, "exit_reason": None if status == "complete" else "KeyboardInterrupt",
        "tolerance": {"default": tol.get("default", 0.0),
                      "by_type": {k: v for k, v in tol.items() if k != "default"}},
        "counters": {"providers": [{"name": "synthetic", "available": bool(measured_kinds), "version": "1",
                                    "reason": None if measured_kinds else "no counters on this host",
                                    "events": {}}],
                     "measures": measures},
        "mpi": {"profiling": mpi, "library": "/lib/libmapmpi.so" if mpi else None,
                "reason": None if mpi else "mpi4py not loaded"},
    }


# --- hand-made nodes for golden tests ------------------------------------------------------------------------


def root_node(children: list[dict[str, Any]]) -> dict[str, Any]:
    """The root as the runtimes write it: a full node with no calls."""
    root = site_node("root", "", "", None, 0, file=None, line=None)
    root["children"] = children
    return root



def stats(n: int, lo: Number, hi: Number, total: Number) -> dict[str, Any]:
    return {"n": n, "min": lo, "max": hi, "sum": total}


def site_node(type_: str, id_: str, path: str, expr: str | None, calls: int, *,
              predicted: dict[str, Any] | None = None, measured: dict[str, Any] | None = None,
              passes: int = 0, fails: int = 0, unmeasured: int = 0, children: Sequence[dict[str, Any]] = (),
              count_expr: str | None = None, count: dict[str, Any] | None = None,
              file: str | None = "prog.py", line: int | None = 1) -> dict[str, Any]:
    node: dict[str, Any] = {"id": id_, "type": type_, "path": path, "expr": expr, "file": file, "line": line,
                            "calls": calls, "predicted": predicted, "measured": measured, "pass": passes,
                            "fail": fails, "unmeasured": unmeasured, "mismatch": 0, "first_mismatch": None,
                            "first_fail": None, "wall_ns": 10 * calls, "cpu_ns": 9 * calls,
                            "children": list(children)}
    if count_expr is not None:
        node["count_expr"] = count_expr
        node["count"] = count or {"predicted": None, "measured": None}
    return node


def trace_doc(children: Sequence[dict[str, Any]], *, variables: Sequence[dict[str, Any]] = (), rank: int = 0,
              size: int = 1, **header_args: Any) -> dict[str, Any]:
    return {"format": FORMAT, "version": VERSION, "header": make_header(rank, size, **header_args),
            "variables": list(variables),
            "threads": [{"thread": 0, "name": "MainThread", "root": root_node(list(children))}],
            "anomalies": [], "mpi_profile": None}


def variable_entry(name: str, value: Number, *, kind: str = "input", expr: str | None = None, scope: str = "",
                   defs: int = 1) -> dict[str, Any]:
    return {"name": name, "kind": kind, "expr": expr, "scope": scope, "defs": defs, "value": value,
            "min": value, "max": value}


def checked(model: Any) -> Any:
    """The model's check against its trace (every model of a base quantity has one)."""
    assert model.check is not None, model.quantity
    return model.check


def octave_value(model: Any, args: Mapping[str, Number], directory: Path) -> float:
    """``model`` exported to Octave in ``directory`` and evaluated there by GNU Octave at ``args``."""
    import shutil
    import subprocess

    from ma_post.export.octave import export_octave, octave_function_name

    export_octave([model], directory)
    octave = shutil.which("octave-cli")
    assert octave, "octave-cli is needed (scripts/setup.sh installs it)"
    values = ", ".join(str(args[a]) for a in model.inputs)
    call = f"printf('%.17g\\n', {octave_function_name(model.quantity)}({values}))"
    done = subprocess.run([octave, "--no-gui", "--no-window-system", "-q", "--norc", "--eval",
                           f"addpath('{directory}'); {call}"], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    return float(done.stdout.split()[-1])
