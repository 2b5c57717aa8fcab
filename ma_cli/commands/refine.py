"""``ma refine DIR1 DIR2 DIR3 ...``: better expressions for assertions that fail or drift across runs."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

DESCRIPTION = """Read the traces of runs of one program at different inputs. For every assertion that FAILs or drifts
(mean error above --drift) in some run, fit the measured values with the performance-model normal form (terms
p^i*log2(p)^j of the declared inputs, least squares, chosen by leave-one-out cross-validation) and print the best
expression next to the annotated one, with both errors on every run. MPI traffic that PMPI counted outside every
assertion gets a suggested messages-per-rank and message-size expression."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "refine", help="suggest expressions for failing or drifting assertions from runs at several inputs",
        description=DESCRIPTION)
    parser.add_argument("trace_dirs", nargs="+", metavar="DIR", help="trace directories of two or more runs")
    parser.add_argument("--allow-missing", action="store_true",
                        help="warn about missing or unreadable rank files and use the ranks present")
    parser.add_argument("--drift", type=float, default=1e-3, metavar="E",
                        help="refine assertions whose mean relative error exceeds E in some run (default 1e-3)")
    parser.add_argument("--all", action="store_true", help="fit every measured assertion, right or wrong")
    parser.add_argument("--no-unannotated", action="store_true", help="leave out MPI traffic outside assertions")
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ma_cli.support import load_traces
    from ma_core.errors import MAError
    from ma_post.progress import progress
    from ma_post.studies.refine import refine, sites_not_in_every_run

    if len(args.trace_dirs) < 2:
        raise MAError("give the trace directories of at least two runs at different inputs")
    names = _run_names(args.trace_dirs)
    runs = []
    for name, directory in progress(list(zip(names, args.trace_dirs, strict=True)), desc="load", unit="run"):
        runs.append((name, load_traces(argparse.Namespace(**{**vars(args), "trace_dir": directory}))))
    suggestions = refine(runs, drift=args.drift, all_sites=args.all, unannotated=not args.no_unannotated)
    partial = sites_not_in_every_run(runs)
    if args.format == "json":
        json.dump([_json(s) for s in suggestions], sys.stdout, indent=1)
        sys.stdout.write("\n")
    elif not suggestions:
        every = "every assertion in all runs" if partial else "every assertion"
        print(f"{every} agrees with its measurements within {args.drift:g} in all "
              f"{len(runs)} runs; no MPI traffic outside assertions")
    else:
        sys.stdout.write("\n".join(_text(s) for s in suggestions))
    if partial and args.format != "json":
        print(f"not compared: {len(partial)} assertion site{'s' if len(partial) > 1 else ''} not in every run: "
              + "; ".join(f"{path} (only in {', '.join(having)})" for path, having in list(partial.items())[:8])
              + (" ..." if len(partial) > 8 else ""))
    return 0


def _run_names(dirs: list[str]) -> list[str]:
    from pathlib import Path

    short = [Path(d).name or d for d in dirs]
    return short if len(set(short)) == len(short) else list(dirs)


def _text(s: Any) -> str:
    from ma_cli.support import number, table
    from ma_post.sympy_expr import to_text

    lines = [f"{s.path} [{s.type}] {s.what}: {s.reason}"]
    if s.annotated is not None:
        lines.append(f"  annotated: {s.annotated}")
    if s.fit is None:
        lines.append(f"  no suggestion: {s.problem}")
    else:
        lines.append(f"  suggested: {to_text(s.fit.expr)}   (leave-one-out error {s.fit.cv_error:.3g}, largest "
                     f"error {s.fit.max_error:.3g}; {s.fit.hypotheses} hypotheses in "
                     f"{', '.join(s.parameters) or 'no varying parameter'})")
    params = s.parameters or sorted(s.observations[0].inputs)[:3]
    header = ["run", *params, "measured"]
    if s.annotated is not None:
        header += ["annotated", "error"]
    header += ["suggested", "error"]
    rows = [header]
    for obs, fitted in zip(s.observations, s.fitted(), strict=True):
        row = [obs.run, *(number(obs.inputs[p]) for p in params), _num(obs.measured)]
        if s.annotated is not None:
            row += [_num(obs.predicted), _rate(obs.predicted, obs.measured)]
        row += [_num(fitted), _rate(fitted, obs.measured)]
        rows.append(row)
    lines += ["  " + line for line in table(rows).splitlines()]
    return "\n".join(lines) + "\n"


def _num(x: float | None) -> str:
    from ma_cli.support import number

    return "-" if x is None or x != x else number(float(f"{x:.10g}"))


def _rate(predicted: float | None, measured: float) -> str:
    from ma_post.validation import format_rate

    if predicted is None or predicted != predicted:
        return "-"
    if measured == 0:
        return "0.0" if predicted == 0 else "inf"
    return format_rate((predicted - measured) / measured)


def _json(s: Any) -> dict[str, Any]:
    from ma_post.sympy_expr import to_text

    return {"path": s.path, "type": s.type, "what": s.what, "annotated": s.annotated, "reason": s.reason,
            "suggested": None if s.fit is None else to_text(s.fit.expr), "problem": s.problem,
            "parameters": s.parameters,
            "cv_error": None if s.fit is None else s.fit.cv_error,
            "observations": [{"run": o.run, "inputs": o.inputs, "measured": o.measured, "annotated": o.predicted,
                              "suggested": f, "ranks": o.ranks} for o, f in zip(s.observations, s.fitted(),
                                                                                strict=True)]}
