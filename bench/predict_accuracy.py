"""Predicted against measured time: the maps backend on NPB CG (and SP), per run, of the main subroutine and
of the whole timed loop.

    python bench/predict_accuracy.py [--cases cg:S:1,cg:W:2,...] [--profile FILE] [--out DIR] [--no-signature]
                                     [--streams vector|eq1] [--repeat N] [--mpicc PATH]

Default cases: CG classes S, W, A on 1, 2 and 4 ranks; SP classes S and W on 1 and 4; the compiled CG
(``cgf``: the Fortran port, ``examples/npb_cg_fortran``, built here by its Makefile with Debian's MPICH, or the
MPI ``--mpicc`` names) classes S, W,
A, B on 1 and 2. The machine profile is
the shipped one (``backends/profiles/``) unless ``--profile`` names another; its CPython terms
(``cpython.call_overhead_s``, ``cpython.python_flops``), the oversubscribed exchange (``network.oversubscribed``:
messages on more ranks than cores) and the two-rank Python exchange (``cpython.exchange``) come from
``ma machine probe``, measured once, independently of these programs (a profile without them gets them measured
here first, said so).

The application signature is measured before the timed runs, never from them:
- calls from Python into compiled code per execution of each site: ``ma run --counters ccalls`` on class S,
  2 ranks for CG, 4 for SP (a square; every site, the MPI exchanges included, runs there; the figures are per
  execution, so they carry to any class and process count through the model's trip counts);
- hit rates per loadstore site, and per flop site the cache lines each level served per flop (the memory
  term of a kernel without a loadstore expression, SP's): ``ma run --counters valgrind --cache PROFILE`` at
  1 rank and one iteration (``--niter 1``) of each class it predicts, since where the data sits depends on the
  problem size (CG A takes longest under Valgrind).
``ma signature`` makes each class's signature file of the two runs (with CG's CSR row loop stated), the same command
a user runs. The compiled CG has no calls run (no interpreter: its runtime part is 0); its signature is the Valgrind
run's hit rates with its dependent sums stated (``--add-chain``: the block product's rows and the dot products, each
one sum, :data:`FORTRAN_ADD_CHAINS`), which the maps backend prices at the profile's add chain
(``cpu.add_chain_s``, from ``ma machine probe``; measured here first where the profile lacks it, said so).
Where the trace does not carry them (the runtime side writes ``Site.hit_rates``/``Site.c_calls``), the
prediction falls back to assumed hit rates / one call per execution and says so.

For each run on more ranks than cores it also prints the oversubscribed exchange latency that would have made
the prediction exact (a diagnosis of that term, not an input); with the exchange's work curve
(``network.oversubscribed.work``), the model's work per message and the wait per message that would have.

Beside the default combination of compute and memory (``--overlap auto``: Eq. 1's sum for these Python programs),
it prints the error with ``--overlap max`` and with the flop time net of F(h)'s probe flops (``net``).

Every timed run is ``ma run -n P -- python -m <app> --class C``; the prediction comes from its validated model,
the profile and the signature only; the measurement from the trace's inclusive wall times, both for the
slowest rank. Writes ``DIR/accuracy.json`` (for ``examples/npb_cg/study.py --accuracy``) and the signature
of each class, ``DIR/<app>-<class>.signature.json`` (for ``ma predict --signatures``). Timings on a shared
host are noisy: read the figures with the load in mind.

``--repeat N`` runs every case N times, round by round (each round runs all cases once, so a drift of the host
touches every case alike). The prediction of a case is the same in every round (the same model, profile and
signature); what moves is the measured time. It prints every round's averages and their range over the rounds:
the interval within which this host resolves the error.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from backends.base import PARTS, PredictedSeconds, per_rank
from backends.cpython import exchange
from backends.cpython import probe as cpython_probe
from backends.machine import chains, runnetwork, whatif
from backends.machine import profile as profiles
from backends.machine.probe import ProbeSettings, measure_oversubscribed
from backends.maps import MapsBackend, MapsPrediction
from backends.maps.streams import STREAMS
from backends.signature import Signatures, load_signature_file, save_signature_file
from ma_post import ModelBuilder
from ma_post.traceset import load

ROOT = Path(__file__).resolve().parent.parent
FORMS = ("sum", "max", "net")  # --overlap forms printed beside the default (auto): the paper's sum and max, net
MATVEC = "conj_loop/conj_grad/cgit/matvec"  # CG's product in the timed loop, its error printed on its own


@dataclass(frozen=True)
class App:
    module: str  # a Python program's module; a compiled one's Makefile directory
    timed_loop: str  # site path of the timed section
    subroutine: str  # site path of its main subroutine
    hit_rate_class: dict[str, str]  # class predicted -> class whose signature run gives its hit rates
    calls_procs: int  # ranks of the ccalls run: the fewest on which every site runs (SP needs a square); 0: none
    row_loops: dict[str, dict[str, str]]  # site id -> its CSR row-loop statement (entries, rows), the app's own
    add_chains: dict[str, str] = field(default_factory=dict)  # site id -> terms of its dependent sum per execution
    compiled: bool = False  # built by its Makefile (make MPICC=...), run as build/<program>

    def program(self, out: Path) -> list[str]:
        """The command line of the program, without its class."""
        if self.compiled:
            return [str(out / "fortran-build" / "cg")]
        return [sys.executable, "-m", self.module]


def cg_row_loops() -> dict[str, dict[str, str]]:
    from examples.npb_cg.conj_grad import MATVEC_ROWS

    return {"matvec_ls": MATVEC_ROWS}


# The Fortran CG's dependent sums, as the program states them (examples/npb_cg_fortran/cg_solver.f90, cg.f90): the
# block product's rows (each row one sum over its entries; nonzer*(nonzer+1)/num_proc_cols entries at 9
# instructions an entry, of which the core overlaps only a part with the next row's: close to one add latency an
# entry, a little less) and the dot products and norms, one sum over the rank's columns each.
FORTRAN_ADD_CHAINS = {"matvec_ls": "na*nonzer*(nonzer+1)/nprocs",
                      **dict.fromkeys(("rho0_dot_ls", "pq_dot_ls", "rr_dot_ls", "resid_sq_ls", "flopzeta_ls"),
                                      "na/num_proc_cols")}
FORTRAN_MPICC = Path("/usr/bin/mpicc.mpich")  # the MPI the compiled cases build with by default (Debian's MPICH)

APPS = {"cg": App("examples.npb_cg.cg", "conj_loop", "conj_loop/conj_grad", {"S": "S", "W": "W", "A": "A"}, 2,
                  cg_row_loops()),
        "sp": App("examples.npb_sp.sp", "step", "step/adi", {"S": "S", "W": "W"}, 4, {}),
        "cgf": App("examples/npb_cg_fortran", "conj_loop", "conj_loop/conj_grad",
                   {c: c for c in "SWAB"}, 0, {}, FORTRAN_ADD_CHAINS, compiled=True)}
APP_LABELS = {"cg": "CG (Python)", "sp": "SP (Python)", "cgf": "CG (Fortran, compiled)"}
DEFAULT_CASES = ",".join([f"cg:{c}:{p}" for c in "SWA" for p in (1, 2, 4)]
                         + [f"sp:{c}:{p}" for c in "SW" for p in (1, 4)]
                         + [f"cgf:{c}:{p}" for c in "SWAB" for p in (1, 2)])


def ma(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "ma_cli.main", *argv], cwd=ROOT, capture_output=True, text=True,
                          check=False)
    if check and done.returncode != 0:
        raise SystemExit(f"ma {' '.join(argv)} failed:\n{done.stderr[-3000:]}")
    return done


def _annotation_text(seconds: Mapping[str, float] | None) -> str:
    return "not measured" if not seconds else ", ".join(f"{kind} {s * 1e9:.0f}" for kind, s in seconds.items())


def build_compiled(app: App, out: Path, mpicc: Path = FORTRAN_MPICC) -> None:
    """``make`` the compiled app into ``DIR/fortran-build`` with ``mpicc``'s Fortran wrapper (an MPI with Fortran
    bindings: Debian's MPICH or Open MPI), the SDK's flags from this environment's ``ma config`` (SystemExit saying
    why it could not). ``ma run`` then starts it with that MPI's own launcher."""
    if not mpicc.is_file():
        raise SystemExit(f"the compiled cases build with {mpicc}: not installed (scripts/setup.sh installs Debian's "
                         "MPICH and Open MPI)")
    build = out / "fortran-build"
    done = subprocess.run(["make", "-C", str(ROOT / app.module), f"MPICC={mpicc}", f"BUILD={build}",
                           f"MA={Path(sys.executable).parent / 'ma'}", str(build / "cg")],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"make in {app.module} failed:\n{done.stderr[-3000:]}")


def machine_profile(out: Path, given: str | None) -> tuple[profiles.MachineProfile, Path, str]:
    if given:
        path, origin = Path(given), f"given ({given})"
    else:
        name, path = next(iter(profiles.shipped_profiles().items()))
        origin = f"shipped ({name})"
    machine = profiles.load(path)
    measured = []
    terms = machine.cpython
    if terms is None or terms.call_overhead_s is None:
        section = cpython_probe.measure()
        if terms is not None and terms.exchange is not None:
            section["exchange"] = terms.exchange.to_json()
        machine = profiles.with_block(machine, "cpython", section)
        measured.append("CPython terms")
    elif terms.annotation_s is None:
        machine = profiles.with_block(machine, "cpython.annotation_s", cpython_probe.measure_annotation())
        measured.append("the cost of an annotated site")
    if machine.network is not None and not (machine.network.oversubscribed and machine.network.oversubscribed.work):
        machine = profiles.with_block(machine, "network.oversubscribed", measure_oversubscribed(ProbeSettings()))
        measured.append("the oversubscribed exchange")
    if machine.network is not None and (machine.cpython is None or machine.cpython.exchange is None):
        machine = profiles.with_block(machine, exchange.FIELD, exchange.measure(
            machine.caches[-1].size_bytes, latency_s=machine.network.latency_s,
            call_overhead_s=machine.cpython.call_overhead_s if machine.cpython else None))
        measured.append("the two-rank Python exchange")
    if machine.cpu.add_chain_s is None:
        machine = profiles.with_block(machine, "cpu.add_chain_s", chains.measure_add_chain())
        measured.append("the add chain of a compiled dot product")
    if measured:
        path = machine.save(out / "profile-with-measured-terms.json")
        origin += f"; {' and '.join(measured)} measured here, before the runs"
    return machine, path, origin


def signature_runs(app_name: str, classes: set[str], profile_path: Path, out: Path,
                   enabled: bool) -> tuple[dict[str, Signatures], list[str]]:
    """Per class predicted, ``ma signature`` of its size's Valgrind run (hit rates, lines per flop) with the calls
    per execution of class S's ccalls run and the app's CSR row loops: ``DIR/<app>-<class>.signature.json``."""
    app = APPS[app_name]
    notes: list[str] = []
    if not enabled:
        return {c: Signatures() for c in classes}, notes
    calls = out / f"{app_name}-signature-ccalls"
    calls_measured = app.calls_procs > 0  # a compiled program has no calls from Python to count
    if calls_measured:
        done = ma("run", "-n", str(app.calls_procs), "--counters", "ccalls", "--trace-dir", str(calls), "--",
                  *app.program(out), "--class", "S", "--niter", "1", check=False)
        calls_measured = done.returncode == 0
        if not calls_measured:
            notes.append(f"{app_name}: no calls into compiled code measured (ma run --counters ccalls: "
                         f"{done.stderr.strip()[-200:]})")
    # the app's CSR row loops and dependent sums, at every site of their ids (the statements are the program's,
    # not measurements)
    stated = [arg for site_id, rows in app.row_loops.items()
              for arg in ("--csr-rows", site_id, rows["entries"], rows["rows"])]
    stated += [arg for site_id, terms in app.add_chains.items() for arg in ("--add-chain", site_id, terms)]
    by_size: dict[str, Signatures] = {}
    for klass in sorted({app.hit_rate_class[c] for c in classes}):
        trace = out / f"{app_name}-signature-cache-{klass}"
        started = time.perf_counter()
        ma("run", "--counters", "valgrind", "--cache", str(profile_path), "--trace-dir", str(trace), "--",
           *app.program(out), "--class", klass, "--niter", "1")
        target = out / f"{app_name}-{klass}.signature.json"
        ma("signature", str(trace), *(["--calls", str(calls)] if calls_measured else []), *stated,
           "--machine", str(profile_path), "-o", str(target))
        by_size[klass] = load_signature_file(target, profiles.load(profile_path).levels)
        print(f"  signature run {app_name.upper()} {klass} under Valgrind with the cache: "
              f"{time.perf_counter() - started:.0f} s, {len(by_size[klass].hit_rates)} sites with hit rates",
              flush=True)
        if not by_size[klass].hit_rates:
            notes.append(f"{app_name} {klass}: the trace carries no hit rates; assumed ones used")
        if calls_measured and not by_size[klass].c_calls:
            notes.append(f"{app_name}: no c_calls in the ccalls run's trace")
    found = {c: by_size[app.hit_rate_class[c]] for c in classes}
    for klass, signature in found.items():  # for `ma predict --signatures` on runs of that class
        save_signature_file(signature, out / f"{app_name}-{klass}.signature.json")
    return found, notes


def measured_seconds(builder: ModelBuilder, path: str) -> np.ndarray:
    site = builder.ts.find(path)
    return np.nanmax(np.asarray(site.wall_ns, dtype=float), axis=1) * 1e-9


def slowest(builder: ModelBuilder, expr: Any) -> float:
    return float(np.max(per_rank(builder, expr, {})))


def slowest_within(seconds: PredictedSeconds, path: str, part: str | None = None) -> float:
    """The slowest rank's seconds of the sites at or below ``path`` (of one part, or all), from a prediction
    evaluated once (:meth:`backends.base.Prediction.seconds`)."""
    parts = seconds.parts(seconds.within(path))
    return float(np.max(parts.sum(axis=0) if part is None else parts[PARTS.index(part)]))


def run_case(app_name: str, klass: str, procs: int, machine: profiles.MachineProfile, signatures: Signatures,
             out: Path, streams: str = "vector", round_: int = 1) -> list[dict[str, Any]]:
    app = APPS[app_name]
    trace_dir = out / (f"{app_name}-{klass}-{procs}" + (f"-r{round_}" if round_ > 1 else ""))
    started = time.perf_counter()
    ma("run", "-n", str(procs), "--trace-dir", str(trace_dir), "--", *app.program(out), "--class", klass)
    wall = time.perf_counter() - started
    builder = ModelBuilder(load(trace_dir))
    # the network block of the MPI the run used (the compiled CG runs on Debian's MPICH), as ma predict takes it
    machine, network_notes = runnetwork.for_run(machine, builder.ts)
    for note in network_notes:
        print(f"  {app_name.upper()} {klass} x{procs}: {note}", flush=True)
    prediction: MapsPrediction = MapsBackend(signatures=signatures, streams=streams).predict(builder, machine)
    overlapped = MapsBackend(signatures=signatures, overlap="max", streams=streams).predict(builder, machine)
    net = MapsBackend(signatures=signatures, overlap="net", streams=streams).predict(builder, machine)
    paper = MapsBackend(signatures=signatures, overlap="sum", streams=streams).predict(builder, machine)
    over = machine.network.oversubscribed if machine.network else None
    slower = None  # the same prediction with the oversubscribed exchange's latency doubled: its slope
    if over and procs > machine.host.cpus:
        doubled = whatif.apply(machine, whatif.parse("network.oversubscribed.latency_s=*2"))
        slower = MapsBackend(signatures=signatures, streams=streams).predict(builder, doubled)
    # each prediction evaluated once: the figures below are sums of its sites' parts at every rank
    auto_s, max_s, net_s, sum_s = (p.seconds(builder) for p in (prediction, overlapped, net, paper))
    slower_s = slower.seconds(builder) if slower is not None else None
    rows = []
    subroutines = [s.path for s in builder.ts.walk() if s.type == "subroutine"
                   and s.path.startswith(app.timed_loop + "/")]
    for label, path in (("timed loop", app.timed_loop), (app.subroutine.rsplit("/", 1)[-1], app.subroutine)):
        parts = {p: slowest_within(auto_s, path, p) for p in PARTS}
        rows.append({"case": f"{app_name.upper()} {klass} x{procs}", "app": app_name, "class": klass,
                     "procs": procs, "round": round_, "region": label, "path": path,
                     "predicted": slowest_within(auto_s, path), "predicted_max": slowest_within(max_s, path),
                     "predicted_net": slowest_within(net_s, path), "predicted_sum": slowest_within(sum_s, path),
                     "measured": float(np.max(measured_seconds(builder, path))), "parts": parts, "run_s": wall,
                     "assumed_hit_rates": len(prediction.assumed), "assumed_calls": len(prediction.assumed_calls)})
        if over and over.work and procs > machine.host.cpus:
            # the model's work per message, and the wall time per message that would make this prediction exact
            messages = slowest(builder, prediction.messages)
            rows[-1]["work_per_message_s"] = slowest(builder, prediction.work_per_message)
            if messages > 0:
                rows[-1]["wait_exact_s"] = (float(np.max(measured_seconds(builder, path)))
                                            - slowest_within(auto_s, path)) / messages
        if over and slower_s is not None:  # the exchange latency that would make this prediction exact
            predicted = slowest_within(auto_s, path)
            measured = float(np.max(measured_seconds(builder, path)))
            slope = (slowest_within(slower_s, path) - predicted) / over.latency_s
            if slope > 0:
                rows[-1]["latency_exact_s"] = over.latency_s + (measured - predicted) / slope
    if app_name == "cg":
        measured_matvec = float(np.max(measured_seconds(builder, MATVEC)))
        for key, form in (("matvec_error", auto_s), ("matvec_error_sum", sum_s)):
            rows[0][key] = (slowest_within(form, MATVEC) - measured_matvec) / measured_matvec
    rows[1]["in_mpi"] = time_in_mpi(builder, app.subroutine)
    rows[0]["subroutines"] = {path: {"predicted": slowest_within(auto_s, path),
                                     "measured": float(np.max(measured_seconds(builder, path)))}
                              for path in subroutines}
    return rows


def time_in_mpi(builder: ModelBuilder, path: str) -> dict[str, Any] | None:
    """Where a run on several ranks spent the time the model does not see, for its slowest rank in ``path``: its
    seconds in MPI calls and in MPI_Wait (PMPI's totals, the whole run), ``path``'s wall minus CPU seconds (time
    off its core; where the trace has the CPU time) and the wall seconds of its outermost flop and loadstore sites
    (the compute the model prices as compute and memory). None for one rank or a run without the PMPI library."""
    ts = builder.ts
    if len(ts.mpi_profiles) < 2:
        return None
    site = ts.find(path)
    wall = np.nanmax(np.asarray(site.wall_ns, dtype=float), axis=1) * 1e-9
    cpu = np.nanmax(np.asarray(site.cpu_ns, dtype=float), axis=1) * 1e-9
    rank = int(np.argmax(wall))
    profile = ts.mpi_profiles[rank]
    if profile is None:
        return None
    calls = profile["calls"]
    kernels = ("flop", "loadstore")
    outermost = [s for s in ts.walk() if s.path.startswith(path + "/") and s.type in kernels
                 and ts.find(s.path.rsplit("/", 1)[0]).type not in kernels]
    compute = sum(float(np.nanmax(np.asarray(s.wall_ns, dtype=float)[rank])) for s in outermost) * 1e-9
    return {"rank": rank, "compute_s": compute, "mpi_s": sum(c["time_ns"] for c in calls.values()) * 1e-9,
            "wait_s": calls.get("MPI_Wait", {}).get("time_ns", 0) * 1e-9,
            "off_core_s": float(wall[rank] - cpu[rank]) if cpu[rank] > 0 else None}


def _mean_error(rows: list[dict[str, Any]], form: str = "") -> float:
    key = f"error_{form}" if form else "error"
    return 100 * float(np.mean([abs(r[key]) for r in rows]))


def summarise(rows: list[dict[str, Any]], cores: int, prefix: str = "") -> str:
    """Print the averages of one set of runs (one round): all of them, one rank only, at most one per core."""
    errors = [abs(r["error"]) for r in rows]
    worst = int(np.argmax(errors))
    others = ", ".join(f"{name}: {_mean_error(rows, name):.1f}%" for name in FORMS)
    summary = (f"average absolute error {_mean_error(rows):.1f}% over {len(rows)} predictions "
               f"(--overlap {others}); worst {100 * errors[worst]:.1f}% "
               f"({rows[worst]['case']}, {rows[worst]['region']})")
    print(f"\n{prefix}{summary}")
    for app_name in sorted({r["app"] for r in rows}):
        mine = [r for r in rows if r["app"] == app_name]
        app_worst = max(mine, key=lambda r: abs(r["error"]))
        print(f"{prefix}{APP_LABELS[app_name]}: average absolute error {_mean_error(mine):.1f}% over {len(mine)}, "
              f"worst {100 * abs(app_worst['error']):.1f}% ({app_worst['case']}, {app_worst['region']})")
    single = [r for r in rows if r["procs"] == 1]
    if single:
        print(f"{prefix}one rank per case only: average absolute error {_mean_error(single):.1f}% over {len(single)}")
    inside = [r for r in rows if r["procs"] <= cores]
    if cores and inside:  # the model assumes one rank per core
        inside_worst = 100 * max(abs(r["error"]) for r in inside)
        print(f"{prefix}at most one rank per core ({cores} cores; the model's assumption): average absolute error "
              f"{_mean_error(inside):.1f}% over {len(inside)}, worst {inside_worst:.1f}% ("
              + ", ".join(f"{name} {_mean_error(inside, name):.1f}%" for name in FORMS) + ")")
    return summary


def interval(rounds: list[list[dict[str, Any]]], cores: int) -> str:
    """Print the range over the rounds of each average and of each case's measured time; return the summary."""
    def span(values: list[float]) -> str:
        return f"median {float(np.median(values)):.1f}% (range {min(values):.1f}-{max(values):.1f}%)"

    every = [_mean_error(r) for r in rounds]
    for app_name in sorted({x["app"] for x in rounds[0]}):
        mine = [_mean_error([x for x in r if x["app"] == app_name]) for r in rounds]
        print(f"over {len(rounds)} rounds, {APP_LABELS[app_name]}: average absolute error {span(mine)}")
    inside = [_mean_error([x for x in r if x["procs"] <= cores]) for r in rounds]
    summary = f"over {len(rounds)} rounds: average absolute error {span(every)} over {len(rounds[0])} predictions"
    print(f"\n{summary}")
    if cores and any(x["procs"] <= cores for x in rounds[0]):
        print(f"over {len(rounds)} rounds, at most one rank per core: {span(inside)}")
    spread = []
    for i, row in enumerate(rounds[0]):
        if row["region"] != "timed loop":
            continue
        measured = [r[i]["measured"] for r in rounds]
        spread.append(f"{row['case']} {100 * (max(measured) - min(measured)) / float(np.median(measured)):.0f}%")
    print("measured time of the timed loop, spread over the rounds ((max - min) / median): " + ", ".join(spread))
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default=DEFAULT_CASES, help="app:class:ranks,... (default: %(default)s)")
    parser.add_argument("--profile", default=None, help="machine profile (default: the shipped one)")
    parser.add_argument("--out", default="out/predict-accuracy")
    parser.add_argument("--no-signature", action="store_true",
                        help="skip the signature runs: assumed hit rates, one call per execution")
    parser.add_argument("--streams", choices=STREAMS, default="vector",
                        help="a Python kernel's lines beyond L1 at the profile's vector stream curve or at "
                             "Equation 1's scalar-load stream (the maps backend's --streams)")
    parser.add_argument("--mpicc", type=Path, default=FORTRAN_MPICC, metavar="PATH",
                        help="the MPI the compiled cases build and run with (default: %(default)s; e.g. "
                             "/usr/bin/mpicc.openmpi); give each MPI its own --out")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="run every case N times, round by round, and print the range of the errors")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat: N must be at least 1")
    out = Path(args.out).absolute()
    out.mkdir(parents=True, exist_ok=True)
    machine, profile_path, origin = machine_profile(out, args.profile)
    terms = machine.cpython
    assert terms is not None and terms.python_flops is not None and terms.call_overhead_s is not None
    print(f"profile: {machine.name}, {origin}; peak {machine.peak_flops:.3g} flop/s (C sites); NumPy rate "
          f"{terms.python_flops:.3g} flop/s (Python sites); {terms.call_overhead_s * 1e9:.0f} ns per call into "
          f"compiled code; ns per annotation site: {_annotation_text(terms.annotation_s)}; "
          f"{(machine.cpu.add_chain_s or 0) * 1e9:.2f} ns per term of an add chain (compiled sums)", flush=True)
    over = machine.network.oversubscribed if machine.network else None
    if machine.network and over:
        print(f"  messages: {machine.network.latency_s * 1e6:.2f} us on 2 ranks, {over.latency_s * 1e6:.1f} us "
              f"on {over.ranks} ranks over {over.cores} cores (the oversubscribed exchange)", flush=True)
        if over.work:
            curve = ", ".join(f"{row.work_s * 1e6:.0f} -> {row.seconds * 1e6:.0f}" for row in over.work)
            print(f"  with work between messages, us of work -> us per message: {curve}", flush=True)
    cases = [(a, c, int(p)) for a, c, p in (case.split(":") for case in args.cases.split(","))]
    unknown = sorted({a for a, _, _ in cases} - set(APPS))
    if unknown:
        parser.error(f"--cases: unknown app {unknown[0]!r} (expected one of {', '.join(APPS)})")
    for app_name in sorted({a for a, _, _ in cases if APPS[a].compiled}):
        build_compiled(APPS[app_name], out, args.mpicc)
    signatures: dict[tuple[str, str], Signatures] = {}
    notes: list[str] = []
    for app_name in sorted({a for a, _, _ in cases}):
        classes = {c for a, c, _ in cases if a == app_name}
        started = time.perf_counter()
        found, app_notes = signature_runs(app_name, classes, profile_path, out, not args.no_signature)
        print(f"  signature of {app_name.upper()}: {time.perf_counter() - started:.0f} s", flush=True)
        signatures.update({(app_name, c): s for c, s in found.items()})
        notes += app_notes
    rows = []
    for round_ in range(1, args.repeat + 1):
        for app_name, klass, procs in cases:
            rows += run_case(app_name, klass, procs, machine, signatures[(app_name, klass)], out, args.streams,
                             round_)
            print(f"  ran {rows[-2]['case']} in {rows[-2]['run_s']:.1f} s"
                  + (f" (round {round_})" if args.repeat > 1 else ""), flush=True)
    repeated = args.repeat > 1
    print(f"\n{'case':<12} " + ("run " if repeated else "") + f"{'region':<11} {'predicted s':>12} "
          f"{'measured s':>11} {'error':>8} " + " ".join(f"{name:>7}" for name in FORMS)
          + "   share of the prediction: compute / memory / comm / runtime")
    for row in rows:
        measured = row["measured"]
        for name in ("", *FORMS):
            key = f"_{name}" if name else ""
            row[f"error{key}"] = (row[f"predicted{key}"] - measured) / measured
        parts = row["parts"]
        shares = " / ".join(f"{100 * parts[p] / row['predicted']:.0f}%" for p in PARTS)
        print(f"{row['case']:<12} " + (f"{row['round']:>3} " if repeated else "") + f"{row['region']:<11} "
              f"{row['predicted']:12.4g} {measured:11.4g} "
              + " ".join(f"{100 * row[f'error_{name}' if name else 'error']:+7.1f}%" for name in ("", *FORMS))
              + f"   {shares}")
    cores = machine.host.cpus
    rounds = [[r for r in rows if r["round"] == k] for k in range(1, args.repeat + 1)]
    for k, round_rows in enumerate(rounds, 1):
        summary = summarise(round_rows, cores, f"round {k}: " if repeated else "")
    if repeated:
        summary = interval(rounds, cores)
    def label(row: dict[str, Any]) -> str:
        return row["case"] + (f" (round {row['round']})" if repeated else "")

    matvec = [f"{label(r)} {100 * r['matvec_error']:+.0f}% ({100 * r['matvec_error_sum']:+.0f}% sum)" for r in rows
              if "matvec_error" in r]
    if matvec:
        print("CG's matrix-vector product in the timed loop, error of the default (of the paper's sum): "
              + ", ".join(matvec))
    implied = [f"{label(r)} {r['latency_exact_s'] * 1e6:.0f}" for r in rows if "latency_exact_s" in r
               and r["region"] == "timed loop"]
    for row in rows:
        if "work_per_message_s" in row and row["region"] == "timed loop":
            print(f"{label(row)}: work per message {row['work_per_message_s'] * 1e6:.1f} us (compute + memory + "
                  f"runtime over the whole run's messages); the prediction would be exact with "
                  f"{row.get('wait_exact_s', 0) * 1e6:+.1f} us more wait per message")
    for row in rows:
        if row.get("in_mpi"):
            spent = row["in_mpi"]
            off_core = "" if spent["off_core_s"] is None else f"; off its core {spent['off_core_s']:.4g} s (wall - CPU)"
            parts = row["parts"]
            print(f"{label(row)}, {row['region']} of rank {spent['rank']}: measured {row['measured']:.4g} s, of which "
                  f"its flop and loadstore sites {spent['compute_s']:.4g} s (predicted compute + memory "
                  f"{parts['compute'] + parts['memory']:.4g} s); predicted communication {parts['communication']:.4g} "
                  f"s, in MPI calls {spent['mpi_s']:.4g} s, of which MPI_Wait {spent['wait_s']:.4g} s (the whole "
                  f"run){off_core}")
    if implied and machine.network and machine.network.oversubscribed:
        print(f"oversubscribed exchange latency that would make each timed loop exact, us: {', '.join(implied)} "
              f"(the profile's: {machine.network.oversubscribed.latency_s * 1e6:.0f})")
    for note in notes:
        print(f"note: {note}")
    (out / "accuracy.json").write_text(json.dumps({"profile": machine.name, "rows": rows, "summary": summary,
                                                   "notes": notes}, indent=1) + "\n")
    print(f"written: {out / 'accuracy.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
