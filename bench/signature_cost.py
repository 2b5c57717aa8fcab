"""What a signature run costs and what it measures: NPB CG under ``ma run`` natively, with ``--counters ccalls``
and with ``--counters valgrind --cache PROFILE``, side by side in one run.

    python bench/signature_cost.py [--class S] [--profile amd-epyc-zen4-kvm] [--modes native,ccalls,valgrind,cache]

Prints each mode's wall time (the whole ``ma run``, startup included) and its ratio to the native run, then per
site of the timed loop: executions, calls into compiled code per execution (``Site.c_calls``) and the simulated
cumulative hit rates (``Site.hit_rates``). One rank. Timings on a shared host are noisy: read them with the load
in mind; the Valgrind run takes minutes.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ma_post.traceset import TraceSet, load

ROOT = Path(__file__).resolve().parent.parent
MODES = {"native": ["--counters", "none"], "ccalls": ["--counters", "ccalls"],
         "valgrind": ["--counters", "valgrind"],  # the tool without the cache simulation, for its share
         "cache": ["--counters", "valgrind", "--cache", "{profile}"]}


def run(mode: str, class_name: str, profile: str, out: Path) -> tuple[float, TraceSet]:
    options = [part.format(profile=profile) for part in MODES[mode]]
    traces = out / mode
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "ma_cli.main", "run", *options, "--trace-dir", str(traces), "--",
                           sys.executable, "-m", "examples.npb_cg.cg", "--class", class_name],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{mode}: ma run failed:\n{done.stderr[-3000:]}")
    return seconds, load(traces)


def site_table(traces: dict[str, TraceSet]) -> list[str]:
    reference = next(iter(traces.values()))
    lines = [f"{'site':40s} {'calls':>7s} {'c_calls/call':>12s}  hit rates (L1, L2, ..., memory)"]
    for site in reference.walk():
        if not site.path or site.type in ("variable", "assign"):
            continue
        calls = int(site.calls.sum())
        per_call, rates = "", ""
        if "ccalls" in traces:
            c_calls = traces["ccalls"].find(site.path, site.type).c_calls
            per_call = f"{c_calls / calls:.1f}" if c_calls is not None and calls else ""
        if "cache" in traces:
            hit_rates = traces["cache"].find(site.path, site.type).hit_rates
            rates = ", ".join(f"{h:.3f}" for h in hit_rates) if hit_rates else ""
        lines.append(f"{site.path:40s} {calls:7d} {per_call:>12s}  {rates}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--class", dest="class_name", default="S")
    parser.add_argument("--profile", default="amd-epyc-zen4-kvm", help="machine profile whose caches are simulated")
    parser.add_argument("--modes", default="native,ccalls,valgrind,cache")
    args = parser.parse_args()
    modes = args.modes.split(",")
    traces: dict[str, TraceSet] = {}
    with tempfile.TemporaryDirectory() as tmp:
        times = {}
        for mode in modes:
            times[mode], traces[mode] = run(mode, args.class_name, args.profile, Path(tmp))
        print(f"NPB CG class {args.class_name}, 1 rank, whole `ma run` wall time (busy host: indicative only)")
        for mode in modes:
            ratio = f"{times[mode] / times['native']:.1f}x" if "native" in times else ""
            print(f"  {mode:8s} {times[mode]:8.2f} s  {ratio}")
        print()
        print("\n".join(site_table(traces)))


if __name__ == "__main__":
    main()
