"""``ma model DIR``: symbolic per-rank models (SymPy) of flops, loads/stores, memory and MPI traffic."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

DESCRIPTION = """Build symbolic per-rank models from a run: each site's expression times the trip counts of its
enclosing loops, summed over the tree, in the declared input parameters. Quantities: flops, loadstore, heap_memory,
stack_memory, memory, mpi_bytes, mpi_count, send_bytes, send_count, recv_bytes, recv_count, <mpi type>_bytes/_count
(e.g. mpi_allreduce_bytes), ratios loadstore_per_flop, mpi_bytes_per_flop, bytes_per_message, or any A/B."""


def register(subparsers: argparse._SubParsersAction) -> None:
    from ma_cli.support import add_model_arguments, trace_command

    parser = trace_command(subparsers, "model",
                           "symbolic models of flops, loadstore, memory, mpi_bytes, mpi_count, ...",
                           DESCRIPTION)
    parser.add_argument("--quantity", "-q", action="append", default=[], metavar="Q",
                        help="quantity to model (repeatable; default: every quantity the trace has sites for)")
    add_model_arguments(parser)
    parser.add_argument("--by-subroutine", nargs="?", const="path", choices=("path", "name"), default=None,
                        help="show each subroutine's contribution, by its path in the tree (default) or by name "
                             "(merging the calls from different places)")
    parser.add_argument("--by-site", action="store_true", help="show each site's term")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ma_cli.support import load_traces
    from ma_post.models import ModelBuilder, available_quantities

    ts = load_traces(args)
    builder = ModelBuilder(ts, conditional=args.conditional)
    quantities = args.quantity or available_quantities(ts)
    models = [builder.model(q, inline=args.inline) for q in quantities]
    if args.format == "json":
        json.dump([_json(m, args) for m in models], sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        sys.stdout.write("\n".join(_text(m, args) for m in models))
    return 0


def _text(model: Any, args: argparse.Namespace) -> str:
    from ma_cli.support import number
    from ma_post.quantities import describe
    from ma_post.sympy_expr import to_text

    lines = [f"{model.quantity}: {describe(model.quantity)}, in {', '.join(model.inputs) or 'no inputs'}",
             f"  {model.quantity} = {to_text(model.expr)}"]
    if model.definitions:
        lines.append("  where")
        lines += [f"    {name} = {to_text(expr)}" for name, expr in model.definitions.items()]
    if args.by_subroutine and model.terms:
        lines.append("  by subroutine (innermost enclosing; (main) = outside any):")
        for name, expr in model.by_subroutine(by=args.by_subroutine).items():
            lines.append(f"    {name or '(main)'}: {to_text(expr)}")
    if args.by_site and model.terms:
        lines.append("  by site:")
        lines += [f"    {site.path} [{site.type}]: {to_text(expr)}" for site, expr in model.by_site()]
    check = model.check
    if check is not None and len(check.ranks):
        line = (f"  at the traced inputs ({len(check.ranks)} ranks): model {number(check.model.mean())} per rank, "
                f"trace predicted {number(check.trace_predicted.mean())}")
        if not any(v != v for v in check.trace_measured):
            line += f", measured {number(check.trace_measured.mean())}"
        if check.model.min() != check.model.max():
            worst = int(check.ranks[check.model.argmax()])
            line += f" (model per rank {number(check.model.min())}..{number(check.model.max())}, max on rank {worst})"
        lines.append(line)
    spread = model.rank_dependent_inputs()
    if spread:
        lines.append("  rank-dependent inputs: " + ", ".join(f"{k} {number(lo)}..{number(hi)}"
                                                            for k, (lo, hi) in spread.items()))
    if model.notes:
        lines.append("  notes:")
        lines += [f"    {note}" for note in model.notes]
    return "\n".join(lines) + "\n"


def _json(model: Any, args: argparse.Namespace) -> dict[str, Any]:
    from ma_post.sympy_expr import to_text

    out: dict[str, Any] = {
        "quantity": model.quantity, "inputs": model.inputs, "expr": to_text(model.expr),
        "inline_expr": to_text(model.inlined()),
        "definitions": {k: to_text(v) for k, v in model.definitions.items()},
        "by_subroutine": {k: to_text(v) for k, v in model.by_subroutine(by=args.by_subroutine or "path").items()},
        "by_site": [{"path": s.path, "type": s.type, "expr": to_text(e)} for s, e in model.by_site()],
        "rank_dependent_inputs": {k: list(v) for k, v in model.rank_dependent_inputs().items()},
        "notes": [{"kind": n.kind, "path": n.path, "message": n.message} for n in model.notes],
    }
    if model.check is not None:
        out["check"] = {"ranks": model.check.ranks.tolist(), "model": model.check.model.tolist(),
                        "trace_predicted": model.check.trace_predicted.tolist(),
                        "trace_measured": [None if v != v else v for v in model.check.trace_measured.tolist()]}
    return out
