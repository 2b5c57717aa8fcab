"""What the study commands (sweep, scaling, sensitivity, refine, report) share: options, models, output."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from ma_post.models import Model, ModelBuilder


def add_quantity_argument(parser: argparse.ArgumentParser, *, required: bool = True,
                          default: Sequence[str] = ()) -> None:
    parser.add_argument("--quantity", "-q", action="append", required=required, default=list(default) or None,
                        metavar="Q", help="quantity (repeatable): flops, mpi_bytes, mpi_count, memory, ... "
                                          "(ma model --help lists them)")


def add_values_argument(parser: argparse.ArgumentParser, option: str = "--set", *, help_text: str = "") -> None:
    parser.add_argument(option, dest=option.lstrip("-").replace("-", "_") + "s", action="append", default=[],
                        metavar="NAME=VALUES",
                        help=help_text or "parameter values: a number (150000, 1.5e5, 2^10), a list (1,4,16), "
                                          "a range A:B[:STEP], A:B:linN, A:B:logN (N geometric values, e.g. "
                                          "1e5:1e6:log10) or powers BASE^(A:B) (2^(0:12)); inputs not set keep "
                                          "their traced values")


def add_rank_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rank", default=None,
                        help="for inputs that differ between ranks: a rank number, or mean|min|max over the "
                             "traced ranks (default: mean)")


def build_models(args: argparse.Namespace, quantities: Sequence[str] | None,
                 default: Sequence[str] = ()) -> tuple[ModelBuilder, list[Model]]:
    """The models of ``quantities``; without them, those of ``default`` that the trace has sites for."""
    from ma_cli.support import load_traces
    from ma_post.models import ModelBuilder, available_quantities

    ts = load_traces(args)
    builder = ModelBuilder(ts, conditional=getattr(args, "conditional", "literal"))
    if not quantities:
        quantities = [q for q in available_quantities(ts) if q in default]
    return builder, [builder.model(q, inline=getattr(args, "inline", False)) for q in quantities]


def note(command: str, message: str) -> None:
    print(f"ma {command}: note: {message}", file=sys.stderr)


def report_trace_values(command: str, from_trace: Mapping[str, Mapping[str, str]]) -> None:
    """Say on stderr which inputs were taken from the trace (once per input)."""
    seen: dict[str, str] = {}
    for how in from_trace.values():
        for name, text in how.items():
            seen.setdefault(name, text)
    for name, text in seen.items():
        note(command, f"{name} = {text}")


def write_columns(columns: Mapping[str, np.ndarray], fmt: str, *, extra_json: Mapping[str, Any] | None = None) -> None:
    """Rows of equal-length columns as an aligned table, CSV (full precision) or JSON."""
    import numpy as np

    from ma_cli.support import number, table

    names = list(columns)
    data = [np.asarray(columns[n]).reshape(-1) for n in names]
    if fmt == "json":
        body = {n: [_json_value(v) for v in d.tolist()] for n, d in zip(names, data, strict=True)}
        json.dump({**(extra_json or {}), "columns": body}, sys.stdout, indent=1)
        sys.stdout.write("\n")
    elif fmt == "csv":
        sys.stdout.write(",".join(names) + "\n")
        sys.stdout.writelines(",".join(repr(float(v)) for v in row) + "\n" for row in zip(*data, strict=True))
    else:
        sys.stdout.write(table([names] + [[number(v) for v in row] for row in zip(*data, strict=True)]))


def _json_value(v: Any) -> Any:
    return None if isinstance(v, float) and v != v else v
