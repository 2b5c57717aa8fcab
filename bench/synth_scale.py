"""Synthetic MPI traces of NPB CG replayed in SimGrid: accuracy at small scale, cost at large scale.

1. The machine, measured here and independently of CG: MPI ping-pong latency (8 B) and bandwidth (4 MiB)
   between 2 ranks of the environment's mpiexec (mpi4py), and the flop rate of a rank running CG-like
   kernels (a SciPy CSR product with the nonzeros of a class S block, NumPy dots and AXPYs of its vector
   length; random data, not CG's) at each process count.
2. CG class S at 2 and 4 ranks (and class W at 2): one annotated run gives the traces (`ma run`), one
   MA_DISABLE=1 run gives the measured time of NPB's timed loop; `ma synth --region conj_loop` and
   `smpirun -replay` give the predicted time from the machine figures of step 1. Printed: both and the relative error;
   then the replay with each site's compute priced by the maps backend on a machine profile (`ma synth --machine`,
   SimGrid's messages at the profile's ping-pong) next to `ma predict`'s time of the same loop, each with its error.
3. CG class C (na=150000, nonzer=15) at 64, 256 and 1024 simulated ranks, generated from the 4-rank class S
   trace with --set: time to generate and to replay one timed iteration (niter=1; the 75 iterations of class C
   are identical, so the full loop takes 75 times as long), the predicted time, and the same with 10x the
   bandwidth (what-if). Goal: 1024 ranks generated in <= 10 s and replayed in <= 5 min.

On a shared 2-core host 4 ranks are oversubscribed and every figure moves with the other jobs.

Usage: python bench/synth_scale.py [--ranks 64,256,1024] [--skip-small] [--machine PROFILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from examples.npb_cg.classes import CLASSES  # noqa: E402

BIN = Path(sys.executable).parent
CG = REPO / "examples" / "npb_cg" / "cg.py"
CLASS_C: dict[str, float] = {"na": 150000, "nonzer": 15, "shift": 110, "niter": 1}
CLASS_C_NITER = 75

PINGPONG = textwrap.dedent("""
    import numpy as np
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    def half_round_trip(nbytes, reps):
        buf = np.zeros(max(nbytes, 1), dtype=np.uint8)[:nbytes]
        best = float("inf")
        for _ in range(5):
            comm.Barrier()
            t0 = MPI.Wtime()
            for _ in range(reps):
                if comm.rank == 0:
                    comm.Send(buf, dest=1); comm.Recv(buf, source=1)
                else:
                    comm.Recv(buf, source=0); comm.Send(buf, dest=0)
            best = min(best, (MPI.Wtime() - t0) / (2 * reps))
        return best
    latency = half_round_trip(8, 2000)
    big = 4 << 20
    bandwidth = big / (half_round_trip(big, 20) - latency)
    if comm.rank == 0:
        print(f"{latency!r} {bandwidth!r}")
""")


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MA_") and k != "LD_PRELOAD"}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra)
    return env


def ping_pong() -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as work:
        script = Path(work) / "pingpong.py"
        script.write_text(PINGPONG)
        done = subprocess.run([str(BIN / "mpiexec"), "-n", "2", sys.executable, str(script)], env=clean_env(),
                              capture_output=True, text=True, check=True)
    latency, bandwidth = map(float, done.stdout.split())
    return latency, bandwidth


def kernel_flop_rate(na: int, nonzer: int, nprocs: int) -> float:
    """Flop/s of CG-like kernels on random data of one rank's sizes (class na, nonzer, at nprocs ranks)."""
    import numpy as np
    import scipy.sparse as sp

    from examples.npb_cg.grid import proc_grid

    rows, cols = proc_grid(nprocs)
    nrows, ncols = na // rows, na // cols
    nnz = na * nonzer * (nonzer + 1) // nprocs
    rng = np.random.default_rng(1)
    matrix = sp.random(nrows, ncols, density=min(nnz / (nrows * ncols), 1.0), format="csr", random_state=rng)
    v, w = rng.random(ncols), rng.random(ncols)
    flops = 2 * matrix.nnz + 5 * 2 * ncols  # one product, five dot/AXPY-like vector kernels
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(50):
            matrix @ v
            for _ in range(5):
                float(np.einsum("i,i->", v, w))
        best = min(best, (time.perf_counter() - t0) / 50)
    return flops / best


def ma(*args: str, **env: str) -> str:
    done = subprocess.run([str(BIN / "ma"), *args], env=clean_env(**env), capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"ma {' '.join(args)} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return done.stdout


def cg_time(class_name: str, nprocs: int, work: Path) -> float:
    done = subprocess.run([str(BIN / "mpiexec"), "-n", str(nprocs), sys.executable, str(CG), "--class", class_name],
                          env=clean_env(MA_DISABLE="1"), capture_output=True, text=True, check=True, cwd=work)
    match = re.search(r"Time in seconds =\s*([0-9.]+)", done.stdout)
    if match is None:
        raise SystemExit(f"no time in CG's output:\n{done.stdout[-2000:]}")
    return float(match.group(1))


def traced(class_name: str, nprocs: int, work: Path) -> Path:
    trace_dir = work / f"traces-{class_name}-{nprocs}"
    ma("run", "-n", str(nprocs), "--trace-dir", str(trace_dir), "--", sys.executable, str(CG), "--class", class_name)
    return trace_dir


def replayed(trace_dir: Path, out: Path, sets: Mapping[str, float], latency: float, bandwidth: float,
             speed: float) -> tuple[float, float, float, float]:
    """(generation s, predicted s, compute s, replay wall s) of ma synth --replay."""
    args = ["synth", str(trace_dir), str(out), "--region", "conj_loop", "--replay", "--latency", repr(latency),
            "--bandwidth", repr(bandwidth), "--speed", repr(speed)]
    for name, value in sets.items():
        args += ["--set", f"{name}={value}"]
    text = ma(*args)
    generated = float(re.search(r"\(([0-9.]+) s\); replay list", text).group(1))  # type: ignore[union-attr]
    found = re.search(r"predicted time: ([0-9.eE+-]+) s = compute ([0-9.eE+-]+) s .*SimGrid took ([0-9.]+) s", text)
    assert found is not None, text
    return generated, float(found.group(1)), float(found.group(2)), float(found.group(3))


def through_the_model(trace_dir: Path, out: Path, machine: str) -> tuple[float, float]:
    """(replayed s, ma predict's s) of NPB's timed loop, the replay's compute priced by the maps backend on
    ``machine`` (``ma synth --machine``); ma predict's is its sites' mean per rank below ``conj_loop``."""
    text = ma("synth", str(trace_dir), str(out), "--region", "conj_loop", "--replay", "--machine", machine)
    found = re.search(r"predicted time: ([0-9.eE+-]+) s", text)
    assert found is not None, text
    report = json.loads(ma("predict", str(trace_dir), "--machine", machine, "--format", "json"))
    predicted = sum(row["seconds"] for row in report["sites"] if row["name"].startswith("conj_loop/"))
    return float(found.group(1)), predicted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ranks", default="64,256,1024")
    parser.add_argument("--skip-small", action="store_true", help="leave out the class S comparison")
    parser.add_argument("--machine", default="amd-epyc-zen4-kvm",
                        help="profile of the replay through the maps model (a file or a shipped profile's name)")
    args = parser.parse_args()
    latency, bandwidth = ping_pong()
    print(f"machine: ping-pong latency {latency * 1e6:.2f} us, bandwidth {bandwidth / 1e9:.2f} GB/s (2 ranks, "
          f"mpiexec of the venv; {os.cpu_count()} cores)")
    with tempfile.TemporaryDirectory(prefix="synth-scale-") as tmp:
        work = Path(tmp)
        base = traced("S", 4, work)
        print("\nCG, NPB's timed loop: measured (MA_DISABLE=1) vs replayed in SimGrid")
        print(f"{'class':>5} {'ranks':>5} {'flop/s':>10} {'measured s':>11} {'predicted s':>12} {'compute s':>10} "
              f"{'error':>8} {'model replay s':>15} {'error':>8} {'ma predict s':>13} {'error':>8}")
        for class_name, nprocs in () if args.skip_small else (("S", 2), ("S", 4), ("W", 2)):
            problem = CLASSES[class_name]
            trace_dir = base if (class_name, nprocs) == ("S", 4) else traced(class_name, nprocs, work)
            speed = kernel_flop_rate(problem.na, problem.nonzer, nprocs)
            measured = cg_time(class_name, nprocs, work)
            _, predicted, compute, _ = replayed(trace_dir, work / f"{class_name}{nprocs}", {}, latency, bandwidth,
                                                speed)
            model, maps = through_the_model(trace_dir, work / f"{class_name}{nprocs}-model", args.machine)
            print(f"{class_name:>5} {nprocs:>5} {speed:>10.3g} {measured:>11.4f} {predicted:>12.4f} {compute:>10.4f} "
                  f"{(predicted - measured) / measured:>+8.1%} {model:>15.4f} {(model - measured) / measured:>+8.1%} "
                  f"{maps:>13.4f} {(maps - measured) / measured:>+8.1%}")
        speed_c = kernel_flop_rate(int(CLASS_C["na"]), int(CLASS_C["nonzer"]), 64)
        print(f"\nCG class C, one timed iteration (x{CLASS_C_NITER} for the loop), from the 4-rank class S trace; "
              f"rank flop rate {speed_c:.3g} flop/s (kernels at 64 ranks' sizes)")
        print(f"{'ranks':>5} {'generate s':>10} {'replay s':>9} {'predicted s/it':>15} {'compute s/it':>13} "
              f"{'loop s (x75)':>13} {'10x bw s/it':>12}")
        for nprocs in (int(n) for n in args.ranks.split(",")):
            sets = {**CLASS_C, "nprocs": nprocs}
            out = work / f"c{nprocs}"
            generated, predicted, compute, wall = replayed(base, out, sets, latency, bandwidth, speed_c)
            _, faster, _, _ = replayed(base, out, sets, latency, 10 * bandwidth, speed_c)
            print(f"{nprocs:>5} {generated:>10.2f} {wall:>9.1f} {predicted:>15.5f} {compute:>13.5f} "
                  f"{predicted * CLASS_C_NITER:>13.3f} {faster:>12.5f}")


if __name__ == "__main__":
    main()
