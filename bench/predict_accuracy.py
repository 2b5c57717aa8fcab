"""Predicted against measured time: the maps backend on NPB CG (and SP), per run, of the main subroutine and
of the whole timed loop.

    python bench/predict_accuracy.py [--cases cg:S:1,cg:W:2,...] [--profile FILE] [--out DIR]

Default cases: CG classes S, W, A on 1, 2 and 4 ranks; SP classes S and W on 1 and 4. The machine profile is
a shipped one (``backends/profiles/``) if the SDK has any, else ``ma machine probe --quick`` (said which).
The per-call overhead term is measured once, before the runs, by ``backends.maps.overhead`` under ``ma run``
(never fitted to the runs checked). Every run is ``ma run -n P -- python -m <app> --class C``; the prediction
comes from its validated model and the profile only, the measurement from the trace's inclusive wall times,
both for the slowest rank. Timings on a shared host are noisy: read the figures with the load in mind.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from backends.machine import profile as profiles
from backends.maps import MapsBackend
from backends.maps.measured import per_rank
from ma_post import ModelBuilder
from ma_post.traceset import load

ROOT = Path(__file__).resolve().parent.parent
PARTS = ("compute", "memory", "communication")


@dataclass(frozen=True)
class App:
    module: str
    timed_loop: str  # site path of the timed section
    subroutine: str  # site path of its main subroutine


APPS = {"cg": App("examples.npb_cg.cg", "conj_loop", "conj_loop/conj_grad"),
        "sp": App("examples.npb_sp.sp", "step", "step/adi")}
DEFAULT_CASES = ",".join([f"cg:{c}:{p}" for c in "SWA" for p in (1, 2, 4)]
                         + [f"sp:{c}:{p}" for c in "SW" for p in (1, 4)])


def ma(*argv: str) -> str:
    done = subprocess.run([sys.executable, "-m", "ma_cli.main", *argv], cwd=ROOT, capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"ma {' '.join(argv)} failed:\n{done.stderr}")
    return done.stdout


def machine_profile(out: Path, given: str | None) -> tuple[profiles.MachineProfile, str]:
    if given:
        return profiles.load(given), f"given ({given})"
    shipped = profiles.shipped_profiles()
    if shipped:
        name, path = next(iter(shipped.items()))
        return profiles.load(path), f"shipped ({name})"
    path = out / "quick.json"
    ma("machine", "probe", "--quick", "-o", str(path))
    return profiles.load(path), "ma machine probe --quick on this host"


def call_overhead(out: Path) -> float:
    text = ma("run", "--trace-dir", str(out / "overhead-traces"), "--", sys.executable, "-m", "backends.maps.overhead")
    match = re.search(r"call_overhead_s (\S+)", text)
    if match is None:
        raise SystemExit(f"backends.maps.overhead printed no figure: {text!r}")
    return float(match.group(1))


def measured_seconds(builder: ModelBuilder, path: str) -> np.ndarray:
    site = builder.ts.find(path)
    return np.nanmax(np.asarray(site.wall_ns, dtype=float), axis=1) * 1e-9


def run_case(app_name: str, klass: str, procs: int, machine: profiles.MachineProfile, overhead: float,
             out: Path) -> list[dict[str, object]]:
    app = APPS[app_name]
    trace_dir = out / f"{app_name}-{klass}-{procs}"
    started = time.perf_counter()
    ma("run", "-n", str(procs), "--trace-dir", str(trace_dir), "--", sys.executable, "-m", app.module,
       "--class", klass)
    wall = time.perf_counter() - started
    builder = ModelBuilder(load(trace_dir))
    with_overhead = MapsBackend(call_overhead_s=overhead).predict(builder, machine)
    without = MapsBackend().predict(builder, machine)
    rows = []
    for label, path in (("timed loop", app.timed_loop), (app.subroutine.rsplit("/", 1)[-1], app.subroutine)):
        predicted = per_rank(builder, with_overhead.within(path), {})
        measured = measured_seconds(builder, path)
        sites = [s for s in without.sites if s.path == path or s.path.startswith(path + "/")]
        parts = {p: float(np.max(per_rank(builder, sum((getattr(s, p) for s in sites), 0), {}))) for p in PARTS}
        parts["overhead"] = float(np.max(predicted)) - sum(parts.values())
        rows.append({"case": f"{app_name.upper()} {klass} x{procs}", "region": label,
                     "predicted": float(np.max(predicted)), "measured": float(np.max(measured)),
                     "parts": parts, "run_s": wall})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default=DEFAULT_CASES, help="app:class:ranks,... (default: %(default)s)")
    parser.add_argument("--profile", default=None, help="machine profile (default: shipped, else a --quick probe)")
    parser.add_argument("--out", default="out/predict-accuracy")
    args = parser.parse_args()
    out = Path(args.out).absolute()
    out.mkdir(parents=True, exist_ok=True)
    machine, origin = machine_profile(out, args.profile)
    overhead = call_overhead(out)
    print(f"profile: {machine.name}, {origin}; peak {machine.peak_flops:.3g} flop/s; call overhead "
          f"{overhead * 1e6:.2f} us per annotated call (measured once, under ma run)")
    rows = []
    for case in args.cases.split(","):
        app_name, klass, procs = case.split(":")
        rows += run_case(app_name, klass, int(procs), machine, overhead, out)
        row = rows[-2]
        print(f"  ran {row['case']} in {row['run_s']:.1f} s", flush=True)
    print(f"\n{'case':<12} {'region':<11} {'predicted s':>12} {'measured s':>11} {'error':>8}   "
          "share of the prediction: compute / memory / comm / per-call overhead")
    errors = []
    for row in rows:
        predicted, measured = float(row["predicted"]), float(row["measured"])  # type: ignore[arg-type]
        error = (predicted - measured) / measured
        errors.append(abs(error))
        parts: dict[str, float] = row["parts"]  # type: ignore[assignment]
        shares = " / ".join(f"{100 * parts[p] / predicted:.0f}%" for p in (*PARTS, "overhead"))
        print(f"{row['case']:<12} {row['region']:<11} {predicted:12.4g} {measured:11.4g} {100 * error:+7.1f}%   "
              f"{shares}")
    worst = int(np.argmax(errors))
    print(f"\naverage absolute error {100 * float(np.mean(errors)):.1f}% over {len(errors)} predictions; worst "
          f"{100 * errors[worst]:.1f}% ({rows[worst]['case']}, {rows[worst]['region']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
