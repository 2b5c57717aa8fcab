"""Instructions one NPB CG step's annotations cost, counted by Callgrind: deterministic on a noisy host.

The 17 annotations of a CG step at 4 ranks (6 flops, 3 butterfly loops of one trip, 8 MPI assertions;
the same site ids, expressions and nesting as examples/npb_cg/conj_grad.py, around empty bodies) run N
and 3N times, annotated (PMPI library preloaded, as under ``ma run``) and with MA_DISABLE=1. The
difference between the two step counts cancels start-up; the difference between the two modes is what
the runtime adds over the no-op bindings. Prints instructions per step for both and their ratio.

Wall time in situ (bench/cg_overhead.py) is a different matter: there the runtime's code and data must
come back into caches that the rank sharing the core has evicted, which instruction counts do not see.

Usage: python bench/annotation_instructions.py [--steps 2000]
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

for name, value in (("na", 7000), ("nonzer", 8), ("nprocs", 4), ("dp", 8), ("num_proc_cols", 2),
                    ("l2npcols", 1)):
    ma.variable(name, value)
NONE = "0"  # no message is made here: every MPI assertion says so


def exchange(loop, recv, send, size, add=None):
    # One trip of a reduction loop: irecv, send (and the row reduction's add), as conj_grad.py nests them.
    with ma.loop(loop, "l2npcols") as lp:
        for _ in lp.range(1, 2):
            with ma.mpi_irecv(recv, size, count=NONE):
                pass
            with ma.mpi_send(send, size, count=NONE):
                pass
            if add is not None:
                with ma.flop(add, "na/num_proc_cols"):
                    pass


def cg_step():
    with ma.flop("matvec", "2*na*nonzer*(nonzer+1)/nprocs"):
        pass
    exchange("rowred", "rowred_rcv", "rowred_snd", "dp*na/num_proc_cols", add="rowred_add")
    with ma.mpi_irecv("transpose_rcv", "dp*na/num_proc_cols", count=NONE):
        pass
    with ma.mpi_send("transpose_snd", "dp*na/num_proc_cols", count=NONE):
        pass
    with ma.flop("pq_dot", "2*na/num_proc_cols"):
        pass
    exchange("pq_red", "pq_rcv", "pq_snd", "dp")
    with ma.flop("zr_axpy", "4*na/num_proc_cols"):
        pass
    with ma.flop("rr_dot", "2*na/num_proc_cols"):
        pass
    exchange("rr_red", "rr_rcv", "rr_snd", "dp")
    with ma.flop("p_update", "2*na/num_proc_cols"):
        pass


for _ in range(int(sys.argv[1])):
    cg_step()
"""


def instructions(program: Path, steps: int, env: dict[str, str]) -> int:
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
                           str(program), str(steps)], env=env, capture_output=True, text=True, timeout=1800)
    found = re.search(r"Collected\s*:\s*(\d+)", done.stderr) or re.search(r"I\s+refs:\s*([\d,]+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"callgrind run failed:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=2000)
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (scripts/setup.sh installs it)")

    from ma_runtime import pmpi

    # A fixed hash seed: string hashes decide dict probing, which would otherwise vary the count by run.
    base = {**{k: v for k, v in os.environ.items() if not k.startswith("MA_")}, "PYTHONHASHSEED": "0"}
    with tempfile.TemporaryDirectory() as work:
        program = Path(work) / "cg_step.py"
        program.write_text(textwrap.dedent(STEP_PROGRAM))
        modes = {
            "annotated": {**base, "MA_TRACE_DIR": str(Path(work) / "traces"), "MA_COUNTERS": "none",
                          "LD_PRELOAD": str(pmpi.build_pmpi()), "MA_PMPI_PRELOADED": "1"},
            "MA_DISABLE=1": {**base, "MA_DISABLE": "1"},
        }
        per_step = {}
        for mode, env in modes.items():
            short, long = (instructions(program, steps, env) for steps in (args.steps, 3 * args.steps))
            per_step[mode] = (long - short) / (2 * args.steps)
            print(f"  {mode:<13} {per_step[mode]:9.0f} instructions per CG step (17 annotations)", flush=True)
    on, off = per_step["annotated"], per_step["MA_DISABLE=1"]
    print(f"annotated - disabled = {on - off:.0f} instructions per step ({(on - off) / 17:.0f} per annotation); "
          f"ratio {on / off:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
