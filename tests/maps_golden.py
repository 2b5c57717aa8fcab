"""The maps backend's predictions of fixed traces with the shipped profile, every part of every site per rank: the
record ``tests/data/maps-golden/predictions.json`` that ``tests/test_maps_golden.py`` checks the backend against.

The traces are the test suite's synthetic programs (:mod:`post_fixtures`) and a few real runs kept in
``tests/data/maps-golden/``: NPB CG class S on 1 and 2 ranks, its ``--counters ccalls`` run (calls and subscripts
per site) and its ``--counters valgrind --cache`` run (hit rates, lines per flop), NPB SP class S on 1 rank with
the same two signature runs, and the C example ``examples/c_ring`` on 2 ranks and under the cache simulation. The
record was written once by the backend before the runtime part was split from compute; a Python program's
prediction must not move, part by part (``runtime`` is the interpreter's seconds, ``compute`` the rest).

    python tests/maps_golden.py --write    # rewrite the record (only where a change of the numbers is meant)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "maps-golden"
RECORD = DATA / "predictions.json"
PARTS = ("compute", "memory", "communication", "runtime")
CALLS = {"call_overhead_s": 5e-7, "subscript_s": 2e-7, "python_flops": 3e9,
         "annotation_s": {"region": 1e-7, "loop": 2e-7, "mpi": 3e-7}}
WHAT_IFS = ("network.latency=*2", "cpu.call_overhead=*2", "cpu.subscript=*2", "memory.bandwidth=*2", "cpu.peak=*2",
            "cpu.python=/2", "network.oversubscribed.latency_s=*2")


@dataclass(frozen=True)
class Case:
    name: str
    traces: str  # a directory under DATA, or "synthetic:<program>:<ranks>:<language>"
    options: Mapping[str, Any] = field(default_factory=dict)  # MapsBackend keyword arguments
    signature: str | None = None  # a signature file under DATA
    parameters: Mapping[str, float] = field(default_factory=dict)
    what_if: str | None = None


def _synthetic() -> list[Case]:
    out = []
    for program, ranks in (("hand", 4), ("cg", 2)):
        for language in ("python", "c"):
            base = f"synthetic:{program}:{ranks}:{language}"
            out += [Case(f"{program}-{language}", base),
                    Case(f"{program}-{language}-sum", base, {"overlap": "sum"}),
                    Case(f"{program}-{language}-max", base, {"overlap": "max"}),
                    Case(f"{program}-{language}-net", base, {"overlap": "net"}),
                    Case(f"{program}-{language}-nprocs8", base, parameters={"nprocs": 8}),
                    Case(f"{program}-{language}-nprocs8-cores0", base, {"cores": 0}, parameters={"nprocs": 8})]
    return out


def _real() -> list[Case]:
    cg, sp = "cg.signature.json", "sp.signature.json"
    out = [Case("cg-S-1", "cg-S-1"), Case("cg-S-1-max", "cg-S-1", {"overlap": "max"}),
           Case("cg-S-1-no-exchange", "cg-S-1", {"python_exchange": False}),
           Case("cg-S-1-options", "cg-S-1", CALLS)]
    for form in ("auto", "sum", "max", "net"):
        out.append(Case(f"cg-S-1-sig-{form}", "cg-S-1", {"overlap": form}, signature=cg))
    out += [Case("cg-S-1-sig-eq1", "cg-S-1", {"streams": "eq1"}, signature=cg),
            Case("cg-S-2", "cg-S-2"), Case("cg-S-2-sig", "cg-S-2", signature=cg),
            Case("cg-S-2-sig-nprocs4", "cg-S-2", signature=cg, parameters={"nprocs": 4}),
            Case("cg-S-2-sig-nprocs4-max", "cg-S-2", {"overlap": "max"}, signature=cg, parameters={"nprocs": 4}),
            Case("cg-S-ccalls", "cg-S-ccalls"), Case("cg-S-ccalls-options", "cg-S-ccalls", CALLS),
            Case("cg-S-cache", "cg-S-cache"), Case("cg-S-cache-max", "cg-S-cache", {"overlap": "max"}),
            Case("sp-S-1", "sp-S-1"), Case("sp-S-1-sig", "sp-S-1", signature=sp),
            Case("sp-S-1-sig-eq1", "sp-S-1", {"streams": "eq1"}, signature=sp),
            Case("sp-S-ccalls", "sp-S-ccalls"), Case("sp-S-cache", "sp-S-cache"),
            Case("c-ring-2", "c-ring-2"), Case("c-ring-2-max", "c-ring-2", {"overlap": "max"}),
            Case("c-ring-2-nprocs4", "c-ring-2", parameters={"nprocs": 4}), Case("c-ring-cache", "c-ring-cache")]
    out += [Case(f"cg-S-1-sig-whatif-{text}", "cg-S-1", signature=cg, what_if=text) for text in WHAT_IFS]
    out += [Case(f"cg-S-2-sig-nprocs4-whatif-{text}", "cg-S-2", signature=cg, parameters={"nprocs": 4},
                 what_if=text) for text in WHAT_IFS[:1] + WHAT_IFS[-1:]]
    return out


CASES = _synthetic() + _real()


def _hand_program() -> list[Any]:
    from post_fixtures import Loop, Mpi, Op, Sub, Var

    return [Var("n", 10), Var("m", 1000), Var("nprocs", lambda e: e["__size"]),
            Sub("solve", [Loop("it", "n", [
                Op("flop", "fl", "2*m", body=[Op("loadstore", "ls_in", "m")]), Op("loadstore", "ls", "3*m"),
                Mpi("mpi_allreduce", "sum", "8"), Mpi("mpi_send", "halo", "8*m", count="2"),
                Mpi("mpi_irecv", "halo_in", "8*m", count="2")])]),
            Mpi("mpi_bcast", "params", "16")]


def load_traces(spec: str) -> Any:
    from ma_post.traceset import from_traces, load

    if not spec.startswith("synthetic:"):
        return load(DATA / spec)
    from post_fixtures import cg_program, make_trace

    _, program, ranks, language = spec.split(":")
    body: Callable[[], list[Any]] = {"hand": _hand_program, "cg": cg_program}[program]
    return from_traces([make_trace(body(), r, int(ranks), language=language) for r in range(int(ranks))])


def predict(case: Case) -> dict[str, Any]:
    """Every part of every site, and the total, per traced rank: the prediction's own numbers
    (:meth:`backends.base.Prediction.seconds`, what ``ma predict`` prints), so the record also checks the backend's
    evaluation at each rank's traced inputs."""
    from backends.base import PARTS
    from backends.machine import profile as profiles
    from backends.maps import MapsBackend
    from backends.signature import load_signature_file
    from ma_post import ModelBuilder

    machine = profiles.load(profiles.shipped_profiles()["amd-epyc-zen4-kvm"])
    if case.what_if:
        machine = _what_if(machine, case.what_if)
    builder = ModelBuilder(load_traces(case.traces))
    options = dict(case.options)
    if case.signature:
        options["signatures"] = load_signature_file(DATA / case.signature, machine.levels)
    prediction = MapsBackend(**options).predict(builder, machine, dict(case.parameters))
    seconds = prediction.seconds(builder)
    sites = {path: {part: [float(v) for v in seconds.per_rank[i, j]] for j, part in enumerate(PARTS)}
             for i, path in enumerate(seconds.paths)}
    return {"sites": sites, "total": [float(v) for v in seconds.total()]}


def _what_if(machine: Any, text: str) -> Any:
    from backends.machine import whatif

    return whatif.apply(machine, whatif.parse(text))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="rewrite the record")
    args = parser.parse_args()
    if not args.write:
        parser.error("nothing to do: --write rewrites the record")
    sys.path.insert(0, str(HERE))
    record = {case.name: predict(case) for case in CASES}
    lines = (f"{json.dumps(name)}: {json.dumps(case, sort_keys=True, separators=(',', ':'))}"  # a case a line
             for name, case in sorted(record.items()))
    RECORD.write_text("{\n" + ",\n".join(lines) + "\n}\n")
    print(f"written: {RECORD} ({len(record)} cases)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
