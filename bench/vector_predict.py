"""The vector paper's experiment on this host: C kernels built with and without the vectoriser, predicted by
the vector backend (Figure 4's Tv/Ts with min/mixed/max bandwidth) and measured (its Figures 5 and 6).

The kernels are examples/vector_kernels/kernels.c (SP's tzetar, CG's CSR matvec, a STREAM triad, and a
recurrence GCC refuses to vectorise), built ``-O3 -march=x86-64-v3`` and the same with
``-fno-tree-vectorize``. Each kernel's MV score and vector width come from ``ma loopmark`` on the same flags
(its innermost loop); its AVL is the paper's (section 4.2) from the innermost trip count t and the width w,
t / ceil(t / w); flops, loads/stores, working set and trip count are the kernel program's own per-call
counts. The host's vector profile is from a machine profile (``--profile``, or a probe run now: no MPI, no
fit): the peak flop rate, and per kernel the bandwidth of each scenario read off the profile's MultiMAPS
curves and triad at the kernel's working set (backends/vector/bandwidth.py). Nothing is fitted to the
timings. "no MV" predicts the unvectorised build as if it were vectorised (MV 2, as the source asserts):
the paper's Figure 6 case, where the model does not know what the compiler did.

Error = (predicted - measured) / measured. Each build's time is the best of --runs runs of --repeat calls (times the
case's factor), the two builds taking turns; timings on a shared host vary, the figures printed are one run.

Usage: python bench/vector_predict.py [--scale 1.0] [--repeat 20] [--runs 7] [--profile host.json]
                                     [--figure errors.png]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import shutil
import subprocess
import tempfile
from pathlib import Path

from backends.machine.probe import ProbeSettings, probe
from backends.machine.profile import MachineProfile, load
from backends.vector import host_profile, loop_time
from backends.vector.bandwidth import memory_level
from backends.vector.profile import SCENARIOS, VectorProfile
from ma_post.loopmark import loopmarks

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "examples" / "vector_kernels" / "kernels.c"
BUILDS = {"vectorised": ("-O3", "-march=x86-64-v3"), "scalar": ("-O3", "-march=x86-64-v3", "-fno-tree-vectorize")}
# kernel -> the text of its innermost loop's line
LOOPS = {"tzetar": "for (long i = 1; i < n - 1; i++)", "matvec": "for (long k = rowstr[j]",
         "triad": "a[i] = b[i] + s * c[i]", "recurrence": "for (long i = 1; i < n; i++)"}
# (kernel, N at scale 1, calls per timed run as a multiple of --repeat): the paper's out-of-cache sizes, and
# tzetar and the triad also with working sets in the second cache (Zen 4: 1 MiB), to test the level lookup
CASES = [("tzetar", 64, 1), ("tzetar", 20, 200), ("matvec", 200_000, 1), ("triad", 4_000_000, 1),
         ("triad", 20_000, 400), ("recurrence", 4_000_000, 1)]


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


def measure(exes: dict[str, Path], kernel: str, n: int, repeat: int, runs: int) -> dict[str, Run]:
    """Each build's best of ``runs`` timed runs of ``repeat`` calls, the builds taking turns so that they
    share whatever else the host is doing."""
    best = dict.fromkeys(exes, float("inf"))
    fields: dict[str, list[str]] = {}
    for _ in range(runs):
        for name, exe in exes.items():
            out = subprocess.run([str(exe), kernel, str(n), str(repeat)], capture_output=True, text=True, check=True)
            fields[name] = out.stdout.split()
            best[name] = min(best[name], float(fields[name][3]))
    return {name: Run(best[name], float(f[4]), float(f[5]), float(f[7]), int(f[8])) for name, f in fields.items()}


def paper_avl(trip: int, lanes: int) -> float:
    """Section 4.2's AVL of a fully vectorised loop: its trip count over the vectors it takes."""
    return trip / math.ceil(trip / lanes)


def predict(profile: VectorProfile, run: Run, mv: int, avl: float | None) -> dict[str, float]:
    return {s: float(loop_time(run.flops, run.words, mv, avl, profile, s).total) for s in SCENARIOS}


def level_name(machine: MachineProfile, working_set: float) -> str:
    level = memory_level(machine, working_set)
    return f"L{level}" if level <= len(machine.caches) else "mem"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="problem sizes times this")
    parser.add_argument("--repeat", type=int, default=20, help="calls per timed run (times each case's factor)")
    parser.add_argument("--runs", type=int, default=7, help="timed runs per build; the best counts")
    parser.add_argument("--profile", default=None, help="a saved machine profile (default: probe this host now)")
    parser.add_argument("--figure", default=None, help="also save the errors as a bar chart (PNG/PDF/SVG)")
    args = parser.parse_args()

    machine = load(args.profile) if args.profile else probe(dataclasses.replace(ProbeSettings(), mpi=False, fit=False))
    cores = 1  # the kernels run on one core (no -fopenmp)
    lanes = host_profile(machine, cores).avl_max
    print(f"host: {machine.name} ({machine.host.get('cpu_model')}; measured {machine.host.get('measured_at', '?')}), "
          f"{machine.cpu['isa']} peak {machine.peak_flops / 1e9:.1f} GF/s one core, {lanes} lanes, triad "
          f"{machine.triad_gbs:.1f} GB/s; caches " + ", ".join(f"L{c.level} {c.size_bytes >> 10} KiB"
                                                              for c in machine.caches))
    header = (f"{'kernel':<11}{'N':>8} {'build':<11}{'MV':>3}{'AVL':>5}{'set':>5}{'GB/s min/mixed/max':>20}"
              f"{'measured s':>12}" + "".join(f"{'pred ' + s:>12}{'err':>8}" for s in SCENARIOS) + f"{'best':>8}")
    print(header)
    best_errors = []
    scenario_errors: dict[str, list[float]] = {s: [] for s in SCENARIOS}
    bars: list[tuple[str, dict[str, float]]] = []  # (kernel/build, scenario -> error) for the figure
    with tempfile.TemporaryDirectory() as tmp:
        exes = {name: build(Path(tmp), name, flags) for name, flags in BUILDS.items()}
        marks = {name: {m.line: m for m in loopmarks(SOURCE, "gcc", flags)} for name, flags in BUILDS.items()}
        measured = {}
        for kernel, base_n, calls in CASES:
            exponent = 1 / 3 if kernel == "tzetar" else 1.0  # tzetar's N is the edge of a cube
            n = max(8, int(base_n * args.scale ** exponent))
            measured[(kernel, n)] = measure(exes, kernel, n, args.repeat * calls, args.runs)
    for build_name in BUILDS:
        for (kernel, n), runs in measured.items():
            run = runs[build_name]
            mark = marks[build_name][loop_line(LOOPS[kernel])]
            profile = host_profile(machine, cores, working_set=run.working_set)
            avl = paper_avl(run.trip, mark.lanes or lanes) if mark.mv >= 2 else None
            rows = [(build_name, mark.mv, avl)]
            if build_name == "scalar":  # the paper's Figure 6: the model assumes the asserted vectorisation
                rows.append(("no MV", 2, paper_avl(run.trip, lanes)))
            for label, mv, loop_avl in rows:
                predicted = predict(profile, run, mv, loop_avl)
                errors = {s: (predicted[s] - run.seconds) / run.seconds for s in SCENARIOS}
                bars.append((f"{kernel} {level_name(machine, run.working_set)}\n{label}", errors))
                best = min(errors.values(), key=abs)
                if label != "no MV":
                    best_errors.append((kernel, label, best))
                    for s in SCENARIOS:
                        scenario_errors[s].append(errors[s])
                bandwidths = "/".join(f"{profile.bandwidth(s):.1f}" for s in SCENARIOS)
                print(f"{kernel:<11}{n:>8} {label:<11}{mv:>3}{'-' if loop_avl is None else f'{loop_avl:.2f}':>5}"
                      f"{level_name(machine, run.working_set):>5}{bandwidths:>20}{run.seconds:>12.3e}"
                      + "".join(f"{predicted[s]:>12.3e}{100 * errors[s]:>+7.0f}%" for s in SCENARIOS)
                      + f"{100 * best:>+7.0f}%")
    within = sum(abs(e) <= 0.2 for _, _, e in best_errors)
    print(f"best scenario within 20 %: {within} of {len(best_errors)} kernel builds; one scenario for all: "
          + ", ".join(f"{s} {sum(abs(e) <= 0.2 for e in errs)}" for s, errs in scenario_errors.items()))
    if args.figure:
        save_figure(bars, Path(args.figure))
        print(f"figure: {args.figure}")


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
