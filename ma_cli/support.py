"""Helpers shared by the post-processing subcommands of ``ma`` (argument parsing, loading, parameter grids)."""

from __future__ import annotations

import argparse
import difflib
import itertools
import sys
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ma_core.errors import MAError

if TYPE_CHECKING:
    from ma_post.traceset import TraceSet


class CommandParser(argparse.ArgumentParser):
    """The parser of one ``ma`` command. Options that come from plugins (each installed backend's) join through
    :meth:`defer` when this command is parsed, not when ``ma`` starts: loading the backends imports SymPy,
    which the other commands should not pay for."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deferred: list[Callable[[argparse.ArgumentParser], None]] = []

    def defer(self, add_arguments: Callable[[argparse.ArgumentParser], None]) -> None:
        self._deferred.append(add_arguments)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        while self._deferred:
            self._deferred.pop(0)(self)
        return super().parse_known_args(args, namespace)


def trace_command(subparsers: Any, name: str, help_text: str, description: str,
                  *option_groups: Callable[[argparse.ArgumentParser], None]) -> CommandParser:
    """The parser of a subcommand that reads a run's traces (``ma``'s subparsers make CommandParsers): the trace
    directory's arguments first, then each group of options in turn."""
    parser: CommandParser = subparsers.add_parser(name, help=help_text, description=description)
    add_trace_arguments(parser)
    for add_options in option_groups:
        add_options(parser)
    return parser


def add_trace_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace_dir", metavar="DIR", help="trace directory of a run (MA_TRACE_DIR)")
    parser.add_argument("--allow-missing", action="store_true",
                        help="warn about missing or unreadable rank files and use the ranks present")


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--inline", action="store_true",
                        help="substitute derived variables by their definitions (default: keep them named)")
    add_conditional_argument(parser)


def add_conditional_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--conditional", choices=("literal", "observed"), default="literal",
                        help="sites that ran fewer times than their enclosing loops predict: count them as "
                             "written (literal, default) or scale by the ratio the trace shows (observed)")


def add_set_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="NAME=V[,V...]",
                        help="input parameter value(s); several values (comma-separated) make a grid; "
                             "inputs not set keep their traced values")
    parser.add_argument("--rank", default=None,
                        help="for inputs that differ between ranks: a rank number, or mean|min|max over the "
                             "traced ranks (default: mean, with the spread shown)")


def load_traces(args: argparse.Namespace) -> TraceSet:
    from ma_post.traceset import load

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ts = load(args.trace_dir, allow_missing=args.allow_missing)
    for warning in caught:
        print(f"ma {args.command}: warning: {warning.message}", file=sys.stderr)
    return ts


def parse_sets(items: Sequence[str]) -> dict[str, list[float]]:
    """``["na=1400", "nprocs=4,16"]`` -> ``{"na": [1400.0], "nprocs": [4.0, 16.0]}``."""
    out: dict[str, list[float]] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier() or not text.strip():
            raise MAError(f"--set {item!r}: expected NAME=NUMBER or NAME=NUMBER,NUMBER,...")
        values = []
        for part in text.split(","):
            try:
                values.append(float(part))
            except ValueError:
                raise MAError(f"--set {item!r}: {part.strip()!r} is not a number") from None
        out[name] = values
    return out


def check_parameters(ts: TraceSet, names: Iterable[str], option: str = "--set") -> None:
    """Every name given to ``--set``/``--at`` must be a variable the run declared: a misspelt one would
    otherwise be ignored and the traced value used in silence. The error lists the known ones and suggests
    the closest."""
    known = ts.variable_names()
    for name in names:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            listed = ", ".join(known) if known else "none (the trace declares no variables)"
            raise MAError(f"{option} {name}=...: the run has no parameter {name!r}; {hint}known parameters: {listed}")


def parse_rank(text: str | None) -> int | str | None:
    if text is None:
        return None
    if text in ("mean", "min", "max"):
        return text
    try:
        return int(text)
    except ValueError:
        raise MAError(f"--rank {text!r}: expected a rank number or mean, min, max") from None


def grid(sets: dict[str, list[float]]) -> tuple[list[str], list[tuple[float, ...]]]:
    """Names and the cartesian product of their values, in the order given."""
    names = list(sets)
    return names, list(itertools.product(*(sets[n] for n in names)))


def number(x: Any) -> str:
    from ma_post.validation import format_number

    return format_number(float(x))


def table(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)).rstrip() + "\n" for r in rows)


def load_profile(name: str) -> Any:
    """A machine profile given as a path, or by the name of one shipped in ``backends/profiles``."""
    from backends.machine import profile
    from ma_core.errors import ProfileError

    shipped = profile.shipped_profiles()
    if Path(name).exists():
        return profile.load(name)
    if name in shipped:
        return profile.load(shipped[name])
    raise ProfileError(name, f"no such file, nor the name of a shipped profile ({', '.join(shipped) or 'none'})")
