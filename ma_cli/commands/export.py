"""``ma export DIR --octave OUT/ --python OUT/ --c OUT/``: models as Octave/MATLAB, NumPy and C code."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    from ma_cli.support import add_model_arguments, add_trace_arguments

    parser = subparsers.add_parser(
        "export", help="export models as Octave/MATLAB .m functions, a NumPy module and C sources",
        description="Write the symbolic models as code: one vectorised Octave/MATLAB function file per "
                    "quantity (function r = mpi_bytes(na, nonzer, nprocs)), a Python module of NumPy "
                    "functions, and a C header and source of double functions.")
    add_trace_arguments(parser)
    parser.add_argument("--octave", metavar="OUT", help="directory for the .m files")
    parser.add_argument("--python", metavar="OUT", help="directory for the Python module")
    parser.add_argument("--c", metavar="OUT", help="directory for the C header and source")
    parser.add_argument("--module", default="ma_models", help="name of the Python module and C files")
    parser.add_argument("--quantity", "-q", action="append", default=[], metavar="Q",
                        help="quantity to export (repeatable; default: every quantity the trace has sites for)")
    add_model_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ma.errors import MAError
    from ma_cli.support import load_traces
    from ma_post.export import export_c, export_octave, export_python
    from ma_post.models import ModelBuilder, available_quantities

    if not (args.octave or args.python or args.c):
        raise MAError("nothing to export: give --octave OUT, --python OUT and/or --c OUT")
    if not args.module.isidentifier():
        raise MAError(f"--module {args.module!r}: expected an identifier")
    ts = load_traces(args)
    builder = ModelBuilder(ts, conditional=args.conditional)
    quantities = args.quantity or available_quantities(ts)
    if not quantities:
        raise MAError(f"{args.trace_dir}: no sites to model (no flop, loadstore, memory or MPI assertions)")
    models = [builder.model(q, inline=args.inline) for q in quantities]
    source = str(args.trace_dir)
    if args.octave:
        for path in export_octave(models, args.octave, source=source):
            print(path)
    if args.python:
        print(export_python(models, args.python, source=source, module=args.module))
    if args.c:
        for path in export_c(models, args.c, source=source, module=args.module):
            print(path)
    return 0
