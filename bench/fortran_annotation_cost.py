"""What an annotation costs from Fortran (``use ma``) against the same call from C (``ma.h``): Callgrind's count of
instructions, deterministic on a noisy host.

The same step is written twice, in Fortran and in C, with the same 11 calls of the paper's kinds: a subroutine,
a variable declared in it, a loop, a flop and a loadstore region, an MPI assertion with its partner, and their
ends (no MPI call and no counter: what is counted is the runtime's own work). Each program runs N and 3N steps
under Callgrind; the difference of the two totals over 2N steps cancels start-up and exit. Both link the same
libma; the Fortran calls go through the module's procedure and the Fortran entry points of libma
(ma_fortran.c: the trailing blanks dropped, the text found in the table of pooled copies by its address).

Goal: the Fortran cost per call within 10 % of C's. tests/test_fortran_cost.py runs it with few steps.

Usage: python bench/fortran_annotation_cost.py [--steps 2000]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

CALLS_PER_STEP = 11

FORTRAN_STEP = """
program cost
    use ma
    implicit none
    integer :: step, steps, n
    character(len=16) :: word
    call get_command_argument(1, word)
    read (word, *) steps
    n = 1000
    call ma_def_variable_int('n', n)
    call ma_def_variable_int('rank', 0)
    do step = 1, steps
        call ma_subroutine_start('step')
        call ma_def_variable_int('k', n)
        call ma_loop_start('inner', 'n', n)
        call ma_flop_start('axpy', '2*n', 2*n)
        call ma_flop_stop('axpy')
        call ma_loadstore_start('copy', '3*n', MA_NO_VALUE)
        call ma_loadstore_stop('copy')
        call ma_loop_end('inner', n)
        call ma_mpi_send('halo', '8*n', 8*n, 0)
        call ma_mpi_peer('rank')
        call ma_subroutine_end('step')
    end do
end program cost
"""

C_STEP = r"""
#include <stdlib.h>
#include "ma.h"

int main(int argc, char **argv)
{
    long long steps = argc > 1 ? atoll(argv[1]) : 1, n = 1000;
    ma_def_variable_int("n", n);
    ma_def_variable_int("rank", 0);
    for (long long step = 1; step <= steps; step++) {
        ma_subroutine_start("step");
        ma_def_variable_int("k", n);
        ma_loop_start("inner", "n", n);
        ma_flop_start("axpy", "2*n", 2 * n);
        ma_flop_stop("axpy");
        ma_loadstore_start("copy", "3*n", MA_NO_VALUE);
        ma_loadstore_stop("copy");
        ma_loop_end("inner", n);
        ma_mpi_send("halo", "8*n", 8 * n, 0);
        ma_mpi_peer("rank");
        ma_subroutine_end("step");
    }
    return 0;
}
"""


def build(work: Path) -> dict[str, Path]:
    """The two programs, with the environment's libraries (no MPI is started: a serial program)."""
    from ma_tools import cparts, fortran, mpis

    mpi = mpis.selected()
    (work / "cost.f90").write_text(FORTRAN_STEP)
    (work / "cost.c").write_text(C_STEP)
    commands = {
        "fortran": [str(fortran.fortran_compiler(mpi)), "-O2", *fortran.fortran_flags(mpi), str(work / "cost.f90"),
                    "-o", str(work / "cost_fortran"), *fortran.fortran_libs(mpi)],
        # ma.h's calls with the paper's names, as Fortran has no __FILE__/__LINE__ to pass either
        "c": [str(mpi.mpicc), "-O2", "-DMA_NO_SOURCE_LOCATION", *cparts.c_flags(), str(work / "cost.c"), "-o",
              str(work / "cost_c"), *cparts.c_libs(mpi)],
    }
    for language, command in commands.items():
        done = subprocess.run(command, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise SystemExit(f"building the {language} program failed:\n{' '.join(command)}\n{done.stderr}")
    return {language: work / f"cost_{language}" for language in commands}


def instructions(program: Path, steps: int, env: dict[str, str]) -> int:
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", str(program), str(steps)],
                          env=env, capture_output=True, text=True, timeout=1800)
    found = re.search(r"Collected\s*:\s*(\d+)", done.stderr) or re.search(r"I\s+refs:\s*([\d,]+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"callgrind run of {program.name} failed:\n{done.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def per_call(program: Path, steps: int, env: dict[str, str]) -> float:
    """Instructions per annotation call: (3N steps - N steps) / (2N steps x calls per step)."""
    short, long = (instructions(program, n, env) for n in (steps, 3 * steps))
    return (long - short) / (2 * steps * CALLS_PER_STEP)


def measure(steps: int, disabled: bool = True) -> dict[str, float]:
    """Instructions per call: Fortran and C annotated, and (``disabled``) both with MA_DISABLE=1, where the calls
    return at once."""
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (scripts/setup.sh installs it)")
    base = {k: v for k, v in os.environ.items() if not k.startswith("MA_") and k != "LD_PRELOAD"}
    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as work:
        programs = build(Path(work))
        # no counter and no periodic flush: under Valgrind the number of flushes would follow the host's load
        annotated = {**base, "MA_TRACE_DIR": str(Path(work) / "traces"), "MA_COUNTERS": "none",
                     "MA_FLUSH_SECONDS": "0"}
        for language, program in programs.items():
            results[language] = per_call(program, steps, annotated)
            if disabled:
                results[f"{language} MA_DISABLE=1"] = per_call(program, steps, {**base, "MA_DISABLE": "1"})
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=2000, help="steps of the shorter run (default 2000)")
    args = parser.parse_args()
    results = measure(args.steps)
    for name, value in results.items():
        print(f"  {name:<20} {value:8.1f} instructions per call")
    ratio = results["fortran"] / results["c"]
    print(f"Fortran / C: {ratio:.3f} ({(ratio - 1) * 100:+.1f} %; goal within 10 %)")
    return 0 if ratio <= 1.10 else 1


if __name__ == "__main__":
    sys.exit(main())
