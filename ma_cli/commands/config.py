"""``ma config --cflags | --libs | --fflags | --flibs``: compiler and linker flags for annotated C and Fortran
programs (pkg-config style), for the environment's MPI or the one named by ``--mpicc`` / ``MA_MPICC``.

    mpicc $(ma config --cflags) prog.c -o prog $(ma config --libs)
    mpifort $(ma config --fflags) prog.f90 -o prog $(ma config --flibs)
"""

from __future__ import annotations

import argparse
import sys

DESCRIPTION = """Print the flags that compile and link a C or Fortran program against the C runtime (libma), the Fortran
module (libmafort) and the PMPI wrapper library (libmapmpi), built for one MPI: the environment's, or --mpicc's. The
flags that link build the libraries first when they are missing or out of date."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "config", help="compiler/linker flags for C (ma.h) and Fortran (use ma) programs (pkg-config style)",
        description=DESCRIPTION)
    parser.add_argument("--cflags", action="store_true", help="include flags (where ma.h is)")
    parser.add_argument("--libs", action="store_true", help="linker flags: -L, rpath, -lma -lmapmpi")
    parser.add_argument("--fflags", action="store_true", help="Fortran flags (where the module ma.mod is)")
    parser.add_argument("--flibs", action="store_true", help="Fortran linker flags: -lmafort -lma -lmapmpi")
    parser.add_argument("--mpifc", action="store_true",
                        help="the MPI's Fortran compiler wrapper (mpifort), to compile a Fortran MPI program with")
    parser.add_argument("--disabled", action="store_true",
                        help="with --fflags/--flibs: the module whose calls do nothing, linking no library of the "
                             "SDK (the Fortran counterpart of -DMA_DISABLE)")
    parser.add_argument("--pmpi-library", action="store_true",
                        help="path of libmapmpi.so, e.g. for LD_PRELOAD into an unannotated MPI program")
    parser.add_argument("--mpicc", default=None, metavar="PATH",
                        help="the MPI to build for: its C compiler wrapper (default: MA_MPICC, else the "
                             "environment's mpicc)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ma_tools import cparts, fortran, mpis

    wanted = (args.cflags, args.libs, args.fflags, args.flibs, args.mpifc, args.pmpi_library)
    if not any(wanted):
        print("ma config: error: give --cflags, --libs, --fflags, --flibs, --mpifc and/or --pmpi-library",
              file=sys.stderr)
        return 2
    mpi = mpis.install(args.mpicc) if args.mpicc else mpis.selected()
    words: list[str] = []
    if args.cflags:
        words += cparts.c_flags()
    if args.libs:
        words += cparts.c_libs(mpi)
    if args.fflags:
        words += fortran.fortran_flags(mpi, disabled=args.disabled)
    if args.flibs:
        words += fortran.fortran_libs(mpi, disabled=args.disabled)
    if args.mpifc:
        words.append(str(fortran.mpi_fortran_compiler(mpi)))
    if args.pmpi_library:
        words.append(str(cparts.build_pmpi(mpi=mpi)))
    print(" ".join(words))
    return 0
