"""What one NPB CG step's annotations cost, counted by Valgrind: deterministic on a noisy host.

The 24 annotations of a CG step at 4 ranks (6 kernels, each ``with ma.flop(...), ma.loadstore(...):``, a
loadstore alone, 3 butterfly loops of one trip, 8 MPI assertions with partners; the same nesting, expressions and
kinds as examples/npb_cg/conj_grad.py) run N and 3N times,
annotated (PMPI library preloaded, as under ``ma run``) and with MA_DISABLE=1. The difference between
the two step counts cancels start-up; the difference between the two modes is what the runtime adds
over the no-op bindings.

- Default: empty bodies, instructions counted by Callgrind. Prints instructions per step and the ratio.
- ``--in-situ``: each body is a sparse matrix-vector product the size of a class W rank's block, and
  Callgrind simulates the caches (32 KiB L1i, 48 KiB L1d, 1.25 MiB L2 as its last level). The kernel
  evicts the runtime's code and data from L2 between annotations, as in the real run, so every line of
  code and data an annotation touches comes back from L3: the L2 misses outside the kernel per annotation
  (instruction and data; the kernel's own are left out, they move with where its arrays land) are what an
  annotation costs in situ, and what its instruction count does not show. On CG class W they account for
  the measured overhead at about an L3 hit's time a line (docs/performance.md).

Usage: python bench/annotation_instructions.py [--steps 2000] [--in-situ [--steps 20]]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

STEP_PROGRAM = """
import sys
import ma
from mpi4py import MPI  # noqa: F401  (MPI running, so the MPI assertions read the PMPI totals)

if sys.argv[2] == "kernel":
    import numpy as np
    import scipy.sparse as sp
    from scipy.sparse import _sparsetools

    # A class W block on 4 ranks: 3500 x 3500 with ~126,000 nonzeros (~1.5 MB), as in the CG run.
    A = sp.random(3500, 3500, density=126000 / 3500**2, format="csr", random_state=1)
    V = np.random.default_rng(0).random(3500)
    W = np.zeros(3500)

    def kernel_body():
        # SciPy's compiled CSR kernel summing into W, as the CG port calls it: nothing allocated per call, so
        # the heap (whose state differs between the two modes) moves no count outside the kernel. Twice: 3 MB
        # through the 1.25 MiB L2 evict every set (once, ~12 lines a set on average, left some of them lines
        # of the runtime, and which survived moved with where each build's code lands).
        for _ in range(2):
            _sparsetools.csr_matvec(3500, 3500, A.indptr, A.indices, A.data, V, W)
else:
    def kernel_body():
        pass


def body():
    pass

for name, value in (("na", 7000), ("nonzer", 8), ("nprocs", 4), ("dp", 8), ("vlen", 2), ("num_proc_cols", 2),
                    ("num_proc_rows", 2), ("l2npcols", 1)):
    ma.variable(name, value)
NONE = "0"  # no message is made here: every MPI assertion says so
PEER = "mod(rank + iter + 1, nprocs)"  # a partner assertion, as conj_grad.py's (past its 64 checked calls)


def kernel(flops, flop_expr, loadstores, loadstore_expr):
    # A kernel of conj_grad.py: ``with ma.flop(...), ma.loadstore(...):`` around one body.
    with ma.flop(flops, flop_expr), ma.loadstore(loadstores, loadstore_expr):
        body()


def exchange(loop, recv, send, size, add=None):
    # One trip of a reduction loop: irecv, send (and the row reduction's add), as conj_grad.py nests them.
    with ma.loop(loop, "l2npcols") as lp:
        for _ in lp.range(1, 2):
            with ma.mpi_irecv(recv, size, count=NONE, peer=PEER):
                body()
            with ma.mpi_send(send, size, count=NONE, peer=PEER):
                body()
            if add is not None:
                kernel(add, "na/num_proc_cols", add + "_ls", "3*na/num_proc_cols/vlen")


def cg_step():
    kernel("matvec", "2*na*nonzer*(nonzer+1)/nprocs", "matvec_ls",
           "3*na*nonzer*(nonzer+1)/nprocs + 4*na/num_proc_rows")
    exchange("rowred", "rowred_rcv", "rowred_snd", "dp*na/num_proc_cols", add="rowred_add")
    with ma.mpi_irecv("transpose_rcv", "dp*na/num_proc_cols", count=NONE, peer=PEER):
        body()
    with ma.mpi_send("transpose_snd", "dp*na/num_proc_cols", count=NONE, peer=PEER):
        body()
    with ma.loadstore("clear_w", "max(na/num_proc_rows, na/num_proc_cols)/2"):
        body()
    kernel("pq_dot", "2*na/num_proc_cols", "pq_dot_ls", "na/num_proc_cols")
    exchange("pq_red", "pq_rcv", "pq_snd", "dp")
    kernel("zr_axpy", "4*na/num_proc_cols", "zr_axpy_ls", "10*na/num_proc_cols/vlen")
    kernel("rr_dot", "2*na/num_proc_cols", "rr_dot_ls", "na/num_proc_cols")
    exchange("rr_red", "rr_rcv", "rr_snd", "dp")
    kernel("p_update", "2*na/num_proc_cols", "p_update_ls", "5*na/num_proc_cols/vlen")


# Past the first MA_PEER_CHECKS (64) calls of each site, whose partners are checked in Python, as in a CG run:
# both step counts start from there.
for _ in range(64):
    cg_step()
body = kernel_body
for _ in range(int(sys.argv[1])):
    cg_step()
"""


ANNOTATIONS_PER_STEP = 24
# Callgrind's events of the in-situ runs: instructions, L2 instruction misses, L2 data read and write misses.
CACHE_EVENTS = ("Ir", "ILmr", "DLmr", "DLmw")
# The kernel's own functions (SciPy's CSR product): their data misses move with where its arrays land in each
# process (by thousands per call), so the in-situ counts leave them out; the rest is the same code both ways.
KERNEL_FUNCTIONS = ("csr_matvec",)


def instructions(program: Path, steps: int, env: dict[str, str]) -> int:
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                           str(program), str(steps), "empty"], env=env, capture_output=True, text=True,
                          timeout=1800)
    found = re.search(r"Collected\s*:\s*(\d+)", done.stderr) or re.search(r"I\s+refs:\s*([\d,]+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"callgrind run failed:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def cache_events(program: Path, steps: int, env: dict[str, str], work: Path) -> list[int]:
    """Callgrind's counts (CACHE_EVENTS) outside the kernel for ``steps`` CG steps with a kernel in every
    annotation."""
    out = work / f"callgrind.{steps}"
    # setarch -R: the same addresses every run, so that the simulated caches see the same conflicts.
    done = subprocess.run(["setarch", "-R", "valgrind", "--tool=callgrind", "--cache-sim=yes",
                           "--I1=32768,8,64", "--D1=49152,12,64", "--LL=1310720,10,64",
                           f"--callgrind-out-file={out}", sys.executable, str(program), str(steps), "kernel"],
                          env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"callgrind run failed:\n{done.stderr[-2000:]}")
    table = subprocess.run(["callgrind_annotate", "--auto=no", "--threshold=100", "--show=" + ",".join(CACHE_EVENTS),
                            str(out)], capture_output=True, text=True, timeout=600, check=True).stdout
    totals = [0] * len(CACHE_EVENTS)
    functions = False
    for line in table.splitlines():
        if "file:function" in line:  # the header of the per-function table
            functions = True
            continue
        fields = re.sub(r"\(\s*[\d.]+%\)", "", line).split()  # counts (with their shares), then the function
        if not functions or len(fields) <= len(CACHE_EVENTS) or any(k in line for k in KERNEL_FUNCTIONS):
            continue
        counts = fields[:len(CACHE_EVENTS)]
        if all(re.fullmatch(r"[\d,]+|\.", c) for c in counts):
            totals = [t + (0 if c == "." else int(c.replace(",", ""))) for t, c in zip(totals, counts, strict=True)]
    return totals


def in_situ(program: Path, steps: int, modes: dict[str, dict[str, str]], work: Path) -> None:
    per_annotation = {}
    for mode, env in modes.items():
        short, long = (cache_events(program, n, env, work) for n in (steps, 3 * steps))
        per_annotation[mode] = [(b - a) / (2 * steps * ANNOTATIONS_PER_STEP) for a, b in zip(short, long, strict=True)]
        instructions, code, data_read, data_write = per_annotation[mode]
        print(f"  {mode:<13} outside the kernel, per annotation: {instructions:,.0f} instructions, L2 misses: "
              f"{code:,.1f} instruction, {data_read + data_write:,.1f} data", flush=True)
    on, off = per_annotation["annotated"], per_annotation["MA_DISABLE=1"]
    code, data = on[1] - off[1], on[2] + on[3] - off[2] - off[3]
    print(f"annotated - disabled, per annotation, with a kernel between annotations: {on[0] - off[0]:+,.0f} "
          f"instructions; lines fetched again from L3: {code:+,.1f} of code, {data:+,.1f} of data, {code + data:+,.1f} "
          f"in all ({(code + data) * ANNOTATIONS_PER_STEP:+,.0f} per CG step)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=None,
                        help="CG steps of the shorter run (default 2000; 20 with --in-situ)")
    parser.add_argument("--in-situ", action="store_true",
                        help="a kernel in every annotation, caches simulated by Callgrind")
    args = parser.parse_args()
    steps = args.steps or (20 if args.in_situ else 2000)
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (scripts/setup.sh installs it)")

    from ma_tools import cparts

    # A fixed hash seed: string hashes decide dict probing, which would otherwise vary the count by run. One
    # BLAS thread: OpenBLAS's idle threads spin under Valgrind for as long as the host's load decides, and
    # their code and data in the simulated caches moved the in-situ count by tens of lines from run to run.
    base = {**{k: v for k, v in os.environ.items() if not k.startswith("MA_")}, "PYTHONHASHSEED": "0",
            "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    with tempfile.TemporaryDirectory() as work:
        program = Path(work) / "cg_step.py"
        program.write_text(textwrap.dedent(STEP_PROGRAM))
        modes = {
            # No periodic flush: under Valgrind a run takes minutes, and the number of 5-second flushes (each
            # a trace written) would follow the host's load instead of the step count.
            "annotated": {**base, "MA_TRACE_DIR": str(Path(work) / "traces"), "MA_COUNTERS": "none",
                          "MA_FLUSH_SECONDS": "0",
                          "LD_PRELOAD": str(cparts.build_pmpi()), "MA_PMPI_PRELOADED": "1"},
            "MA_DISABLE=1": {**base, "MA_DISABLE": "1"},
        }
        if args.in_situ:
            in_situ(program, steps, modes, Path(work))
            return 0
        per_step = {}
        for mode, env in modes.items():
            short, long = (instructions(program, n, env) for n in (steps, 3 * steps))
            per_step[mode] = (long - short) / (2 * steps)
            print(f"  {mode:<13} {per_step[mode]:9.0f} instructions per CG step ({ANNOTATIONS_PER_STEP} annotations)",
                  flush=True)
    on, off = per_step["annotated"], per_step["MA_DISABLE=1"]
    print(f"annotated - disabled = {on - off:.0f} instructions per step "
          f"({(on - off) / ANNOTATIONS_PER_STEP:.0f} per annotation); ratio {on / off:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
