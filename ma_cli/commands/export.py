"""``ma export DIR --octave OUT/ --python OUT/ --c OUT/``: models as Octave/MATLAB, NumPy and C code;
``--hatchet OUT.json`` (the site tree for Hatchet) and ``ma export DIR DIR2 ... --extrap OUT.json`` (several runs'
measurements for Extra-P), see docs/interop.md."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ma_post.models import Model, ModelBuilder
    from ma_post.traceset import TraceSet


DESCRIPTION = """Write the symbolic models as code: one vectorised Octave/MATLAB function file per quantity (function
r = mpi_bytes(na, nonzer, nprocs)), a Python module of NumPy functions, and a C header and source of double
functions."""


def register(subparsers: argparse._SubParsersAction) -> None:
    from ma_cli.outputs import output_directory, output_file
    from ma_cli.support import add_model_arguments, trace_command

    parser = trace_command(subparsers, "export",
                           "export models as Octave/MATLAB .m functions, a NumPy module and C sources",
                           DESCRIPTION)
    parser.add_argument("--octave", metavar="OUT", type=output_directory, help="directory for the .m files")
    parser.add_argument("--python", metavar="OUT", type=output_directory, help="directory for the Python module")
    parser.add_argument("--c", metavar="OUT", type=output_directory, help="directory for the C header and source")
    parser.add_argument("--hatchet", metavar="OUT.json", type=output_file(),
                        help="the site tree with per-rank metrics as a Hatchet literal")
    parser.add_argument("--extrap", metavar="OUT.json", type=output_file(),
                        help="Extra-P JSON input of the measurements of DIR and MORE_DIRS (runs at different inputs)")
    parser.add_argument("more_dirs", nargs="*", metavar="MORE_DIRS", help="further runs' trace directories (--extrap)")
    parser.add_argument("--param", action="append", default=[], metavar="NAME",
                        help="Extra-P parameter (repeatable; default: every input that differs between the runs)")
    parser.add_argument("--module", default="ma_models", help="name of the Python module and C files")
    parser.add_argument("--quantity", "-q", action="append", default=[], metavar="Q",
                        help="quantity to export (repeatable; default: every quantity the trace has sites for)")
    add_model_arguments(parser)
    from ma_cli.backend_support import add_backend_option

    add_backend_option(parser, "as one more quantity, <backend>_time (a symbolic expression of the inputs)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ma_cli.support import load_traces
    from ma_core.errors import MAError
    from ma_post.export import export_c, export_octave, export_python
    from ma_post.models import ModelBuilder, available_quantities

    if not (args.octave or args.python or args.c or args.hatchet or args.extrap):
        raise MAError("nothing to export: give --octave OUT, --python OUT, --c OUT, --hatchet OUT.json and/or "
                      "--extrap OUT.json")
    if args.backend and not (args.octave or args.python or args.c):
        raise MAError(f"--backend {args.backend}: its predicted time is exported with --octave, --python or --c")
    if args.more_dirs and not args.extrap:
        raise MAError(f"several trace directories ({', '.join(args.more_dirs)} after {args.trace_dir}) are for "
                      "--extrap only")
    if not args.module.isidentifier():
        raise MAError(f"--module {args.module!r}: expected an identifier")
    ts = load_traces(args)
    if args.hatchet or args.extrap:
        _export_interop(args, ts)
        if not (args.octave or args.python or args.c):
            return 0
    builder = ModelBuilder(ts, conditional=args.conditional)
    quantities = args.quantity or available_quantities(ts)
    if not quantities:
        raise MAError(f"{args.trace_dir}: no sites to model (no flop, loadstore, memory or MPI assertions)")
    models = [builder.model(q, inline=args.inline) for q in quantities]
    models += _predicted_time(args, builder)
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


def _export_interop(args: argparse.Namespace, ts: TraceSet) -> None:
    from ma_cli.support import load_traces
    from ma_post.interop.extrap import export_extrap
    from ma_post.interop.hatchet import export_hatchet

    if args.hatchet:
        print(export_hatchet(ts, args.hatchet))
    if args.extrap:
        runs = [ts, *(load_traces(argparse.Namespace(**{**vars(args), "trace_dir": d})) for d in args.more_dirs)]
        print(export_extrap(runs, args.extrap, args.param, args.quantity or None))


def _predicted_time(args: argparse.Namespace, builder: ModelBuilder) -> list[Model]:
    """With ``--backend NAME --machine PROFILE``: the backend's total seconds per rank as the model
    ``NAME_time``, symbolic in the run's inputs like the counted quantities (empty without ``--backend``)."""
    from ma_cli.backend_support import predict

    prediction = predict(args, builder)
    if prediction is None:
        return []
    return [builder.submodel(f"{prediction.backend}_time", prediction.total)]
