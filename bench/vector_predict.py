"""The vector paper's experiment on this host: C kernels built with and without the vectoriser, predicted by
the vector backend (Figure 4's Tv/Ts with min/mixed/max bandwidth) and measured (its Figures 5 and 6).

The kernels are examples/vector_kernels/kernels.c (SP's tzetar, CG's CSR matvec, a STREAM triad, and a
recurrence GCC refuses to vectorise), built ``-O3 -march=x86-64-v3 -falign-loops=64`` and the same with
``-fno-tree-vectorize``. Each kernel's MV score and vector width come from ``ma loopmark`` on the same flags
(its innermost loop); its AVL is the paper's (section 4.2) from the innermost trip count t and the width w,
t / ceil(t / w); flops, loads/stores, working set and trip count are the kernel program's own per-call
counts. The host's vector profile is from a machine profile (``--profile``, or a probe run now: no MPI, no
fit): the peak flop rate, and per kernel the bandwidth of each scenario read off the profile's MultiMAPS
curves and triad at the kernel's working set (backends/vector/bandwidth.py); in the caches the max is the
measured triad curve of the unit the build uses, the SIMD (AVX2) triad for vectorised builds and the scalar triad
for scalar ones (backends/vector/simd.py: ``--simd FILE``, else the profile's ``.simd.json`` beside it, else
measured now, ~15 s; ``--save-simd FILE`` always measures them and saves them). Flop time is net of the flops
the bandwidth's own loop does (backends/vector/timing.py); the best scenario of Figure 4's sum (the paper's
form) and of the overlap form are printed beside. Nothing is fitted to the timings. "no MV"
predicts the unvectorised build as if it were vectorised (MV 2, as the source asserts):
the paper's Figure 6 case, where the model does not know what the compiler did.

Error = (predicted - measured) / measured. Each build's time is the best of --runs runs of --repeat calls (times the
case's factor), taken in rounds: every round runs every case in both builds once, so a burst of load from other
processes spoils one run of many cases rather than every run of one. Timings on a shared host still vary;
the figures printed are one run. matvec states its gathers in kernels.c (``ma_vec_loop_gathers``: one read of p per
entry, p's bytes) and has flop and load/store sites: the bench builds it with the annotation runtime and runs one call
under ``ma run --counters valgrind --cache PROFILE`` (its signature run: the tool simulates the profile's caches), and
the vector backend predicts matvec's rows of the table from that trace as ``ma predict --backend vector`` does, with
each build's MV and AVL: the gathers by level at the hit rates the run measured (the streams' lines separated,
backends/vector/gathers.py), on the sparse-row curve of the build (a vectorised build's own curve where the SIMD file
has it, version 4, else the sparse-dot curve; the note under the row says which). After the table, matvec taken
apart (kernels.c's ``dot`` and ``gather``, with its columns and random ones), its random reads alone set against the
random-access curve, and matvec predicted by Figure 4 plus gather terms from the SIMD file's measured curves
(extensions: the gather curve at p's size, the sparse-dot curve at p's size, and the sparse-dot curve by level at
hit rates of matvec's reads of p the bench simulates itself, with its streams and L2's adjacent-line prefetcher),
which a "k of 12" line counts in matvec's place.

Usage: python bench/vector_predict.py [--scale 1.0] [--repeat 20] [--runs 7] [--profile host.json]
                                     [--simd host.simd.json] [--save-simd FILE] [--figure errors.png]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from backends.base import Prediction
from backends.machine.hitrates import Simulator
from backends.machine.probe import ProbeSettings, probe
from backends.machine.profile import MachineProfile, load
from backends.vector import VectorBackend, VectorLoop, host_profile, loop_time, loops_from_trace
from backends.vector import simd as simd_curve
from backends.vector.bandwidth import (
    curve_at,
    gather_seconds,
    gather_seconds_by_level,
    level_reference_sizes,
    memory_level,
)
from backends.vector.gathers import cumulative, separate
from backends.vector.profile import SCENARIOS, VectorProfile
from backends.vector.timing import sparse_loop_time
from ma_post import ModelBuilder
from ma_post import load as load_trace
from ma_post.loopmark import loopmarks
from ma_post.vector import vec_loop_results
from ma_tools import cparts
from ma_tools.toolchain import find_mpicc

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "examples" / "vector_kernels" / "kernels.c"
# loops on 64-byte lines, as the SIMD probe's (backends/vector/simd.py): a scalar loop across two lines takes two
# cycles per element on Zen 4 (its front end), so without it a kernel's speed depended on what else is in the file
BUILDS = {"vectorised": ("-O3", "-march=x86-64-v3", "-falign-loops=64"),
          "scalar": ("-O3", "-march=x86-64-v3", "-fno-tree-vectorize", "-falign-loops=64")}
# kernel -> the text of its innermost loop's line
LOOPS = {"tzetar": "for (long i = 1; i < n - 1; i++)", "matvec": "for (long k = rowstr[j]",
         "triad": "a[i] = b[i] + s * c[i]", "recurrence": "for (long i = 1; i < n; i++)"}
# (kernel, N at scale 1, calls per timed run as a multiple of --repeat): the paper's out-of-cache sizes, and
# tzetar and the triad also with working sets in the second cache (Zen 4: 1 MiB), to test the level lookup
CASES = [("tzetar", 64, 1), ("tzetar", 20, 200), ("matvec", 200_000, 1), ("triad", 4_000_000, 1),
         ("triad", 20_000, 400), ("recurrence", 4_000_000, 1)]
# the table's predictions take flop time net of the bandwidth loops' own flops (backends/vector/timing.py); the best
# scenario of the other forms is printed beside them
OTHER_FORMS = ("sum", "max")
# matvec taken apart (kernels.c): without its rows, without its a stream, each also with random columns
PIECES = ("matvec random", "dot", "dot random", "gather", "gather random")
FORM_NAMES = {"sum": "Figure 4's sum (the paper's form)", "max": "overlap (max)"}


def loop_line(text: str) -> int:
    lines = SOURCE.read_text().splitlines()
    number = next(i for i, line in enumerate(lines, start=1) if text in line)
    return number - 1 if "=" in text and "for" not in text else number  # the triad's statement: its loop is above


def build(directory: Path, name: str, flags: tuple[str, ...]) -> Path:
    exe = directory / f"kernels-{name}"
    subprocess.run([shutil.which("gcc") or "gcc", *flags, "-o", str(exe), str(SOURCE)], check=True)
    return exe


@dataclasses.dataclass
class Run:
    """One kernel build's best seconds per call and its own per-call counts."""

    seconds: float
    flops: float
    words: float
    working_set: float
    trip: int


def run_once(exe: Path, kernel: str, n: int, repeat: int) -> list[str]:
    """One timed run; ``kernel`` may carry the program's options after its name ("matvec random")."""
    name, *options = kernel.split()
    done = subprocess.run([str(exe), name, str(n), str(repeat), *options], capture_output=True, text=True, check=True)
    return done.stdout.split()


def measure(exes: dict[str, Path], cases: list[tuple[str, int, int]],
            runs: int) -> dict[tuple[str, int], dict[str, Run]]:
    """Each (kernel, n, calls) case in each build: the best of ``runs`` timed runs, taken in rounds over every
    case and build, so that they share whatever else the host is doing."""
    best: dict[tuple[str, int, str], float] = {}
    fields: dict[tuple[str, int, str], list[str]] = {}
    for _ in range(runs):
        for kernel, n, calls in cases:
            for name, exe in exes.items():
                key = (kernel, n, name)
                fields[key] = run_once(exe, kernel, n, calls)
                best[key] = min(best.get(key, float("inf")), float(fields[key][3]))
    return {(kernel, n): {name: Run(best[(kernel, n, name)], *parse(fields[(kernel, n, name)])) for name in exes}
            for kernel, n, _ in cases}


def parse(fields: list[str]) -> tuple[float, float, float, int]:
    """flops, loadstores, working set and trip count of a kernel program's line."""
    return float(fields[4]), float(fields[5]), float(fields[7]), int(fields[8])


def paper_avl(trip: int, lanes: int) -> float:
    """Section 4.2's AVL of a fully vectorised loop: its trip count over the vectors it takes."""
    return trip / math.ceil(trip / lanes)


@dataclasses.dataclass
class Traced:
    """A kernel's signature run: its model (flop and load/store sites) and its asserted loop (with the gathers it
    states and the load/store site's simulated cache counts), at ``path``."""

    model: ModelBuilder
    path: str
    loop: VectorLoop


def traced_run(directory: Path, kernel: str, n: int, cache_profile: Path) -> Traced | None:
    """One call of kernels.c built with the annotation runtime (-DMA_TRACED, the vectorised build's flags) under
    ``ma run --counters valgrind --cache PROFILE`` (the signature run: the tool simulates the profile's caches);
    None if the kernel asserts no loop with gathers."""
    exe, trace = directory / "kernels-traced", directory / f"trace-{kernel}"
    subprocess.run([str(find_mpicc()), *BUILDS["vectorised"], "-DMA_TRACED", *cparts.c_flags(), str(SOURCE), "-o",
                    str(exe), *cparts.c_libs()], check=True)
    ma = Path(shutil.which("ma") or "ma")
    subprocess.run([str(ma), "run", "-n", "1", "--counters", "valgrind", "--cache", str(cache_profile),
                    "--trace-dir", str(trace), "--", str(exe), kernel, str(n), "1"], check=True, capture_output=True)
    ts = load_trace(trace)
    stated = [r for r in vec_loop_results(ts) if r.id == kernel and r.gathers]
    if not stated:
        return None
    return Traced(ModelBuilder(ts), stated[0].path, loops_from_trace(ts)[stated[0].path])


def predict(profile: VectorProfile, run: Run, mv: int, avl: float | None, form: str = "net",
            traced: Traced | None = None, machine: MachineProfile | None = None,
            simd: simd_curve.SimdBandwidth | None = None, values: dict[str, float] | None = None) -> dict[str, float]:
    """Each scenario's seconds by Figure 4 from the kernel's own counts; a kernel with a signature run
    (``traced``: its loop states gathers) is predicted by the vector backend from that run instead
    (:func:`backend_predictions`)."""
    if traced is None or machine is None:
        return {s: float(loop_time(run.flops, run.words, mv, avl, profile, s, form).total) for s in SCENARIOS}
    return {s: prediction.evaluate({}) for s, prediction in
            backend_predictions(traced, run, mv, avl, form, machine, simd, values or {}).items()}


def backend_predictions(traced: Traced, run: Run, mv: int, avl: float | None, form: str, machine: MachineProfile,
                        simd: simd_curve.SimdBandwidth | None, values: dict[str, float]) -> dict[str, Prediction]:
    """The vector backend's predictions (``ma predict --backend vector``) of the traced model, its loop with this
    build's MV and AVL and the kernel's working set: the gathers priced by level at the signature run's hit rates
    (separated from the streams'), on the sparse-row curve of the build."""
    loop = dataclasses.replace(traced.loop, mv=mv, avl=avl, working_set=run.working_set)
    return VectorBackend({traced.path: loop}, simd=simd, flop_time=form).predict_scenarios(traced.model, machine,
                                                                                           values)


def level_name(machine: MachineProfile, working_set: float) -> str:
    level = memory_level(machine, working_set)
    return f"L{level}" if level <= len(machine.caches) else "mem"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="problem sizes times this")
    parser.add_argument("--repeat", type=int, default=20, help="calls per timed run (times each case's factor)")
    parser.add_argument("--runs", type=int, default=7, help="timed runs per build; the best counts")
    parser.add_argument("--profile", default=None, help="a saved machine profile (default: probe this host now)")
    parser.add_argument("--simd", default=None, help="the host's SIMD bandwidth curve (default: the profile's "
                        ".simd.json beside it, else measured now)")
    parser.add_argument("--save-simd", default=None, help="measure the SIMD curves now (whatever --simd or the "
                        "profile's .simd.json say) and save them to this file")
    parser.add_argument("--figure", default=None, help="also save the errors as a bar chart (PNG/PDF/SVG)")
    args = parser.parse_args()

    machine = load(args.profile) if args.profile else probe(dataclasses.replace(ProbeSettings(), mpi=False, fit=False))
    simd = None if args.save_simd else (simd_curve.SimdBandwidth.load(args.simd) if args.simd
                                        else simd_curve.for_profile(args.profile))
    if simd is None:
        simd = simd_curve.measure_for(machine, notes="measured by bench/vector_predict.py")
        if args.save_simd:
            simd.save(args.save_simd)
    sizes = [*((f"L{c.level}", c.size_bytes / 2) for c in machine.caches), ("mem", 4.0 * machine.caches[-1].size_bytes)]
    for name, curve in (("AVX2 triad", simd.triad), ("scalar triad", simd.scalar_triad)):
        print(f"{name} curve, GB/s ({simd.measured_at or '?'}): "
              + (", ".join(f"{level} {curve_at(curve, size):.0f}" for level, size in sizes) if curve else "none"))
    cores = 1  # the kernels run on one core (no -fopenmp)
    lanes = host_profile(machine, cores).avl_max
    print(f"host: {machine.name} ({machine.host.cpu_model}; measured {machine.host.measured_at or '?'}), "
          f"{machine.cpu.isa} peak {machine.peak_flops / 1e9:.1f} GF/s one core, {lanes} lanes, triad "
          f"{machine.triad_bytes_per_s / 1e9:.1f} GB/s; caches " + ", ".join(f"L{c.level} {c.size_bytes >> 10} KiB"
                                                              for c in machine.caches))
    header = (f"{'kernel':<11}{'N':>8} {'build':<11}{'MV':>3}{'AVL':>5}{'set':>5}{'GB/s min/mixed/max':>20}"
              f"{'measured s':>12}" + "".join(f"{'pred ' + s:>12}{'err':>8}" for s in SCENARIOS) + f"{'best':>8}"
              + "".join(f"{form + ' best':>10}" for form in OTHER_FORMS))
    print(header)
    best_errors = []
    form_bests: dict[str, list[float]] = {form: [] for form in OTHER_FORMS}
    scenario_errors: dict[str, list[float]] = {s: [] for s in SCENARIOS}
    bars: list[tuple[str, dict[str, float]]] = []  # (kernel/build, scenario -> error) for the figure
    with tempfile.TemporaryDirectory() as tmp:
        exes = {name: build(Path(tmp), name, flags) for name, flags in BUILDS.items()}
        marks = {name: {m.line: m for m in loopmarks(SOURCE, "gcc", flags)} for name, flags in BUILDS.items()}
        cases = [(kernel, max(8, int(base_n * args.scale ** (1 / 3 if kernel == "tzetar" else 1.0))),
                  args.repeat * calls) for kernel, base_n, calls in CASES]  # tzetar's N is the edge of a cube
        measured = measure(exes, cases, args.runs)
        matvec_n = next(n for kernel, n, _ in cases if kernel == "matvec")
        cache_profile = Path(args.profile) if args.profile else machine.save(Path(tmp) / "machine.json")
        traced = {"matvec": traced_run(Path(tmp), "matvec", matvec_n, cache_profile)}
        pieces = measure({"scalar": exes["scalar"]}, [(piece, matvec_n, args.repeat) for piece in PIECES], args.runs)
    # kernels.c's model inputs for matvec: its rows and entries (32 a row: the kernel's inner trip)
    per_row = measured[("matvec", matvec_n)]["scalar"].trip
    inputs = {"matvec": {"rows": float(matvec_n), "nnz": float(matvec_n * per_row)}}
    print_signature(machine, traced["matvec"])
    print_row_curves(machine, simd)
    for build_name in BUILDS:
        for (kernel, n), runs in measured.items():
            run = runs[build_name]
            mark = marks[build_name][loop_line(LOOPS[kernel])]
            profile = host_profile(machine, cores, working_set=run.working_set, simd=simd)
            avl = paper_avl(run.trip, mark.lanes or lanes) if mark.mv >= 2 else None
            rows = [(build_name, mark.mv, avl)]
            if build_name == "scalar":  # the paper's Figure 6: the model assumes the asserted vectorisation
                rows.append(("no MV", 2, paper_avl(run.trip, lanes)))
            signature, values = traced.get(kernel), inputs.get(kernel)
            for label, mv, loop_avl in rows:
                predicted = predict(profile, run, mv, loop_avl, "net", signature, machine, simd, values)
                errors = {s: (predicted[s] - run.seconds) / run.seconds for s in SCENARIOS}
                bars.append((f"{kernel} {level_name(machine, run.working_set)}\n{label}", errors))
                best = min(errors.values(), key=abs)
                others = {form: min(((p - run.seconds) / run.seconds for p in
                                     predict(profile, run, mv, loop_avl, form, signature, machine, simd,
                                             values).values()), key=abs)
                          for form in OTHER_FORMS}
                if label != "no MV":
                    best_errors.append((kernel, label, best))
                    for form, error in others.items():
                        form_bests[form].append(error)
                    for s in SCENARIOS:
                        scenario_errors[s].append(errors[s])
                bandwidths = "/".join(f"{profile.bandwidth(s, mv >= 2):.1f}" for s in SCENARIOS)
                print(f"{kernel:<11}{n:>8} {label:<11}{mv:>3}{'-' if loop_avl is None else f'{loop_avl:.2f}':>5}"
                      f"{level_name(machine, run.working_set):>5}{bandwidths:>20}{run.seconds:>12.3e}"
                      + "".join(f"{predicted[s]:>12.3e}{100 * errors[s]:>+7.0f}%" for s in SCENARIOS)
                      + f"{100 * best:>+7.0f}%" + "".join(f"{100 * e:>+9.0f}%" for e in others.values()))
                if signature is not None:  # how the backend priced the gathers
                    notes = backend_predictions(signature, run, mv, loop_avl, "net", machine, simd,
                                                values or {})["max"].notes
                    print("".join(f"    note: {note}\n" for note in notes if "gathers" in note or "sparse" in note),
                          end="")
    within = sum(abs(e) <= 0.2 for _, _, e in best_errors)
    print(f"best scenario within 20 %: {within} of {len(best_errors)} kernel builds; one scenario for all: "
          + ", ".join(f"{s} {sum(abs(e) <= 0.2 for e in errs)}" for s, errs in scenario_errors.items())
          + "; other flop time forms: " + ", ".join(f"{FORM_NAMES[form]} {sum(abs(e) <= 0.2 for e in errs)} of "
                                                    f"{len(errs)}" for form, errs in form_bests.items()))
    print_pieces(measured[("matvec", matvec_n)]["scalar"], {k: r["scalar"] for (k, _), r in pieces.items()})
    print_gather(machine, pieces[("gather", matvec_n)]["scalar"], measured[("matvec", matvec_n)]["scalar"],
                 matvec_n)
    sparse_rows = []
    hit_rates = matvec_hit_rates(machine, matvec_n)
    for build_name in BUILDS:
        run = measured[("matvec", matvec_n)][build_name]
        mark = marks[build_name][loop_line(LOOPS["matvec"])]
        sparse_rows.append(print_gather_extensions(machine, simd, build_name, run, matvec_n, mark.mv,
                                                   paper_avl(run.trip, mark.lanes or lanes) if mark.mv >= 2 else None,
                                                   hit_rates))
    matvec_errors = [e for e in sparse_rows if e is not None]
    if len(matvec_errors) == len(sparse_rows):
        with_rows = [e for kernel, _, e in best_errors if kernel != "matvec"] + matvec_errors
        print(f"with matvec by Figure 4 + sparse rows by level at the bench's simulated hit rates: "
              f"{sum(abs(e) <= 0.2 for e in with_rows)} of "
              f"{len(with_rows)} kernel builds within 20 %")
    if args.figure:
        save_figure(bars, Path(args.figure))
        print(f"figure: {args.figure}")


def print_signature(machine: MachineProfile, traced: Traced | None) -> None:
    """matvec's signature run: its load/store site's simulated hit rates, and its gathers' separated from them."""
    cache = traced.loop.traced_cache if traced else None
    if cache is None:
        print("matvec's signature run: no gathers or no simulated cache counts: the backend prices its gathers at "
              "p's size (random indices)")
        return
    site = [*(float(h) / cache.accesses for h in np.cumsum(cache.hits)), 1.0]
    print(f"matvec's signature run (ma run --counters valgrind --cache, one call, the vectorised build): "
          f"{cache.gathers:.0f} gathers of {cache.loadstores:.0f} words asserted; {', '.join(cache.sites)}: "
          f"{cache.accesses:.0f} line accesses, hit rates {cumulative(site)}; its gathers', the streams' lines "
          f"separated: {cumulative(separate(cache, machine.caches[0].line_bytes))}")


def print_row_curves(machine: MachineProfile, simd: simd_curve.SimdBandwidth) -> None:
    """The sparse-row curves where the backend reads them by level (bandwidth.level_reference_sizes), ns per entry."""
    for name in ("sparse_dot", "sparse_rows_vectorised"):
        curve = getattr(simd, name)
        if not curve:
            print(f"{name} curve: none in the SIMD file (version {simd_curve.VERSION} files have it)")
            continue
        names = [f"L{c.level}" for c in machine.caches] + ["mem"]
        print(f"{name} curve by level, ns per entry: " + ", ".join(
            f"{level} {8.0 / curve_at(curve, size):.2f}"
            for level, size in zip(names, level_reference_sizes(machine, curve), strict=True)))


def print_pieces(matvec: Run, pieces: dict[str, Run]) -> None:
    """matvec's time taken apart, ns per entry (scalar build): without its rows (dot: the same entries into eight
    sums, no per-row add chain, no q or rowstr), without its a stream (gather), and each with random columns."""
    entries = matvec.flops / 2
    print("matvec taken apart (scalar build, ns per entry; (k * 7919) % N columns | random): matvec "
          f"{matvec.seconds / entries * 1e9:.2f} | {pieces['matvec random'].seconds / entries * 1e9:.2f}; "
          + "; ".join(f"{label} {pieces[name].seconds / entries * 1e9:.2f} | "
                      f"{pieces[name + ' random'].seconds / entries * 1e9:.2f}"
                      for name, label in (("dot", "without its rows (dot)"), ("gather", "without a (gather)"))))


def print_gather(machine: MachineProfile, gather: Run, matvec: Run, rows: int) -> None:
    """matvec's random reads alone against the random-access curve at p's size (where they land) and at the
    whole working set (the probe's random loop has its index in cache; matvec's streams from memory), and
    matvec read the way it runs: its streams (a, colidx, q, rowstr) at the triad, its reads of p on the random
    curve at p's size (not one of Figure 4's scenarios, which give a loop one bandwidth)."""
    random = [simd_curve.SimdPoint(p.size_bytes, p.bandwidth_bytes_per_s / 1e9) for p in machine.multimaps
              if p.pattern == "random"]
    accesses, p_bytes = gather.trip, 8.0 * rows  # one (index, value) pair per access; the probe counts 12 bytes
    at = {name: 12.0 / (curve_at(random, size) * 1e9) for name, size in (("p", p_bytes), ("all", gather.working_set))}
    print(f"matvec's gathers alone ({accesses} reads of p[colidx[k]], p {p_bytes / 1e6:.1f} MB, colidx streamed): "
          f"{gather.seconds / accesses * 1e9:.2f} ns per read measured; the random curve says {at['p'] * 1e9:.2f} ns "
          f"at p's size ({level_name(machine, p_bytes)}), {at['all'] * 1e9:.2f} ns at the gathers' whole set")
    streamed = (matvec.words - accesses) * 8.0 / machine.triad_bytes_per_s
    print(f"matvec as it runs: streams {streamed * 1e3:.2f} ms at the triad + reads of p {accesses * at['p'] * 1e3:.2f}"
          f" ms = {(streamed + accesses * at['p']) * 1e3:.2f} ms; measured {matvec.seconds * 1e3:.2f} ms "
          f"({matvec.seconds / accesses * 1e9:.2f} ns per entry; its gathers alone {gather.seconds * 1e3:.2f} ms)")


def gather_extension(machine: MachineProfile, simd: simd_curve.SimdBandwidth, run: Run, rows: int, mv: int,
                     avl: float | None, values: bool, hit_rates: list[float] | None = None) -> tuple[float, str] | None:
    """matvec by Figure 4 plus a gather term (an extension, beside the paper's scenarios): its entries (rows x
    trip; each a gathered read of p, 8 x rows bytes, and its colidx read) at the SIMD file's gather curve at p's
    size, the rest of its words (a, q, rowstr) and flops by Figure 4's max scenario; or with ``values`` its entries
    (each also with its a word and FMA) at the sparse-dot curve, the rest (q, rowstr) likewise; with ``hit_rates``
    (p's reads'), each entry at the curve where random reads are served by the level that serves it
    (bandwidth.gather_seconds_by_level). None without the curve; else the seconds and how they were made."""
    curve = simd.sparse_dot if values else simd.gather
    if not curve:
        return None
    entries = float(rows * run.trip)
    profile = host_profile(machine, 1, working_set=run.working_set, simd=simd)
    name = "sparse-dot" if values else "gather"
    if hit_rates is None:
        gathered = gather_seconds(simd, entries, 8.0 * rows, values)
        at = f"{curve_at(curve, 8.0 * rows):.2f} GB/s (the {name} curve at p's {8e-6 * rows:.1f} MB)"
    else:
        gathered = gather_seconds_by_level(machine, simd, entries, hit_rates, values)
        at = (f"{8 * entries / gathered / 1e9:.2f} GB/s (the {name} curve by level, p's reads' hit rates as the bench "
              "simulates them, L2's adjacent-line prefetcher included, "
              + "/".join(f"{h:.2f}" for h in hit_rates) + ")")
    if values:  # the backend's term for a loop asserting its gathers (VectorLoop.gathers)
        total = float(sparse_loop_time(run.flops, run.words, entries, gathered / entries, mv, avl, profile,
                                       "max").total)
    else:  # the gather curve's loop has each entry's colidx word and read of p, no flop
        total = float(loop_time(run.flops, run.words - 2 * entries, mv, avl, profile, "max").total) + gathered
    rest = total - gathered
    return total, f"max scenario for the rest {rest * 1e3:.2f} ms + {entries:.0f} entries at {at} " \
                  f"{gathered * 1e3:.2f} ms"


def matvec_hit_rates(machine: MachineProfile, rows: int, per_row: int = 32) -> list[float]:
    """Simulated cumulative hit rates of matvec's reads of p on the profile's caches, with the a and colidx streams
    that pass through the same caches (kernels.c: colidx[k] = (k * 7919) % rows, a permutation of p every rows
    entries): a warm-up pass of rows entries, then one that counts, eight entries at a time (their a and colidx
    words, then their reads of p, whose hits alone are counted)."""
    simulator, block = Simulator(machine.caches), 8
    p_base, a_base, colidx_base = 0, 1 << 40, 1 << 41  # the arrays far apart, as separate allocations are
    loads, hits = 0, np.zeros(len(machine.caches), dtype=np.int64)
    for start in range(0, 2 * rows - block + 1, block):
        k = np.arange(start, start + block, dtype=np.uint64)
        streams = np.empty(2 * block, dtype=np.uint64)
        streams[0::2], streams[1::2] = a_base + 8 * k, colidx_base + 8 * k
        simulator.stream(streams)
        before = simulator.counts()
        simulator.stream(p_base + 8 * ((k * np.uint64(7919)) % np.uint64(rows)))
        after = simulator.counts()
        if start >= rows:  # the counted pass
            loads += after[0] - before[0]
            hits += np.subtract(after[1], before[1])
    return [float(h) / loads for h in np.cumsum(hits)] + [1.0]


def print_gather_extensions(machine: MachineProfile, simd: simd_curve.SimdBandwidth, build_name: str, run: Run,
                            rows: int, mv: int, avl: float | None, hit_rates: list[float]) -> float | None:
    """Prints matvec by the gather terms; returns the error of the last, the sparse-dot curve at the levels
    where p's reads hit (None without the curve)."""
    error = None
    for values, label in ((False, "Figure 4 + gathers"), (True, "Figure 4 + sparse rows"),
                          (True, "Figure 4 + sparse rows by level")):
        levels = hit_rates if label.endswith("level") else None
        found = gather_extension(machine, simd, run, rows, mv, avl, values, levels)
        if found is None:
            print(f"matvec {build_name}, {label}: the SIMD file has no {'sparse_dot' if values else 'gather'} curve")
            continue
        total, how = found
        error = (total - run.seconds) / run.seconds if values else error
        print(f"matvec {build_name}, {label} (extension): {how} = {total * 1e3:.2f} ms; measured "
              f"{run.seconds * 1e3:.2f} ms, error {100 * (total - run.seconds) / run.seconds:+.0f}%")
    return error


def save_figure(bars: list[tuple[str, dict[str, float]]], path: Path) -> None:
    """The paper's Figures 5/6: percentage error per kernel build and bandwidth scenario, the 20 % band shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(bars)), 4))
    width = 0.8 / len(SCENARIOS)
    for k, scenario in enumerate(SCENARIOS):
        ax.bar([i + (k - 1) * width for i in range(len(bars))], [100 * e[scenario] for _, e in bars], width,
               label=f"{scenario} bandwidth")
    ax.axhspan(-20, 20, color="grey", alpha=0.2, label="±20 %")
    ax.set_xticks(range(len(bars)), [label for label, _ in bars], fontsize=7, rotation=30, ha="right")
    ax.set_ylabel("error of predicted time (%)")
    ax.set_yscale("symlog", linthresh=100)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


if __name__ == "__main__":
    main()
